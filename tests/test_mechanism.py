"""The Dirichlet mechanism: exactness, support handling, validation, and Monte Carlo."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import A, S, T, random_arrays

import jaxprivmdp as jp

# Monte Carlo: one array shape [n, N, n] holds N draws of each of n rows (row s in state s),
# so a single compiled sampler serves every test below.
N_MC = 4000
P_MC = np.array(
    [
        [0.25, 0.25, 0.25, 0.25],
        [0.7, 0.1, 0.1, 0.1],
        [0.01, 0.09, 0.4, 0.5],
        [0.05, 0.05, 0.45, 0.45],
    ]
)


def mc_draws(rows, k, seed, sampler="jax", **kwargs):
    """`[n, N_MC, n]` draws: ``out[s, i]`` is the i-th draw for row ``rows[s]``."""
    P = np.broadcast_to(rows[:, None, :], (4, N_MC, 4)).copy()
    mech = jp.Dirichlet(k, sampler=sampler)
    out = jp.dirichlet_mechanism(jax.random.key(seed), P, mech, **kwargs)
    return np.asarray(out, np.float64)


@pytest.fixture
def full_support():
    P, _, _, _ = random_arrays(0)
    return P.astype(np.float32)


@pytest.fixture
def with_zeros():
    P, _, _, _ = random_arrays(1)
    P[0, 1, [0, 3]] = 0.0
    P[2, 2, 4] = 0.0
    P[4, 0, 1:] = 0.0  # a deterministic row: [1, 0, 0, 0, 0]
    P[4, 0, 0] = 1.0
    P /= P.sum(-1, keepdims=True)
    return P


# ----------------------------------------------------------------------------- exactness


@pytest.mark.parametrize("seed", [0, 1])
def test_equals_jax_dirichlet_bit_for_bit(full_support, seed):
    key = jax.random.key(seed)
    k = 7.5
    got = jp.dirichlet_mechanism(key, full_support, jp.Dirichlet(k, sampler="jax"))
    rows = jnp.asarray(full_support)
    want = jax.random.dirichlet(key, jnp.asarray(k, rows.dtype) * rows, dtype=rows.dtype)
    assert got.shape == (S, A, S) and got.dtype == rows.dtype
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    # "jax" is the default of the release path: the sampler to audit.
    np.testing.assert_array_equal(jp.dirichlet_mechanism(key, full_support, jp.Dirichlet(k)), got)
    # The "fast" sampler is exact too but draws differently from the same key.
    fast = jp.dirichlet_mechanism(key, full_support, jp.Dirichlet(k, sampler="fast"))
    assert not np.array_equal(np.asarray(fast), np.asarray(want))


def test_same_key_same_noise_other_key_other_noise(full_support):
    a = jp.dirichlet_mechanism(jax.random.key(3), full_support, jp.Dirichlet(2.0))
    b = jp.dirichlet_mechanism(jax.random.key(3), full_support, jp.Dirichlet(2.0))
    c = jp.dirichlet_mechanism(jax.random.key(4), full_support, jp.Dirichlet(2.0))
    np.testing.assert_array_equal(a, b)
    assert np.mean(np.asarray(a) == np.asarray(c)) < 0.05


def test_rows_on_the_simplex(full_support):
    out = np.asarray(jp.dirichlet_mechanism(jax.random.key(0), full_support, jp.Dirichlet(3.0)))
    assert np.all(out >= 0) and np.all(np.isfinite(out))
    np.testing.assert_allclose(out.sum(-1), 1.0, atol=1e-6)
    # The result is a valid transition array for make_mdp as is (no renormalization).
    mdp = jp.make_mdp(out, np.zeros((S, A)), horizon=T)
    np.testing.assert_array_equal(np.asarray(mdp.transitions), out)


def test_input_not_modified(with_zeros):
    P64 = with_zeros.copy()
    P32 = with_zeros.astype(np.float32)
    copies = (P64.copy(), P32.copy())
    jp.dirichlet_mechanism(jax.random.key(0), P64, jp.Dirichlet(2.0), support="nonzero")
    jp.dirichlet_mechanism(jax.random.key(0), P32, jp.Dirichlet(2.0), smoothing=0.01)
    np.testing.assert_array_equal(P64, copies[0])
    np.testing.assert_array_equal(P32, copies[1])


# ----------------------------------------------------------------------------- support


def test_nonzero_support_keeps_structural_zeros(with_zeros):
    out = np.asarray(
        jp.dirichlet_mechanism(jax.random.key(0), with_zeros, jp.Dirichlet(4.0), support="nonzero")
    )
    zero = with_zeros == 0
    assert zero.sum() == 7
    np.testing.assert_array_equal(out[zero], 0.0)
    # Off the zero pattern entries are positive unless k·p is tiny (float32 underflow).
    assert np.all(out[~zero & (with_zeros > 0.05)] > 0)
    np.testing.assert_allclose(out.sum(-1), 1.0, atol=1e-6)
    np.testing.assert_array_equal(out[4, 0], [1, 0, 0, 0, 0])  # a one-point support stays put
    # Rows without zeros are privatized as usual (not the input).
    assert not np.allclose(out[1, 1], with_zeros[1, 1])


def test_zeros_without_option_raise(with_zeros):
    with pytest.raises(ValueError) as info:
        jp.dirichlet_mechanism(jax.random.key(0), with_zeros, jp.Dirichlet(4.0))
    msg = str(info.value)
    for row in ("(state 0, action 1)", "(state 2, action 2)", "(state 4, action 0)"):
        assert row in msg
    assert "support='nonzero'" in msg and "smoothing" in msg
    assert "(state 1, action 1)" not in msg


def test_zeros_message_truncates_long_lists():
    P = np.zeros((S, A, S))
    P[:, :, 0] = 0.5
    P[:, :, 1] = 0.5
    with pytest.raises(ValueError, match=r"and 10 more have zero entries"):
        jp.dirichlet_mechanism(jax.random.key(0), P, jp.Dirichlet(1.0))


def test_smoothing_mean_is_smoothed_row():
    rows = P_MC.copy()
    rows[2] = [0.0, 0.0, 0.3, 0.7]  # zeros: smoothing makes them positive
    rows[3] = [1.0, 0.0, 0.0, 0.0]
    eta, k = 0.05, 10.0
    draws = mc_draws(rows, k, seed=11, smoothing=eta)
    smoothed = (1 - 4 * eta) * rows + eta
    se = np.sqrt(smoothed * (1 - smoothed) / (k + 1) / N_MC)
    np.testing.assert_array_less(np.abs(draws.mean(1) - smoothed), 5 * se)
    assert np.all(draws > 0)  # every smoothed concentration is >= k·eta > 0


def test_smoothing_and_support_validation(with_zeros):
    key = jax.random.key(0)
    with pytest.raises(ValueError, match="smoothing must lie in"):
        jp.dirichlet_mechanism(key, with_zeros, jp.Dirichlet(1.0), smoothing=0.0)
    with pytest.raises(ValueError, match="smoothing must lie in"):
        jp.dirichlet_mechanism(key, with_zeros, jp.Dirichlet(1.0), smoothing=1.0 / S + 0.001)
    with pytest.raises(ValueError, match="either support='nonzero' or smoothing"):
        jp.dirichlet_mechanism(
            key, with_zeros, jp.Dirichlet(1.0), smoothing=0.01, support="nonzero"
        )
    with pytest.raises(ValueError, match="support must be None or 'nonzero'"):
        jp.dirichlet_mechanism(key, with_zeros, jp.Dirichlet(1.0), support="all")
    with pytest.raises(ValueError, match="sampler must be"):
        jp.dirichlet_mechanism(
            key, with_zeros, jp.Dirichlet(1.0, sampler="numpy"), support="nonzero"
        )
    # smoothing = 1/S is allowed: every row becomes uniform.
    out = jp.dirichlet_mechanism(key, with_zeros, jp.Dirichlet(1.0), smoothing=1.0 / S)
    assert np.all(np.isfinite(out))


@pytest.mark.parametrize("k", [0.0, -1.0, np.nan, np.inf])
def test_bad_k(full_support, k):
    with pytest.raises(ValueError, match="^k must"):
        jp.dirichlet_mechanism(jax.random.key(0), full_support, jp.Dirichlet(k))


def test_invalid_transitions_rejected(full_support):
    bad = full_support.copy()
    bad[1, 2] *= 0.5
    with pytest.raises(ValueError, match=r"row \(state 1, action 2\) sums to"):
        jp.dirichlet_mechanism(jax.random.key(0), bad, jp.Dirichlet(1.0))


# ----------------------------------------------------------------------------- masks


def test_masked_rows_are_zeros_and_not_privatized(full_support):
    mask = np.ones((S, A), bool)
    mask[0, 0] = mask[3, 2] = False
    P = full_support.copy()
    P[0, 0] = 0.0  # junk in masked rows: zeros, negatives, not a distribution
    P[3, 2] = -1.0
    out = np.asarray(
        jp.dirichlet_mechanism(jax.random.key(0), P, jp.Dirichlet(3.0), action_mask=mask)
    )
    np.testing.assert_array_equal(out[~mask], 0.0)
    np.testing.assert_allclose(out[mask].sum(-1), 1.0, atol=1e-6)
    # The allowed rows are exactly what the unmasked mechanism gives them.
    P_ok = full_support.copy()
    full = np.asarray(jp.dirichlet_mechanism(jax.random.key(0), P_ok, jp.Dirichlet(3.0)))
    np.testing.assert_array_equal(out[mask], full[mask])
    with pytest.raises(ValueError, match="no allowed action"):
        mask[1] = False
        jp.dirichlet_mechanism(jax.random.key(0), P, jp.Dirichlet(3.0), action_mask=mask)


# ----------------------------------------------------------------------------- Monte Carlo
# Fixed seeds, so a run is reproducible. With a fresh seed a correct sampler would fail (normal
# approximation): a 5σ check of the mean or the variance with probability < 1e-5 over its 16
# entries; Lemma 1's one-sided 3σ check < 6e-3 per k over its 4 rows (less where the bound
# is loose).


@pytest.mark.parametrize("k", [2.0, 30.0])
def test_mean_and_variance(k):
    draws = mc_draws(P_MC, k, seed=int(k))
    p = P_MC
    mean, var = draws.mean(1), draws.var(1, ddof=1)
    # E[M(p)] = p; standard error from the known variance p(1 − p)/(k + 1).
    var_true = p * (1 - p) / (k + 1)
    np.testing.assert_array_less(np.abs(mean - p), 5 * np.sqrt(var_true / N_MC))
    # Var[M(p)_j] = p_j (1 − p_j) / (k + 1); standard error of the sample variance from the
    # sample's fourth central moment.
    m4 = ((draws - mean[:, None]) ** 4).mean(1)
    se_var = np.sqrt(np.maximum(m4 - var**2, 0) / N_MC)
    np.testing.assert_array_less(np.abs(var - var_true), 5 * se_var + 1e-12)


@pytest.mark.parametrize(("k", "beta"), [(1.0, 0.1), (5.0, 0.05), (30.0, 0.2), (2.0, 0.5)])
def test_lemma1_concentration(k, beta):
    """P(‖M(p) − p‖∞ >= α) <= β with α = sqrt(log(1/β) / (2(k + 1)))."""
    draws = mc_draws(P_MC, k, seed=100 + int(k))
    alpha = float(jp.concentration_radius(k, beta))
    dev = np.abs(draws - P_MC[:, None, :]).max(-1)  # [n, N]
    freq = (dev >= alpha).mean(1)
    assert np.all(freq <= beta + 3 * np.sqrt(beta * (1 - beta) / N_MC)), freq


def test_fast_sampler_same_distribution():
    pytest.importorskip("jaxprivmdp.mechanisms._sampling")
    k = 3.0
    draws = mc_draws(P_MC, k, seed=5, sampler="fast")
    var_true = P_MC * (1 - P_MC) / (k + 1)
    np.testing.assert_array_less(np.abs(draws.mean(1) - P_MC), 5 * np.sqrt(var_true / N_MC))
    # The sample variance's own standard error, sqrt((m4 − var²) / N): an entry of 0.01
    # (Beta(0.03, 2.97)) is so heavy-tailed that a fixed 15 % is about one error wide.
    centred = draws - draws.mean(1, keepdims=True)
    var, m4 = (centred**2).mean(1), (centred**4).mean(1)
    np.testing.assert_array_less(np.abs(var - var_true), 5 * np.sqrt((m4 - var**2) / N_MC))


# ----------------------------------------------------------------------------- tiny k·p


def tiny_mdp(horizon, dtype=None):
    """Rows with four entries of 1e-3: with k = 1 the concentrations k·p are 1e-3."""
    P = np.full((S, A, S), 1e-3)
    for s in range(S):
        P[s, :, (s + 1) % S] = 1 - 4e-3
    rng = np.random.default_rng(0)
    R = rng.uniform(size=(S, A))
    if horizon is None:
        return jp.make_mdp(P, R, discount=0.9, dtype=dtype)
    return jp.make_mdp(P, R, terminal_reward=rng.uniform(size=S), horizon=horizon, dtype=dtype)


# float64 (2.5 s: the solve and the bounds compiled in float64 for both horizons) runs with
# the integration tier; tests/test_sampling.py keeps float64's tiny shapes in the unit tier.
@pytest.mark.parametrize(
    "x64", [False, pytest.param(True, marks=pytest.mark.integration)], ids=["float32", "float64"]
)
def test_tiny_concentrations_stay_finite(x64):
    dtype = np.float64 if x64 else np.float32
    with jax.enable_x64(x64):
        zeros = 0
        for horizon in (T, None):
            mdp = tiny_mdp(horizon, dtype)
            for seed in range(4):
                p_bar = jp.dirichlet_mechanism(
                    jax.random.key(seed), mdp.transitions, jp.Dirichlet(1.0)
                )
                out = np.asarray(p_bar)
                assert out.dtype == dtype
                assert not np.any(np.isnan(out)) and np.all(out >= 0)
                np.testing.assert_allclose(out.sum(-1), 1.0, atol=10 * np.finfo(dtype).eps)
                zeros += int((out == 0).sum())
                private = dataclasses.replace(mdp, transitions=p_bar)
                sol = jp.solve(private)
                assert np.all(np.isfinite(sol.values))
                b = jp.cost_of_privacy(private, sol.policy, jp.Dirichlet(1.0), jp.PaperSet(0.1))
                for x in (b.lower, b.upper, b.cost):
                    assert np.all(np.isfinite(np.asarray(x)))
                assert float(b.cost) >= 0
        if not x64:
            assert zeros > 0  # float32 underflows such tiny variates to exact zeros


# ----------------------------------------------------------------------------- keys


def test_secure_key():
    a, b = jp.secure_key(), jp.secure_key()
    assert jax.dtypes.issubdtype(a.dtype, jax.dtypes.prng_key)
    assert a.shape == ()
    assert jax.random.key_impl(a) == jax.random.key_impl(jax.random.key(0))
    assert not np.array_equal(jax.random.key_data(a), jax.random.key_data(b))
    u = jax.random.uniform(a, (3,))
    assert u.shape == (3,) and np.all((np.asarray(u) >= 0) & (np.asarray(u) < 1))
    rbg = jp.secure_key("rbg")
    assert (
        jax.random.key_data(rbg).shape == jax.random.key_data(jax.random.key(0, impl="rbg")).shape
    )


def test_output_dtype_follows_input_under_x64(full_support):
    with jax.enable_x64(True):
        out = jp.dirichlet_mechanism(jax.random.key(0), full_support, jp.Dirichlet(2.0))
        assert out.dtype == jnp.float32


@pytest.mark.parametrize("sampler", ["fast", "jax"])
def test_subnormal_concentrations_give_no_nan(sampler, full_support):
    # XLA:CPU flushes subnormal floats to zero; the mechanism must not turn that into NaN.
    # One row of subnormal entries among ordinary rows, in the shape (and the compiled
    # samplers) of the tests above.
    P = full_support.copy()
    P[0, 0] = [1 - 4e-39, 1e-39, 1e-39, 1e-39, 1e-39]
    assert np.all(P[0, 0, 1:] < np.finfo(np.float32).tiny)  # subnormal in float32
    out = np.asarray(
        jp.dirichlet_mechanism(jax.random.key(0), P, jp.Dirichlet(0.5, sampler=sampler))
    )
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out.sum(-1), 1.0, atol=1e-6)
