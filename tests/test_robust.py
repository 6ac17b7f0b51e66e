"""The inner problem of the bounds: robust_expectation vs the paper's LP (P) solved by HiGHS."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import greedy_inner, lp_inner
from oracles import paper_params

import jaxprivmdp as jp
from jaxprivmdp.models._rows import Rows
from jaxprivmdp.planning._kernel import robust_backup
from jaxprivmdp.planning._width import fill_width
from jaxprivmdp.sets._boxes import row_box


@jax.jit
def both(v, p_bar, alpha, beta):
    """``(min, max)``, jit-compiled once per shape: eager op-by-op compiles cost seconds."""
    return (
        jp.robust_expectation(v, p_bar, alpha=alpha, beta=beta),
        jp.robust_expectation(v, p_bar, alpha=alpha, beta=beta, maximize=True),
    )


def lp_rows(v, p_bar, alpha, beta, maximize=False):
    """:func:`lp_inner` row by row over `[m, n]` arrays and `[m]` parameters."""
    m = len(v)
    alpha, beta = np.broadcast_to(alpha, (m,)), np.broadcast_to(beta, (m,))
    return np.array(
        [lp_inner(*a, maximize=maximize) for a in zip(v, p_bar, alpha, beta, strict=True)]
    )


def random_instances(seed, n, m):
    """``m`` instances of size ``n``: ``(v, p̄, α, β)``, with sparse and spiky rows."""
    rng = np.random.default_rng(seed)
    conc = rng.choice([0.05, 0.3, 1.0, 5.0], size=m)
    p_bar = np.stack([rng.dirichlet(np.full(n, c)) for c in conc])
    # A third of the rows get exact zeros (at least one nonzero entry is kept).
    for i in range(0, m, 3):
        zero = rng.uniform(size=n) < 0.4
        zero[rng.integers(n)] = False
        p_bar[i, zero] = 0.0
        p_bar[i] /= p_bar[i].sum()
    v = rng.normal(size=(m, n)) * rng.choice([0.1, 1.0, 10.0], size=(m, 1))
    alpha = np.exp(rng.uniform(np.log(0.01), np.log(1.5), size=m))
    beta = rng.uniform(0.01, 0.99, size=m)
    return v, p_bar, alpha, beta


def test_matches_lp_float64():
    """200 random instances, n from 2 to 12, min and max: agreement with HiGHS on (P). Five
    sizes (each a compilation of ``both``), 40 instances each."""
    count = 0
    with jax.enable_x64(True):
        for n in (2, 3, 5, 8, 12):
            v, p_bar, alpha, beta = random_instances(20 + n, n, 40)
            for maximize, got in zip((False, True), both(v, p_bar, alpha, beta), strict=True):
                assert got.dtype == jnp.float64 and got.shape == (40,)
                want = lp_rows(v, p_bar, alpha, beta, maximize)
                np.testing.assert_allclose(got, want, rtol=0, atol=1e-6 * (1 + np.abs(v).max()))
                count += len(want)
    assert count == 400


def test_matches_lp_float32():
    v, p_bar, alpha, beta = random_instances(100, 6, 12)
    out = both(v.astype(np.float32), p_bar.astype(np.float32), alpha, beta)
    for maximize, got in zip((False, True), out, strict=True):
        assert got.dtype == jnp.float32
        want = lp_rows(v, p_bar, alpha, beta, maximize)
        np.testing.assert_allclose(got, want, rtol=0, atol=2e-5 * (1 + np.abs(v).max()))


def test_numpy_greedy_oracle_matches_lp():
    """The loop oracle used by the infinite-horizon bound tests is itself right."""
    v, p_bar, alpha, beta = random_instances(7, 5, 30)
    for maximize in (False, True):
        for args in zip(v, p_bar, alpha, beta, strict=True):
            assert greedy_inner(*args, maximize=maximize) == pytest.approx(
                lp_inner(*args, maximize=maximize), abs=1e-7
            )


def test_lower_bound_below_upper_and_contains_p_bar():
    """min over P̂ <= p̄·v <= max over P̂: p̄ itself is feasible (Lemma 2's first claim)."""
    v, p_bar, alpha, beta = random_instances(3, 6, 12)
    with jax.enable_x64(True):
        low, high = (np.asarray(x) for x in both(v, p_bar, alpha, beta))
    mid = np.einsum("mn,mn->m", v, p_bar)
    assert np.all(low <= mid + 1e-12) and np.all(mid <= high + 1e-12)
    assert np.all(low >= v.min(-1) - 1e-12) and np.all(high <= v.max(-1) + 1e-12)


# ----------------------------------------------------------------------------- edges


def test_alpha_zero():
    v, p_bar, _, beta = random_instances(11, 6, 12)
    with jax.enable_x64(True):
        out = both(v, p_bar, np.zeros(12), beta)
        for maximize, got in zip((False, True), out, strict=True):
            ext = v.max(-1) if maximize else v.min(-1)
            want = beta * ext + (1 - beta) * np.einsum("mn,mn->m", v, p_bar)
            np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
            lp = lp_rows(v[:5], p_bar[:5], 0.0, beta[:5], maximize)
            np.testing.assert_allclose(got[:5], lp, atol=1e-7)


@pytest.mark.parametrize("alpha", [1.0, 1.5, 10.0])
def test_alpha_at_least_one_is_unconstrained(alpha):
    v, p_bar, _, beta = random_instances(12, 6, 12)
    with jax.enable_x64(True):
        low, high = both(v, p_bar, np.full(12, alpha), beta)
    np.testing.assert_allclose(low, v.min(-1), rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(high, v.max(-1), rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(low[0], lp_inner(v[0], p_bar[0], alpha, beta[0]), atol=1e-7)


@pytest.mark.parametrize("beta", [1e-9, 1 - 1e-9])
def test_beta_extremes(beta):
    v, p_bar, alpha, _ = random_instances(13, 6, 12)
    betas = np.full(12, beta)
    with jax.enable_x64(True):
        out = both(v, p_bar, alpha, betas)
        for maximize, got in zip((False, True), out, strict=True):
            want = lp_rows(v, p_bar, alpha, betas, maximize)
            np.testing.assert_allclose(got, want, atol=1e-6 * (1 + np.abs(v).max()))
            if beta > 0.5:  # all the weight on the free distribution P1
                ext = v.max(-1) if maximize else v.min(-1)
                np.testing.assert_allclose(got, ext, atol=1e-7 * (1 + np.abs(v).max()))


def test_ties_in_values():
    rng = np.random.default_rng(5)
    v = rng.integers(0, 3, size=(12, 6)).astype(np.float64)  # many exact ties
    v[0] = 1.0  # all equal: every feasible p gives 1
    _, p_bar, alpha, beta = random_instances(14, 6, 12)
    with jax.enable_x64(True):
        out = both(v, p_bar, alpha, beta)
        for maximize, got in zip((False, True), out, strict=True):
            want = lp_rows(v, p_bar, alpha, beta, maximize)
            np.testing.assert_allclose(got, want, atol=1e-7)
            assert float(got[0]) == pytest.approx(1.0, abs=1e-14)


def test_two_states_closed_form():
    """n = 2 by hand: P2's first entry ranges over [max(p̄₀ − α, 0), min(p̄₀ + α, 1)]."""
    with jax.enable_x64(True):
        for p0, alpha, beta in [
            (0.3, 0.1, 0.2),
            (0.05, 0.2, 0.5),
            (0.97, 0.5, 0.9),
            (0.0, 0.3, 0.1),
        ]:
            v = np.array([2.0, -1.0])  # entry 0 is the better one
            lo, hi = max(p0 - alpha, 0.0), min(p0 + alpha, 1.0)
            want_min = beta * -1.0 + (1 - beta) * (lo * 2.0 + (1 - lo) * -1.0)
            want_max = beta * 2.0 + (1 - beta) * (hi * 2.0 + (1 - hi) * -1.0)
            p_bar = np.array([p0, 1 - p0])
            got_min, got_max = both(v, p_bar, alpha, beta)
            assert float(got_min) == pytest.approx(want_min, abs=1e-14)
            assert float(got_max) == pytest.approx(want_max, abs=1e-14)
            assert float(got_min) == pytest.approx(lp_inner(v, p_bar, alpha, beta), abs=1e-8)


def test_batched_equals_loop():
    v, p_bar, alpha, beta = random_instances(15, 5, 12)
    v, p_bar = v.reshape(3, 4, 5), p_bar.reshape(3, 4, 5)
    alpha, beta = alpha.reshape(3, 4), beta.reshape(3, 4)
    with jax.enable_x64(True):
        batched = both(v, p_bar, alpha, beta)
        assert batched[0].shape == batched[1].shape == (3, 4)
        for i in range(3):
            for j in range(4):
                one = both(v[i, j], p_bar[i, j], alpha[i, j], beta[i, j])
                np.testing.assert_allclose(batched[0][i, j], one[0], rtol=1e-14, atol=1e-14)
                np.testing.assert_allclose(batched[1][i, j], one[1], rtol=1e-14, atol=1e-14)
        # One value vector broadcast against many rows.
        shared = both(v[0, 0], p_bar[0], alpha[0], beta[0])
        for j in range(4):
            one = both(v[0, 0], p_bar[0, j], alpha[0, j], beta[0, j])
            np.testing.assert_allclose(shared[0][j], one[0], rtol=1e-14, atol=1e-14)


def test_batched_with_scalar_alpha():
    v, p_bar, _, _ = random_instances(16, 6, 12)
    batched = jp.robust_expectation(v, p_bar, alpha=0.2, beta=0.3)
    np.testing.assert_allclose(batched, both(v, p_bar, np.full(12, 0.2), 0.3)[0], rtol=1e-6)


def test_batched_with_scalar_alpha_strict_rank_promotion():
    v, p_bar, _, _ = random_instances(16, 6, 12)
    with jax.numpy_rank_promotion("raise"):
        out = jax.jit(lambda v, p: jp.robust_expectation(v, p, alpha=0.2, beta=0.3))(v, p_bar)
    assert out.shape == (12,)


def test_jit_equals_eager():
    v, p_bar, alpha, beta = random_instances(17, 6, 12)
    np.testing.assert_allclose(
        both(v, p_bar, alpha, beta)[1],
        jp.robust_expectation(v, p_bar, alpha=alpha, beta=beta, maximize=True),
        rtol=1e-6,
        atol=1e-6,
    )


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize("alpha", [-1e-3, -1.0, np.nan, np.array([0.1, -0.1])])
def test_bad_alpha(alpha):
    with pytest.raises(ValueError, match="alpha"):
        jp.robust_expectation(np.ones(2), np.array([0.5, 0.5]), alpha=alpha, beta=0.1)


@pytest.mark.parametrize("beta", [0.0, 1.0, -0.5, 1.5, np.nan, np.array([0.5, 1.0])])
def test_bad_beta(beta):
    with pytest.raises(ValueError, match="beta"):
        jp.robust_expectation(np.ones(2), np.array([0.5, 0.5]), alpha=0.1, beta=beta)


# ----------------------------------------------------------------------------- radius


def test_concentration_radius_formula():
    # Same ranks: broadcasting [3] against [4] implicitly would be a rank promotion.
    k = np.array([[0.5], [1.0], [40.0]])
    beta = np.array([[1e-6, 0.05, 0.1, 0.9]])
    got = jp.concentration_radius(k, beta)
    assert got.shape == (3, 4)
    want = np.sqrt(np.log(1 / beta) / (2 * (k + 1)))
    np.testing.assert_allclose(got, want, rtol=1e-6)
    # Lemma 1's α at the paper's Example 1 settings (β = 0.1): k = 1 and k = 40.
    np.testing.assert_allclose(
        jp.concentration_radius(np.array([1.0, 40.0]), 0.1),
        [np.sqrt(np.log(10) / 4), np.sqrt(np.log(10) / 82)],
        rtol=1e-6,
    )


@pytest.mark.parametrize(
    ("k", "beta", "name"),
    [
        (0.0, 0.1, "k"),
        (-1.0, 0.1, "k"),
        (np.array([1.0, 0.0]), 0.1, "k"),
        (np.nan, 0.1, "k"),
        (1.0, 0.0, "beta"),
        (1.0, 1.0, "beta"),
        (1.0, -0.2, "beta"),
        (1.0, np.array([0.1, 2.0]), "beta"),
    ],
)
def test_concentration_radius_errors(k, beta, name):
    with pytest.raises(ValueError, match=rf"^{name} must"):
        jp.concentration_radius(k, beta)


# ----------------------------------------------------------------------------- Bellman level


def test_fill_width():
    assert fill_width(0.0, 12) == 12
    assert fill_width(1.0, 12) == 2
    assert fill_width(5.0, 12) == 2
    assert fill_width(0.5, 12) == 3  # ceil(2) + 1 = 3
    assert fill_width(0.25, 12) == 6  # ceil(4) + 1 = 5 -> 6 (3/4 of 8)
    assert fill_width(0.095, 20) == 12  # ceil(10.5) + 1 = 12
    assert fill_width(0.07, 20) == 16  # ceil(14.3) + 1 = 16 (3/4 of 16 is too few)
    assert fill_width(0.11, 20) == 12  # ceil(9.1) + 1 = 11 -> 12 (3/4 of 16)
    assert fill_width(0.01, 12) == 12
    assert fill_width(np.array([0.9, 0.3]), 12) == 6  # the smallest alpha counts
    assert fill_width(1.0, 1) == 1
    widths = []
    jax.jit(lambda a: widths.append(fill_width(a, 12)) or a)(0.5)
    assert widths == [12]  # traced alpha: the full, always exact width


ALPHAS = [0.05, 0.2, 0.25, 1 / 3, 1 / 3 + 1e-7, 1 / 3 - 1e-7, 0.4, 0.7, 1.2]


@functools.partial(jax.jit, static_argnames=("width", "support_aware"))
def backup_jit(p, alpha, v_low, v_high, beta, *, width, support_aware=False):
    """The kernel with the paper's box (the old signature, for these tests)."""
    rows = Rows(p)
    box = row_box(rows, paper_params(alpha, beta), support_aware=support_aware)
    return robust_backup(rows, box, v_low, v_high, width=width, support_aware=support_aware)


@pytest.mark.parametrize("alpha", ALPHAS)
def test_robust_backup_equals_robust_expectation(alpha):
    """robust_backup (sort once, gather ``width`` entries) == robust_expectation per row."""
    n = 12
    rng = np.random.default_rng(int(alpha * 1e8))
    p_bar = rng.dirichlet(np.full(n, 0.5), size=(4, 3))
    p_bar[0, 0, :6] = 0.0  # structural zeros
    p_bar[0, 0] /= p_bar[0, 0].sum()
    # Worst case for the width: the low-value entries are all 0 in p̄ (capacity exactly α)
    # and the rest of p̄ sits below α, so the fill needs ceil(1/α) entries.
    v_low = np.sort(rng.normal(size=n)).astype(np.float32)
    p_bar[3, 2] = 0.0
    p_bar[3, 2, -10:] = 0.1
    v_high = rng.normal(size=n).astype(np.float32)
    p_bar = p_bar.astype(np.float32)
    beta = np.float32(0.15)
    a32 = np.float32(alpha)
    alphas = np.full((4, 3), a32)
    want_low = both(np.broadcast_to(v_low, p_bar.shape), p_bar, alphas, beta)[0]
    want_high = both(np.broadcast_to(v_high, p_bar.shape), p_bar, alphas, beta)[1]
    rows = jnp.asarray(p_bar)
    if alpha >= 0.2:
        assert fill_width(a32, n) < n
    for width in sorted({fill_width(a32, n), n}):
        low, high = backup_jit(rows, a32, v_low, v_high, beta, width=width)
        assert low.shape == high.shape == (4, 3)
        np.testing.assert_allclose(low, want_low, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(high, want_high, rtol=1e-6, atol=1e-6)
    # And against the LP directly.
    for idx in [(0, 0), (3, 2), (1, 1)]:
        np.testing.assert_allclose(low[idx], lp_inner(v_low, p_bar[idx], a32, beta), atol=1e-5)
        np.testing.assert_allclose(
            high[idx], lp_inner(v_high, p_bar[idx], a32, beta, maximize=True), atol=1e-5
        )


def test_robust_backup_strict_rank_promotion():
    p_bar = jnp.full((5, 1, 5), 0.2)
    v = jnp.arange(5.0)
    with jax.numpy_rank_promotion("raise"):
        low, high = backup_jit(p_bar, 0.3, v, v, 0.1, width=5)
    assert low.shape == (5, 1)


@pytest.mark.parametrize(
    ("values", "p_bar", "match"),
    [
        ([0.0, np.nan], [0.5, 0.5], "values must be finite"),
        ([0.0, 1.0], [1.5, -0.5], "p_bar must be finite, non-negative"),
        ([0.0, 1.0], [0.5, 0.4], "p_bar rows must sum to 1, one sums to 0.9"),
        ([0.0, 1.0], 0.5, "p_bar must be finite, non-negative rows"),
    ],
)
def test_robust_expectation_rejects_bad_rows(values, p_bar, match):
    with pytest.raises(ValueError, match=match):
        jp.robust_expectation(np.asarray(values), np.asarray(p_bar), alpha=0.1, beta=0.1)
