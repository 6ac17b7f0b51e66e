"""Total reward ``R [C]`` on interval models, against oracles written here.

Closed forms (a geometric number of steps, nature choosing the exit probability in a box,
loops the players can or cannot keep), and, on small random interval MDPs, NumPy value
iteration of the game over the rows' vertices (the policy picks an action, nature a vertex of
``{l <= x <= u, Σ x = 1}``: all but one coordinate at a bound), from 0 to a long horizon:
``B^n(0)`` is at most the value, so it must lie below every reported upper bound, and
(converged) near the reported lower one; its growth between two horizons tells the infinite
values. The random models' bounds are multiples of 1/64, exact in float32 and float64.
"""

import jax
import numpy as np
import pytest

import jaxprivmdp as jp

GRID = 64
PAIRS = [("max", "min"), ("max", "max"), ("min", "min"), ("min", "max")]
DTYPES = [np.float32, np.float64]


# --------------------------------------------------------------------------- the oracle


def row_vertices(low, high):
    """`[NV, n]` the vertices of ``{l <= x <= u, Σ x = 1}`` (n-1 coordinates at a bound)."""
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
    return np.unique(np.round(np.array(out), 15), axis=0)


class Game:
    """The vertex game of an interval MDP: every allowed row's vertices, stacked."""

    def __init__(self, lo, up, mask, rewards):
        self.S, self.A = mask.shape
        self.mask, self.rewards = mask, rewards
        rows, verts = [], []
        for s, a in zip(*np.nonzero(mask), strict=True):
            v = row_vertices(lo[s, a], up[s, a])
            rows += [s * self.A + a] * len(v)
            verts.append(v)
        self.rows, self.verts = np.array(rows), np.concatenate(verts)
        self.starts = np.flatnonzero(np.r_[True, self.rows[1:] != self.rows[:-1]])

    def values(self, policy, nature, steps, fixed_policy=None):
        """``B^steps(0)``: the game's value over ``steps`` steps (a stationary policy's, against
        nature's optimum, with ``fixed_policy``)."""
        nat = np.maximum if nature == "max" else np.minimum
        v = np.zeros(self.S)
        usable = self.mask if fixed_policy is None else np.eye(self.A, dtype=bool)[fixed_policy]
        for _ in range(steps):
            q = np.full(self.S * self.A, np.nan)
            q[self.rows[self.starts]] = nat.reduceat(self.verts @ v, self.starts)
            q = np.where(usable, self.rewards + q.reshape(self.S, self.A), np.nan)
            v = np.nanmax(q, axis=1) if policy == "max" else np.nanmin(q, axis=1)
        return v


def random_model(seed, S=5, A=2):
    """Bounds on the 1/64 grid, random supports (self-loops, a zero-reward absorbing state),
    some point rows, some zero rewards (zero-reward loops), dyadic rewards."""
    rng = np.random.default_rng(seed)
    lo, up = np.zeros((S, A, S)), np.zeros((S, A, S))
    for s in range(S):
        for a in range(A):
            n = int(rng.integers(1, min(S, 3) + 1))
            supp = rng.choice(S, n, replace=False)
            if rng.uniform() < 0.3 and s not in supp:
                supp[0] = s
            counts = 1 + rng.multinomial(GRID - n, np.full(n, 1.0 / n))
            r = np.zeros(n, int) if rng.uniform() < 0.25 else rng.integers(0, 16, n)
            lo[s, a, supp] = np.maximum(counts - r, 0) / GRID
            up[s, a, supp] = np.minimum(counts + r, GRID) / GRID
    mask = rng.uniform(size=(S, A)) < 0.7
    mask[np.arange(S), rng.integers(0, A, S)] = True
    rewards = rng.integers(1, 5, size=(S, A)) / 4.0 * (rng.uniform(size=(S, A)) < 0.6)
    t = rng.integers(S)  # an absorbing state of no reward: finite totals exist
    lo[t], up[t], rewards[t] = 0.0, 0.0, 0.0
    lo[t, :, t] = up[t, :, t] = 1.0
    return lo, up, mask, rewards


def build(lo, up, mask, rewards, dtype, sparse=False):
    m = jp.make_interval_mdp(lo, up, rewards, action_mask=mask, dtype=dtype)
    return jp.to_sparse(m, max_successors=4) if sparse else m


def assert_sound(res, game, pair, where, near=(2000, 4000)):
    """The reported ``[lower, upper]`` against the game's ``B^n(0)``: below every upper
    bound; near the lower one where it has settled (and the answer converged); growing
    where the answer says ``inf``. Returns the states the oracle calls finite."""
    lower = np.asarray(res.lower, np.float64)
    upper = np.asarray(res.upper, np.float64)
    short, long_ = (game.values(*pair, n) for n in near)
    assert np.all(long_ <= upper * (1 + 1e-6) + 1e-9), (where, upper, long_)
    settled = long_ - short <= 1e-9 * np.maximum(1, long_)
    growing = long_ - short > 0.5
    claimed_inf = lower == np.inf
    assert not np.any(claimed_inf & settled), (where, lower, short, long_)
    assert np.all(lower[settled] <= long_[settled] * (1 + 1e-6) + 1e-9), (where, lower, long_)
    if bool(res.converged):
        tol = 2e-6 * np.maximum(1, long_)
        assert np.all(~settled | (long_ - lower <= tol)), (where, lower, long_)
    assert np.all(~growing | (upper == np.inf)), (where, upper, short, long_)
    return settled


