"""solve / evaluate against plain NumPy dynamic programming written here."""

import dataclasses
from fractions import Fraction

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
    np_backward_induction,
    np_evaluate,
    np_policy_matrices,
    np_value_iteration,
    random_arrays,
    random_stochastic_policy,
    to_numpy,
)

import jaxprivmdp as jp
from jaxprivmdp.planning import _policies
from jaxprivmdp.planning._error_free import exact_product, ff_sum
from jaxprivmdp.planning._rounding import (
    backup_ulps,
    contraction_modulus,
    default_tolerance,
    rounding_margin,
)

# Tests of float32's rounding limits: under JAX_ENABLE_X64 (CI's second pass) the models are
# float64, whose tolerances all certify.
FLOAT32_ONLY = pytest.mark.skipif(
    bool(jax.config.read("jax_enable_x64")), reason="about float32's rounding"
)


def assert_greedy(policy, Q, mask, *, atol):
    """``policy`` picks allowed actions whose Q is within ``atol`` of the max; where the best
    action wins by more than ``atol`` it is exactly the oracle's."""
    policy = np.asarray(policy)
    chosen = np.take_along_axis(Q, policy[..., None], -1)[..., 0]
    assert np.all(np.take_along_axis(np.broadcast_to(mask, Q.shape), policy[..., None], -1))
    assert np.all(chosen >= Q.max(-1) - atol)
    top2 = np.sort(np.where(np.isfinite(Q), Q, -1e30), -1)[..., -2:]
    decisive = top2[..., 1] - top2[..., 0] > atol
    assert decisive.mean() > 0.8  # the comparison below is not vacuous
    np.testing.assert_array_equal(policy[decisive], Q.argmax(-1)[decisive])


# ----------------------------------------------------------------------------- finite


