"""Tests for the exact log-gamma / Dirichlet sampler (``jaxprivmdp.mechanisms._sampling``).

Distributional claims are checked against SciPy with fixed keys (so nothing is flaky);
p-value thresholds are 1e-3. Each shape parameter gets its own key: sharing one key would
reuse the same random bits across shapes and correlate the tests.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.extend.random import threefry2x32_p
from scipy import special, stats

from jaxprivmdp.mechanisms import _sampling
from jaxprivmdp.mechanisms._sampling import loggamma

N = 20_000
P_MIN = 1e-3


def dirichlet(key, alpha, dtype=None):
    """The mechanism's fast path: normalized log-gamma variates."""
    return jax.nn.softmax(loggamma(key, alpha, dtype=dtype), axis=-1)


def _key(*ints):
    key = jax.random.key(20240607)
    for i in ints:
        key = jax.random.fold_in(key, i)
    return key


def _log_gamma_cdf(y, a):
    """``P(log G <= y)`` for ``G ~ Gamma(a)``, accurate where ``exp(y)`` underflows.

    For ``x = e^y -> 0``: ``P(G <= x) = x^a / Γ(a + 1) (1 + O(x))``.
    """
    y = np.asarray(y, np.float64)
    tiny = y < -600
    safe = np.where(tiny, 0.0, y)
    return np.where(tiny, np.exp(a * y - special.gammaln(a + 1)), special.gammainc(a, np.exp(safe)))


def _ks_loggamma(samples, a):
    """KS test of ``log G`` samples; the same test as ``G`` against ``gamma(a)`` (the KS
    statistic is invariant under the monotone map ``exp``), without underflow for tiny ``a``.
    """
    samples = np.asarray(samples, np.float64)
    assert np.all(np.isfinite(samples))
    return stats.kstest(samples, lambda y: _log_gamma_cdf(y, a)).pvalue


# --------------------------------------------------------------------------- the PRNG


def test_inline_threefry_matches_jax():
    kd = jax.random.key_data(_key(0))
    x0 = jnp.arange(1000, dtype=jnp.uint32) * np.uint32(2654435761)
    x1 = jnp.arange(1000, dtype=jnp.uint32)
    want = threefry2x32_p.bind(kd[0], kd[1], x0, x1)
    got = jax.jit(_sampling._threefry2x32)(kd[0], kd[1], x0, x1)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


def test_uniform_grids():
    words = jnp.asarray([0, 1, 2**32 - 1], jnp.uint32)
    m = _sampling._mantissa(words)
    np.testing.assert_array_equal(m, [1.0, 1.0, 2 - 2.0**-23])
    u = np.asarray(_sampling._open_uniform(m))
    np.testing.assert_array_equal(u, [2.0**-24, 2.0**-24, 1 - 2.0**-24])
    log_u = np.asarray(_sampling._log_uniform_fine(words))
    np.testing.assert_allclose(log_u, [np.log(0.5 * 2.0**-32), np.log(1.5 * 2.0**-32), 0.0])
    with jax.enable_x64(True):
        words = jnp.asarray([0, 2**64 - 1], jnp.uint64)
        u = np.asarray(_sampling._open_uniform(_sampling._mantissa(words)))
        np.testing.assert_array_equal(u, [2.0**-53, 1 - 2.0**-53])
        log_u = np.asarray(_sampling._log_uniform_fine(words))
        np.testing.assert_allclose(log_u, [np.log(0.5 * 2.0**-64), 0.0])


# --------------------------------------------------------------------------- distribution


@pytest.mark.parametrize("a", [0.01, 0.3, 1.0, 2.5, 40.0])
def test_loggamma_ks_against_scipy(a):
    x = loggamma(_key(1, int(a * 100)), jnp.full((N,), a))
    assert x.shape == (N,) and x.dtype == jnp.float32
    assert _ks_loggamma(x, a) > P_MIN


