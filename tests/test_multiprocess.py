"""sweep across 2 CPU processes (jax.distributed on localhost, gloo collectives) returns the
whole SweepResult in every process, bitwise equal to a one-process run (dense and sparse)."""

import os
import socket
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytestmark = pytest.mark.multiprocess

SCRIPT = textwrap.dedent(
    """
    import sys
    import jax
    import numpy as np

    process_id, port, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    if process_id >= 0:
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        jax.distributed.initialize(f"localhost:{port}", num_processes=2, process_id=process_id)
        assert jax.device_count() == 2 and jax.local_device_count() == 1
    import jaxprivmdp as jp

    dense = jp.examples.random_mdp(jax.random.key(0), 6, 3, 4)
    sparse = jp.examples.gridworld(3, 4, horizon=6, discount=1.0)
    grid = jp.Dirichlet.grid([1.0, 10.0, 40.0], sampler="fast")
    kw = dict(num_trials=5, chunking=jp.Chunking(batch_size=4, vector_width=2))
    results = [
        jp.sweep(jax.random.key(1), dense, grid, **kw),
        jp.sweep(jax.random.key(2), sparse, grid, jp.PaperSet(0.1, support_aware=True), **kw),
    ]
    np.savez(out, **{
        f"{i}_{name}": np.asarray(getattr(r, name))
        for i, r in enumerate(results) for name in r._fields if getattr(r, name) is not None
    })
    """
)


def _env() -> dict:
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    env.pop("XLA_FLAGS", None)  # one CPU device per process
    return env


def _run_two_and_one(two: list[list[str]], one: list[str]) -> None:
    """Runs the two commands of a 2-process job concurrently and ``one`` alone; all succeed."""
    env = _env()
    procs = [
        subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for cmd in two
    ]
    single = subprocess.run(one, env=env, capture_output=True, text=True, timeout=600)
    for p in procs:
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-4000:]
    assert single.returncode == 0, single.stderr[-4000:]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_sweep_across_two_processes_equals_one_process(tmp_path):
    port = str(_free_port())
    outs = [tmp_path / f"p{i}.npz" for i in (0, 1)]
    single = tmp_path / "single.npz"
    _run_two_and_one(
        [[sys.executable, "-c", SCRIPT, str(i), port, str(outs[i])] for i in (0, 1)],
        [sys.executable, "-c", SCRIPT, "-1", "0", str(single)],
    )
    with np.load(single) as want:
        for path in outs:
            with np.load(path) as got:
                assert sorted(got.files) == sorted(want.files)
                for name in want.files:
                    np.testing.assert_array_equal(got[name], want[name], err_msg=name)


@pytest.mark.slow
def test_cli_sweep_across_two_processes(tmp_path):
    """`jaxprivmdp sweep --coordinator ...` in 2 processes: process 0 writes what one writes."""
    import json

    import jaxprivmdp as jp

    g = jp.examples.gridworld(3, 3, horizon=5, discount=1.0)
    npz = tmp_path / "grid.npz"
    np.savez(npz, next_states=g.next_states, probs=g.probs, rewards=g.rewards)
    base = ["-m", "jaxprivmdp", "sweep", "--mdp", str(npz), "--horizon", "5"]
    base += ["--trials", "3", "--ks", "2", "20", "--batch-size", "8"]
    port = str(_free_port())
    job = ["--coordinator", f"localhost:{port}", "--num-processes", "2", "--process-id"]
    _run_two_and_one(
        [[sys.executable, *base, "--out", str(tmp_path / f"p{i}"), *job, str(i)] for i in (0, 1)],
        [sys.executable, *base, "--out", str(tmp_path / "one")],
    )
    assert not (tmp_path / "p1" / "sweep.json").exists()  # only process 0 writes
    got = json.loads((tmp_path / "p0" / "sweep.json").read_text())["results"]
    want = json.loads((tmp_path / "one" / "sweep.json").read_text())["results"]
    assert got == want
