"""``check``'s precision: PRISM's and Storm's 1e-6 (relative) by default in every dtype mode.

Oracles share no code with the library: closed forms (a geometric number of steps, a
symmetric random walk's expected absorption time ``s (n − s)``) and NumPy's dense linear
solve of a DTMC's transient part in float64.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxprivmdp.models import make_mdp, make_ragged_mdp, make_sparse_mdp
from jaxprivmdp.properties import CheckResult, check

MODES = [pytest.param(False, id="float32"), pytest.param(True, id="float64")]


def in_mode(x64):
    return jax.enable_x64(True) if x64 else jax.enable_x64(False)


def build(P, R, *, sparse, x64, **kw):
    """A dense, sparse (``sparse=True``) or ragged (``sparse="ragged"``) model of ``P``."""
    dtype = np.float64 if x64 else np.float32
    if sparse == "ragged":
        S, A, _ = P.shape
        s, a, t = np.nonzero(P)
        return make_ragged_mdp(s * A + a, t, P[s, a, t], R, dtype=dtype, **kw)
    if sparse:
        S, A, _ = P.shape
        K = int((P > 0).sum(-1).max())
        nxt = np.full((S, A, K), -1, np.int32)
        probs = np.zeros((S, A, K))
        for s in range(S):
            for a in range(A):
                (t,) = np.nonzero(P[s, a])
                nxt[s, a, : t.size], probs[s, a, : t.size] = t, P[s, a, t]
        return make_sparse_mdp(nxt, probs, R, dtype=dtype, **kw)
    return make_mdp(P, R, dtype=dtype, **kw)


def geometric():
    """Rmin=? [F "goal"] = 20/3: action 0 reaches the goal w.p. 0.15 per step, action 1 0.1."""
    P = np.zeros((2, 2, 2))
    P[0, 0] = [0.85, 0.15]
    P[0, 1] = [0.9, 0.1]
    P[1, :, 1] = 1
    R = np.array([[1.0, 1.0], [0.0, 0.0]])
    mask = np.array([[True, True], [True, False]])
    return P, R, mask, {"goal": np.array([False, True])}


def walk(n=600):
    """A symmetric random walk on 0..n, absorbed at both ends, reward 1 per step."""
    S = n + 1
    P = np.zeros((S, 1, S))
    s = np.arange(1, n)
    P[s, 0, s - 1] = P[s, 0, s + 1] = 0.5
    P[[0, n], 0, [0, n]] = 1
    R = np.zeros((S, 1))
    R[1:n] = 1
    ends = np.zeros(S, bool)
    ends[[0, n]] = True
    exact = np.arange(S) * (n - np.arange(S)).astype(np.float64)
    return P, R, {"ends": ends}, exact


def contains(res, exact):
    lo = np.asarray(res.lower, np.float64)
    up = np.asarray(res.upper, np.float64)
    assert np.all(lo <= exact) and np.all(exact <= up), (lo, up, exact)
    v = np.asarray(res.values, np.float64)
    assert np.all(lo <= v) and np.all(v <= up)
    assert np.all(np.abs(v - exact) <= np.asarray(res.error_bound, np.float64))


def test_result_fields_are_appended():
    assert CheckResult._fields == (
        "values",
        "policy",
        "error_bound",
        "value_at_initial",
        "converged",
        "iterations",
        "lower",
        "upper",
        "precision",
    )


@pytest.mark.parametrize("x64", MODES)
@pytest.mark.parametrize("sparse", [False, True])
def test_geometric_reaches_1e6_relative_by_default(x64, sparse):
    P, R, mask, labels = geometric()
    with in_mode(x64):
        mdp = build(P, R, sparse=sparse, x64=x64, action_mask=mask)
        res = check(mdp, 'Rmin=? [F "goal"]', labels=labels)
        assert res.values.dtype == (jnp.float64 if x64 else jnp.float32)
        assert res.lower.dtype == res.upper.dtype == res.values.dtype
    contains(res, np.array([20 / 3, 0]))
    assert bool(res.converged) and 0 < float(res.precision) <= 1e-6
    assert abs(float(res.value_at_initial) - 20 / 3) <= 1e-6 * 20 / 3
    assert int(res.policy[0]) == 0


@pytest.mark.parametrize("x64", MODES)
@pytest.mark.parametrize("sparse", [False, True])
def test_slow_random_walk_converges(x64, sparse):
    """Interval iteration alone shrinks the interval by about 1 − 1.4e-5 per step here."""
    P, R, labels, exact = walk()
    with in_mode(x64):
        mdp = build(P, R, sparse=sparse, x64=x64, initial_state=300)
        res = check(mdp, 'R=? [F "ends"]', labels=labels)
    contains(res, exact)
    assert bool(res.converged) and float(res.precision) <= 1e-6
    np.testing.assert_allclose(float(res.value_at_initial), 90_000, rtol=1e-6)


def test_unconverged_interval_is_reported_as_bounds(monkeypatch):
    """Without the guessed bounds and with few iterations: the lower bound is the value,
    the upper bound is reported as such, and the error bound is the whole interval."""
    import jaxprivmdp.properties._unbounded as unbounded

    monkeypatch.setattr(unbounded, "guess_bounds", lambda *a, **k: (None, None))
    P, R, labels, exact = walk()
    mdp = build(P, R, sparse=True, x64=False, initial_state=300)
    res = check(mdp, 'R=? [F "ends"]', labels=labels, max_iterations=2000)
    contains(res, exact)
    assert not bool(res.converged) and float(res.precision) > 1e-6
    np.testing.assert_array_equal(np.asarray(res.values), np.asarray(res.lower))
    lo, up = np.asarray(res.lower, np.float64), np.asarray(res.upper, np.float64)
    assert np.all(np.asarray(res.error_bound, np.float64) >= up - lo)
    assert 0 < float(res.lower[300]) < 90_000 < float(res.upper[300])


def random_dtmc(rng, S=40):
    """A DTMC whose transient states 0..S-3 reach the absorbing S-2 (goal) or S-1 (fail)."""
    P = np.zeros((S, 1, S))
    for s in range(S - 2):
        succ = rng.choice(S, size=4, replace=False)
        P[s, 0, succ] = rng.dirichlet(np.ones(4))
        P[s, 0, s] += 0.5  # slow: self-loops
        P[s, 0] /= P[s, 0].sum()
    P[S - 2, 0, S - 2] = P[S - 1, 0, S - 1] = 1
    R = rng.uniform(0.5, 2, (S, 1))
    R[S - 2 :] = 0
    labels = {"goal": np.arange(S) == S - 2, "end": np.arange(S) >= S - 2}
    return P, R, labels


@pytest.mark.parametrize("sparse", [False, True, "ragged"])
def test_float32_interval_contains_the_float64_oracle(sparse):
    """Narrowing float64 to float32 rounds outward: the float32 interval holds the exact
    value of the float32 model's rows (a NumPy solve in float64)."""
    P, R, labels = random_dtmc(np.random.default_rng(0))
    mdp = build(P, R, sparse=sparse, x64=False)
    P32 = np.asarray(P, np.float32).astype(np.float64)[:, 0]
    P32 /= P32.sum(axis=1, keepdims=True)  # the rows read as distributions
    R32 = np.asarray(R, np.float32).astype(np.float64)[:, 0]
    n = P.shape[0] - 2
    Q = np.eye(n) - P32[:n, :n]
    reward = np.linalg.solve(Q, R32[:n])
    prob = np.linalg.solve(Q, P32[:n, n])
    res = check(mdp, 'R=? [F "end"]', labels=labels)
    contains(res, np.r_[reward, 0, 0])
    assert bool(res.converged) and float(res.precision) <= 1e-6
    p = check(mdp, 'P=? [F "goal"]', labels=labels)
    contains(p, np.r_[prob, 1, 0])
    g = check(mdp, 'P=? [G !"goal"]', labels=labels)
    contains(g, 1 - np.r_[prob, 1, 0])