def test_loggamma_moments_per_element_shape():
    """Mixed shapes in one array: each entry has its own law (E log G = ψ(a), Var = ψ'(a))."""
    a = np.array([0.05, 0.7, 3.0, 25.0])
    x = np.asarray(loggamma(_key(2), jnp.tile(jnp.asarray(a), (N // 4, 1))), np.float64)
    z = (x.mean(0) - special.digamma(a)) / np.sqrt(special.polygamma(1, a) / (N // 4))
    assert np.all(np.abs(z) < 4), z
    np.testing.assert_allclose(x.var(0), special.polygamma(1, a), rtol=0.06)
    for i, ai in enumerate(a):
        assert _ks_loggamma(x[:, i], ai) > P_MIN


@pytest.mark.parametrize("a", [0.5, 3.0])
def test_loggamma_matches_jax_reference(a):
    ours = np.asarray(loggamma(_key(3, int(a * 10)), jnp.full((N,), a)))
    ref = np.asarray(jax.random.loggamma(_key(4, int(a * 10)), jnp.full((N,), a)))
    assert stats.ks_2samp(ours, ref).pvalue > P_MIN


def test_dirichlet_marginals():
    alpha = np.array([0.2, 1.0, 3.5, 10.0])
    x = np.asarray(dirichlet(_key(5), jnp.tile(jnp.asarray(alpha), (N // 4, 1))), np.float64)
    n = N // 4
    np.testing.assert_allclose(x.sum(-1), 1.0, atol=1e-5)
    total = alpha.sum()
    mean = alpha / total
    var = alpha * (total - alpha) / (total**2 * (total + 1))
    z = (x.mean(0) - mean) / np.sqrt(var / n)
    assert np.all(np.abs(z) < 4), z
    np.testing.assert_allclose(x.var(0), var, rtol=0.06)
    for i, ai in enumerate(alpha):
        assert stats.kstest(x[:, i], stats.beta(ai, total - ai).cdf).pvalue > P_MIN


# --------------------------------------------------------------------------- the fallback


def test_first_pass_rejects_as_expected():
    """At shape 1 the boosted shape is 2: Marsaglia–Tsang rejects about 2% of candidates."""
    a = jnp.ones((N,))
    first_pass = jax.jit(
        lambda key, a: _sampling._candidates(_sampling._Bits(key, N, a.dtype), a, 1)
    )
    out = first_pass(_key(6), a)
    rate = float(jnp.isposinf(out).mean())
    assert 0.01 < rate < 0.04


def test_fallback_exercised_and_exact():
    """num_candidates=1 leaves ~1000 elements to the fallback loop; the law is unchanged."""
    for i, a in enumerate([0.01, 1.0, 6.0]):
        x, rounds = _sampling._loggamma_and_rounds(
            _key(7, i), jnp.full((N,), a), np.dtype(np.float32), 1
        )
        assert int(rounds) >= 1
        assert _ks_loggamma(x, a) > P_MIN


def test_fallback_several_rounds_when_slots_overflow(monkeypatch):
    """With a tiny slot budget the loop needs many rounds; the result is still exact."""
    monkeypatch.setattr(_sampling, "_fallback_slots", lambda n, m: 8)
    # A fresh trace (not the jit cache) so that the patched budget is used.
    run = jax.jit(
        functools.partial(
            _sampling._loggamma_and_rounds.__wrapped__, dtype=np.dtype(np.float32), num_candidates=1
        )
    )
    x, rounds = run(_key(8), jnp.full((4000,), 0.5))
    assert int(rounds) > 5
    assert _ks_loggamma(x, 0.5) > P_MIN


def test_dense_fallback_for_small_arrays_is_exact():
    """Arrays of at most _DENSE_MAX elements redraw every element in a fallback round."""
    size = 100
    assert size <= _sampling._DENSE_MAX
    keys = jax.random.split(_key(19), N // size)
    a = jnp.full((N // size, size), 0.5)
    sample = jax.jit(jax.vmap(functools.partial(loggamma, num_candidates=1)))
    x = sample(keys, a)
    _, rounds = _sampling._loggamma_and_rounds(keys[0], a[0], np.dtype(np.float32), 1)
    assert int(rounds) >= 1
    assert _ks_loggamma(x.ravel(), 0.5) > P_MIN


def test_fallback_runs_zero_rounds_in_common_case():
    """Large shapes are (almost) never rejected: the loop body must not run at all."""
    _, rounds = _sampling._loggamma_and_rounds(
        _key(9), jnp.full((N,), 1000.0), np.dtype(np.float32), 2
    )
    assert int(rounds) == 0


def test_invalid_shapes_give_nan_and_terminate():
    bad = [0.0, -1.0, np.nan, np.inf]
    a = jnp.full((N,), 0.5).at[:4].set(jnp.asarray(bad))
    x, rounds = _sampling._loggamma_and_rounds(_key(10), a, np.dtype(np.float32), 1)
    x = np.asarray(x)
    assert np.all(np.isnan(x[:4])) and np.all(np.isfinite(x[4:]))
    assert 1 <= int(rounds) < _sampling._MAX_FALLBACK_ROUNDS


# --------------------------------------------------------------------------- tiny shapes, dtypes


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("a", [1e-6, 1e-3])
def test_tiny_shapes_are_finite(a, dtype):
    with jax.enable_x64(dtype == "float64"):
        alpha = jnp.full((N // 4, 4), a, dtype)
        log_g = loggamma(_key(11), alpha, dtype=dtype)
        assert log_g.dtype == jnp.dtype(dtype)
        assert np.all(np.isfinite(np.asarray(log_g)))
        x = dirichlet(_key(12), alpha, dtype=dtype)
        assert x.dtype == jnp.dtype(dtype)
        x = np.asarray(x)
        assert np.all(np.isfinite(x)) and np.all(x >= 0)
        np.testing.assert_allclose(x.sum(-1), 1.0, rtol=1e-5)
    if a == 1e-3:
        assert _ks_loggamma(log_g.ravel(), a) > P_MIN


def test_float64_ks_and_no_overlap_with_float32():
    with jax.enable_x64(True):
        x = loggamma(_key(13), jnp.full((N,), 0.7, jnp.float64), dtype=jnp.float64)
        assert x.dtype == jnp.float64
        x = np.asarray(x)
    assert _ks_loggamma(x, 0.7) > P_MIN
    # 52 random mantissa bits: values are not on the float32 grid.
    assert np.mean(x.astype(np.float32).astype(np.float64) != x) > 0.99


# --------------------------------------------------------------------------- jax transforms


@pytest.mark.integration
def test_jit_equals_eager_and_no_jit():
    key, a = _key(14), jnp.linspace(0.01, 30.0, 64).reshape(8, 8)
    eager = loggamma(key, a)
    jitted = jax.jit(loggamma)(key, a)
    np.testing.assert_array_equal(eager, jitted)
    with jax.disable_jit():
        op_by_op = loggamma(key, a)
    np.testing.assert_allclose(op_by_op, eager, rtol=1e-5, atol=1e-5)


@pytest.mark.integration
def test_vmap_over_keys_and_shapes_equals_loop():
    """As the library calls it: vmapped over trials (keys) and privacy levels (alphas).

    With num_candidates=1 the members need different numbers of fallback rounds (the
    huge shapes none), which exercises the batched while_loop: finished members must stay
    unchanged while the others loop.
    """
    keys = jax.random.split(_key(15), 4)
    ramp = jnp.linspace(0.05, 4.0, N)
    # Members of N elements reuse the compiled num_candidates=1 sampler of other tests.
    alphas = jnp.stack([0.1 * ramp, jnp.full((N,), 1e4), 10 * ramp, jnp.full((N,), 1e4)])
    alphas = alphas.reshape(4, N // 4, 4)
    batched = jax.jit(jax.vmap(functools.partial(loggamma, num_candidates=1)))(keys, alphas)
    assert batched.shape == (4, N // 4, 4)
    looped, rounds = zip(
        *(
            _sampling._loggamma_and_rounds(k, a.reshape(-1), np.dtype(np.float32), 1)
            for k, a in zip(keys, alphas, strict=True)
        ),
        strict=True,
    )
    assert len({int(r) for r in rounds}) > 1, rounds
    # Same draws; batched and unbatched XLA code may round the last bit differently.
    np.testing.assert_allclose(
        batched, jnp.stack(looped).reshape(batched.shape), rtol=1e-5, atol=1e-5
    )
    x = jax.nn.softmax(batched, axis=-1)
    np.testing.assert_allclose(x.sum(-1), 1.0, rtol=1e-5)


def test_keys_distinct_streams_and_key_impls():
    a = jnp.full((N,), 2.0)
    x1, x2 = (np.asarray(loggamma(_key(17, i), a)) for i in range(2))
    assert not np.any(x1 == x2)
    # A non-threefry key goes through jax.random.bits; same law.
    x = loggamma(jax.random.key(3, impl="rbg"), a)
    assert _ks_loggamma(x, 2.0) > P_MIN
    # A raw uint32 key is the same as the typed threefry key.
    np.testing.assert_array_equal(
        loggamma(jax.random.PRNGKey(5), a), loggamma(jax.random.key(5), a)
    )


def test_shapes_and_errors():
    assert loggamma(_key(18), jnp.ones((0, 3))).shape == (0, 3)
    assert loggamma(_key(18), jnp.ones((N // 20, 4, 5))).shape == (N // 20, 4, 5)
    with pytest.raises(ValueError, match="dtype"):
        loggamma(_key(18), jnp.ones(3), dtype=jnp.int32)
    with pytest.raises(ValueError, match="single PRNG key"):
        loggamma(jax.random.split(_key(18), 2), jnp.ones(3))
    with pytest.raises(ValueError, match="num_candidates"):
        loggamma(_key(18), jnp.ones(3), num_candidates=0)
