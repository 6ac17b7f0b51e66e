"""The uncertainty sets (bound="paper" | "exact" | "certified") and the robust private policy.

Oracles: Beta quantiles inverted by root-finding on ``scipy.special.betainc`` (the library
tabulates ``betaincinv``), HiGHS on the set's LP written out literally, Monte Carlo for the
coverage claims, and enumeration of all deterministic policies for robust synthesis.
"""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import build_mdp
from scipy.optimize import brentq, linprog
from scipy.special import betainc

import jaxprivmdp as jp
from jaxprivmdp import examples
from jaxprivmdp.models._rows import Rows
from jaxprivmdp.planning._bounds import set_up
from jaxprivmdp.planning._kernel import robust_backup
from jaxprivmdp.sets._boxes import entry_level, row_box
from jaxprivmdp.sets.core import set_named as as_set

KEY = jax.random.key(7)
SETS = ["paper", "exact", "certified"]
SET = {"paper": jp.PaperSet, "exact": jp.ExactSet, "certified": jp.CertifiedSet}
# The set's kernels run compiled, as the library's cores run them: one compilation per shape
# and static option rather than one per primitive and shape (eager dispatch).
_row_box = jax.jit(row_box, static_argnames=("support_aware",))
_robust_backup = jax.jit(robust_backup, static_argnames=("width", "support_aware"))


def true_interval(x, k, c):
    """``{p : c <= F_p(x) <= 1 − c}`` with ``F_p`` the CDF of Beta(kp, k(1−p)), by brentq."""

    def f(p):
        return betainc(k * p, k * (1 - p), x)

    lo_p, hi_p = 1e-300, 1 - 1e-16
    upper = 1.0 if f(hi_p) >= c else brentq(lambda p: f(p) - c, lo_p, hi_p, xtol=1e-300)
    lower = 0.0 if f(lo_p) <= 1 - c else brentq(lambda p: f(p) - (1 - c), lo_p, hi_p)
    return lower, upper


def box_of(probs, k, beta, bound, *, support_aware=False, next_states=None, mdp=None):
    """The RowBox of rows ``probs`` `[..., n]` (an `n`-state model sets the count)."""
    probs = np.asarray(probs, np.float32)
    if mdp is None:
        n = probs.shape[-1]
        # Any model of n states fixes the dtype and the union bound's count (n per row).
        P = np.broadcast_to(probs.reshape(-1, n)[:1][None], (n, 1, n)).astype(np.float64)
        mdp = jp.make_mdp(P, np.zeros((n, 1)), discount=0.9, support=P > 0)
    params, _ = set_up(mdp, jp.Dirichlet(k), as_set(bound, beta, support_aware))
    # Here the rows' nonzero pattern stands for their public support.
    support = jnp.asarray(probs > 0) if next_states is None else None
    rows = Rows(jnp.asarray(probs), next_states, support)
    return _row_box(rows, params, support_aware=support_aware)


@pytest.mark.parametrize("k", [0.5, 20.0, 200.0, 5e4])
def test_exact_intervals_contain_the_beta_inversion(k):
    """Each entry's [L, U] contains the exact interval, and is at most a grid step wider."""
    rng = np.random.default_rng(int(k))
    n = 6
    x = rng.dirichlet(np.full(n, 0.3), size=8).astype(np.float32)
    x[0, :3] = [0.0, 1e-30, 1e-7]  # underflowed and tiny entries
    x[0] /= x[0].sum()
    beta = 0.1
    dense = jp.make_mdp(
        np.broadcast_to(x[:1], (1, 1, n)).repeat(n, 0).astype(np.float64),
        np.zeros((n, 1)),
        discount=0.9,
    )
    c = entry_level(dense, jp.ExactSet(beta))
    assert c == pytest.approx(beta / (2 * n))
    box = box_of(x, k, beta, "exact", mdp=dense)
    for row in range(x.shape[0]):
        for i in range(n):
            xi = float(x[row, i])
            lo, hi = true_interval(max(xi, 1e-38), k, c)
            lo_x, hi_x = true_interval(xi, k, c) if xi > 0 else (0.0, hi)
            got_lo, got_hi = float(box.lower[row, i]), float(box.upper[row, i])
            assert got_lo <= min(lo, lo_x) + 1e-12 and got_hi >= max(hi, hi_x) - 1e-12
            # The grid's step: ~4e-4·sqrt(p(1−p)), 2% near the ends, plus the ulps of x.
            slack = 2e-3 * np.sqrt(max(hi, 1e-6)) + 0.03 * hi + 1e-6
            assert got_hi - hi <= slack
            lo = min(lo, xi)  # the set always holds P̄ itself (at small k it may not)
            assert lo - got_lo <= 2e-3 * np.sqrt(max(lo, 1e-6)) + 0.03 * lo + 1e-6