def test_bounded_property_under_jit_keeps_the_dtype():
    P, R, labels = random_dtmc(np.random.default_rng(1), S=12)
    mdp = build(P, R, sparse=False, x64=False)

    @jax.jit
    def run(m):
        res = check(m, 'P=? [F<=5 "goal"]', labels=labels)
        return res.values, res.lower, res.upper, res.precision

    v, lo, up, prec = run(mdp)
    assert v.dtype == lo.dtype == up.dtype == jnp.float32
    eager = check(mdp, 'P=? [F<=5 "goal"]', labels=labels)
    assert np.all(np.asarray(lo) <= np.asarray(v)) and np.all(np.asarray(v) <= np.asarray(up))
    np.testing.assert_allclose(np.asarray(v), np.asarray(eager.values), atol=1e-6)
    # The eager call ran in float64: its interval is narrower.
    assert float(eager.precision) <= float(prec) + 1e-7
    # NumPy oracle: five steps of the chain (the float32 rows read as distributions).
    Pn = np.asarray(P, np.float32).astype(np.float64)[:, 0]
    Pn /= Pn.sum(axis=1, keepdims=True)
    x = labels["goal"].astype(float)
    for _ in range(5):
        x = np.where(labels["goal"], 1, Pn @ x)
    contains(eager, x)


