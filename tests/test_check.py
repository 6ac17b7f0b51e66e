"""``check``: PRISM properties against hand-computed values, LP oracles and Storm.

The oracles share no code with the library: the graph sets (probability 0 and 1, finite
rewards) are computed here by naive fixpoint loops, the values by SciPy's LP solver (the
textbook LP characterizations of optimal reachability), and a policy's value by a linear
solve.
"""

import re

import jax
import numpy as np
import prism_fixtures as fx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

import jaxprivmdp as jp
from jaxprivmdp.properties._check import check
from jaxprivmdp.properties._parse import parse_property

# --------------------------------------------------------------------------- small models


def knuth_yao():
    """Knuth and Yao's die from fair coin flips: states 0-6 flip, 7-12 are the faces."""
    S = 13
    P = np.zeros((S, 1, S))
    succ = {0: (1, 2), 1: (3, 4), 2: (5, 6), 3: (1, 7), 4: (8, 9), 5: (10, 11), 6: (2, 12)}
    for s, (a, b) in succ.items():
        P[s, 0, a] += 0.5
        P[s, 0, b] += 0.5
    P[np.arange(7, 13), 0, np.arange(7, 13)] = 1.0
    R = np.zeros((S, 1))
    R[:7] = 1.0  # one flip per step
    labels = {"six": np.arange(S) == 12, "done": np.arange(S) >= 7}
    return P, R, labels


def safe_or_risky():
    """0: "safe" (goal 0.8, fail 0.2, reward 1) or "risky" (goal 0.5, to 1 0.5, reward 2);
    1: "back" (to 0, reward 1) or "gamble" (goal 0.3, fail 0.7, reward 0); 2 goal, 3 fail."""
    P = np.zeros((4, 2, 4))
    P[0, 0, [2, 3]] = [0.8, 0.2]
    P[0, 1, [2, 1]] = [0.5, 0.5]
    P[1, 0, 0] = 1.0
    P[1, 1, [2, 3]] = [0.3, 0.7]
    P[2, 0, 2] = P[3, 0, 3] = 1.0
    R = np.array([[1.0, 2.0], [1.0, 0.0], [0.0, 0.0], [0.0, 0.0]])
    mask = np.array([[True, True], [True, True], [True, False], [True, False]])
    labels = {
        "goal": np.array([False, False, True, False]),
        "fail": np.array([False, False, False, True]),
    }
    labels["end"] = labels["goal"] | labels["fail"]
    return P, R, mask, labels


def loop_with_exits():
    """An end component {0, 1} (action 0 moves between them, reward 0) with exits:
    0: action 1 (goal 0.4, fail 0.6, reward 3); 1: action 1 (goal 0.7, fail 0.3, reward 2)."""
    P = np.zeros((4, 2, 4))
    P[0, 0, 1] = P[1, 0, 0] = 1.0
    P[0, 1, [2, 3]] = [0.4, 0.6]
    P[1, 1, [2, 3]] = [0.7, 0.3]
    P[2, 0, 2] = P[3, 0, 3] = 1.0
    R = np.array([[0.0, 3.0], [0.0, 2.0], [0.0, 0.0], [0.0, 0.0]])
    mask = np.array([[True, True], [True, True], [True, False], [True, False]])
    labels = {"goal": np.arange(4) == 2, "end": np.arange(4) >= 2}
    return P, R, mask, labels


# --------------------------------------------------------------------------- hand values


def test_knuth_yao_die():
    P, R, labels = knuth_yao()
    mdp = jp.make_mdp(P, R, discount=0.9)
    res = check(mdp, 'P=? [F "six"]', labels=labels)
    assert res.converged
    assert abs(float(res.value_at_initial) - 1 / 6) <= float(res.error_bound[0]) + 1e-7
    assert float(res.error_bound[0]) <= 1e-4 / 6 * 1.01  # float32 default tol 1e-4
    flips = check(mdp, 'R{"flips"}=? [F "done"]', labels=labels)
    assert abs(float(flips.value_at_initial) - 11 / 3) <= float(flips.error_bound[0]) + 1e-6
    assert np.all(np.asarray(flips.values[7:]) == 0)
    # Bounded: done within 3 flips with probability 3/4; 3 flips cost 3 (each flip costs 1).
    b = check(mdp, 'P=? [F<=3 "done"]', labels=labels)
    assert b.policy.shape == (13,)  # the first step's rule; step_policy=True: (3, 13)
    np.testing.assert_allclose(float(b.value_at_initial), 0.75, atol=float(b.error_bound[0]))
    c = check(mdp, "R=? [C<=3]", labels=labels)
    np.testing.assert_allclose(float(c.value_at_initial), 3.0, atol=float(c.error_bound[0]))


def test_knuth_yao_from_prism_files(tmp_path):
    """End to end: PRISM's explicit files (the project's writer), loaded and checked."""
    path = fx.write_prism(fx.knuth_yao_die(), tmp_path)
    with jax.enable_x64(True):
        mdp = jp.load_mdp(path, reward_structure="flips", dtype=np.float64)
        labels = jp.load_labels(path)
        res = check(mdp, 'R{"flips"}=? [F "done"]', labels=labels, reward_name="flips")
        assert abs(float(res.value_at_initial) - 11 / 3) <= float(res.error_bound[0]) + 1e-15
        assert float(res.error_bound[0]) <= 11 / 3 * 1e-6
        six = check(mdp, 'P=? [F "six" & !"deadlock"]', labels=labels)
        assert abs(float(six.value_at_initial) - 1 / 6) <= float(six.error_bound[0]) + 1e-15
        with pytest.raises(ValueError, match="no reward structure 'six'.*'flips'"):
            check(mdp, 'R{"six"}=? [F "done"]', labels=labels, reward_name="flips")


