"""cost_of_privacy: Theorems 1 and 2 against NumPy recursions that call HiGHS on (P)."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import (
    GAMMA,
    A,
    S,
    T,
    build_mdp,
    greedy_inner,
    lp_inner,
    np_evaluate,
    random_arrays,
    random_stochastic_policy,
    to_numpy,
)

import jaxprivmdp as jp
from jaxprivmdp import cost_of_privacy
from jaxprivmdp.planning._rounding import default_tolerance

K, BETA = 5.0, 0.1


def radius(k, beta):
    return float(np.sqrt(np.log(1 / beta) / (2 * (k + 1))))


def as_probabilities(policy, num_actions=A):
    policy = np.asarray(policy)
    if np.issubdtype(policy.dtype, np.integer):
        return np.eye(num_actions)[policy]
    return policy.astype(np.float64)


def policies(mdp, seed=0):
    """The optimal deterministic policy of ``mdp`` and a random stochastic one."""
    lead = (mdp.horizon,) if mdp.is_finite_horizon else ()
    stoch = random_stochastic_policy(seed, np.asarray(mdp.action_mask), lead)
    if mdp.rewards.dtype == jnp.float64:
        stoch = stoch.astype(np.float64)
        stoch /= stoch.sum(-1, keepdims=True)
    return {"deterministic": np.asarray(jp.solve(mdp).policy), "stochastic": stoch}


def assert_outward(b, low, high, eps=None):
    """The bounds bracket the exact LP recursion (float64) and are rounded outward by no
    more than one rounding margin per stage (``rounding_margin``: ~20 ulps of the values)."""
    pess, opt = np.asarray(b.lower, np.float64), np.asarray(b.upper, np.float64)
    eps = np.finfo(b.lower.dtype).eps if eps is None else eps
    scale = np.max(np.abs(np.concatenate([low, high]))) + 1
    stages = low.shape[0]
    assert np.all(pess <= low), np.max(pess - low)
    assert np.all(opt >= high), np.max(high - opt)
    assert np.max(low - pess) <= 64 * stages * eps * scale
    assert np.max(opt - high) <= 64 * stages * eps * scale


def lp_bounds_finite(o, policy, alpha, beta):
    """Theorem 1's recursions, with every inner problem solved by HiGHS on (P)."""
    pi = as_probabilities(policy)
    low = np.zeros((o["horizon"] + 1, S))
    high = np.zeros_like(low)
    low[-1] = high[-1] = o["RT"]
    for t in reversed(range(o["horizon"])):
        for s in range(S):
            for a in range(A):
                if pi[t, s, a] > 0:
                    lo = lp_inner(low[t + 1], o["P"][s, a], alpha, beta)
                    hi = lp_inner(high[t + 1], o["P"][s, a], alpha, beta, maximize=True)
                    low[t, s] += pi[t, s, a] * (o["R"][s, a] + o["gamma"] * lo)
                    high[t, s] += pi[t, s, a] * (o["R"][s, a] + o["gamma"] * hi)
    return low, high


def robust_fixed_points(o, policy, alpha, beta):
    """Theorem 2's fixed points: NumPy greedy iterations to 1e-13, then checked with HiGHS."""
    pi = as_probabilities(policy)

    def backup(v, maximize, inner):
        out = np.zeros(S)
        for s in range(S):
            for a in range(A):
                if pi[s, a] > 0:
                    e = inner(v, o["P"][s, a], alpha, beta, maximize=maximize)
                    out[s] += pi[s, a] * (o["R"][s, a] + o["gamma"] * e)
        return out

    fixed = []
    for maximize in (False, True):
        v = np.zeros(S)
        for _ in range(2000):
            v_new = backup(v, maximize, greedy_inner)
            done = np.max(np.abs(v_new - v)) < 1e-13
            v = v_new
            if done:
                break
        # The LP Bellman residual at the fixed point vanishes.
        np.testing.assert_allclose(backup(v, maximize, lp_inner), v, atol=1e-6)
        fixed.append(v)
    return fixed


# ----------------------------------------------------------------------------- Theorem 1