@pytest.mark.parametrize("bound", SETS)
def test_p_bar_lies_in_every_set(bound):
    rng = np.random.default_rng(3)
    p = rng.dirichlet(np.full(7, 0.2), size=(5, 1)).astype(np.float32)
    p[0, 0, :2] = 0
    p[0, 0] /= p[0, 0].sum()
    for k in [0.1, 3.0, 300.0]:
        for aware in [False, True]:
            box = box_of(p, k, 0.05, bound, support_aware=aware)
            assert np.all(box.lower <= p) and np.all(p <= box.upper)
            assert np.all(box.lower >= 0) and np.all(box.upper <= 1)


def lp_box(v, lower, upper, mixture, maximize=False):
    """``min`` of ``p·v`` over ``{β P1 + (1 − β) P2 : P1, P2 ∈ Δ, l ≤ P2 ≤ u}``, by HiGHS.

    Variables ``[P1, P2]``; ``p = β P1 + (1 − β) P2`` enters the objective directly.
    """
    v = np.asarray(v, np.float64)
    n = v.size
    sign = -1 if maximize else 1
    c = sign * np.concatenate([mixture * v, (1 - mixture) * v])
    A_eq = np.vstack([np.r_[np.ones(n), np.zeros(n)], np.r_[np.zeros(n), np.ones(n)]])
    bounds = [(0, 1)] * n + list(zip(lower, upper, strict=True))
    res = linprog(c, A_eq=A_eq, b_eq=[1, 1], bounds=bounds, method="highs")
    assert res.status == 0, res.message
    return sign * res.fun


@pytest.mark.parametrize("bound", ["exact", "certified"])
@pytest.mark.parametrize("aware", [False, True])
def test_kernel_matches_the_lp_on_every_set(bound, aware):
    """robust_backup over a box == HiGHS; rows with zeros, k with α >= 1, ties, n = 1."""
    rng = np.random.default_rng(11)
    n = 6
    p = rng.dirichlet(np.full(n, 0.5), size=(4, 2)).astype(np.float64)
    p[0, 0, :3] = 0  # entries at 0
    p[0, 0] /= p[0, 0].sum()
    p[1, 1] = 0
    p[1, 1, 2] = 1  # a point mass: n = 1 under support_aware
    p = p.astype(np.float32)
    v_low = rng.normal(size=n).astype(np.float32)
    v_low[4] = v_low[1]  # ties
    v_high = rng.normal(size=n).astype(np.float32)
    for k in [0.2, 50.0]:  # k = 0.2: α > 1, boxes of [0, 1]
        box = box_of(p, k, 0.1, bound, support_aware=aware)
        low, high = _robust_backup(
            Rows(jnp.asarray(p), None, jnp.asarray(p > 0)),
            box,
            v_low,
            v_high,
            width=n,
            support_aware=aware,
        )
        for idx in itertools.product(range(4), range(2)):
            keep = p[idx] > 0 if aware else np.ones(n, bool)
            lo, up = np.asarray(box.lower[idx]), np.asarray(box.upper[idx])
            mix = float(box.mixture)
            want_low = lp_box(v_low[keep], lo[keep], up[keep], mix)
            want_high = lp_box(v_high[keep], lo[keep], up[keep], mix, maximize=True)
            assert float(low[idx]) == pytest.approx(want_low, abs=2e-5)
            assert float(high[idx]) == pytest.approx(want_high, abs=2e-5)


