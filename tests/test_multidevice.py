"""sweep sharded over 4 forced host devices equals one device (run in a child process,
because the device count is fixed when JAX starts)."""

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.multiprocess

SCRIPT = textwrap.dedent(
    """
    import jax, numpy as np
    import jaxprivmdp as jp

    assert jax.device_count() == 4, jax.devices()
    for horizon, discount in ((4, 1.0), (None, 0.9)):
        mdp = jp.examples.random_mdp(jax.random.key(0), 6, 3, horizon, discount=discount)
        grid = jp.Dirichlet.grid([1.0, 10.0, 40.0], sampler="fast")
        one = jax.devices()[:1]
        kw = dict(num_trials=7)
        sharded = jp.sweep(
            jax.random.key(1), mdp, grid, chunking=jp.Chunking(8, vector_width=2), **kw
        )
        single = jp.sweep(
            jax.random.key(1), mdp, grid, chunking=jp.Chunking(8, 2, devices=one), **kw
        )
        chunked = jp.sweep(
            jax.random.key(1), mdp, grid, chunking=jp.Chunking(3, 2, devices=one), **kw
        )
        for name in sharded._fields:
            a = np.asarray(getattr(sharded, name))
            for other in (single, chunked):
                b = np.asarray(getattr(other, name))
                assert np.array_equal(a, b), (horizon, name, a, b)
    print("OK")
    """
)


# Marked slow (10-15 CPU s, a child process compiling for 4 devices): CI's second pass runs it;
# the default run checks chunking on one device in tests/test_synthesis.py.
@pytest.mark.slow
def test_sweep_on_four_host_devices_equals_one_device_and_chunks_of_three():
    """Sharded over 4 devices equals one device, and one device in chunks of 3."""
    # Added to the inherited XLA_FLAGS: an optimization level already there (tests/conftest.py)
    # reaches the child too; both sides of each comparison share the build.
    flags = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count=4"
    env = dict(os.environ, XLA_FLAGS=flags.strip(), JAX_PLATFORMS="cpu")
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stdout.strip().endswith("OK")