@pytest.mark.parametrize("kind", ["deterministic", "stochastic"])
def test_bounds_bracket_private_value(any_mdp, kind):
    """v̲ <= V̄^π <= v̄ at every stage and state (the first step of Theorems 1 and 2)."""
    policy = policies(any_mdp)[kind]
    value = np.asarray(jp.evaluate(any_mdp, policy))
    for k in (1.0, K, 200.0):
        b = cost_of_privacy(any_mdp, policy, jp.Dirichlet(k), jp.PaperSet(BETA))
        assert b.lower.shape == b.upper.shape == value.shape
        slack = 1e-5 * (1 + np.abs(value).max())
        assert np.all(np.asarray(b.lower) <= value + slack)
        assert np.all(value <= np.asarray(b.upper) + slack)
        assert np.all(np.isfinite(b.lower)) and np.all(np.isfinite(b.upper))


@pytest.mark.parametrize("kind", ["deterministic", "stochastic"])
@pytest.mark.parametrize("name", ["finite_mdp", "masked_finite_mdp"])
def test_finite_bounds_equal_lp_recursion(name, kind, request):
    mdp = request.getfixturevalue(name)
    policy = policies(mdp)[kind]
    b = cost_of_privacy(mdp, policy, jp.Dirichlet(K), jp.PaperSet(BETA))
    low, high = lp_bounds_finite(to_numpy(mdp), policy, radius(K, BETA), BETA)
    assert_outward(b, low, high)
    np.testing.assert_array_equal(b.lower[T], mdp.terminal_reward)
    np.testing.assert_array_equal(b.upper[T], mdp.terminal_reward)
    assert int(b.iterations) == T and bool(b.converged)


# The float64 tests (about 1 s each to compile in float64) run with the integration tier
# (and CI's float64 pass runs this file): the unit tier has the same oracles in float32.
@pytest.mark.integration
def test_finite_bounds_float64():
    with jax.enable_x64(True):
        mdp = build_mdp(2, masked=True, dtype=np.float64)
        policy = policies(mdp, seed=1)["stochastic"]
        b = cost_of_privacy(mdp, policy, jp.Dirichlet(K), jp.PaperSet(BETA))
        assert b.lower.dtype == jnp.float64
        low, high = lp_bounds_finite(to_numpy(mdp), policy, radius(K, BETA), BETA)
        assert_outward(b, low, high)


# ----------------------------------------------------------------------------- Theorem 2


@pytest.mark.parametrize("kind", ["deterministic", "stochastic"])
@pytest.mark.parametrize("name", ["infinite_mdp", "masked_infinite_mdp"])
def test_infinite_bounds_contain_fixed_points(name, kind, request):
    mdp = request.getfixturevalue(name)
    policy = policies(mdp)[kind]
    o = to_numpy(mdp)
    low_star, high_star = robust_fixed_points(o, policy, radius(K, BETA), BETA)
    b = cost_of_privacy(mdp, policy, jp.Dirichlet(K), jp.PaperSet(BETA))
    assert bool(b.converged) and 0 < int(b.iterations) < 10_000
    low, high = np.asarray(b.lower), np.asarray(b.upper)
    # float32 rounding of values ~ 1 / (1 − γ) = 10
    slack = 1e-5 / (1 - GAMMA)
    assert np.all(low <= low_star + slack) and np.all(high >= high_star - slack)
    # ... and tight: the iterate is within tol of the fixed point, the widening adds < tol.
    tol = float(default_tolerance(mdp))
    assert np.all(low >= low_star - 2 * tol - slack)
    assert np.all(high <= high_star + 2 * tol + slack)
    value = np_evaluate(o["P"], o["R"], None, o["gamma"], policy, None)
    np.testing.assert_allclose(jp.evaluate(mdp, policy), value, rtol=1e-5)
    assert np.all(low <= value + slack) and np.all(value <= high + slack)
    assert np.all(low_star <= value + 1e-9) and np.all(value <= high_star + 1e-9)


