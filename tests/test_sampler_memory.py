"""The default ("jax") sampler in chunks over rows: the same draws as
``jax.random.loggamma`` on the whole array, and a bounded working set (compiled-program
memory analysis, not RSS)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxprivmdp.mechanisms import _dirichlet
from jaxprivmdp.mechanisms._dirichlet import jax_loggamma, privatize

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("dtype, chunk", [(jnp.float32, 64), (jnp.float64, 7)])
def test_chunks_draw_what_jax_draws(dtype, chunk):
    with jax.enable_x64(dtype == jnp.float64):
        a = jax.random.uniform(jax.random.key(1), (37, 4, 5), dtype, minval=1e-3, maxval=30.0)
        key = jax.random.key(3)
        want = jax.random.loggamma(key, a, dtype=dtype)
        got = jax.jit(jax_loggamma, static_argnums=2)(key, a, chunk)
        assert got.dtype == dtype and got.shape == a.shape
        np.testing.assert_array_equal(got, want)  # bit for bit


def test_the_mechanism_in_chunks_releases_what_it_did_whole(monkeypatch):
    rows = jax.random.dirichlet(jax.random.key(0), jnp.ones(6), (23, 3))
    ones, mask = jnp.ones(rows.shape, bool), jnp.ones((23, 3), bool)
    key, k = jax.random.key(9), jnp.float32(4.0)
    out = {}
    for chunk in (50, 10**6):  # 414 entries: chunked, then whole (jax.random.loggamma)
        monkeypatch.setattr(_dirichlet, "JAX_CHUNK", chunk)
        jitted = jax.jit(privatize, static_argnames="sampler")  # traced afresh
        out[chunk] = jitted(key, rows, k, ones, mask, sampler="jax")
    np.testing.assert_array_equal(out[50], out[10**6])


@pytest.mark.slow
def test_vmapped_chunks_draw_from_each_key():
    a = jax.random.uniform(jax.random.key(1), (40,), minval=0.5, maxval=5.0)
    keys = jax.random.split(jax.random.key(2), 3)
    got = jax.vmap(lambda key: jax_loggamma(key, a, 16))(keys)
    want = jnp.stack([jax.random.loggamma(key, a) for key in keys])
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)  # same keys; XLA rounding


def _temp_bytes(num_states: int) -> int:
    shape = (num_states, 4, 3)
    args = (
        jax.random.key(0),
        jax.ShapeDtypeStruct(shape, jnp.float32),
        jax.ShapeDtypeStruct((), jnp.float32),
        jax.ShapeDtypeStruct(shape, bool),
        jax.ShapeDtypeStruct(shape[:2], bool),
    )
    jitted = jax.jit(privatize, static_argnames="sampler")
    return jitted.lower(*args, sampler="jax").compile().memory_analysis().temp_size_in_bytes


def test_working_set_is_one_chunk_not_the_release():
    # S = 10⁶, A = 4, K = 3 (12·10⁶ entries): unchunked, JAX's loop state took 1.6 GiB;
    # chunked it is one chunk's (~9 MiB) plus a few copies of the release (~46 MiB each).
    per_entry = 4 * 3 * 10**6
    assert _temp_bytes(10**6) < 8 * 4 * per_entry
    # The loop state does not grow with S once S exceeds a chunk.
    assert _temp_bytes(10**6) - _temp_bytes(5 * 10**5) < 4 * 4 * per_entry // 2