def lazy_walk(n=300):
    """A symmetric walk on 0..n with a choice: a fair step (reward 1) or a lazy one (stay
    w.p. 1/2, reward 1/2): the same cost per move, so both actions are optimal everywhere
    (Rmin = Rmax = s (n − s)) and the optimal policies' expected steps differ by 2x."""
    S = n + 1
    P = np.zeros((S, 2, S))
    s = np.arange(1, n)
    P[s, 0, s - 1] = P[s, 0, s + 1] = 0.5
    P[s, 1, s - 1] = P[s, 1, s + 1] = 0.25
    P[s, 1, s] = 0.5
    P[[0, n], :, [0, n]] = 1
    R = np.zeros((S, 2))
    R[1:n] = [1.0, 0.5]
    ends = np.zeros(S, bool)
    ends[[0, n]] = True
    exact = np.arange(S) * (n - np.arange(S)).astype(np.float64)
    return P, R, {"ends": ends}, exact


@pytest.mark.parametrize("opt", ["min", "max"])
def test_tied_actions_on_a_slow_mdp(opt):
    P, R, labels, exact = lazy_walk()
    mdp = build(P, R, sparse=True, x64=False)
    res = check(mdp, f'R{opt}=? [F "ends"]', labels=labels)
    contains(res, exact)
    assert bool(res.converged) and float(res.precision) <= 1e-6


def test_a_long_chain_converges():
    """Deeper than interval iteration's first 1000 steps reach: 3000 states, each moving on
    w.p. 1/2 (R = 2 (n − s))."""
    n = 3000
    S = n + 1
    nxt = np.stack([np.arange(S), np.minimum(np.arange(S) + 1, n)], 1)[:, None, :]
    probs = np.tile([0.5, 0.5], (S, 1))[:, None, :]
    nxt[n, 0], probs[n, 0] = [n, -1], [1, 0]
    R = np.ones((S, 1))
    R[n] = 0
    mdp = make_sparse_mdp(nxt.astype(np.int32), probs, R)
    res = check(mdp, 'R=? [F "end"]', labels={"end": np.arange(S) == n})
    contains(res, 2.0 * (n - np.arange(S)))
    assert bool(res.converged) and float(res.precision) <= 1e-6


@pytest.mark.parametrize("opt", ["min", "max"])
def test_guessed_bounds_hold_with_tied_detours(monkeypatch, opt):
    """Every state of 0..k-1 may "go" (goal or fail, 1/2 each) or take a "detour" to the
    next state: P = 1/2 either way, so the detours tie with the optimum while taking more
    steps. The guessed bounds must be verified at once (no iteration: the passes over the
    components, which would solve this acyclic chain themselves, are made to do nothing)."""
    import jaxprivmdp.properties._unbounded as unbounded

    def nothing(self, lo, up, stop):  # a pass that moves nothing and says so
        return lo, up, 1, np.zeros(len(lo), bool)

    monkeypatch.setattr(unbounded.Topological, "run", nothing)
    k = 20
    S = k + 2  # k: goal, k + 1: fail
    P = np.zeros((S, 2, S))
    P[:k, 0, k] = P[:k, 0, k + 1] = 0.5
    P[np.arange(k - 1), 1, np.arange(1, k)] = 1
    P[[k, k + 1], 0, [k, k + 1]] = 1
    mask = np.zeros((S, 2), bool)
    mask[:, 0] = True
    mask[: k - 1, 1] = True
    mdp = build(P, np.zeros((S, 2)), sparse=False, x64=False, action_mask=mask)
    res = check(mdp, f'P{opt}=? [F "goal"]', labels={"goal": np.arange(S) == k})
    contains(res, np.r_[np.full(k, 0.5), 1, 0])
    assert bool(res.converged) and int(res.iterations) == 0


def test_a_model_closed_over_under_jit():
    """A concrete model inside a jitted function: a bounded property is computed in the
    trace (the model's dtype); an unbounded one is refused with the reason."""
    P, R, labels = random_dtmc(np.random.default_rng(2), S=8)
    mdp = build(P, R, sparse=False, x64=False)
    eager = check(mdp, 'P=? [F<=4 "goal"]', labels=labels)
    inside = jax.jit(lambda: check(mdp, 'P=? [F<=4 "goal"]', labels=labels).values)()
    np.testing.assert_allclose(np.asarray(inside), np.asarray(eager.values), atol=1e-6)
    with pytest.raises(ValueError, match="unbounded properties need a concrete model"):
        jax.jit(lambda: check(mdp, 'P=? [F "goal"]', labels=labels).values)()