def test_infinite_bounds_valid_without_convergence(infinite_mdp):
    """After 3 sweeps the widened bounds still contain the fixed points (Banach)."""
    policy = policies(infinite_mdp)["deterministic"]
    low_star, high_star = robust_fixed_points(to_numpy(infinite_mdp), policy, radius(K, BETA), BETA)
    b = cost_of_privacy(
        infinite_mdp,
        policy,
        jp.Dirichlet(K),
        jp.PaperSet(BETA),
        options=jp.SolverOptions(max_iterations=3),
    )
    assert not bool(b.converged) and int(b.iterations) == 3
    assert np.all(np.asarray(b.lower) <= low_star + 1e-5)
    assert np.all(np.asarray(b.upper) >= high_star - 1e-5)
    loose = cost_of_privacy(
        infinite_mdp, policy, jp.Dirichlet(K), jp.PaperSet(BETA), options=jp.SolverOptions(tol=0.5)
    )
    assert bool(loose.converged)
    assert np.all(np.asarray(loose.lower) <= low_star + 1e-5)
    assert np.all(np.asarray(loose.upper) >= high_star - 1e-5)
    assert np.all(np.asarray(loose.lower) >= low_star - 2 * 0.5 - 1e-5)
    assert np.all(np.asarray(loose.upper) <= high_star + 2 * 0.5 + 1e-5)


@pytest.mark.integration  # see test_finite_bounds_float64
def test_infinite_bounds_float64():
    with jax.enable_x64(True):
        mdp = build_mdp(3, horizon=None, masked=True, dtype=np.float64)
        policy = policies(mdp, seed=2)["stochastic"]
        low_star, high_star = robust_fixed_points(to_numpy(mdp), policy, radius(K, BETA), BETA)
        b = cost_of_privacy(mdp, policy, jp.Dirichlet(K), jp.PaperSet(BETA))
        low, high = np.asarray(b.lower), np.asarray(b.upper)
        tol = float(default_tolerance(mdp))
    assert bool(b.converged) and tol < 1e-6
    assert np.all(low <= low_star + 1e-9) and np.all(high >= high_star - 1e-9)
    assert np.all(low >= low_star - 2 * tol - 1e-9)
    assert np.all(high <= high_star + 2 * tol + 1e-9)


# ----------------------------------------------------------------------------- the cost


@pytest.mark.parametrize("horizon", [T, None], ids=["finite", "infinite"])
def test_cost_at_initial_state(horizon):
    mdp = build_mdp(6, horizon=horizon, initial_state=2)
    b = cost_of_privacy(mdp, policies(mdp)["deterministic"], jp.Dirichlet(K), jp.PaperSet(BETA))
    at = (0, 2) if horizon else (2,)
    assert b.cost.shape == ()
    assert float(b.cost) == pytest.approx(float(b.upper[at] - b.lower[at]), abs=1e-6)
    assert float(b.cost) > 0


@pytest.mark.parametrize("horizon", [T, None], ids=["finite", "infinite"])
def test_larger_k_gives_smaller_cost(horizon):
    """Larger k, smaller α, a smaller set P̂: v̲ rises and v̄ falls everywhere."""
    mdp = build_mdp(8, horizon=horizon, masked=True)
    policy = policies(mdp)["stochastic"]
    ks = [0.5, 2.0, K, 20.0, 100.0, 1e4]
    out = [cost_of_privacy(mdp, policy, jp.Dirichlet(k), jp.PaperSet(BETA)) for k in ks]
    costs = np.array([float(b.cost) for b in out])
    assert np.all(np.diff(costs) < 0), costs
    tol = 0.0 if horizon else float(default_tolerance(mdp))  # infinite: iteration error
    for lo, hi in zip(out[:-1], out[1:], strict=True):
        assert np.all(np.asarray(lo.lower) <= np.asarray(hi.lower) + tol + 1e-5)
        assert np.all(np.asarray(lo.upper) >= np.asarray(hi.upper) - tol - 1e-5)
    # A smaller beta gives a larger alpha too, but also less weight on the free P1: no
    # monotonicity claim there; only that a valid beta works.
    assert np.isfinite(float(cost_of_privacy(mdp, policy, jp.Dirichlet(K), jp.PaperSet(0.01)).cost))