@pytest.mark.parametrize("name", ["finite_mdp", "masked_finite_mdp"])
def test_backward_induction_matches_numpy(name, request):
    mdp = request.getfixturevalue(name)
    o = to_numpy(mdp)
    pol, V, Q = np_backward_induction(o["P"], o["R"], o["RT"], o["gamma"], o["mask"], T)
    sol = jp.solve(mdp)
    assert sol.policy.shape == (T, S) and sol.policy.dtype == jnp.int32
    assert sol.values.shape == (T + 1, S)
    assert int(sol.iterations) == T and bool(sol.converged)
    np.testing.assert_allclose(sol.values, V, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(sol.values[T], mdp.terminal_reward)
    assert_greedy(sol.policy, Q, o["mask"], atol=1e-4)


def test_masked_actions_never_chosen():
    """Masked actions carry a reward of 1e6 in the fixtures: still never chosen."""
    for horizon in (T, None):
        mdp = build_mdp(2, horizon=horizon, masked=True)
        mask = np.asarray(mdp.action_mask)
        assert not mask.all() and np.asarray(mdp.rewards)[~mask].min() == 1e6
        policy = np.asarray(jp.solve(mdp).policy)
        assert np.all(
            np.take_along_axis(np.broadcast_to(mask, policy.shape + (A,)), policy[..., None], -1)
        )
        assert np.all(policy[..., 0] != 0)  # state 0's lowest action is masked


def tie_mdp(horizon):
    """Actions 0, 1, 2 are identical in state 1 (tie → 0); in state 0 action 0 is masked and
    1, 2 are identical (tie → 1); in state 2 actions 1 and 2 tie above action 0 (→ 1)."""
    P, R, RT, _ = random_arrays(7)
    P[1, :] = P[1, 0]
    R[1, :] = R[1, 0]
    P[0, 2], R[0, 2] = P[0, 1], R[0, 1]
    R[0, 0] = 1e3
    P[2, 2], R[2, 2] = P[2, 1], R[2, 1]
    R[2, 0] = R[2, 1] - 100.0
    mask = np.ones((S, A), bool)
    mask[0, 0] = False
    if horizon is None:
        return jp.make_mdp(P, R, discount=GAMMA, action_mask=mask)
    return jp.make_mdp(P, R, terminal_reward=RT, horizon=horizon, action_mask=mask)


@pytest.mark.parametrize("horizon", [T, None], ids=["finite", "infinite"])
def test_ties_go_to_lowest_allowed_action(horizon):
    policy = np.asarray(jp.solve(tie_mdp(horizon)).policy)
    assert np.all(policy[..., 0] == 1)
    assert np.all(policy[..., 1] == 0)
    assert np.all(policy[..., 2] == 1)


def test_horizon_one_and_discount_zero():
    """T = 1 is a single greedy step on r + γ P R_T; γ = 0 makes it myopic."""
    P, R, RT, _ = random_arrays(9)
    mdp = jp.make_mdp(P, R, terminal_reward=RT, horizon=1, discount=0.0)
    sol = jp.solve(mdp)
    np.testing.assert_array_equal(sol.policy[0], R.argmax(-1))
    np.testing.assert_allclose(sol.values[0], R.max(-1), rtol=1e-6)


# ----------------------------------------------------------------------------- infinite


@pytest.mark.parametrize("name", ["infinite_mdp", "masked_infinite_mdp"])
def test_value_iteration_matches_numpy(name, request):
    mdp = request.getfixturevalue(name)
    o = to_numpy(mdp)
    V_star, Q = np_value_iteration(o["P"], o["R"], o["gamma"], o["mask"])
    sol = jp.solve(mdp)
    tol = float(default_tolerance(mdp))
    assert sol.policy.shape == (S,) and sol.values.shape == (S,)
    assert bool(sol.converged) and 0 < int(sol.iterations) < 10_000
    # The iterate is within tol / 2 of V* (plus float32 rounding of values ~ 1 / (1 − γ)).
    assert np.max(np.abs(np.asarray(sol.values) - V_star)) <= tol / 2 + 1e-5 / (1 - GAMMA)
    # The greedy policy is tol-optimal: its exact value (a NumPy linear solve) is close to V*.
    V_pi = np_evaluate(o["P"], o["R"], None, o["gamma"], sol.policy, None)
    assert np.all(V_pi >= V_star - tol) and np.all(V_pi <= V_star + 1e-9)
    assert_greedy(sol.policy, Q, o["mask"], atol=tol)


def test_value_iteration_tolerance_and_guard(infinite_mdp):
    o = to_numpy(infinite_mdp)
    V_star, _ = np_value_iteration(o["P"], o["R"], o["gamma"], o["mask"])
    loose = jp.solve(infinite_mdp, options=jp.SolverOptions(tol=0.5))
    tight = jp.solve(infinite_mdp)
    assert bool(loose.converged) and int(loose.iterations) < int(tight.iterations)
    V_pi = np_evaluate(o["P"], o["R"], None, o["gamma"], loose.policy, None)
    assert np.all(V_pi >= V_star - 0.5)
    assert np.max(np.abs(np.asarray(loose.values) - V_star)) <= 0.25 + 1e-4
    capped = jp.solve(infinite_mdp, options=jp.SolverOptions(max_iterations=3))
    assert not bool(capped.converged) and int(capped.iterations) == 3


def test_infinite_discount_zero(infinite_mdp):
    mdp = dataclasses.replace(infinite_mdp, discount=jnp.float32(0.0))
    sol = jp.solve(mdp)
    assert bool(sol.converged) and int(sol.iterations) == 1
    np.testing.assert_array_equal(sol.policy, np.asarray(mdp.rewards).argmax(-1))


def test_float64():
    with jax.enable_x64(True):
        for horizon in (T, None):
            mdp = build_mdp(4, horizon=horizon, masked=True, dtype=np.float64)
            assert mdp.rewards.dtype == jnp.float64
            o = to_numpy(mdp)
            sol = jp.solve(mdp)
            assert sol.values.dtype == jnp.float64
            if horizon is None:
                V, Q = np_value_iteration(o["P"], o["R"], o["gamma"], o["mask"])
                tol = float(default_tolerance(mdp))
                assert tol < 1e-6
                assert np.max(np.abs(np.asarray(sol.values) - V)) <= tol / 2 + 1e-12
                vals = jp.evaluate(mdp, sol.policy)
                np.testing.assert_allclose(vals, V, atol=tol)
            else:
                pol, V, Q = np_backward_induction(o["P"], o["R"], o["RT"], o["gamma"], o["mask"], T)
                np.testing.assert_allclose(sol.values, V, rtol=1e-12, atol=1e-12)
                np.testing.assert_array_equal(sol.policy, pol)
                vals = jp.evaluate(mdp, sol.policy)
                np.testing.assert_allclose(vals, V, rtol=1e-12, atol=1e-12)
            assert_greedy(sol.policy, Q, o["mask"], atol=1e-9)


# ----------------------------------------------------------------------------- evaluate


def test_evaluate_deterministic_and_stochastic(any_mdp):
    o = to_numpy(any_mdp)
    lead = (T,) if any_mdp.is_finite_horizon else ()
    rng = np.random.default_rng(3)
    det = np.zeros(lead + (S,), np.int32)
    for idx in np.ndindex(*det.shape):
        det[idx] = rng.choice(np.flatnonzero(o["mask"][idx[-1]]))
    stoch = random_stochastic_policy(4, o["mask"], lead)
    for policy in (det, stoch):
        got = jp.evaluate(any_mdp, policy)
        want = np_evaluate(o["P"], o["R"], o["RT"], o["gamma"], policy, o["horizon"])
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)
    # A one-hot stochastic policy is the deterministic one.
    one_hot = np.eye(A, dtype=np.float32)[det]
    np.testing.assert_allclose(
        jp.evaluate(any_mdp, one_hot), jp.evaluate(any_mdp, det), rtol=1e-5, atol=1e-5
    )