def test_safe_or_risky_max_and_min():
    P, R, mask, labels = safe_or_risky()
    with jax.enable_x64(True):
        mdp = jp.make_mdp(P, R, action_mask=mask, discount=0.9, dtype=np.float64)
        pmax = check(mdp, 'Pmax=? [F "goal"]', labels=labels)
        # risky, then back, repeated: the goal is reached with probability 1 (Prob1E).
        np.testing.assert_array_equal(np.asarray(pmax.values), [1, 1, 1, 0])
        np.testing.assert_array_equal(np.asarray(pmax.error_bound), 0)
        assert list(np.asarray(pmax.policy[:2])) == [1, 0]
        pmin = check(mdp, 'Pmin=? [F "goal"]', labels=labels, tol=1e-12)
        np.testing.assert_allclose(np.asarray(pmin.values), [0.65, 0.3, 1, 0], atol=1e-11)
        assert list(np.asarray(pmin.policy[:2])) == [1, 1]
        # Avoiding fail until goal is the same here; G is the complement of F.
        until = check(mdp, 'Pmin=? [!"fail" U "goal"]', labels=labels, tol=1e-12)
        np.testing.assert_allclose(np.asarray(until.values), np.asarray(pmin.values), atol=1e-11)
        g = check(mdp, 'Pmax=? [G !"goal"]', labels=labels, tol=1e-12)
        np.testing.assert_allclose(np.asarray(g.values), 1 - np.asarray(pmin.values), atol=1e-11)
        # Every scheduler ends (Prob1A), so Rmax is finite: V0 = 2 + (1 + V0)/2 = 5, V1 = 6.
        rmax = check(mdp, 'Rmax=? [F "end"]', labels=labels, tol=1e-12)
        np.testing.assert_allclose(np.asarray(rmax.values), [5, 6, 0, 0], rtol=1e-11)
        assert list(np.asarray(rmax.policy[:2])) == [1, 0]
        rmin = check(mdp, 'Rmin=? [F "end"]', labels=labels, tol=1e-12)
        np.testing.assert_allclose(np.asarray(rmin.values), [1, 0, 0, 0], rtol=1e-11)
        assert list(np.asarray(rmin.policy[:2])) == [0, 1]
        # Reaching "goal" a.s. is possible (Rmin finite) but not forced (Rmax infinite).
        assert np.isinf(check(mdp, 'Rmax=? [F "goal"]', labels=labels).value_at_initial)
        assert np.isinf(check(mdp, 'Rmin=? [F "goal"]', labels=labels).values[3])


def test_end_components_are_collapsed():
    """Pmax and Rmin over an end component: plain value iteration would stall at 1 / 0."""
    P, R, mask, labels = loop_with_exits()
    with jax.enable_x64(True):
        dense = jp.make_mdp(P, R, action_mask=mask, discount=0.9, dtype=np.float64)
        for mdp in (dense, jp.to_sparse(dense)):
            pmax = check(mdp, 'Pmax=? [F "goal"]', labels=labels)
            np.testing.assert_allclose(np.asarray(pmax.values), [0.7, 0.7, 1, 0], rtol=1e-6)
            assert pmax.converged and float(pmax.error_bound[0]) <= 0.7e-6
            assert list(np.asarray(pmax.policy[:2])) == [0, 1]  # move to 1, then exit there
            assert float(check(mdp, 'Pmin=? [F "goal"]', labels=labels).values[0]) == 0  # stay
            rmin = check(mdp, 'Rmin=? [F "end"]', labels=labels)
            np.testing.assert_allclose(np.asarray(rmin.values), [2, 2, 0, 0], rtol=1e-6)
            assert abs(float(rmin.values[0]) - 2) <= float(rmin.error_bound[0])
            assert list(np.asarray(rmin.policy[:2])) == [0, 1]
            assert np.isinf(check(mdp, 'Rmax=? [F "end"]', labels=labels).values[0])


def test_infinite_expected_reward_where_the_goal_may_be_missed():
    # 0 -> goal or trap (1/2 each); the trap never reaches the goal.
    P = np.zeros((3, 1, 3))
    P[0, 0, [1, 2]] = 0.5
    P[1, 0, 1] = P[2, 0, 2] = 1.0
    mdp = jp.make_mdp(P, np.ones((3, 1)), discount=0.5)
    labels = {"goal": np.arange(3) == 1}
    for prop in ('Rmin=? [F "goal"]', 'R=? [F "goal"]', 'Rmax=? [F "goal"]'):
        res = check(mdp, prop, labels=labels)
        assert np.isinf(res.values[0]) and np.isinf(res.values[2]) and res.values[1] == 0