@pytest.mark.integration
def test_sparse_rows_use_the_outside_bound():
    """A sparse row over the whole simplex: unlisted states get [0, U(0)] (dense equality)."""
    rng = np.random.default_rng(5)
    n, K = 9, 3
    idx = np.stack([rng.permutation(n)[:K] for _ in range(4)])[:, None].astype(np.int32)
    probs = rng.dirichlet(np.ones(K), size=(4, 1)).astype(np.float32)
    dense = np.zeros((4, 1, n), np.float32)
    np.put_along_axis(dense, idx, probs, -1)
    model = jp.make_mdp(
        np.repeat(dense[:1], n, 0).astype(np.float64), np.zeros((n, 1)), discount=0.9
    )
    v = rng.normal(size=(2, n)).astype(np.float32)
    for bound in SETS:
        box_sparse = box_of(probs, 30.0, 0.1, bound, next_states=jnp.asarray(idx), mdp=model)
        box_dense = box_of(dense, 30.0, 0.1, bound, mdp=model)
        got = _robust_backup(Rows(jnp.asarray(probs), jnp.asarray(idx)), box_sparse, *v, width=n)
        want = _robust_backup(Rows(jnp.asarray(dense)), box_dense, *v, width=n)
        np.testing.assert_allclose(got, want, atol=2e-6)


@pytest.mark.slow
def test_exact_is_tighter_than_the_paper_on_examples_1_and_2():
    for mdp, kw in [
        (examples.investment(), dict(support="nonzero")),
        (examples.random_mdp(KEY), {}),
    ]:
        # On average over releases: at k = 1 a single release's exact set can be wider.
        costs = {
            b: jp.sweep(
                KEY,
                mdp,
                jp.Dirichlet.grid([1.0, 5.0, 40.0, 1000.0], sampler="fast"),
                SET[b](0.1),
                num_trials=16,
                **kw,
            ).cost.mean(1)
            for b in SETS[:2]
        }
        assert np.all(costs["exact"] < costs["paper"]), costs


@pytest.mark.integration
def test_exact_is_tighter_than_the_paper_on_example_2():
    mdp = examples.random_mdp(KEY)
    costs = [float(jp.synthesize(KEY, mdp, jp.Dirichlet(40.0), SET[b](0.1)).cost) for b in SETS[:2]]
    assert costs[1] < costs[0]


def _coverage(p, k, beta, bound, trials, rng):
    """Per trial, per row: whether the true row lies in the box built from its release."""
    rows, n = p.shape
    model = jp.make_mdp(
        np.broadcast_to(p[None], (n, rows, n)).copy(), np.zeros((n, rows)), discount=0.9
    )
    samples = np.stack([rng.dirichlet(k * p[r], size=trials) for r in range(rows)], 1)
    params, _ = set_up(model, jp.Dirichlet(k), as_set(bound, beta, False))
    box = _row_box(Rows(jnp.asarray(samples, jnp.float32)), params, support_aware=False)
    return ((np.asarray(box.lower) <= p) & (p <= np.asarray(box.upper))).all(-1)


def test_interval_level_is_exact_by_monte_carlo():
    """Two entries: both intervals miss together, with probability exactly 2c = β/2.

    Sharp on both sides: an interval too narrow or too wide (beyond the grid) fails.
    """
    # 4σ on 4 estimates: with a fresh seed a correct interval fails w.p. < 3e-4.
    rng = np.random.default_rng(0)
    trials, beta = 20000, 0.4
    p = np.array([[0.3, 0.7], [0.02, 0.98]])
    for k in [3.0, 80.0]:
        miss = 1 - _coverage(p, k, beta, "exact", trials, rng).mean(0)
        sigma = np.sqrt(0.2 * 0.8 / trials)
        np.testing.assert_allclose(miss, beta / 2, atol=4 * sigma)


def test_row_and_joint_coverage_by_monte_carlo():
    """ "exact": each row lies in its box w.p. >= 1 − β; "certified": all rows at once."""
    # One-sided 3σ on 5 frequencies: with a fresh seed a correct set fails w.p. < 7e-3.
    rng = np.random.default_rng(1)
    trials, beta = 4000, 0.2
    p = rng.dirichlet(np.full(4, 0.7), size=4)
    sigma = 3 * np.sqrt(beta * (1 - beta) / trials)
    row_ok = _coverage(p, 30.0, beta, "exact", trials, rng)
    assert 1 - row_ok.mean(0).min() <= beta + sigma
    all_ok = _coverage(p, 30.0, beta, "certified", trials, rng).all(-1)
    assert 1 - all_ok.mean() <= beta + sigma