# --------------------------------------------------------------------------- closed forms


def chain(p_lo, p_hi, reward=1.0):
    """State 0 pays ``reward`` and leaves for the absorbing, reward-free state 1 with a
    probability nature picks in ``[p_lo, p_hi]``, else stays."""
    lo, up = np.zeros((2, 1, 2)), np.zeros((2, 1, 2))
    lo[0, 0], up[0, 0] = [1 - p_hi, p_lo], [1 - p_lo, p_hi]
    lo[1, 0, 1] = up[1, 0, 1] = 1.0
    return lo, up, np.array([[reward], [0.0]])


@pytest.mark.integration
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("sparse", [False, True])
def test_geometric_total(dtype, sparse):
    """Reward 1 a step, exit probability p: the total is 1/p; nature picking p in a box:
    1/p_lo at its most adverse, 1/p_hi at its kindest."""
    with jax.enable_x64(dtype == np.float64):
        lo, up, r = chain(0.25, 0.25)
        m = build(lo, up, np.ones((2, 1), bool), r, dtype, sparse)
        res = jp.check(m, "Rmax=? [C]")
        assert bool(res.converged) and res.values.dtype == dtype
        assert res.lower[0] <= 4.0 <= res.upper[0] and res.lower[1] == res.upper[1] == 0
        np.testing.assert_allclose(float(res.values[0]), 4.0, rtol=2e-6)
        lo, up, r = chain(0.05, 0.5)
        m = build(lo, up, np.ones((2, 1), bool), r, dtype, sparse)
        for q, want in [("Rmax=? [C]", 20.0), ("Rmin=? [C]", 2.0)]:
            res = jp.check(m, q)
            assert bool(res.converged) and res.lower[0] <= want <= res.upper[0], (q, res)
            np.testing.assert_allclose(float(res.values[0]), want, rtol=2e-6)


def two_ways():
    """State 0: action 0 is the box chain (exit in [0.05, 0.5], reward 1 a step, total 20
    or 2); action 1 pays 10 once and leaves. State 1 absorbs, free."""
    lo, up = np.zeros((2, 2, 2)), np.zeros((2, 2, 2))
    lo[0, 0], up[0, 0] = [0.5, 0.05], [0.95, 0.5]
    lo[0, 1, 1] = up[0, 1, 1] = 1.0
    lo[1, :, 1] = up[1, :, 1] = 1.0
    mask = np.array([[True, True], [True, False]])
    return lo, up, mask, np.array([[1.0, 10.0], [0.0, 0.0]])


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_quantifier_pair(dtype):
    with jax.enable_x64(dtype == np.float64):
        m = build(*two_ways(), dtype)
        want = {("min", "max"): (10.0, 1), ("min", "min"): (2.0, 0),
                ("max", "min"): (10.0, 1), ("max", "max"): (20.0, 0)}  # fmt: skip
        for (pol, nat), (value, action) in want.items():
            res = jp.check(m, f"R{pol}{nat}=? [C]")
            assert bool(res.converged), (pol, nat)
            assert res.lower[0] <= value <= res.upper[0], (pol, nat, res.lower, res.upper)
            np.testing.assert_allclose(float(res.values[0]), value, rtol=2e-6)
            assert int(res.policy[0]) == action, (pol, nat)


def loops():
    """State 0: action 0 a self-loop paying 1 (the maximizer keeps it: inf); action 1 a
    reward-free step to 1. State 1: action 0 a reward-free self-loop (the minimizer keeps
    it: 0), action 1 to 2 paying 3. State 2: a reward-free loop that nature may keep (in
    [0.5, 1]) or leave for 3 (in [0, 0.5]); state 3 pays 1 and leaves for 4, which absorbs;
    state 5: the same as 2 but nature must leave (exit in [0.1, 1])."""
    S = 6
    lo, up = np.zeros((S, 2, S)), np.zeros((S, 2, S))
    r = np.zeros((S, 2))
    mask = np.zeros((S, 2), bool)
    mask[:, 0] = True
    mask[:2, 1] = True
    lo[0, 0, 0] = up[0, 0, 0] = 1.0
    r[0, 0] = 1.0
    lo[0, 1, 1] = up[0, 1, 1] = 1.0
    lo[1, 0, 1] = up[1, 0, 1] = 1.0
    lo[1, 1, 2] = up[1, 1, 2] = 1.0
    r[1, 1] = 3.0
    lo[2, 0, [2, 3]], up[2, 0, [2, 3]] = [0.5, 0.0], [1.0, 0.5]
    lo[3, 0, 4] = up[3, 0, 4] = 1.0
    r[3, 0] = 1.0
    lo[4, 0, 4] = up[4, 0, 4] = 1.0
    lo[5, 0, [5, 3]], up[5, 0, [5, 3]] = [0.0, 0.1], [0.9, 1.0]
    return lo, up, mask, r