def test_rare_event_is_decided_by_the_precomputation():
    """PRISM's rare.nm situation: 1e-13 per step, probability 1; no iteration gets there."""
    P = np.zeros((2, 1, 2))
    P[0, 0] = [1 - 1e-13, 1e-13]
    P[1, 0, 1] = 1.0
    with jax.enable_x64(True):
        mdp = jp.make_mdp(P, np.zeros((2, 1)), discount=0.5, dtype=np.float64)
        res = check(mdp, 'Pmax=? [F "goal"]', labels={"goal": np.array([False, True])})
        assert float(res.value_at_initial) == 1.0 and float(res.error_bound[0]) == 0.0


# --------------------------------------------------------------------------- oracles


def random_model(seed, *, S=7, A=3):
    rng = np.random.default_rng(seed)
    P = np.zeros((S, A, S))
    for s in range(S):
        for a in range(A):
            k = rng.integers(1, 4)
            P[s, a, rng.choice(S, k, replace=False)] = rng.dirichlet(np.ones(k))
    mask = rng.uniform(size=(S, A)) < 0.7
    mask[np.arange(S), rng.integers(0, A, S)] = True
    R = rng.choice([0.0, 0.5, 1.0, 2.0], size=(S, A))
    P[~mask] = 0.0  # junk the library must ignore
    R[~mask] = 1e6
    target = rng.uniform(size=S) < 0.25
    target[rng.integers(S)] = True
    avoid = (rng.uniform(size=S) < 0.15) & ~target
    return P, R, mask, target, avoid


def as_stored(mdp, mask):
    """The model's rows and rewards as stored (float32 rounding included), in float64, each
    row divided by its sum: the distributions they stand for, whose values ``check`` bounds."""
    P = np.where(mask[:, :, None], np.asarray(mdp.transitions, np.float64), 0)
    sums = P.sum(axis=-1, keepdims=True)
    return P / np.where(sums > 0, sums, 1), np.asarray(mdp.rewards, np.float64)


def edges(P, mask):
    return (P > 0) & mask[:, :, None]


def prob0_min(P, mask, target, avoid):
    """Greatest Z ⊆ ¬target: avoid states, and states with an action staying in Z."""
    E = edges(P, mask)
    Z = ~target
    while True:
        stay = np.any(mask & ~np.any(E & ~Z[None, None, :], axis=2), axis=1)
        Z_new = Z & (avoid | stay)
        if np.array_equal(Z_new, Z):
            return Z
        Z = Z_new


def e_reach(E, X, through):
    """States that reach X along edges of some action, moving only through ``through``."""
    R = X.copy()
    while True:
        R_new = R | (through & np.any(E & R[None, None, :], axis=(1, 2)))
        if np.array_equal(R_new, R):
            return R
        R = R_new


def prob1e(P, mask, target):
    """Nested fixpoint: states with a scheduler reaching target with probability 1."""
    E = edges(P, mask)
    U = np.ones(len(target), bool)
    while True:
        ok = mask & ~np.any(E & ~U[None, None, :], axis=2)  # actions staying in U
        R = target.copy()
        while True:
            step = np.any(ok[:, :, None] & E & R[None, None, :], axis=(1, 2))
            R_new = R | (U & step)
            if np.array_equal(R_new, R):
                break
            R = R_new
        if np.array_equal(R, U):
            return U
        U = R


def lp_values(P, R, mask, target, avoid, kind, minimize):
    """Optimal reachability probability or expected reward by LP (HiGHS), in float64."""
    S, A = R.shape
    E = edges(P, mask)
    fixed = {}
    if kind == "P":
        one, zero = target, avoid & ~target
        if minimize:
            zero = zero | prob0_min(P, mask, target, avoid)
        infinite = np.zeros(S, bool)
    else:
        if minimize:
            infinite = ~prob1e(P, mask, target)
        else:
            infinite = e_reach(E, prob0_min(P, mask, target, np.zeros(S, bool)), ~target)
        one, zero = np.zeros(S, bool), target
    for s in range(S):
        if one[s] or zero[s] or infinite[s]:
            fixed[s] = 1.0 if one[s] else 0.0
    A_ub, b_ub = [], []
    sign = -1.0 if minimize else 1.0  # max: x >= r + Px  ->  -x + Px <= -r
    reward = R if kind == "R" else np.zeros_like(R)
    for s in range(S):
        if s in fixed:
            continue
        for a in range(A):
            if not mask[s, a] or np.any(E[s, a] & infinite):
                continue
            row = sign * P[s, a].copy()
            row[s] -= sign
            A_ub.append(row)
            b_ub.append(-sign * reward[s, a])
    bounds = [(fixed[s], fixed[s]) if s in fixed else (0, None) for s in range(S)]
    bounds = [(0, 0) if infinite[s] else b for s, b in enumerate(bounds)]
    c = np.full(S, 1.0 if not minimize else -1.0)
    res = linprog(
        c,
        A_ub=np.array(A_ub) if A_ub else None,
        b_ub=np.array(b_ub) if b_ub else None,
        bounds=bounds,
        method="highs",
        options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10},
    )
    assert res.status == 0, res.message
    return np.where(infinite, np.inf, res.x)