# ------------------------------------------------------------------- statements and policies


@pytest.mark.slow
@pytest.mark.parametrize("horizon", [3, None])
def test_certified_covers_the_true_value_by_monte_carlo(horizon):
    """Over releases, v̲ <= V^π̄ <= v̄ on the true MDP (every stage and state) w.p. >= 1 − β.

    Slow (two sweeps and two batched syntheses to compile, ~20 s): the default run checks the
    same statement, joint over stages and states with an exact binomial test, for every
    mechanism, model kind and dtype in tests/test_validity.py
    (``test_certified_coverage_of_the_true_value``), and ``sweep`` = ``synthesize`` for the
    certified set in ``test_sweep_with_bound_and_robust_matches_synthesize``."""
    mdp = build_mdp(4, horizon=horizon)
    beta, trials = 0.3, 200
    res = jp.sweep(
        KEY,
        mdp,
        jp.Dirichlet.grid([20.0], sampler="fast"),
        jp.CertifiedSet(beta),
        num_trials=trials,
    )
    covered = (res.lower <= res.true_value + 1e-5) & (res.true_value <= res.upper + 1e-5)
    assert 1 - float(covered.mean()) <= beta + 3 * np.sqrt(beta * (1 - beta) / trials)
    # Every stage and state at once (the statement), release by release.
    run = jax.jit(
        jax.vmap(
            lambda key: jp.synthesize(key, mdp, jp.Dirichlet(20.0), jp.CertifiedSet(beta)),
        )
    )
    outs = run(jax.random.split(KEY, trials))
    true = jax.vmap(lambda pol: jp.evaluate(mdp, pol))(outs.policy)
    tol = 1e-5
    held = (outs.lower <= true + tol) & (true <= outs.upper + tol)
    all_ok = jnp.all(held.reshape(trials, -1), axis=1)
    assert 1 - float(all_ok.mean()) <= beta + 3 * np.sqrt(beta * (1 - beta) / trials)


@pytest.mark.integration
def test_robust_policy_maximizes_the_pessimistic_value():
    """robust=True: its v̲ equals the best v̲ over all deterministic Markov policies."""
    P, R = np.random.default_rng(2).dirichlet(np.ones(3), size=(3, 2)), np.eye(3)[:, :2]
    mdp = jp.make_mdp(P, R, terminal_reward=np.arange(3.0), horizon=2)
    for bound in SETS:
        uset = SET[bound](0.1)
        out = jp.synthesize(KEY, mdp, jp.Dirichlet(8.0), uset, robust=True, support="nonzero")
        private = jp.make_mdp(out.private_transitions, R, terminal_reward=np.arange(3.0), horizon=2)
        best = -np.inf * np.ones(3)
        for actions in itertools.product(range(2), repeat=6):
            policy = np.asarray(actions, np.int32).reshape(2, 3)
            b = jp.cost_of_privacy(private, policy, jp.Dirichlet(8.0), uset)
            best = np.maximum(best, np.asarray(b.lower[0]))
        np.testing.assert_allclose(out.robust.lower[0], best, atol=1e-5)
        assert np.all(out.robust.lower >= out.lower - 1e-5)


@pytest.mark.integration
@pytest.mark.parametrize(("horizon", "bound"), [(4, "certified"), (None, "exact")])
def test_robust_lower_bound_never_below_the_private_policy(horizon, bound):
    """Masked actions, both horizons (the enumeration test covers every set, finite T)."""
    mdp = build_mdp(6, horizon=horizon, masked=True)
    uset = SET[bound](0.1)
    out = jp.synthesize(KEY, mdp, jp.Dirichlet(15.0), uset, robust=True, support="nonzero")
    # Infinite horizon: both are within the value iteration's tolerance of optimal.
    tol = 1e-5 if horizon else 1e-3
    assert np.all(out.robust.lower >= out.lower - tol)
    solo = jp.robust_solve(
        jp.make_mdp(
            out.private_transitions,
            mdp.rewards,
            terminal_reward=mdp.terminal_reward if horizon else None,
            horizon=horizon,
            discount=mdp.discount,
            action_mask=mdp.action_mask,
        ),
        jp.Dirichlet(15.0),
        uset,
    )
    np.testing.assert_array_equal(solo.policy, out.robust.policy)