@pytest.mark.parametrize(
    "layout",
    ["dense"] + [pytest.param(k, marks=pytest.mark.integration) for k in ("sparse", "ragged")],
)
def test_loops_kept_and_broken(layout):
    m = build(*loops(), np.float32, layout != "dense")
    m = jp.to_ragged(m) if layout == "ragged" else m
    inf = np.inf
    want = {  # states 0..5
        ("max", "max"): [inf, 4, 1, 1, 0, 1],
        ("max", "min"): [inf, 3, 0, 1, 0, 1],
        ("min", "max"): [0, 0, 1, 1, 0, 1],
        ("min", "min"): [0, 0, 0, 1, 0, 1],
    }
    for (pol, nat), values in want.items():
        res = jp.check(m, f"R{pol}{nat}=? [C]")
        lower, upper = np.asarray(res.lower), np.asarray(res.upper)
        values = np.array(values, float)
        assert bool(res.converged), (pol, nat, lower, upper)
        assert np.all(lower <= values) and np.all(values <= upper), (pol, nat, lower, upper)
        assert np.all(lower[values == inf] == inf), (pol, nat, lower)
        np.testing.assert_allclose(np.asarray(res.values, float), values, rtol=2e-6)
    res = jp.check(m, "Rmaxmax=? [C]")
    assert int(res.policy[1]) == 1  # the tie with the free self-loop goes to the paying exit


def test_deterministic_chain():
    """One successor per state (as many entries as states): 3 → 2 → 4 → 1, state 2 paying
    0.5 once; 0 and 1 absorb, free. Totals 0.5 at 2 and 3, 0 elsewhere, none infinite."""
    succ = [0, 1, 4, 2, 1]
    lo = np.zeros((5, 1, 5))
    lo[np.arange(5), 0, succ] = 1.0
    r = np.zeros((5, 1))
    r[2, 0] = 0.5
    m = build(lo, lo.copy(), np.ones((5, 1), bool), r, np.float32)
    for q in ("Rmax=? [C]", "Rmin=? [C]"):
        res = jp.check(m, q)
        assert bool(res.converged)
        np.testing.assert_allclose(np.asarray(res.values), [0, 0, 0.5, 0.5, 0], rtol=2e-6)


def test_interval_dtmc_float32_outward():
    """A float32 answer's interval holds the float64 value (rounded outward)."""
    lo, up, r = chain(1 / 3, 1 / 3)
    m = build(lo, up, np.ones((2, 1), bool), r, np.float32)
    res = jp.check(m, "Rmin=? [C]")
    assert res.lower.dtype == np.float32
    assert float(res.lower[0]) <= 3.0 <= float(res.upper[0])


# --------------------------------------------------------------------------- random models


@pytest.mark.integration
def test_random_models_against_the_vertex_game():
    check_random(0, np.float32, sparse=False)
    check_random(1, np.float64, sparse=True)


@pytest.mark.integration
@pytest.mark.parametrize("seed", range(2, 22))
def test_random_models_against_the_vertex_game_many(seed):
    check_random(seed, np.float64, sparse=bool(seed % 2))


def check_random(seed, dtype, sparse):
    lo, up, mask, rewards = random_model(seed)
    game = Game(lo, up, mask, rewards)
    with jax.enable_x64(dtype == np.float64):
        m = build(lo, up, mask, rewards, dtype, sparse)
        for pair in PAIRS:
            res = jp.check(m, f"R{pair[0]}{pair[1]}=? [C]")
            settled = assert_sound(res, game, pair, (seed, pair))
            if bool(res.converged):  # the policy attains the value where it is finite
                got = game.values(pair[0], pair[1], 2000, fixed_policy=np.asarray(res.policy))
                want = game.values(*pair, 2000)
                np.testing.assert_allclose(got[settled], want[settled], rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------- refusals


def test_refusals():
    m = build(*two_ways(), np.float32)
    with pytest.raises(ValueError, match="two quantifiers"):
        jp.check(m, "Rmax=? [C]")
    lo, up, mask, r = two_ways()
    r[0, 0] = -1.0
    with pytest.raises(ValueError, match=r"R \[C\] needs non-negative rewards"):
        jp.check(build(lo, up, mask, r, np.float32), "Rmaxmin=? [C]")
    with pytest.raises(ValueError, match="concrete model"):
        jax.jit(lambda mm: jp.check(mm, "Rmaxmin=? [C]").values)(m)
    point = jp.examples.investment()
    with pytest.raises(ValueError, match=r"total reward R \[C\] is checked on interval models"):
        jp.check(point, "Rmax=? [C]")
    bounded = jp.check(m, "Rmaxmax=? [C<=3]")  # the bounded form is unchanged
    assert bool(bounded.converged)
