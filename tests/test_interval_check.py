"""``jp.check`` on interval models against oracles written here, independent of the library.

The oracles never call the library's kernel: nature's inner problem is solved by
``scipy.optimize.linprog`` or by enumerating the vertices of ``{l <= x <= u, Σ x = 1}`` (all
but one coordinate at a bound); the outer problems by NumPy value iteration over those
vertices (a turn-based stochastic game: the policy picks an action, nature a vertex), from 0
for reachability and rewards (the least fixed point), from 1 for ``G`` (the greatest), and by
backward induction for step bounds; PRISM's infinite rewards by the nested fixpoint of
almost-sure reachability in such games, on the vertices' supports.

The random models' bounds are multiples of 1/64, exact in float32 and float64, so that the
oracle's model is the checked model in both dtypes (point rows sum to exactly 1).
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import linprog

import jaxprivmdp as jp
from jaxprivmdp.models.core import interval_expect, interval_of_point, nature_choice

GRID = 64
PAIRS = [("max", "min"), ("max", "max"), ("min", "min"), ("min", "max")]
DTYPES = [np.float32, np.float64]


# --------------------------------------------------------------------------- inner problem


def row_vertices(low, high):
    """`[NV, n]` the vertices of ``{l <= x <= u, Σ x = 1}`` (n-1 coordinates at a bound)."""
    low, high = np.asarray(low, np.float64), np.asarray(high, np.float64)
    n = low.size
    live = np.flatnonzero(high > 0)
    out = []
    for j in live:
        others = [i for i in live if i != j]
        for bits in range(2 ** len(others)):
            x = np.zeros(n)
            for b, i in enumerate(others):
                x[i] = high[i] if (bits >> b) & 1 else low[i]
            x[j] = 1.0 - x.sum()
            if low[j] - 1e-12 <= x[j] <= high[j] + 1e-12:
                out.append(np.clip(x, low, high))
    assert out, "empty row polytope"
    return np.unique(np.round(np.array(out), 15), axis=0)


def dot(x, v):
    """``x · v`` with ``0 · inf = 0`` (an entry nature gives no mass)."""
    with np.errstate(invalid="ignore"):
        return np.where(x > 0, x * v, 0.0).sum(-1)


def lp_row(low, high, v, sign):
    """``sign · max sign · x · v`` over the row's polytope, by HiGHS."""
    c = -sign * np.asarray(v, np.float64)
    bounds = list(zip(low, high, strict=True))
    res = linprog(c, A_eq=np.ones((1, len(c))), b_eq=[1.0], bounds=bounds, method="highs")
    assert res.status == 0, res.message
    return -sign * res.fun


def random_rows(rng, S, A, N, *, point_share=0.2):
    """`[S, A, N]` bounds around random distributions, some rows points, some entries 0."""
    p = rng.dirichlet(np.full(N, 0.7), size=(S, A))
    p[rng.uniform(size=(S, A, N)) < 0.3] = 0.0
    p[..., 0] += 1e-3
    p /= p.sum(-1, keepdims=True)
    radius = rng.uniform(0, 0.3, size=(S, A, 1)) * rng.uniform(size=(S, A, N))
    radius[rng.uniform(size=(S, A)) < point_share] = 0.0
    return np.clip(p - radius, 0, 1), np.clip(p + radius, 0, 1)


@functools.partial(jax.jit, static_argnames="dense")
def both_signs(lo, up, ns, values, dense):
    """The kernel for nature maximizing and minimizing (the sign traced), one compile."""
    ns = None if dense else ns
    return jnp.stack([interval_expect(lo, up, ns, values, jnp.asarray(sign, lo.dtype))
                      for sign in (1, -1)])  # fmt: skip


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("sparse", [False, True])
def test_kernel_matches_linprog(dtype, sparse):
    rng = np.random.default_rng(1 + sparse)
    S, A, K, B = 6, 2, 4, 2
    N = K if sparse else S
    lo, up = random_rows(rng, S, A, N)
    values = rng.normal(size=(B, S))
    values[1] = rng.integers(0, 3, size=S) / 2  # ties: equal values poured in some order
    ns = np.zeros((S, A, K), np.int32)
    if sparse:
        ns = np.stack([rng.choice(S, K, replace=False) for _ in range(S * A)]).reshape(S, A, K)
        ns[0, 0, -1] = -1  # padding: l = u = 0 there
        lo[0, 0, -1] = up[0, 0, -1] = 0.0
        up[0, 0, 0] = 1.0
    tol = 1e-12 if dtype == np.float64 else 3e-6
    with jax.enable_x64(dtype == np.float64):
        args = (jnp.asarray(lo, dtype), jnp.asarray(up, dtype), jnp.asarray(ns, jnp.int32))
        got = np.asarray(both_signs(*args, jnp.asarray(values, dtype), not sparse), np.float64)
    assert got.shape == (2, B, S, A)
    for i, sign in enumerate((1, -1)):
        for b, s, a in np.ndindex(B, S, A):
            v = values[b] if not sparse else values[b, np.maximum(ns[s, a], 0)]
            want = lp_row(lo[s, a], up[s, a], v, sign)
            assert abs(got[i, b, s, a] - want) <= tol * (1 + abs(want)), (b, s, a, sign)