def test_traced_k_jit_and_vmap_equal_eager(finite_mdp):
    """k is a traced leaf: a grid of k under vmap (full width) equals the eager loop."""
    policy = policies(finite_mdp)["deterministic"]
    ks = jnp.array([1.0, K, 50.0])
    batched = jax.vmap(
        lambda k: cost_of_privacy(finite_mdp, policy, jp.Dirichlet(k), jp.PaperSet(BETA)).cost
    )(ks)
    jitted = jax.jit(
        lambda k: cost_of_privacy(finite_mdp, policy, jp.Dirichlet(k), jp.PaperSet(BETA)).cost
    )
    for i, k in enumerate(ks):
        eager = float(
            cost_of_privacy(finite_mdp, policy, jp.Dirichlet(float(k)), jp.PaperSet(BETA)).cost
        )
        assert float(batched[i]) == pytest.approx(eager, abs=1e-6)
        assert float(jitted(k)) == pytest.approx(eager, abs=1e-6)


def test_no_retracing_across_k_and_beta(finite_mdp):
    """k and beta are traced values: a grid of them reuses one trace."""
    policy = policies(finite_mdp)["deterministic"]

    @jax.jit
    @chex.assert_max_traces(n=1)
    def cost(k, beta):
        return cost_of_privacy(finite_mdp, policy, jp.Dirichlet(k), jp.PaperSet(beta)).cost

    costs = [float(cost(jnp.float32(k), jnp.float32(0.1))) for k in (1.0, 5.0, 40.0)]
    costs.append(float(cost(jnp.float32(40.0), jnp.float32(0.05))))
    assert costs[0] > costs[1] > costs[2] and costs[3] > costs[2]  # tighter with k, looser with β↓


def test_privatized_mdp_with_structural_zeros():
    """On a P̄ from the mechanism (support="nonzero"), the bounds still bracket V̄^π̄."""
    P = np.array(build_mdp(2, masked=True).transitions, np.float64)
    mdp = build_mdp(2, masked=True)
    P[:, :, 0] = 0.0  # nobody returns to state 0
    P /= np.maximum(P.sum(-1, keepdims=True), 1e-30)
    mdp = jp.make_mdp(
        P,
        np.asarray(mdp.rewards),
        terminal_reward=np.asarray(mdp.terminal_reward),
        horizon=T,
        action_mask=np.asarray(mdp.action_mask),
    )
    p_bar = jp.dirichlet_mechanism(
        jax.random.key(0),
        P,
        jp.Dirichlet(3.0),
        action_mask=np.asarray(mdp.action_mask),
        support="nonzero",
    )
    private = jp.make_mdp(
        p_bar,
        np.asarray(mdp.rewards),
        terminal_reward=np.asarray(mdp.terminal_reward),
        horizon=T,
        action_mask=np.asarray(mdp.action_mask),
    )
    policy = np.asarray(jp.solve(private).policy)
    b = cost_of_privacy(private, policy, jp.Dirichlet(3.0), jp.PaperSet(BETA))
    value = np.asarray(jp.evaluate(private, policy))
    assert np.all(np.asarray(b.lower) <= value)
    assert np.all(value <= np.asarray(b.upper))
    low, high = lp_bounds_finite(to_numpy(private), policy, radius(3.0, BETA), BETA)
    assert_outward(b, low, high)


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("objects", "match"),
    [
        (lambda: (jp.Dirichlet(0.0),), "^k must"),
        (lambda: (jp.Dirichlet(-2.0),), "^k must"),
        (lambda: (jp.Dirichlet(np.nan),), "^k must"),
        (lambda: (jp.Dirichlet(K), jp.PaperSet(0.0)), "^beta must"),
        (lambda: (jp.Dirichlet(K), jp.PaperSet(1.0)), "^beta must"),
        (lambda: (jp.Dirichlet(K), jp.PaperSet(-0.5)), "^beta must"),
        (lambda: (jp.Dirichlet(K), jp.PaperSet(1.5)), "^beta must"),
    ],
)
def test_bad_parameters(masked_finite_mdp, objects, match):
    policy = policies(masked_finite_mdp)["deterministic"]
    with pytest.raises(ValueError, match=match):
        cost_of_privacy(masked_finite_mdp, policy, *objects())


