"""solve / evaluate against plain NumPy dynamic programming written here."""

import dataclasses

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
    np_value_iteration,
    random_arrays,
    random_stochastic_policy,
    to_numpy,
)

import jaxprivmdp as jp
from jaxprivmdp._planning import default_tolerance


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
    loose = jp.solve(infinite_mdp, tol=0.5)
    tight = jp.solve(infinite_mdp)
    assert bool(loose.converged) and int(loose.iterations) < int(tight.iterations)
    V_pi = np_evaluate(o["P"], o["R"], None, o["gamma"], loose.policy, None)
    assert np.all(V_pi >= V_star - 0.5)
    assert np.max(np.abs(np.asarray(loose.values) - V_star)) <= 0.25 + 1e-4
    capped = jp.solve(infinite_mdp, max_iterations=3)
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