def test_evaluate_of_optimal_policy_is_optimal_value(any_mdp):
    sol = jp.solve(any_mdp)
    vals = jp.evaluate(any_mdp, sol.policy)
    if any_mdp.is_finite_horizon:
        np.testing.assert_allclose(vals, sol.values, rtol=1e-6, atol=1e-6)
    else:
        tol = float(default_tolerance(any_mdp))
        np.testing.assert_allclose(vals, sol.values, atol=tol)


BAD_POLICIES = [
    ("finite_mdp", np.zeros((S,), np.int32), "deterministic policy must have shape"),
    ("finite_mdp", np.zeros((T, S + 1), np.int32), "deterministic policy must have shape"),
    ("infinite_mdp", np.zeros((T, S), np.int32), "deterministic policy must have shape"),
    ("finite_mdp", np.full((T, S), A, np.int32), r"policy actions must lie in \[0, 3\)"),
    ("finite_mdp", np.full((T, S), -1, np.int32), r"policy actions must lie in"),
    ("masked_finite_mdp", np.zeros((T, S), np.int32), r"masked action at \(stage/state\) \(0, 0\)"),
    ("masked_infinite_mdp", np.zeros((S,), np.int32), r"masked action at \(stage/state\) \(0,\)"),
    ("finite_mdp", np.full((S, A), 1 / 3, np.float32), "stochastic policy must have shape"),
    ("infinite_mdp", np.full((S, A), 0.3, np.float32), "must sum to 1"),
    ("infinite_mdp", np.eye(A, dtype=np.float32)[[0, 1, 2, 0, 1]] * 1.5 - 0.25, "non-negative"),
    ("infinite_mdp", np.full((S, A), np.nan, np.float32), "finite and non-negative"),
    ("masked_infinite_mdp", np.full((S, A), 1 / 3, np.float32), "masked action"),
    ("infinite_mdp", np.full((S,), "a"), "ints .* or floats"),
]


@pytest.mark.parametrize(("name", "policy", "match"), BAD_POLICIES)
def test_evaluate_rejects_bad_policies(name, policy, match, request):
    mdp = request.getfixturevalue(name)
    with pytest.raises(ValueError, match=match):
        jp.evaluate(mdp, policy)


@pytest.mark.parametrize(
    ("name", "policy", "match"), [b for b in BAD_POLICIES if b[1].dtype.kind in "if"]
)
def test_device_checked_policies_get_the_same_errors(name, policy, match, request, monkeypatch):
    """Large device policies are checked on the device first (no copy): a bad one still
    gets the host check's message, a good one comes back as given."""
    monkeypatch.setattr(_policies, "HOST_CHECK_MAX", 0)
    mdp = request.getfixturevalue(name)
    with pytest.raises(ValueError, match=match):
        jp.evaluate(mdp, jnp.asarray(policy))
    good = jp.solve(mdp).policy
    assert _policies.validate_policy(mdp, good) is good


# ----------------------------------------------------------------------------- transforms


def stack(mdps):
    return jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *mdps)