# 3.5 s, most of it compiling synthesize under vmap; the traced k's tables (the host
# callback, under jit and vmap) stay in the unit tier in tests/test_beta.py.
@pytest.mark.integration
def test_bound_under_jit_and_vmap_over_k():
    """A traced k builds the tables through a host callback: same bounds as concrete k."""
    mdp = build_mdp(0)
    ks = jnp.asarray([3.0, 30.0])
    run = jax.jit(
        jax.vmap(
            lambda k: (
                jp.synthesize(KEY, mdp, jp.Dirichlet(k), jp.ExactSet(0.1), support="nonzero").cost
            )
        )
    )
    want = [
        float(jp.synthesize(KEY, mdp, jp.Dirichlet(k), jp.ExactSet(0.1), support="nonzero").cost)
        for k in ks
    ]
    np.testing.assert_allclose(run(ks), want, rtol=1e-5)


@pytest.mark.integration
def test_sweep_with_bound_and_robust_matches_synthesize():
    mdp = build_mdp(0)
    res = jp.sweep(
        KEY,
        mdp,
        jp.Dirichlet.grid([4.0, 40.0], sampler="fast"),
        jp.CertifiedSet(0.1),
        num_trials=2,
        robust=True,
        support="nonzero",
    )
    key = jp.sweep_key(KEY, 1, 1)
    out = jp.synthesize(
        key,
        mdp,
        jp.Dirichlet(40.0, sampler="fast"),
        jp.CertifiedSet(0.1),
        robust=True,
        support="nonzero",
    )
    assert float(res.cost[1, 1]) == pytest.approx(float(out.cost), rel=1e-4)
    assert float(res.robust.cost[1, 1]) == pytest.approx(float(out.robust.cost), rel=1e-4)
    true = jp.evaluate(mdp, out.robust.policy)[0, mdp.initial_state]
    assert float(res.robust.true_value[1, 1]) == pytest.approx(float(true), rel=1e-4)


@pytest.mark.parametrize("fn", ["synthesize", "sweep", "cost_of_privacy"])
def test_a_set_that_is_not_an_object_is_a_clear_error(fn):
    mdp = build_mdp(0)
    with pytest.raises(TypeError, match="takes the set as an object"):
        if fn == "synthesize":
            jp.synthesize(KEY, mdp, jp.Dirichlet(1.0), "lemma1", support="nonzero")
        elif fn == "sweep":
            jp.sweep(KEY, mdp, jp.Dirichlet.grid([1.0]), "tight", support="nonzero")
        else:
            jp.cost_of_privacy(mdp, np.zeros((4, 5), np.int32), jp.Dirichlet(1.0), None)


@pytest.mark.integration
def test_bound_under_jit_over_the_model():
    """A traced model is counted from its shapes (an upper bound): here the same count."""
    mdp = build_mdp(0)
    run = jax.jit(
        lambda m: jp.synthesize(KEY, m, jp.Dirichlet(9.0), jp.CertifiedSet(0.1), robust=True).cost
    )
    want = jp.synthesize(KEY, mdp, jp.Dirichlet(9.0), jp.CertifiedSet(0.1)).cost
    assert float(run(mdp)) == pytest.approx(float(want), rel=1e-5)


@pytest.mark.parametrize("bound", ["exact", "certified"])
def test_beta_box_fill_width_is_exact(bound):
    """The width from the smallest capacity gives the same bounds as the full width."""
    from jaxprivmdp.planning._bounds import bounds_core

    rng = np.random.default_rng(0)
    S = 40
    P = rng.dirichlet(np.full(S, 0.3), size=(S, 2))
    mdp = jp.make_mdp(P, rng.uniform(size=(S, 2)), terminal_reward=rng.uniform(size=S), horizon=3)
    policy = jp.solve(mdp).policy
    params, width = set_up(mdp, jp.Dirichlet(1.0), as_set(bound, 0.1, False))
    assert width < S
    got = bounds_core(mdp, policy, params, None, 10, width=width)
    full = bounds_core(mdp, policy, params, None, 10, width=S)
    np.testing.assert_allclose(got.lower, full.lower, atol=1e-6)
    np.testing.assert_allclose(got.upper, full.upper, atol=1e-6)