def test_kernel_long_successor_lists_and_nature_choice():
    """Successor lists longer than a short row's (another fill), with ties and padding;
    ``nature_choice`` is a distribution in the box that attains the optimum."""
    rng = np.random.default_rng(5)
    S, A, K = 24, 2, 20
    ns = np.stack([rng.choice(S, K, replace=False) for _ in range(S * A)]).reshape(S, A, K)
    lo, up = random_rows(rng, S, A, K)
    ns[:, 0, -2:] = -1  # padding
    lo[:, 0, -2:] = up[:, 0, -2:] = 0.0
    up[:, 0, 0] = 1.0
    values = np.stack([rng.normal(size=S), rng.integers(0, 3, size=S) / 2])
    got = np.asarray(both_signs(*(jnp.asarray(x) for x in (lo, up, ns, values)), False))
    for i, sign in enumerate((1, -1)):
        for b, s, a in [(0, 0, 0), (1, 3, 1), (0, 7, 0), (1, 11, 0), (1, 23, 1)]:
            want = lp_row(lo[s, a], up[s, a], values[b, np.maximum(ns[s, a], 0)], sign)
            assert abs(got[i, b, s, a] - want) <= 3e-6 * (1 + abs(want)), (b, s, a, sign)
        for b in range(2):
            x = nature_choice(lo, up, ns, values[b], sign)
            assert np.all(x >= lo - 1e-12) and np.all(x <= up + 1e-12)
            np.testing.assert_allclose(x.sum(-1), 1.0, atol=1e-12)
            reached = np.sum(x * values[b][np.maximum(ns, 0)], axis=-1)
            np.testing.assert_allclose(reached, got[i, b], atol=3e-6)


@pytest.mark.parametrize("dtype", DTYPES)
def test_kernel_matches_vertices_on_tiny_rows(dtype):
    """Rows with 1 to 4 entries that can be positive (the rest ``l = u = 0``), through
    ``jax.numpy`` and NumPy, against every vertex of the row."""
    rng = np.random.default_rng(7)
    n, A, B = 4, 3, 3
    lo, up = random_rows(rng, n, A, n)
    for s in range(n):  # row (s, ·) has s + 1 live entries
        lo[s, :, s + 1 :] = up[s, :, s + 1 :] = 0.0
        lo[s, :, : s + 1] = np.minimum(lo[s, :, : s + 1], 1.0 / (s + 1))
        up[s, :, : s + 1] = np.maximum(up[s, :, : s + 1], 1.0 / (s + 1))
    values = rng.uniform(-1, 2, size=(B, n))
    tol = 1e-12 if dtype == np.float64 else 3e-6
    with jax.enable_x64(dtype == np.float64):
        lo_, up_, v_ = (x.astype(dtype) for x in (lo, up, values))
        got_jax = both_signs(jnp.asarray(lo_), jnp.asarray(up_), jnp.zeros(1, jnp.int32),
                             jnp.asarray(v_), True)  # fmt: skip
        got_np = [interval_expect(lo_, up_, None, v_, sign, np) for sign in (1, -1)]
    for got in (np.asarray(got_jax, np.float64), np.asarray(got_np, np.float64)):
        for i, sign in enumerate((1, -1)):
            for b, s, a in np.ndindex(B, n, A):
                verts = row_vertices(lo[s, a], up[s, a])
                want = sign * np.max(sign * (verts @ values[b]))
                assert abs(got[i, b, s, a] - want) <= tol * (1 + abs(want)), (s, a, sign)


def test_vertex_oracle_matches_linprog():
    """The two oracles agree with each other (each checks the other)."""
    rng = np.random.default_rng(3)
    lo, up = random_rows(rng, 4, 3, 4)
    for s in range(4):
        for a in range(3):
            v = rng.normal(size=4)
            verts = row_vertices(lo[s, a], up[s, a])
            assert np.all(verts >= lo[s, a] - 1e-12) and np.all(verts <= up[s, a] + 1e-12)
            np.testing.assert_allclose(verts.sum(-1), 1.0, atol=1e-12)
            for sign in (1, -1):
                want = lp_row(lo[s, a], up[s, a], v, sign)
                assert sign * np.max(sign * (verts @ v)) == pytest.approx(want, abs=1e-9)


# --------------------------------------------------------------------------- game oracle