def policy_value(P, R, policy, target, avoid, kind):
    """The value of a memoryless policy: a Markov chain's reachability or expected reward."""
    S = len(target)
    Pp = P[np.arange(S), policy]
    Pp[target | avoid] = np.eye(S)[target | avoid]
    E = (Pp > 0)[:, None, :]
    reach = e_reach(E, target, ~target & ~avoid)
    if kind == "P":
        x = np.zeros(S)
        x[target] = 1
        idx = np.flatnonzero(reach & ~target)
        b = Pp[np.ix_(idx, np.flatnonzero(target))].sum(axis=1)
        x[idx] = np.linalg.solve(np.eye(idx.size) - Pp[np.ix_(idx, idx)], b)
        return x
    # expected reward: finite iff the target is reached with probability 1
    sure = ~e_reach(E, ~reach, ~target)
    x = np.full(S, np.inf)
    x[target] = 0
    idx = np.flatnonzero(sure & ~target)
    r = R[np.arange(S), policy][idx]
    x[idx] = np.linalg.solve(np.eye(idx.size) - Pp[np.ix_(idx, idx)], r)
    return x


PROPERTIES = [
    ('Pmax=? [!"avoid" U "target"]', "P", False),
    ('Pmin=? [!"avoid" U "target"]', "P", True),
    ('Rmax=? [F "target"]', "R", False),
    ('Rmin=? [F "target"]', "R", True),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_random_mdps_against_lp(dtype, sparse):
    x64 = dtype == np.float64
    tol = 1e-10 if x64 else 1e-4
    seen_infinite = seen_finite = 0
    with jax.enable_x64(x64):
        for seed in range(4):
            P, R, mask, target, avoid = random_model(seed)
            mdp = jp.make_mdp(P, R, action_mask=mask, discount=0.5, dtype=dtype)
            P32, R32 = as_stored(mdp, mask)
            labels = {"target": target, "avoid": avoid}
            model = jp.to_sparse(mdp, max_successors=3) if sparse else mdp
            for prop, kind, minimize in PROPERTIES:
                res = check(model, prop, labels=labels, tol=tol)
                v = np.asarray(res.values, np.float64)
                err = np.asarray(res.error_bound, np.float64)
                oracle = lp_values(P32, R32, mask, target, avoid, kind, minimize)
                inf = np.isinf(oracle)
                np.testing.assert_array_equal(np.isinf(v), inf, err_msg=f"{seed} {prop}")
                seen_infinite += inf.sum()
                seen_finite += (~inf & (oracle > 0) & (oracle < 1e6)).sum()
                # Sound: the exact value lies within the reported bound (LP solver: 1e-7).
                gap = np.abs(v[~inf] - oracle[~inf])
                assert np.all(gap <= err[~inf] + 1e-7 * (1 + np.abs(oracle[~inf]))), (seed, prop)
                assert res.converged
                assert np.all(err[~inf] <= tol * np.abs(oracle[~inf]) * 1.01 + 1e-12)
                # The policy is allowed and (near) optimal.
                pol = np.asarray(res.policy)
                assert pol.shape == (7,) and np.all(mask[np.arange(7), pol]), (seed, prop)
                away = avoid if kind == "P" else np.zeros_like(avoid)
                pv = policy_value(P32, R32, pol, target, away, kind)
                np.testing.assert_allclose(pv, oracle, rtol=10 * tol + 1e-7, atol=1e-7)
    assert seen_infinite > 0 and seen_finite > 0


def np_bounded(P, R, mask, fixed, fixed_value, init, steps, minimize):
    v = init.astype(np.float64)
    opt = np.min if minimize else np.max
    for _ in range(steps):
        q = np.where(mask, R + np.einsum("sat,t->sa", P, v), np.inf if minimize else -np.inf)
        v = np.where(fixed, fixed_value, opt(q, axis=1))
    return v


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_bounded_properties_against_numpy_and_under_jit(sparse):
    P, R, mask, target, avoid = random_model(7)
    R = np.where(mask, R - 0.7, 1e6)  # cumulative rewards may be negative
    dense = jp.make_mdp(P, R, action_mask=mask, discount=0.5)
    mdp = jp.to_sparse(dense, max_successors=3) if sparse else dense
    labels = {"target": target, "avoid": avoid}
    Pd, Rd = as_stored(dense, mask)
    zero_r = np.zeros_like(Rd)
    t = target.astype(float)
    cases = [
        ('Pmax=? [F<=4 "target"]', zero_r, target, t, t, 4, False),
        ('Pmin=? [!"avoid" U<=4 "target"]', zero_r, target | avoid, t, t, 4, True),
        ('Pmax=? [!"avoid" U<5 "target"]', zero_r, target | avoid, t, t, 4, False),
        ("Rmin=? [C<=4]", Rd, np.zeros(7, bool), 0 * t, 0 * t, 4, True),
        ('Pmax=? [X "target"]', zero_r, np.zeros(7, bool), t, t, 1, False),
    ]
    for prop, r, fixed, fv, init, steps, minimize in cases:
        want = np_bounded(Pd, r, mask, fixed, fv, init, steps, minimize)
        res = check(mdp, prop, labels=labels, step_policy=True)
        assert res.policy.shape == (steps, 7) and res.converged
        assert np.all(mask[np.arange(7)[None, :], np.asarray(res.policy)])
        first = check(mdp, prop, labels=labels).policy
        np.testing.assert_array_equal(first, res.policy[0])
        got = np.asarray(res.values, np.float64)
        assert np.all(np.abs(got - want) <= np.asarray(res.error_bound) + 1e-6), prop
        assert np.all(np.asarray(res.error_bound) <= 1e-4)
    # G<=k is the complement of F<=k with the optimum swapped.
    g = check(mdp, 'Pmin=? [G<=4 !"target"]', labels=labels).values
    f = check(mdp, 'Pmax=? [F<=4 "target"]', labels=labels).values
    np.testing.assert_allclose(np.asarray(g), 1 - np.asarray(f), atol=1e-6)
    # Under jit (and with the horizon constant T): the same numbers.
    fn = jax.jit(lambda m: check(m, 'Pmax=? [F<=T "target"]', labels=labels, horizon=4).values)
    np.testing.assert_allclose(np.asarray(fn(mdp)), np.asarray(f), rtol=1e-6)
    with pytest.raises(ValueError, match="concrete model"):
        jax.jit(lambda m: check(m, 'Pmax=? [F "target"]', labels=labels).values)(mdp)


def test_fields_are_where_the_answer_was_computed():
    """A concrete model's answer stays on the host (NumPy); under jax.jit it is traced, and
    inside jax.vmap of a closed-over concrete model it is still a host answer."""
    P, R, mask, target, avoid = random_model(7)
    mdp = jp.make_mdp(P, R, action_mask=mask, discount=0.5)
    labels = {"target": target, "avoid": avoid}
    for prop in ('Pmax=? [F "target"]', 'Pmax=? [F<=3 "target"]', "Rmin=? [C<=2]"):
        res = check(mdp, prop, labels=labels, step_policy=True)
        assert all(isinstance(f, np.ndarray) for f in res), prop
        assert res.policy.dtype == np.int32 and res.iterations.dtype == np.int32
        assert res.value_at_initial.shape == () and res.converged.dtype == bool
    batch = jax.tree.map(lambda x: np.stack([x, x]), mdp)
    for prop in ('Pmax=? [F "target"]', 'Pmax=? [F<=3 "target"]'):
        res = check(batch, prop, labels=labels)
        assert all(isinstance(f, np.ndarray) and f.shape[0] == 2 for f in res), prop
    jitted = jax.jit(lambda m: check(m, 'Pmax=? [F<=3 "target"]', labels=labels))(mdp)
    assert all(isinstance(f, jax.Array) for f in jitted)
    host = check(mdp, 'Pmax=? [F<=3 "target"]', labels=labels)
    np.testing.assert_allclose(np.asarray(jitted.values), host.values, rtol=1e-6)
    inside = jax.vmap(lambda x: check(mdp, 'Pmax=? [F "target"]', labels=labels).values + x)
    np.testing.assert_array_equal(
        inside(np.zeros(2))[1], check(mdp, 'Pmax=? [F "target"]', labels=labels).values
    )


# --------------------------------------------------------------------------- errors

ERRORS = [
    ('Pmax=? [F "goal"', "expected ']'.* at the end"),
    ('Pmax>=0.5 [F "goal"]', "only numerical queries.* at position 4"),
    ('Pmax=? [F "goal" U "x"]', "expected ']'.* at position 17"),
    ("Pmax=? [F 3]", "unsupported atom '3'.* at position 10"),
    ('Pmax=? [F "goal]', "unterminated label.* at position 10"),
    ('Pmax=? [F>=3 "goal"]', "only upper step bounds.* at position 9"),
    ('Pmax=? [F<=k "goal"]', "unknown constant 'k'.* at position 11"),
    ('Pmax=? [F<=2.5 "goal"]', "non-negative integer.* at position 11"),
    ('Pmax=? ["a" W "goal"]', r"weak until \(W\).* at position 12"),
    ('Pmax=? [F Pmin=? [F "goal"]]', "nested Pmin.* at position 10"),
    ('S=? ["goal"]', "unsupported operator 'S'.* at position 0"),
    ('R{"r"}max=? [I=3]', "instantaneous rewards.* at position 13"),
    ('Rmax=? [F<=3 "goal"]', "step-bounded reachability rewards.* at position 9"),
    ('Pmax=? [F "goal"] extra', "unexpected 'extra' after the property at position 18"),
    ('Pmax=? [F ("a" | "b"]', r"expected '\)'.* at position 20"),
    ('Pmax=? [F "a" $ "b"]', r"unexpected character '\$' at position 14"),
    ("", "empty"),
]


@pytest.mark.parametrize("prop, match", ERRORS, ids=[e[0] or "empty" for e in ERRORS])
def test_parse_errors_name_the_position(prop, match):
    with pytest.raises(ValueError, match=match) as info:
        parse_property(prop)
    assert "\n" not in str(info.value)


TOKENS = [
    "P",
    "Pmax",
    "Rmin",
    "R",
    "{",
    "}",
    '"r"',
    "1",
    "min",
    "=?",
    "=",
    ">=",
    "0.5",
    "[",
    "]",
    "F",
    "G",
    "X",
    "U",
    "C",
    "<=",
    "<",
    "3",
    "T",
    "k",
    '"a"',
    '"b"',
    "true",
    "false",
    "!",
    "&",
    "|",
    "=>",
    "<=>",
    "(",
    ")",
    "W",
    "S",
    "x",
    '"',
    "$",
    " ",
]


@settings(max_examples=100, deadline=None)
@given(
    st.one_of(
        st.lists(st.sampled_from(TOKENS), max_size=14).map("".join),
        st.lists(st.sampled_from(TOKENS), max_size=14).map(" ".join),
        st.text(max_size=30),
    )
)
def test_parser_fuzz_only_one_line_value_errors(text):
    """Whatever the string, the parser returns a Property or raises a one-line ValueError that
    says where (hypothesis)."""
    _parse_or_one_line_error(text)


def _parse_or_one_line_error(text):
    """The Property, or None after checking that the ValueError is one line naming a position
    inside the string (or its end); any other exception fails the test."""
    try:
        return parse_property(text)
    except ValueError as e:
        msg = str(e)
        assert "\n" not in msg
        if not text.strip():
            assert "empty" in msg
            return None
        where = re.search(r" at (position (\d+) \(|the end$)", msg)
        assert where, msg
        if where.group(2) is not None:
            assert 0 <= int(where.group(2)) < len(text), msg
        return None


# A generator of the supported subset: (text, what the parser must find).
_LABELS = st.sampled_from(["a", "b", "goal", "x_1", "end state"])


def _formula_text(tree) -> str:
    """A formula tree as text, parenthesized where PRISM's precedence needs it."""
    op, args = tree
    if op == "label":
        return f'"{args}"'
    if op in ("true", "false"):
        return op
    if op == "not":
        return "!" + _atom_text(args[0])
    symbol = {"and": "&", "or": "|", "implies": "=>", "iff": "<=>"}[op]
    return f"{_atom_text(args[0])} {symbol} {_atom_text(args[1])}"


def _atom_text(tree) -> str:
    text = _formula_text(tree)
    return text if tree[0] in ("label", "true", "false", "not") else f"({text})"


_FORMULAS = st.recursive(
    st.one_of(_LABELS.map(lambda n: ("label", n)), st.sampled_from([("true", ()), ("false", ())])),
    lambda inner: st.one_of(
        inner.map(lambda f: ("not", (f,))),
        st.tuples(st.sampled_from(["and", "or", "implies", "iff"]), st.tuples(inner, inner)),
    ),
    max_leaves=6,
)


def _shape(formula):
    """A parsed :class:`Formula` as the generator's tree."""
    if formula.op == "label":
        return ("label", formula.name)
    if formula.op in ("true", "false"):
        return (formula.op, ())
    return (formula.op, tuple(_shape(a) for a in formula.args))


@st.composite
def _properties(draw):
    kind = draw(st.sampled_from(["P", "R"]))
    opt = draw(st.sampled_from([None, "max", "min"]))
    reward = draw(st.sampled_from([None, "time", 0])) if kind == "R" else None
    head = kind + (
        f'{{"{reward}"}}' if isinstance(reward, str) else f"{{{reward}}}" * (reward == 0)
    )
    head += opt or ""
    right, left, bound = draw(_FORMULAS), None, None
    if kind == "R":
        path = draw(st.sampled_from(["F", "C"]))
        right = right if path == "F" else None
        bound = draw(st.integers(0, 30)) if path == "C" else None
        body = f"F {_formula_text(right)}" if path == "F" else f"C<={bound}"
    else:
        path = draw(st.sampled_from(["F", "G", "X", "U"]))
        bound = draw(st.one_of(st.none(), st.integers(0, 30))) if path != "X" else None
        step = "" if bound is None else f"<={bound}"
        if path == "U":
            left = draw(_FORMULAS)
            body = f"{_atom_text(left)} U{step} {_atom_text(right)}"
        else:
            body = f"{path}{step} {_formula_text(right)}"
    space = draw(st.sampled_from(["", " ", "  "]))
    text = f"{head}=?{space}[{space}{body}{space}]"
    return text, (kind, opt, reward, path, left, right, bound)


@settings(max_examples=200, deadline=None)
@given(_properties())
def test_parser_fuzz_valid_properties_parse(generated):
    """Every property of the supported subset parses into what it says (hypothesis)."""
    text, (kind, opt, reward, path, left, right, bound) = generated
    prop = parse_property(text)
    assert (prop.kind, prop.opt, prop.reward, prop.path, prop.bound) == (
        kind,
        opt,
        reward,
        path,
        bound,
    ), text
    assert (prop.left is None) == (left is None), text
    if left is not None:
        assert _shape(prop.left) == left, text
    if right is not None:
        assert _shape(prop.right) == right, text


@settings(max_examples=300, deadline=None)
@given(
    _properties(),
    st.lists(st.tuples(st.integers(0, 80), st.sampled_from(["delete", *TOKENS])), max_size=3),
)
def test_parser_fuzz_mutated_properties(generated, edits):
    """A valid property with characters deleted or tokens inserted: it parses, or the error
    is one line naming a position inside the string (hypothesis)."""
    text = generated[0]
    for at, edit in edits:
        at = min(at, len(text))
        text = text[:at] + text[at + 1 :] if edit == "delete" else text[:at] + edit + text[at:]
    _parse_or_one_line_error(text)


def test_parse_precedence_and_semantic_errors():
    p = parse_property('R{"time"}min=? [F !"a" & "b" | "c" => "d"]')
    assert (p.kind, p.opt, p.reward, p.path) == ("R", "min", "time", "F")
    assert p.right.op == "implies" and p.right.args[0].op == "or"
    assert p.right.args[0].args[0].op == "and" and p.right.args[0].args[0].args[0].op == "not"
    P, R, mask, labels = safe_or_risky()
    mdp = jp.make_mdp(P, R, action_mask=mask, discount=0.9)
    with pytest.raises(ValueError, match="no label 'gaol'.* at position 10"):
        check(mdp, 'Pmax=? [F "gaol"]', labels=labels)
    with pytest.raises(ValueError, match="needs a DTMC.*Pmax=\\? or Pmin=\\?.* at position 0"):
        check(mdp, 'P=? [F "goal"]', labels=labels)
    with pytest.raises(ValueError, match="no reward structure 2"):
        check(mdp, 'R{2}max=? [F "goal"]', labels=labels)
    negative = jp.make_mdp(P, R - np.eye(4, 2), action_mask=mask, discount=0.9)
    with pytest.raises(ValueError, match="non-negative rewards.*state 1, action 1"):
        check(negative, 'Rmin=? [F "end"]', labels=labels)
    with pytest.raises(ValueError, match="T needs horizon="):
        check(mdp, 'Pmax=? [F<=T "goal"]', labels=labels)
    with pytest.raises(ValueError, match="label 'goal' must have shape"):
        check(mdp, 'Pmax=? [F "goal"]', labels={"goal": np.ones(3, bool)})
    # "init" defaults to the model's initial state; true/false are constants.
    res = check(mdp, 'Pmax=? [F "init" & !false]', labels={})
    assert float(res.value_at_initial) == 1.0
    assert float(check(mdp, "Pmin=? [F false]").value_at_initial) == 0.0


# --------------------------------------------------------------------------- Storm

WALK = """
mdp
const int N = 4;
module walker
  x : [0..N] init 1;
  [left]  x>0 & x<N -> 0.7:(x'=x-1) + 0.3:(x'=x+1);
  [right] x>0 & x<N -> 0.6:(x'=x+1) + 0.4:(x'=x);
  [stay]  x>0 & x<N -> 1:(x'=x);
  [done]  x=0 | x=N -> true;
endmodule
label "goal" = x=N;
label "fail" = x=0;
rewards "steps"
  [left] true : 1;
  [right] true : 2;
  [stay] true : 1;
  x=2 : 0.5;
endrewards
"""


def test_against_storm(tmp_path):
    stormpy = pytest.importorskip("stormpy")
    (tmp_path / "walk.prism").write_text(WALK)
    program = stormpy.parse_prism_program(str(tmp_path / "walk.prism"))
    model = stormpy.build_model(program, options=stormpy.BuilderOptions(build_full=True))
    S, mat = model.nr_states, model.transition_matrix
    first = list(model.nondeterministic_choice_indices)
    A = max(b - a for a, b in zip(first[:-1], first[1:], strict=True))
    P, R, mask = np.zeros((S, A, S)), np.zeros((S, A)), np.zeros((S, A), bool)
    rew = model.reward_models["steps"]
    for s in range(S):
        for c, row in enumerate(range(first[s], first[s + 1])):
            mask[s, c] = True
            for e in mat.get_row(row):
                P[s, c, e.column] += e.value
            R[s, c] = rew.state_rewards[s] + rew.state_action_rewards[row]
    labels = {
        name: np.isin(np.arange(S), list(model.labeling.get_states(name)))
        for name in model.labeling.get_labels()
    }
    props = [
        'Pmax=? [F "goal"]',
        'Pmin=? [F "goal"]',
        'Pmax=? [!"fail" U<=4 "goal"]',
        'Pmin=? [F<=4 "fail"]',
        'Pmin=? [G !"fail"]',
        'Rmin=? [F "goal"]',
        'Rmax=? [F "goal"]',
        'Rmin=? [F "goal" | "fail"]',
        'R{"steps"}max=? [C<=4]',
        'Pmax=? [X "goal"]',
    ]
    with jax.enable_x64(True):
        mdp = jp.make_mdp(P, R, action_mask=mask, dtype=np.float64, discount=0.5)
        for prop in props:
            (formula,) = stormpy.parse_properties(prop, program)
            res = stormpy.model_checking(model, formula, only_initial_states=False)
            want = np.array([res.get_value(s) for s in range(S)])
            res = check(mdp, prop, labels=labels, reward_name="steps", tol=1e-10)
            got = np.asarray(res.values)
            np.testing.assert_array_equal(np.isinf(got), np.isinf(want), err_msg=prop)
            fin = np.isfinite(want)
            np.testing.assert_allclose(got[fin], want[fin], rtol=2e-6, atol=1e-9, err_msg=prop)


def _chains_or_random(rng, S, A, chains):
    """`[S, A, S]` rows of 1 to 3 successors: near the state (chains, cycles) or anywhere."""
    P = np.zeros((S, A, S))
    for s in range(S):
        for a in range(A):
            k = int(rng.integers(1, min(S, 3) + 1))
            near = np.clip(s + rng.integers(-2, 3, k), 0, S - 1)
            succ = near if chains else rng.choice(S, k, replace=False)
            P[s, a, succ] += rng.dirichlet(np.ones(k))
    return P / P.sum(axis=-1, keepdims=True)


def _layered_exists(E, ok, target, through):
    """Reference ``Graph.reach_exists``: one layer at a time, each added state's lowest
    action with a successor in the layer before."""
    reached, witness = target.copy(), np.full(len(target), -1)
    new = target.copy()
    while new.any():
        hits = ok & np.any(E & new[None, None, :], axis=2)  # [S, A]
        add = through & ~reached & hits.any(axis=1)
        witness[add] = np.argmax(hits, axis=1)[add]
        reached |= add
        new = add
    return reached, witness


def _forall_reach(E, mask, target, through):
    """Reference ``Graph.reach_all``: every allowed action has a successor in R."""
    R = target.copy()
    while True:
        hit = np.any(E & R[None, None, :], axis=2)
        add = through & mask.any(axis=1) & np.all(hit | ~mask, axis=1)
        if not (add & ~R).any():
            return R
        R |= add


def _prob1e_with(E, ok, target, through):
    """Reference ``Graph.prob1e``: the nested fixed point, one reachability per round."""
    U, _ = _layered_exists(E, ok, target, through)
    while True:
        stay = ok & ~np.any(E & ~U[None, None, :], axis=2)
        V, witness = _layered_exists(E, stay, target, through & U)
        if np.array_equal(U, V):
            return V, witness
        U = V


def _end_components(E, ok, states):
    """Reference ``Graph.end_components``: the classic refinement with SciPy's strongly
    connected components, each end component named by its lowest state."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    S, A, _ = E.shape
    cur, pairs = states.copy(), ok & states[:, None] & ~np.any(E & ~states, axis=2)
    while True:
        s, a, t = np.nonzero(E & pairs[:, :, None])
        graph = csr_matrix((np.ones(s.size), (s, t)), shape=(S, S))
        comp = connected_components(graph, directed=True, connection="strong")[1]
        leaving = np.zeros((S, A), bool)
        leaving[s[comp[s] != comp[t]], a[comp[s] != comp[t]]] = True
        new_cur = cur & (pairs & ~leaving).any(axis=1)
        new_pairs = pairs & ~leaving & new_cur[:, None] & ~np.any(E & ~new_cur, axis=2)
        if np.array_equal(new_cur, cur) and np.array_equal(new_pairs, pairs):
            break
        cur, pairs = new_cur, new_pairs
    group = np.full(S, -1)
    for c in np.unique(comp[cur]):
        members = np.flatnonzero(cur & (comp == c))
        group[members] = members.min()
    return group, pairs.reshape(-1)


def test_graph_searches_match_layer_by_layer_references():
    """The host searches (one compiled pass over the edges where the references take one
    round per layer) give the same sets and witnesses on random models with end components
    and long chains; the end components those of the classic refinement with SciPy's
    strongly connected components."""
    from jaxprivmdp.properties._graph import Graph

    for seed in range(110):
        rng = np.random.default_rng(seed)
        S, A = int(rng.integers(2, 30)), int(rng.integers(1, 4))
        P = _chains_or_random(rng, S, A, chains=seed % 2)
        mask = rng.uniform(size=(S, A)) < 0.6
        mask[np.arange(S), rng.integers(0, A, S)] = True
        g = Graph(jp.make_mdp(P, np.zeros((S, A)), action_mask=mask))
        E = (P > 0) & mask[:, :, None]
        for _ in range(3):
            target = rng.uniform(size=S) < rng.choice([0.05, 0.2, 0.4])
            through = rng.uniform(size=S) < rng.choice([0.6, 1.0])
            ok = mask & (rng.uniform(size=(S, A)) < rng.choice([0.6, 1.0]))
            pairs = ok.reshape(-1)
            for got, want in [
                (g.reach_exists(target, through, pairs), _layered_exists(E, ok, target, through)),
                (g.prob1e(target, through, pairs), _prob1e_with(E, ok, target, through)),
            ]:
                np.testing.assert_array_equal(got[0], want[0], err_msg=str(seed))
                np.testing.assert_array_equal(got[1], want[1], err_msg=str(seed))
            np.testing.assert_array_equal(
                g.reach(target, through, pairs), _layered_exists(E, ok, target, through)[0]
            )
            np.testing.assert_array_equal(
                g.reach_all(target, through), _forall_reach(E, mask, target, through)
            )
            got, want = g.end_components(through, pairs), _end_components(E, ok, through)
            np.testing.assert_array_equal(got[0], want[0], err_msg=str(seed))
            np.testing.assert_array_equal(got[1], want[1], err_msg=str(seed))


@pytest.mark.parametrize("minimize", [False, True])
def test_dtmc_precomputation_matches_the_mdp_searches(minimize):
    """On a DTMC (one allowed action per state) ``Prob0`` and ``Prob1`` by one search each
    give what the MDP searches give (the attractors, ``Prob1E``'s nested fixed point, the
    end components), the policy and the pairs the iteration uses included."""
    from jaxprivmdp.properties._graph import Graph
    from jaxprivmdp.properties._unbounded import probability_problem

    for seed in range(40):
        rng = np.random.default_rng(seed)
        S, A = int(rng.integers(2, 40)), int(rng.integers(1, 3))
        P = _chains_or_random(rng, S, A, chains=seed % 2)
        mask = np.zeros((S, A), bool)
        mask[np.arange(S), rng.integers(0, A, S)] = True
        g = Graph(jp.make_mdp(P, np.zeros((S, A)), action_mask=mask))
        assert g.deterministic
        target = rng.uniform(size=S) < rng.choice([0.05, 0.2])
        avoid = rng.uniform(size=S) < rng.choice([0.0, 0.2])
        fast = probability_problem(g, target, avoid, minimize)
        g.deterministic = False  # the MDP searches
        slow = probability_problem(g, target, avoid, minimize)
        for name, got, want in zip(fast._fields, fast, slow, strict=True):
            np.testing.assert_array_equal(got, want, err_msg=f"{name}, seed {seed}")