def test_bad_policies(masked_finite_mdp):
    mdp = masked_finite_mdp
    det = policies(mdp)["deterministic"]
    stoch = policies(mdp)["stochastic"]
    with pytest.raises(ValueError, match="deterministic policy must have shape"):
        cost_of_privacy(mdp, det[0], jp.Dirichlet(K))
    with pytest.raises(ValueError, match="stochastic policy must have shape"):
        cost_of_privacy(mdp, stoch[0], jp.Dirichlet(K))
    masked = det.copy()
    masked[1, 0] = 0  # state 0's action 0 is masked
    with pytest.raises(ValueError, match=r"masked action at \(stage/state\) \(1, 0\)"):
        cost_of_privacy(mdp, masked, jp.Dirichlet(K))
    bad = stoch.copy()
    bad[0, 0] = 1.0 / A  # probability on the masked action 0 of state 0
    with pytest.raises(ValueError, match="probability on a masked action"):
        cost_of_privacy(mdp, bad, jp.Dirichlet(K))
    bad = stoch.copy()
    bad[2, 3] *= 0.9
    with pytest.raises(ValueError, match="sum to 1"):
        cost_of_privacy(mdp, bad, jp.Dirichlet(K))
    with pytest.raises(ValueError, match=r"policy actions must lie in \[0, 3\)"):
        cost_of_privacy(mdp, np.full((T, S), 3), jp.Dirichlet(K))


def test_strict_rank_promotion(finite_mdp):
    policy = policies(finite_mdp)["deterministic"]
    with jax.numpy_rank_promotion("raise"):
        b = jp.cost_of_privacy(finite_mdp, policy, jp.Dirichlet(K), jp.PaperSet(BETA))
    assert np.isfinite(float(b.cost))


@pytest.mark.filterwarnings("ignore:overflow:RuntimeWarning")
@pytest.mark.parametrize("horizon", [T, None], ids=["finite", "infinite"])
def test_stochastic_bounds_ignore_huge_junk_in_masked_rows(horizon):
    P, R, RT, mask = random_arrays(2, masked=True)
    P[~mask] = -3e38
    if horizon is None:
        mdp = jp.make_mdp(P, R, discount=GAMMA, action_mask=mask)
    else:
        mdp = jp.make_mdp(P, R, terminal_reward=RT, horizon=T, action_mask=mask)
    policy = policies(mdp)["stochastic"]
    b = cost_of_privacy(mdp, policy, jp.Dirichlet(K), jp.PaperSet(BETA))
    assert np.all(np.isfinite(b.lower)) and np.all(np.isfinite(b.upper))


def test_scalar_k_beta_and_finite_tol_are_required(finite_mdp, infinite_mdp):
    policy = policies(finite_mdp)["deterministic"]
    with pytest.raises(ValueError, match="k must be a scalar"):
        cost_of_privacy(finite_mdp, policy, jp.Dirichlet([1.0, 1000.0]), jp.PaperSet(BETA))
    with pytest.raises(ValueError, match="beta must be a scalar"):
        cost_of_privacy(finite_mdp, policy, jp.Dirichlet(K), jp.PaperSet([0.1, 0.9]))
    inf_policy = jp.solve(infinite_mdp).policy
    for tol in (float("nan"), -1.0, [1e-3, 1e-3]):
        with pytest.raises(ValueError, match="tol must"):
            cost_of_privacy(
                infinite_mdp,
                inf_policy,
                jp.Dirichlet(K),
                jp.PaperSet(BETA),
                options=jp.SolverOptions(tol=tol),
            )
        with pytest.raises(ValueError, match="tol must"):
            jp.solve(infinite_mdp, options=jp.SolverOptions(tol=tol))