class Game:
    """An interval model as a turn-based game over its rows' vertices, in float64 NumPy."""

    def __init__(self, lo, up, mask, rewards):
        S, A, _ = lo.shape
        self.mask, self.rewards = np.asarray(mask, bool), np.asarray(rewards, np.float64)
        rows = [[row_vertices(lo[s, a], up[s, a]) if mask[s, a] else np.eye(S)[:1]
                 for a in range(A)] for s in range(S)]  # fmt: skip
        nv = max(r.shape[0] for row in rows for r in row)
        padded = [[np.concatenate([r, np.repeat(r[:1], nv - len(r), 0)]) for r in row]
                  for row in rows]  # fmt: skip
        self.x = np.array(padded)  # [S, A, NV, S], short vertex lists repeat their first

    def q(self, v, nature, rewards=None):
        """`[S, A]` ``r + nature-opt x · v``."""
        e = dot(self.x, v)  # [S, A, NV]
        e = e.max(-1) if nature == "max" else e.min(-1)
        return e if rewards is None else rewards + e

    def backup(self, v, policy, nature, rewards=None):
        q = self.q(v, nature, rewards)
        if policy == "max":
            return np.where(self.mask, q, -np.inf).max(-1)
        return np.where(self.mask, q, np.inf).min(-1)

    def iterate(self, v, fixed, fixed_value, policy, nature, rewards=None, cap=400_000):
        """Value iteration until a sweep of 500 moves nothing by more than 1e-15."""
        v = np.where(fixed, fixed_value, v)
        for _ in range(cap // 500):
            old = v
            for _ in range(500):
                v = np.where(fixed, fixed_value, self.backup(v, policy, nature, rewards))
            with np.errstate(invalid="ignore"):
                gap = np.abs(np.where(np.isfinite(v), v - old, 0.0))
            if gap.max() <= 1e-15:
                return v
        raise AssertionError("the oracle's value iteration did not settle")

    def almost_sure(self, target, policy_helps, nature_helps):
        """States where the target is reached with probability 1 against the opposing side:
        ``νY. μZ. target ∪ CPre(Y, Z)``, a vertex's support staying in ``Y`` and hitting
        ``Z`` (de Alfaro, Henzinger & Kupferman's almost-sure reachability)."""
        supp = self.x > 0
        Y = np.ones(len(target), bool)
        while True:
            Z = target.copy()
            while True:
                ok_v = ~np.any(supp & ~Y, -1) & np.any(supp & Z, -1)  # [S, A, NV]
                ok_row = ok_v.any(-1) if nature_helps else ok_v.all(-1)
                if policy_helps:
                    ok = np.any(ok_row & self.mask, -1)
                else:
                    ok = np.all(ok_row | ~self.mask, -1)
                new = ok & ~Z & Y
                if not new.any():
                    break
                Z |= new
            if np.array_equal(Z, Y):
                return Z
            Y = Z


def oracle_reach(game, target, avoid, policy, nature):
    fixed = target | avoid
    return game.iterate(np.zeros(len(target)), fixed, target.astype(float), policy, nature)


def oracle_safe(game, safe, policy, nature):
    """``P [G safe]``: the greatest fixed point, iterated down from 1."""
    return game.iterate(safe.astype(float), ~safe, 0.0, policy, nature)


def oracle_reward(game, goal, policy, nature):
    """``R [F goal]`` as PRISM defines it: inf where the cost's minimizers cannot make the
    goal sure; elsewhere the least fixed point (rewards here are positive)."""
    sure = game.almost_sure(goal, policy == "min", nature == "min")
    fixed = goal | ~sure
    value = np.where(goal, 0.0, np.inf)
    return game.iterate(np.zeros(len(goal)), fixed, value, policy, nature, game.rewards)


def oracle_bounded(game, k, init, fixed, fixed_value, policy, nature, rewards=None):
    v = np.where(fixed, fixed_value, init).astype(float)
    for _ in range(k):
        v = np.where(fixed, fixed_value, game.backup(v, policy, nature, rewards))
    return v


def policy_value(game, policy, target, avoid, nature, rewards=False):
    """The value of the library's stationary ``policy`` against nature's optimum: the game
    with every other action removed (the oracle's own fixed points)."""
    policy = np.asarray(policy)
    S = len(policy)
    assert np.all(game.mask[np.arange(S), policy]), "a masked action was chosen"
    fixed_game = object.__new__(Game)
    fixed_game.x, fixed_game.rewards = game.x, game.rewards
    fixed_game.mask = np.zeros_like(game.mask)
    fixed_game.mask[np.arange(S), policy] = True
    if rewards:
        return oracle_reward(fixed_game, target, "min", nature)
    return oracle_reach(fixed_game, target, avoid, "max", nature)


def random_model(seed, S, A, trap=True):
    """Bounds on the 1/64 grid, random supports (some self-loops, an absorbing trap), a few
    point rows, entries nature may cut (``l = 0``); positive dyadic rewards; labels."""
    rng = np.random.default_rng(seed)
    lo, up = np.zeros((S, A, S)), np.zeros((S, A, S))
    for s in range(S):
        for a in range(A):
            n = int(rng.integers(1, min(S, 4) + 1))
            supp = rng.choice(S, n, replace=False)
            if rng.uniform() < 0.3 and s not in supp:
                supp[0] = s
            counts = 1 + rng.multinomial(GRID - n, np.full(n, 1.0 / n))
            r = np.zeros(n, int) if rng.uniform() < 0.25 else rng.integers(0, 16, n)
            lo[s, a, supp] = np.maximum(counts - r, 0) / GRID
            up[s, a, supp] = np.minimum(counts + r, GRID) / GRID
    mask = rng.uniform(size=(S, A)) < 0.7
    mask[np.arange(S), rng.integers(0, A, S)] = True
    rewards = rng.integers(1, 5, size=(S, A)) / 4.0
    goal = np.zeros(S, bool)
    goal[rng.choice(S, int(rng.integers(1, 3)), replace=False)] = True
    if trap:  # an absorbing state: probabilities strictly inside (0, 1)
        t = rng.choice(np.flatnonzero(~goal))
        lo[t], up[t] = 0.0, 0.0
        lo[t, :, t] = up[t, :, t] = 1.0
    safe = rng.uniform(size=S) < 0.75
    return lo, up, mask, rewards, {"goal": goal, "safe": safe}


def build(lo, up, mask, rewards, dtype, sparse=False):
    m = jp.make_interval_mdp(lo, up, rewards, action_mask=mask, dtype=dtype)
    return jp.to_sparse(m, max_successors=4) if sparse else m  # one K: shared compiles


def assert_contains(res, oracle, where, atol=1e-9, converged=False):
    """``oracle`` in ``[lower, upper]`` (inf exactly where it is inf); where the result
    converged (required with ``converged``), ``values`` within 2e-6 of it in every state."""
    lower = np.asarray(res.lower, np.float64)
    upper = np.asarray(res.upper, np.float64)
    values = np.asarray(res.values, np.float64)
    fin = np.isfinite(oracle)
    assert np.all(lower[fin] <= oracle[fin] + atol), (where, lower, oracle)
    assert np.all(oracle[fin] <= upper[fin] + atol), (where, upper, oracle)
    assert np.all(values[~fin] == np.inf) and np.all(lower[~fin] == np.inf), (where, values, oracle)
    assert bool(res.converged) or not converged, (where, float(res.precision))
    if bool(res.converged):
        err = np.abs(values[fin] - oracle[fin])
        assert np.all(err <= 2e-6 * np.maximum(1.0, oracle[fin])), (where, values, oracle)


def quantified(kind, pair):
    return f"{kind}{pair[0]}{pair[1]}=?"


def check_unbounded_case(seed, S, A, dtype, sparse=False):
    lo, up, mask, rewards, labels = random_model(seed, S, A)
    game = Game(lo, up, mask, rewards)
    with jax.enable_x64(dtype == np.float64):
        m = build(lo, up, mask, rewards, dtype, sparse)
        for pair in PAIRS:
            goal, safe = labels["goal"], labels["safe"]
            cases = [
                ('[F "goal"]', oracle_reach(game, goal, np.zeros(S, bool), *pair)),
                ('[!"goal" U "safe"]', oracle_reach(game, safe, ~safe & goal, *pair)),
                ('[G "safe"]', oracle_safe(game, safe, *pair)),
            ]
            for path, want in cases:
                prop = f"{quantified('P', pair)} {path}"
                res = jp.check(m, prop, labels=labels)
                assert_contains(res, want, (seed, prop), converged=True)
            # the policy seeking the goal attains the value (ties broken towards progress)
            res = jp.check(m, f"{quantified('P', pair)} {cases[0][0]}", labels=labels)
            if pair[0] == "max":
                got = policy_value(game, res.policy, goal, np.zeros(S, bool), pair[1])
                np.testing.assert_allclose(got, cases[0][1], rtol=1e-5, atol=1e-6)
        # without the trap, so that not every expected reward is infinite
        lo, up, mask, rewards, labels = random_model(seed, S, A, trap=False)
        game = Game(lo, up, mask, rewards)
        m = build(lo, up, mask, rewards, dtype, sparse)
        for pair in PAIRS:
            prop = f'{quantified("R", pair)} [F "goal"]'
            res = jp.check(m, prop, labels=labels)
            want = oracle_reward(game, labels["goal"], *pair)
            assert_contains(res, want, (seed, prop), converged=True)
            if pair[0] == "min":
                got = policy_value(game, res.policy, labels["goal"], None, pair[1], rewards=True)
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.integration
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_unbounded_against_game_oracle(seed, dtype):
    check_unbounded_case(seed, 6, 2, dtype)


@pytest.mark.integration
@pytest.mark.parametrize("seed", range(3, 23))
def test_unbounded_against_game_oracle_many(seed):
    rng = np.random.default_rng(100 + seed)
    S, A = int(rng.integers(4, 9)), int(rng.integers(1, 4))
    check_unbounded_case(seed, S, A, np.float64, sparse=bool(seed % 2))


@pytest.mark.integration
def test_interval_dtmc_one_quantifier_against_oracle():
    S = 6
    for seed in (40, 41, 42):
        lo, up, _, rewards, labels = random_model(seed, S, 2)
        mask = np.eye(2, dtype=bool)[np.random.default_rng(seed).integers(0, 2, S)]
        game = Game(lo, up, mask, rewards)
        m = build(lo, up, mask, rewards, np.float32)
        for nature in ("min", "max"):
            want = oracle_reach(game, labels["goal"], np.zeros(S, bool), "max", nature)
            res = jp.check(m, f'P{nature}=? [F "goal"]', labels=labels)
            assert_contains(res, want, (seed, nature))
            want = oracle_reward(game, labels["goal"], "min", nature)
            res = jp.check(m, f'R{nature}=? [F "goal"]', labels=labels)
            assert_contains(res, want, (seed, "R", nature))


@pytest.mark.integration
@pytest.mark.parametrize("dtype", DTYPES)
def test_bounded_against_backward_induction(dtype):
    S, A, k = 6, 2, 4
    lo, up, mask, rewards, labels = random_model(5, S, A)
    game = Game(lo, up, mask, rewards)
    goal, safe = labels["goal"], labels["safe"]
    none = np.zeros(S, bool)
    tol = 1e-12 if dtype == np.float64 else 2e-6
    with jax.enable_x64(dtype == np.float64):
        for sparse in (False, True):
            m = build(lo, up, mask, rewards, dtype, sparse)
            for pair in PAIRS:
                cases = {
                    f'[F<={k} "goal"]': oracle_bounded(game, k, goal, goal, 1.0, *pair),
                    f'[!"goal" U<={k} "safe"]': oracle_bounded(
                        game, k, safe, safe | (~safe & goal), safe.astype(float), *pair),
                    f'[G<={k} "safe"]': oracle_bounded(game, k, safe, ~safe, 0.0, *pair),
                    '[X "goal"]': oracle_bounded(game, 1, goal, none, 0.0, *pair),
                }  # fmt: skip
                for path, want in cases.items():
                    prop = f"{quantified('P', pair)} {path}"
                    res = jp.check(m, prop, labels=labels)
                    assert_contains(res, want, (prop, sparse), atol=1e-12)
                    np.testing.assert_allclose(res.values, want, atol=tol, err_msg=prop)
                    assert bool(res.converged)
                want = oracle_bounded(game, k, np.zeros(S), none, 0.0, *pair, rewards=rewards)
                prop = f"{quantified('R', pair)} [C<={k}]"
                res = jp.check(m, prop, labels=labels)
                assert_contains(res, want, prop, atol=1e-12)
                np.testing.assert_allclose(res.values, want, rtol=tol, err_msg=prop)
                # the first step's rule attains the value: r + nature's optimum of V_{k-1}
                rest = oracle_bounded(game, k - 1, np.zeros(S), none, 0.0, *pair, rewards=rewards)
                q = game.q(rest, pair[1], rewards)[np.arange(S), np.asarray(res.policy)]
                assert np.all(mask[np.arange(S), np.asarray(res.policy)])
                np.testing.assert_allclose(q, want, rtol=max(tol, 1e-9), err_msg=prop)


# --------------------------------------------------------------------------- closed forms


# The closed forms' states beyond the first three are never reached: every model of this file
# has SC states and two actions, sharing the library's compiled loops.
SC = 6


def idle_or_go(a=0.3, b=0.7):
    """s0: "idle" (stay, prob 1) or "go" (goal s1 in [a, b], fail s2 the rest)."""
    lo, up = np.zeros((SC, 2, SC)), np.zeros((SC, 2, SC))
    lo[0, 0, 0] = up[0, 0, 0] = 1.0
    lo[0, 1, 1], up[0, 1, 1] = a, b
    lo[0, 1, 2], up[0, 1, 2] = 1 - b, 1 - a
    for s in range(1, SC):
        lo[s, :, s] = up[s, :, s] = 1.0
    return lo, up, {"goal": np.eye(SC, dtype=bool)[1]}


@pytest.mark.parametrize("dtype", DTYPES)
def test_idle_or_go_closed_forms(dtype):
    lo, up, labels = idle_or_go()
    want = {"maxmin": 0.3, "maxmax": 0.7, "minmin": 0.0, "minmax": 0.0}
    with jax.enable_x64(dtype == np.float64):
        m = jp.make_interval_mdp(lo, up, np.zeros((SC, 2)), dtype=dtype)
        for q, w in want.items():
            res = jp.check(m, f'P{q}=? [F "goal"]', labels=labels)
            assert float(res.lower[0]) <= w <= float(res.upper[0]), q
            assert float(res.value_at_initial) == pytest.approx(w, abs=1e-6), q
            assert bool(res.converged)
            assert int(res.policy[0]) == (1 if q.startswith("max") else 0), q
            res = jp.check(m, f'P{q}=? [G !"goal"]', labels=labels)
            exact = {"maxmin": 1.0, "maxmax": 1.0, "minmin": 0.3, "minmax": 0.7}[q]
            assert float(res.lower[0]) <= exact <= float(res.upper[0]), ("G", q)


def one_state_loop(a, b, actions=1):
    """s0 exits to the goal s1 with probability in [a, b], else stays; every other state
    stays where it is.
    With ``actions=1`` an interval DTMC (one allowed action per state), with 2 an interval
    MDP whose two actions in s0 are equal."""
    lo, up = np.zeros((SC, 2, SC)), np.zeros((SC, 2, SC))
    lo[0, :, :2] = [1 - b, a]
    up[0, :, :2] = [1 - a, b]
    for s in range(1, SC):
        lo[s, :, s] = up[s, :, s] = 1.0
    mask = np.eye(2, dtype=bool)[np.zeros(SC, int)]
    mask[0, 1] = actions == 2
    return lo, up, mask, {"goal": np.eye(SC, dtype=bool)[1]}


def test_nature_cuts_the_only_edge():
    lo, up, mask, labels = one_state_loop(0.0, 0.5)
    m = jp.make_interval_mdp(lo, up, np.ones((SC, 2)), action_mask=mask)
    pmin = jp.check(m, 'Pmin=? [F "goal"]', labels=labels)
    assert float(pmin.lower[0]) == float(pmin.upper[0]) == 0.0
    assert bool(pmin.converged)
    pmax = jp.check(m, 'Pmax=? [F "goal"]', labels=labels)
    assert float(pmax.lower[0]) == float(pmax.upper[0]) == 1.0  # 0.5 each step: sure
    rmax = jp.check(m, 'Rmax=? [F "goal"]', labels=labels)  # nature keeps it forever
    assert float(rmax.values[0]) == np.inf and float(rmax.lower[0]) == np.inf
    rmin = jp.check(m, 'Rmin=? [F "goal"]', labels=labels)
    assert float(rmin.lower[0]) <= 2.0 <= float(rmin.upper[0])
    assert float(rmin.value_at_initial) == pytest.approx(2.0, rel=1e-6)


def test_nature_must_keep_mass_on_the_goal():
    lo, up, mask, labels = one_state_loop(0.2, 1.0)
    m = jp.make_interval_mdp(lo, up, np.ones((SC, 2)), action_mask=mask)
    pmin = jp.check(m, 'Pmin=? [F "goal"]', labels=labels)
    assert float(pmin.lower[0]) == float(pmin.upper[0]) == 1.0
    assert bool(pmin.converged)


@pytest.mark.parametrize("dtype", DTYPES)
def test_geometric_loop_rewards(dtype):
    a, b = 0.25, 0.5
    lo, up, mask, labels = one_state_loop(a, b, actions=2)
    with jax.enable_x64(dtype == np.float64):
        m = jp.make_interval_mdp(lo, up, np.ones((SC, 2)), action_mask=mask, dtype=dtype)
        for q, w in {"minmax": 1 / a, "minmin": 1 / b, "maxmax": 1 / a, "maxmin": 1 / b}.items():
            res = jp.check(m, f'R{q}=? [F "goal"]', labels=labels)
            assert float(res.lower[0]) <= w <= float(res.upper[0]), q
            assert float(res.value_at_initial) == pytest.approx(w, rel=2e-6), q
            assert bool(res.converged), q
            assert float(res.values[1]) == 0.0


def test_zero_cost_loop_rewards_prism_semantics():
    """s0: "idle" (stay, reward 0) or "go" (to the goal, reward 1): Rmin is 1 in PRISM (a
    policy that idles never arrives: inf), not the least fixed point 0."""
    lo, up = np.zeros((SC, 2, SC)), np.zeros((SC, 2, SC))
    lo[0, 0, 0] = up[0, 0, 0] = 1.0
    lo[0, 1, 1] = up[0, 1, 1] = 1.0
    for s in range(1, SC):
        lo[s, :, s] = up[s, :, s] = 1.0
    rewards = np.zeros((SC, 2))
    rewards[0, 1] = 1.0
    m = jp.make_interval_mdp(lo, up, rewards)
    labels = {"goal": np.eye(SC, dtype=bool)[1]}
    res = jp.check(m, 'Rminmin=? [F "goal"]', labels=labels)
    assert float(res.lower[0]) <= 1.0 <= float(res.upper[0])
    if bool(res.converged):
        assert float(res.value_at_initial) == pytest.approx(1.0)
    res = jp.check(m, 'Rmaxmin=? [F "goal"]', labels=labels)  # the policy idles forever
    assert float(res.values[0]) == np.inf


@pytest.mark.xfail(strict=True, reason="zero-reward end components: no upper bound, value 0")
def test_zero_cost_loop_rewards_value_and_policy():
    """The point checker answers Rmin = 1 (policy "go"); the interval checker on the same
    model as an interval model answered 0 (the least fixed point, converged False) and the
    policy "idle", whose expected reward is infinite."""
    P = np.zeros((SC, 2, SC))
    P[0, 0, 0] = P[0, 1, 1] = 1.0
    for s in range(1, SC):
        P[s, :, s] = 1.0
    rewards = np.zeros((SC, 2))
    rewards[0, 1] = 1.0
    labels = {"goal": np.eye(SC, dtype=bool)[1]}
    point = jp.check(jp.make_mdp(P, rewards), 'Rmin=? [F "goal"]', labels=labels)
    assert float(point.value_at_initial) == 1.0 and bool(point.converged)
    imdp = interval_of_point(jp.make_mdp(P, rewards))
    for q in ("Rminmin", "Rminmax"):
        res = jp.check(imdp, f'{q}=? [F "goal"]', labels=labels)
        assert int(res.policy[0]) == 1, q
        assert bool(res.converged), q
        assert float(res.value_at_initial) == pytest.approx(1.0), q


# --------------------------------------------------------------------------- users' paths


@pytest.mark.integration
def test_dense_and_sparse_agree():
    lo, up, mask, rewards, labels = random_model(11, 6, 2)
    dense = build(lo, up, mask, rewards, np.float32)
    sparse = jp.to_sparse(dense, max_successors=4)
    assert sparse.next_states is not None
    for prop in ('Pmaxmin=? [F "goal"]', 'Pminmax=? [G "safe"]', 'Rminmax=? [F "goal"]',
                 'Pmaxmax=? [F<=4 "goal"]', 'Rmaxmin=? [C<=4]'):  # fmt: skip
        a = jp.check(dense, prop, labels=labels)
        b = jp.check(sparse, prop, labels=labels)
        np.testing.assert_allclose(a.values, b.values, rtol=2e-6, atol=1e-7, err_msg=prop)
        np.testing.assert_array_equal(a.converged, b.converged)


@pytest.mark.integration
def test_bounded_under_jit_and_unbounded_refused():
    """Under ``jax.jit`` the bounds are computed in float32 and still contain the exact
    value (the oracle's, in float64), with no slack."""
    lo, up, mask, rewards, labels = random_model(12, 6, 2)
    game = Game(lo, up, mask, rewards)
    goal, none = labels["goal"], np.zeros(6, bool)
    m = build(lo, up, mask, rewards, np.float32)
    cases = {
        'Pmaxmin=? [F<=4 "goal"]': oracle_bounded(game, 4, goal, goal, 1.0, "max", "min"),
        "Rminmax=? [C<=3]": oracle_bounded(game, 3, np.zeros(6), none, 0.0, "min", "max",
                                           rewards=rewards),
    }  # fmt: skip
    for prop, want in cases.items():
        eager = jp.check(m, prop, labels=labels)
        traced = jax.jit(lambda m, lab, prop=prop: jp.check(m, prop, labels=lab))(m, labels)
        np.testing.assert_allclose(traced.values, eager.values, rtol=1e-5, atol=1e-6)
        assert np.all(np.asarray(traced.lower, np.float64) <= want), prop
        assert np.all(np.asarray(traced.upper, np.float64) >= want), prop
    with pytest.raises(ValueError):
        jax.jit(lambda m: jp.check(m, 'Pmaxmin=? [F "goal"]', labels=labels).values)(m)


@pytest.mark.integration
def test_point_model_as_interval_model():
    rng = np.random.default_rng(13)
    S, A = 6, 2
    P = rng.dirichlet(np.full(S, 0.5), size=(S, A))
    mdp = jp.make_mdp(P, np.ones((S, A)), discount=0.9)
    labels = {"goal": np.eye(S, dtype=bool)[3]}
    imdp = interval_of_point(mdp)
    want = jp.check(mdp, 'Pmax=? [F "goal"]', labels=labels)
    for q in ("Pmaxmin", "Pmaxmax"):
        res = jp.check(imdp, f'{q}=? [F "goal"]', labels=labels)
        np.testing.assert_allclose(res.values, want.values, rtol=5e-6, atol=1e-6, err_msg=q)
    want = jp.check(mdp, 'Pmin=? [F<=4 "goal"]', labels=labels)
    res = jp.check(jp.to_sparse(imdp), 'Pminmin=? [F<=4 "goal"]', labels=labels)
    np.testing.assert_allclose(res.values, want.values, rtol=5e-6, atol=1e-6)
    sparse = interval_of_point(jp.to_sparse(mdp))  # over the point model's successor lists
    assert sparse.next_states is not None
    for point, interval in (("Pmin", "Pminmax"), ("Rmin", "Rminmin"), ("Rmax", "Rmaxmax")):
        prop = '{}=? [F "goal"]'
        want = jp.check(mdp, prop.format(point), labels=labels)
        res = jp.check(sparse, prop.format(interval), labels=labels)
        assert bool(res.converged), interval
        np.testing.assert_allclose(res.values, want.values, rtol=5e-6, atol=1e-6, err_msg=point)


def test_refused_quantifiers():
    lo, up, labels = idle_or_go()
    m = jp.make_interval_mdp(lo, up, np.zeros((SC, 2)))
    with pytest.raises(ValueError, match="Pmaxmin"):
        jp.check(m, 'Pmax=? [F "goal"]', labels=labels)
    with pytest.raises(ValueError, match="Pminmax"):
        jp.check(m, 'Pmin=? [F<=3 "goal"]', labels=labels)
    with pytest.raises(ValueError):
        jp.check(m, 'P=? [F "goal"]', labels=labels)
    lo, up, mask, labels = one_state_loop(0.2, 0.5)
    dtmc = jp.make_interval_mdp(lo, up, np.ones((SC, 2)), action_mask=mask)
    with pytest.raises(ValueError):
        jp.check(dtmc, 'P=? [F "goal"]', labels=labels)


# --------------------------------------------------------------------------- convergence
# Models on which interval iteration once stopped before ``tol`` (``converged`` False,
# ``values`` the lower bound, far from the value). The bounds stayed valid; these ask for
# the value.


def leaky_go():
    """s0: "stay" (self-loop) or "go": goal s1 in [1/4, 1/2], fail s2 in [1/4, 1/2], back to
    s0 in [0, 1/2]. Pmaxmin = 1/4 + 1/4 Pmaxmin = 1/3 (nature keeps the goal low, the fail
    high)."""
    lo, up = np.zeros((SC, 2, SC)), np.zeros((SC, 2, SC))
    lo[0, 0, 0] = up[0, 0, 0] = 1.0
    lo[0, 1, :3] = [0, 0.25, 0.25]
    up[0, 1, :3] = [0.5, 0.5, 0.5]
    for s in range(1, SC):
        lo[s, :, s] = up[s, :, s] = 1.0
    return lo, up, {"goal": np.eye(SC, dtype=bool)[1]}


def test_lower_bound_keeps_iterating_when_the_upper_stalls():
    """The upper bound is deflated to 1/3 at once; the lower bound must still be iterated
    (not stop with the upper bound, after 2 backups at 0.3125)."""
    lo, up, labels = leaky_go()
    m = jp.make_interval_mdp(lo, up, np.zeros((SC, 2)))
    res = jp.check(m, 'Pmaxmin=? [F "goal"]', labels=labels)
    assert float(res.lower[0]) <= 1 / 3 <= float(res.upper[0])
    assert bool(res.converged)
    assert float(res.value_at_initial) == pytest.approx(1 / 3, rel=2e-6)


def test_point_model_with_end_components_as_interval_model():
    """Two self-loops whose exits feed each other: Pmax = 1/3 in s0 (the point checker's),
    not the lower bound 1/4 of two backups."""
    P = np.zeros((SC, 2, SC))
    P[0, 0, 0] = P[1, 0, 1] = 1.0
    P[0, 1, :4] = [0, 0.5, 0.25, 0.25]
    P[1, 1, :4] = [0.5, 0, 0, 0.5]
    for s in range(2, SC):
        P[s, :, s] = 1.0
    labels = {"goal": np.eye(SC, dtype=bool)[2]}
    mdp = jp.make_mdp(P, np.zeros((SC, 2)))
    want = jp.check(mdp, 'Pmax=? [F "goal"]', labels=labels)
    assert float(want.value_at_initial) == pytest.approx(1 / 3, rel=1e-6)
    for q in ("Pmaxmax", "Pmaxmin"):
        res = jp.check(interval_of_point(mdp), f'{q}=? [F "goal"]', labels=labels)
        assert bool(res.converged), q
        np.testing.assert_allclose(res.values, want.values, rtol=2e-6, atol=1e-7, err_msg=q)


def test_reward_upper_bound_beside_a_one_step_state():
    """s1 reaches the goal in one step (reward 1): its upper bound, the widened backup 1 +
    ulps, is not verifiable as a pre-fixpoint; a candidate capped by it must not keep every
    upper bound at inf (s0: Rmax = 2, Rmin = 4/3)."""
    lo, up = np.zeros((SC, 2, SC)), np.zeros((SC, 2, SC))
    lo[0, 0, :3] = [0.25, 0, 0.5]
    up[0, 0, :3] = [0.5, 0, 0.75]
    lo[1, 0, 2] = up[1, 0, 2] = 1.0
    for s in range(2, SC):
        lo[s, :, s] = up[s, :, s] = 1.0
    mask = np.eye(2, dtype=bool)[np.zeros(SC, int)]
    rewards = np.zeros((SC, 2))
    rewards[:2, 0] = 1.0
    m = jp.make_interval_mdp(lo, up, rewards, action_mask=mask)
    labels = {"goal": np.eye(SC, dtype=bool)[2]}
    for q, w in (("Rmax", 2.0), ("Rmin", 4 / 3)):
        res = jp.check(m, f'{q}=? [F "goal"]', labels=labels)
        assert float(res.lower[0]) <= w <= float(res.upper[0]), q
        assert bool(res.converged), q
        assert float(res.value_at_initial) == pytest.approx(w, rel=2e-6), q


# (seed, S, A, trap, sparse, property): random models found by the oracles' search.
STALLED = [
    (20, 8, 2, True, False, 'Pmaxmin=? [F "goal"]'),  # the lower bound stopped (see above)
    (48, 7, 3, True, False, 'Pminmax=? [F "goal"]'),
    (34, 6, 3, True, False, 'Pminmin=? [G "safe"]'),  # sets deflated one after another
    (12, 7, 1, False, False, 'Rmaxmin=? [F "goal"]'),  # the reward's upper bound stayed inf
    (3, 4, 1, True, True, 'Pmaxmin=? [G "safe"]'),  # G = 1 - F: F's tol is not G's
]


@pytest.mark.integration
@pytest.mark.parametrize("case", STALLED, ids=["F", "F2", "G-deflation", "R", "G-tol"])
def test_small_random_models_converge(case):
    seed, S, A, trap, sparse, prop = case
    lo, up, mask, rewards, labels = random_model(seed, S, A, trap=trap)
    res = jp.check(build(lo, up, mask, rewards, np.float32, sparse), prop, labels=labels)
    assert bool(res.converged), (float(res.precision), int(res.iterations))