@pytest.mark.parametrize("horizon", [T, None], ids=["finite", "infinite"])
def test_jit_equals_eager(horizon):
    mdp = build_mdp(5, horizon=horizon, masked=True)
    eager = jp.solve(mdp)
    jitted = jax.jit(lambda m: jp.solve(m))(mdp)
    np.testing.assert_array_equal(jitted.policy, eager.policy)
    np.testing.assert_allclose(jitted.values, eager.values, rtol=1e-6, atol=1e-6)
    assert int(jitted.iterations) == int(eager.iterations)
    ev = jax.jit(jp.evaluate)(mdp, eager.policy)
    np.testing.assert_allclose(ev, jp.evaluate(mdp, eager.policy), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("horizon", [T, None], ids=["finite", "infinite"])
def test_vmap_over_mdps_equals_loop(horizon):
    mdps = [build_mdp(seed, horizon=horizon, masked=seed % 2 == 1) for seed in (10, 11, 12)]
    batched = jax.vmap(jp.solve)(stack(mdps))
    stoch = np.stack(
        [
            random_stochastic_policy(i, np.asarray(m.action_mask), (T,) if horizon else ())
            for i, m in enumerate(mdps)
        ]
    )
    batched_eval = jax.vmap(jp.evaluate)(stack(mdps), jnp.asarray(stoch))
    for i, mdp in enumerate(mdps):
        one = jp.solve(mdp)
        np.testing.assert_array_equal(batched.policy[i], one.policy)
        np.testing.assert_allclose(batched.values[i], one.values, rtol=1e-6, atol=1e-6)
        assert bool(batched.converged[i])
        np.testing.assert_allclose(
            batched_eval[i], jp.evaluate(mdp, stoch[i]), rtol=1e-5, atol=1e-5
        )


def test_evaluate_fixed_policy_under_jit():
    mdp = build_mdp(5, horizon=T)
    policy = np.zeros((T, S), np.int32)
    jitted = jax.jit(lambda m: jp.evaluate(m, policy))(mdp)
    np.testing.assert_allclose(jitted, jp.evaluate(mdp, policy), rtol=1e-6)


@pytest.mark.filterwarnings("ignore:overflow:RuntimeWarning")
def test_stochastic_evaluate_ignores_huge_junk_in_masked_rows():
    P, R, RT, mask = random_arrays(2, masked=True)
    P[~mask] = -3e38
    mdp = jp.make_mdp(P, R, terminal_reward=RT, horizon=T, action_mask=mask)
    policy = random_stochastic_policy(0, mask, (T,))
    assert np.all(np.isfinite(jp.evaluate(mdp, policy)))


def test_ragged_policy_is_named(finite_mdp):
    with pytest.raises(ValueError, match="policy could not be converted"):
        jp.evaluate(finite_mdp, [[0, [1, 2]]])


# ----------------------------------------------------------------------------- rounding
# float32 value iteration lands on a fixed point of the *rounded* Bellman operator, up to
# ρ/(1 − γ) away from V*: `converged` must still mean "within tol/2 of V*".


def forest(p=0.1, r1=4.0, r2=2.0, num_states=3):
    """pymdptoolbox's ``forest()`` (wait = 0, cut = 1), as ``[S, A, S]`` rows."""
    S = num_states
    P = np.zeros((S, 2, S))
    P[:, 0, 0] = p
    P[np.arange(S - 1), 0, np.arange(1, S)] = 1 - p
    P[S - 1, 0, S - 1] = 1 - p
    P[:, 1, 0] = 1.0
    R = np.zeros((S, 2))
    R[S - 1, 0] = r1
    R[1:, 1] = 1.0
    R[S - 1, 1] = r2
    return P, R


def exact_solution(mdp):
    """``V*`` of the model as stored (its float32 arrays, in float64), by policy iteration."""
    o = to_numpy(mdp)
    V, _ = np_value_iteration(o["P"], o["R"], o["gamma"], o["mask"], tol=1e-11)
    for _ in range(50):
        Q = np.where(o["mask"], o["R"] + o["gamma"] * np.einsum("sat,t->sa", o["P"], V), -np.inf)
        V_new = np_evaluate(o["P"], o["R"], None, o["gamma"], Q.argmax(-1), None)
        if np.array_equal(V_new, V):
            break
        V = V_new
    return V, o


def check_promises(mdp, sol, tol):
    """``error_bound`` always holds; ``converged`` promises ``tol / 2`` and a tol-optimal
    greedy policy. Returns the error."""
    V_star, o = exact_solution(mdp)
    values = np.asarray(sol.values, np.float64)
    error = np.max(np.abs(values - V_star))
    assert error <= float(sol.error_bound), (error, float(sol.error_bound))
    if bool(sol.converged):
        assert error <= tol / 2, (tol, error)
        V_pi = np_evaluate(o["P"], o["R"], None, o["gamma"], sol.policy, None)
        assert np.all(V_pi >= V_star - tol)
        assert float(sol.error_bound) <= tol / 2
    return error


@pytest.mark.parametrize(
    ("name", "tol", "certifiable"),
    [
        ("forest", 1e-2, True),
        ("forest", 1e-6, False),  # was converged=True with an error of 1.9e-4
        ("one_state", 1.0, True),
        ("one_state", 1e-7, False),  # V* = 1000: was converged=True with an error of 4.9e-4
    ],
)
@FLOAT32_ONLY
def test_float32_convergence_is_certified_with_rounding(name, tol, certifiable):
    if name == "forest":
        mdp = jp.make_mdp(*forest(), discount=0.96)
    else:
        mdp = jp.make_mdp(np.ones((1, 1, 1)), [[100.0]], discount=0.9)
    sol = jp.solve(mdp, options=jp.SolverOptions(tol=tol))
    error = check_promises(mdp, sol, tol)
    assert bool(sol.converged) == certifiable
    if not certifiable:
        # Below the floor: the loop stops on rounding, not on the guard, with a bound that
        # says what holds (a few times the rounding floor, not the requested tol).
        assert int(sol.iterations) < 10_000
        assert tol / 2 < error <= float(sol.error_bound) < 0.1
    # The default tolerance is always certifiable (passed explicitly: one compilation).
    default_tol = default_tolerance(mdp, ulps=backup_ulps(mdp), modulus=contraction_modulus(mdp))
    default = jp.solve(mdp, options=jp.SolverOptions(tol=default_tol))
    assert bool(default.converged)
    check_promises(mdp, default, float(default_tol))


@pytest.mark.parametrize(
    ("kind", "gamma"),
    [(kind, gamma) for kind in ("dense", "sparse") for gamma in (0.5, 0.9, 0.99)]
    + [("dense64", 0.99)],
)
@FLOAT32_ONLY
def test_converged_solutions_are_within_tol_of_the_exact_optimum(kind, gamma):
    """Random float32 models and tolerances from loose to far below what float32 certifies:
    whenever ``converged``, the values are within tol/2 of V* (float64) and the policy is
    tol-optimal; the error bound always holds. ``dense64``: S = 64, where the rounding of a
    backup is the summation heuristic rather than the worst case."""
    certified = 0
    for seed in range(3):
        if kind == "dense64":
            P, R, _, _ = random_arrays(seed, num_states=64, num_actions=2, concentration=0.3)
            mdp = jp.make_mdp(P, R, discount=gamma)
        else:
            mdp = build_mdp(seed, horizon=None, masked=seed == 1)
            mdp = dataclasses.replace(mdp, discount=jnp.float32(gamma))
        if kind == "sparse":
            mdp = jp.to_sparse(mdp)
        scale = float(np.max(np.asarray(mdp.rewards)[np.asarray(mdp.action_mask)])) / (1 - gamma)
        for rel in (1e-1, 1e-3, 1e-4, 1e-5, 1e-7):
            sol = jp.solve(mdp, options=jp.SolverOptions(tol=rel * scale))
            check_promises(jp.to_dense(mdp) if kind == "sparse" else mdp, sol, rel * scale)
            certified += bool(sol.converged)
    assert 6 <= certified < 15  # both outcomes occur


def test_finite_horizon_error_bound_holds():
    for seed in range(2):
        mdp = build_mdp(seed, masked=seed == 1)
        o = to_numpy(mdp)
        _, V, _ = np_backward_induction(o["P"], o["R"], o["RT"], o["gamma"], o["mask"], T)
        sol = jp.solve(mdp)
        error = np.max(np.abs(np.asarray(sol.values, np.float64) - V))
        assert 0 < float(sol.error_bound) < 1e-4 and error <= float(sol.error_bound)


def test_solution_error_bound_is_optional():
    """The field added last has a default: code building a Solution by hand keeps working."""
    sol = jp.Solution(jnp.zeros(2, jnp.int32), jnp.zeros(2), jnp.asarray(1), jnp.asarray(True))
    assert sol.error_bound is None and sol._fields[-1] == "error_bound"


def test_rounding_margin_is_zero_without_discount(infinite_mdp):
    mdp = dataclasses.replace(infinite_mdp, discount=jnp.float32(0.0))
    assert float(rounding_margin(mdp, jnp.ones(S))) == 0.0
    assert float(rounding_margin(infinite_mdp, jnp.ones(S))) > 0.0


# ----------------------------------------------------------------------------- sparse evaluate


def test_exact_products_and_double_precision_sums():
    rng = np.random.default_rng(0)
    for dtype in (np.float32, np.float64):
        with jax.enable_x64(dtype == np.float64):
            x, y = (rng.normal(size=500) * np.exp(rng.normal(size=500) * 8) for _ in range(2))
            x, y = x.astype(dtype), y.astype(dtype)
            parts = [np.asarray(t) for t in jax.jit(exact_product)(x, y)]
            for i in range(0, 500, 7):  # exact: rational arithmetic
                assert sum(Fraction(float(t[i])) for t in parts) == Fraction(
                    float(x[i])
                ) * Fraction(float(y[i]))
            # Sums with heavy cancellation: within ~n² u² Σ|x| (a plain sum: n u Σ|x|).
            rows = np.stack([np.concatenate([x, -x, y]), np.concatenate([x, y, -1.5 * x])])
            hi, lo = jax.jit(ff_sum)(jnp.asarray(rows))
            eps = float(np.finfo(dtype).eps)
            for h, low, row in zip(np.asarray(hi), np.asarray(lo), rows, strict=True):
                exact = sum(map(Fraction, map(float, row)))
                error = abs(float(Fraction(float(h)) + Fraction(float(low)) - exact))
                assert error <= row.size**2 * eps**2 * np.abs(row).sum()


def sparse_model(seed, gamma, num_states=40, successors=4):
    rng = np.random.default_rng(seed)
    S, A, K = num_states, 2, successors
    next_states = np.stack([[rng.choice(S, K, replace=False) for _ in range(A)] for _ in range(S)])
    probs = rng.dirichlet(np.ones(K), size=(S, A))
    return jp.make_sparse_mdp(next_states, probs, rng.uniform(0, 1, (S, A)), discount=gamma)


@pytest.mark.parametrize("gamma", [0.9, 0.99, 0.999])
def test_sparse_evaluate_is_as_accurate_as_a_float64_solve(gamma):
    """Was 4.8e-5 / 4.3e-3 / 0.49 off (stopping at a step of 4 eps max|V|, ignoring
    1/(1 − γ)), where the dense float32 solve is ~1e-6 / ~5e-5 / ~5e-3 off. Iterative
    refinement with a residual in twice the precision: a few ulps of max|V|."""
    sparse = sparse_model(0, gamma)
    o = to_numpy(jp.to_dense(sparse))
    S_, A_ = sparse.num_states, sparse.num_actions
    det = np.random.default_rng(1).integers(0, A_, S_).astype(np.int32)
    stoch = random_stochastic_policy(2, np.ones((S_, A_), bool))
    for policy in (det, stoch):
        want = np_evaluate(o["P"], o["R"], None, o["gamma"], policy, None)
        got = np.asarray(jp.evaluate(sparse, policy), np.float64)
        ulp = np.finfo(np.float32).eps * np.max(np.abs(want))
        assert np.max(np.abs(got - want)) <= 4 * ulp


def test_sparse_evaluate_gradients():
    """Implicit differentiation through the refinement (reverse mode: a JVP, transposed) vs
    the closed forms ``∂ΣV/∂r(s, a) = u_s π(a|s)`` and ``∂ΣV/∂π(a|s) = u_s q(s, a)`` with
    ``uᵀ = 1ᵀ(I − γ P_π)⁻¹``."""
    sparse = sparse_model(1, 0.9, num_states=8, successors=3)
    o = to_numpy(jp.to_dense(sparse))
    pi = random_stochastic_policy(3, np.ones((8, 2), bool))
    P_pi, _ = np_policy_matrices(o["P"], o["R"], pi)
    u = np.linalg.solve((np.eye(8) - o["gamma"] * P_pi).T, np.ones(8))
    V = np_evaluate(o["P"], o["R"], None, o["gamma"], pi, None)
    q = o["R"] + o["gamma"] * np.einsum("sat,t->sa", o["P"], V)

    def value(rewards, policy):
        return jp.evaluate(dataclasses.replace(sparse, rewards=rewards), policy).sum()

    g_r, g_pi = jax.grad(value, (0, 1))(sparse.rewards, jnp.asarray(pi))
    np.testing.assert_allclose(g_r, u[:, None] * pi, rtol=1e-4)
    np.testing.assert_allclose(g_pi, u[:, None] * q, rtol=1e-4)
