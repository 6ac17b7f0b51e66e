"""The policy solves behind ``check``'s verified guess (``properties._solve``): the direct LU
in its fixed order, the Krylov fallback, and the fill bound that chooses between them.

Oracles share no code with the library: NumPy's dense ``linalg.solve`` of each system, and
for ``check`` the optimum over every policy of a small MDP (each solved densely by NumPy).
"""

import itertools

import numpy as np
import pytest

import jaxprivmdp.properties._guess as guess_module
import jaxprivmdp.properties._solve as solve_module
import jaxprivmdp.properties._sweep_guess as sweep_module
import jaxprivmdp.properties._unbounded as unbounded
from jaxprivmdp.models import make_mdp
from jaxprivmdp.properties import check
from jaxprivmdp.properties._solve import PolicySolver


def random_system(rng, n, k=3, leave=0.05, shape="random"):
    """Off-diagonal entries ``rows -> cols`` with probabilities of a proper policy (each row
    loses ``leave`` or more): successors at random, earlier states only ("dag"), or chains
    that return to state 0 ("hub")."""
    rows = np.repeat(np.arange(n), k)
    if shape == "dag":
        cols = (rng.random(rows.size) * rows).astype(np.int64)
    elif shape == "hub":
        cols = np.where(rng.random(rows.size) < 0.2, 0, np.minimum(rows + 1, n - 1))
    else:
        cols = rng.integers(0, n, rows.size)
    keep = rows != cols
    rows, cols = rows[keep], cols[keep]
    probs = rng.random(rows.size)
    probs *= (1 - leave) / np.bincount(rows, probs, n)[rows]
    return rows, cols, probs


def dense(n, rows, cols, probs):
    m = np.eye(n)
    np.subtract.at(m, (rows, cols), probs)
    return m


@pytest.mark.parametrize("small", [False, True])
@pytest.mark.parametrize("shape", ["random", "dag", "hub"])
def test_direct_and_krylov_solves_match_numpy(monkeypatch, shape, small):
    """The LU (in the solver's order, or SuperLU's for a small system) and GMRES."""
    monkeypatch.setattr(solve_module, "SMALL", 1000 if small else 0)
    rng = np.random.default_rng(1)
    n = 400
    rows, cols, probs = random_system(rng, n, shape=shape)
    b = rng.random(n)
    exact = np.linalg.solve(dense(n, rows, cols, probs), b)
    direct = PolicySolver(n, rows, cols)
    assert direct.direct and direct.small == small
    got = direct.factor(rows, cols, probs)(b, "x")
    np.testing.assert_allclose(got, exact, rtol=1e-11)
    monkeypatch.setattr(solve_module, "MAX_FILL", -1)
    krylov = PolicySolver(n, rows, cols)
    assert not krylov.direct
    got = krylov.factor(rows, cols, probs)(b, "x")
    np.testing.assert_allclose(got, exact, rtol=1e-10)
    # A policy on a sub-pattern (some successors dropped): the same order serves it.
    part = rng.random(rows.size) < 0.7
    sub = probs[part]
    exact = np.linalg.solve(dense(n, rows[part], cols[part], sub), b)
    got = direct.factor(rows[part], cols[part], sub)(b, "x")
    np.testing.assert_allclose(got, exact, rtol=1e-11)


@pytest.mark.parametrize("small", [False, True])
@pytest.mark.parametrize("shape", ["dag", "hub"])
def test_a_few_changed_rows_are_solved_through_the_last_factor(monkeypatch, shape, small):
    """A policy that differs from a factored one in a few rows (Sherman-Morrison-Woodbury
    over the old factor), one or two right-hand sides, against NumPy; more rows than
    LOW_RANK, or a singular matrix, are left to a new factorization (None)."""
    monkeypatch.setattr(solve_module, "SMALL", 1000 if small else 0)
    rng = np.random.default_rng(2)
    n = 300
    rows, cols, probs = random_system(rng, n, shape=shape)
    solver = PolicySolver(n, rows, cols)
    base = solver.factor(rows, cols, probs)
    b = rng.random((n, 2))
    for k in (1, 5, solve_module.LOW_RANK):
        changed = rng.choice(n, k, replace=False)
        new = probs.copy()
        at = np.isin(rows, changed)
        new[at] *= rng.uniform(0.2, 1.0, at.sum())  # each row still loses some mass
        exact = np.linalg.solve(dense(n, rows, cols, new), b)
        solve = solver.updated(base, rows, cols, new)
        assert solve is not None and solve.columns
        np.testing.assert_allclose(solve(b), exact, rtol=1e-11)
        np.testing.assert_allclose(solve(b[:, 0], "x"), exact[:, 0], rtol=1e-11)
        # Back to the factored matrix through an updated solve: the factor's own solve.
        back = solver.updated(solve, rows, cols, probs)
        assert back is base
        np.testing.assert_allclose(back(b), np.linalg.solve(dense(n, rows, cols, probs), b))
    assert solver.updated(base, rows, cols, probs) is base  # nothing changed
    many = np.unique(rows)[: solve_module.LOW_RANK + 1]
    more = probs * np.where(np.isin(rows, many), 0.5, 1.0)
    assert solver.updated(base, rows, cols, more) is None
    # A row that keeps all its mass on itself and a state that only returns: singular.
    lost = np.isin(rows, [3])
    trap_rows, trap_cols = np.r_[rows[~lost], 3], np.r_[cols[~lost], 3]
    trap = np.r_[probs[~lost], 1.0]
    solver = PolicySolver(n, np.r_[rows, 3], np.r_[cols, 3])
    base = solver.factor(np.r_[rows, 3], np.r_[cols, 3], np.r_[probs, 0.0])
    assert solver.updated(base, trap_rows, trap_cols, trap) is None


@pytest.mark.parametrize("shape", ["random", "dag", "hub"])
def test_the_fill_bound_holds(monkeypatch, shape):
    """SuperLU's factor in the solver's order, without pivoting, stays within the bound;
    an acyclic pattern fills nothing."""
    monkeypatch.setattr(solve_module, "SMALL", 0)
    rng = np.random.default_rng(2)
    n = 600
    rows, cols, probs = random_system(rng, n, shape=shape)
    solver = PolicySolver(n, rows, cols)
    entries = solver.factor(rows, cols, probs).entries
    assert entries <= solver.fill
    if shape == "dag":  # the entries themselves (the diagonal twice), no fill
        assert entries == np.unique(rows * n + cols).size + 2 * n
        assert solver.fill == rows.size + 2 * n


def test_random_successors_are_refused_and_chains_with_a_hub_are_not():
    """Successors drawn at random fill an LU densely whatever the order; chains that all
    return to one state fill little once that state is ordered last."""
    rng = np.random.default_rng(3)
    n = 3000
    rows, cols, _ = random_system(rng, n, shape="random")
    assert PolicySolver(n, rows, cols).fill > 100 * rows.size
    rows, cols, _ = random_system(rng, n, shape="hub")
    assert PolicySolver(n, rows, cols).fill < 10 * rows.size


def random_proper_mdp(rng, S=9, A=2):
    """Every pair moves to a random state or ends in goal (S-2) / fail (S-1) with
    probability >= 0.1: every policy is proper, so each is one linear solve."""
    P = np.zeros((S, A, S))
    for s in range(S - 2):
        for a in range(A):
            succ = rng.choice(S - 2, size=3, replace=False)
            P[s, a, succ] = rng.dirichlet(np.ones(3)) * 0.8
            P[s, a, S - 2], P[s, a, S - 1] = rng.dirichlet(np.ones(2)) * 0.2
    P[S - 2, :, S - 2] = P[S - 1, :, S - 1] = 1
    R = rng.uniform(0.5, 2, (S, A))
    R[S - 2 :] = 0
    return P, R


def optimum(P, R, opt, reward):
    """The optimum over every deterministic policy, each solved by ``numpy.linalg.solve``."""
    S, A, _ = P.shape
    n = S - 2
    best = None
    for pol in itertools.product(range(A), repeat=n):
        Pp = P[np.arange(n), pol][:, :n]
        b = R[np.arange(n), pol] if reward else P[np.arange(n), pol, S - 2]
        v = np.linalg.solve(np.eye(n) - Pp, b)
        best = v if best is None else (np.maximum if opt == "max" else np.minimum)(best, v)
    return np.r_[best, 0.0 if reward else 1.0, 0.0]


def idle(self, lo, up, stop):
    """``Topological.run`` made to do nothing: one iteration, not capped (the check stops
    there unless the guess was verified)."""
    return lo, up, 1, np.zeros(np.shape(lo)[:-1], bool)


def contains(res, exact):
    lo = np.asarray(res.lower, np.float64)
    up = np.asarray(res.upper, np.float64)
    assert np.all(lo <= exact) and np.all(exact <= up), (lo, up, exact)
    assert float(res.precision) <= 1e-6


def no_policy_iteration(*args):
    raise AssertionError("policy iteration ran: the compiled pass should have settled it")


@pytest.mark.parametrize("solver", ["swept", "small", "ordered", "refactored", "krylov"])
@pytest.mark.parametrize("prop", ["Pmax", "Pmin", "Rmax", "Rmin"])
def test_check_with_each_solver_contains_the_optimum(monkeypatch, solver, prop):
    """The guess alone (the passes over the components made to do nothing) gives bounds
    that contain every policy's optimum, by the compiled pass over the components (policy
    iteration made to fail the test), or by policy iteration (the pass off) through
    SuperLU's LU, the LU in the solver's order (with updates through the last factor, or a
    new factor for every policy), or forced onto GMRES."""
    monkeypatch.setattr(unbounded.Topological, "run", idle)
    if solver == "swept":
        monkeypatch.setattr(guess_module, "_policy_iteration", no_policy_iteration)
    else:
        monkeypatch.setattr(guess_module, "SWEEP", False)
    if solver in ("ordered", "refactored"):
        monkeypatch.setattr(solve_module, "SMALL", 0)
    if solver == "refactored":
        monkeypatch.setattr(solve_module, "LOW_RANK", 0)
    if solver == "krylov":
        monkeypatch.setattr(solve_module, "MAX_FILL", -1)
    rng = np.random.default_rng(4)
    P, R = random_proper_mdp(rng)
    S = P.shape[0]
    labels = {"goal": np.arange(S) == S - 2, "end": np.arange(S) >= S - 2}
    mdp = make_mdp(P, R, dtype=np.float32)
    P = P.astype(np.float32).astype(np.float64)  # the model's rows, read as distributions
    P /= P.sum(-1, keepdims=True)
    text = f'{prop}=? [F "goal"]' if prop[0] == "P" else f'{prop}=? [F "end"]'
    res = check(mdp, text, labels=labels)
    contains(res, optimum(P, R, prop[1:], prop[0] == "R"))
    assert bool(res.converged) and int(res.iterations) == 0


def test_values_over_many_orders_of_magnitude_are_verified_at_once(monkeypatch):
    """A chain whose reach probabilities run from 0.5 down to 2e-13: a slack that is the
    same fraction of every state's value passes the check where one absolute slack (the
    smallest value's) would drown in the rounding of the largest."""
    monkeypatch.setattr(unbounded.Topological, "run", idle)
    k = 15
    S = k + 2  # k: goal, k + 1: fail
    P = np.zeros((S, 1, S))
    P[np.arange(k - 1), 0, np.arange(1, k)] = 0.125  # exact in float32
    P[np.arange(k - 1), 0, k + 1] = 0.875
    P[k - 1, 0, [k, k + 1]] = 0.5
    P[[k, k + 1], 0, [k, k + 1]] = 1
    mdp = make_mdp(P, np.zeros((S, 1)), dtype=np.float32)
    res = check(mdp, 'P=? [F "goal"]', labels={"goal": np.arange(S) == k})
    exact = np.r_[0.5 * 0.125 ** np.arange(k - 1, -1, -1), 1, 0]
    contains(res, exact)
    assert bool(res.converged) and int(res.iterations) == 0


def chain_mdp(rng, n=7, A=2, back=False, leave=0.2):
    """`n` states in a row (then goal, fail): each pair steps 1 or 2 ahead or stays (a
    self-loop: the pass's closed form), with ``back`` also one state back (loops: its
    Gauss-Seidel sweeps, or with a small ``leave`` its dense policy iteration), and always
    ``leave`` to goal or fail (every policy proper)."""
    S = n + 2
    P = np.zeros((S, A, S))
    for s in range(n):
        for a in range(A):
            succ = [t for t in (s - 1, s, s + 1, s + 2)[0 if back else 1 :] if 0 <= t < n]
            P[s, a, succ] += rng.dirichlet(np.ones(len(succ))) * (1 - leave)
            P[s, a, S - 2], P[s, a, S - 1] = rng.dirichlet(np.ones(2)) * leave
    P[S - 2, :, S - 2] = P[S - 1, :, S - 1] = 1
    R = rng.uniform(0.5, 2, (S, A))
    R[S - 2 :] = 0
    return P, R


@pytest.mark.parametrize("shape", ["chain", "loops", "slow loops"])
@pytest.mark.parametrize("prop", ["Pmax", "Pmin", "Rmax", "Rmin"])
def test_the_compiled_pass_settles_chains_and_loops_alone(monkeypatch, shape, prop):
    """Chains with self-loops (single-state components: the closed form), with steps back
    (one component: the sweeps) and with steps back and little leaving (sweeps too slow:
    dense policy iteration), 5 seeds: the pass alone (policy iteration made to fail the
    test) gives bounds that contain the optimum over every policy (NumPy)."""
    monkeypatch.setattr(unbounded.Topological, "run", idle)
    monkeypatch.setattr(guess_module, "_policy_iteration", no_policy_iteration)
    for seed in range(5):
        rng = np.random.default_rng(seed)
        P, R = chain_mdp(rng, back=shape != "chain", leave=1e-3 if shape == "slow loops" else 0.2)
        S = P.shape[0]
        labels = {"goal": np.arange(S) == S - 2, "end": np.arange(S) >= S - 2}
        res = check(make_mdp(P, R), f'{prop}=? [F "{"goal" if prop[0] == "P" else "end"}"]',
                    labels=labels)  # fmt: skip
        contains(res, optimum(P, R, prop[1:], prop[0] == "R"))
        assert bool(res.converged) and int(res.iterations) == 0


def _check_walk(S):
    """``P=? [F "right"]`` on a symmetric walk of ``S`` states, a fair coin at each step
    and the ends absorbing (the value at ``i``: the gambler's-ruin ``i / (S − 1)``)."""
    P = np.zeros((S, 1, S))
    P[np.arange(1, S - 1), 0, np.arange(0, S - 2)] = 0.5
    P[np.arange(1, S - 1), 0, np.arange(2, S)] = 0.5
    P[[0, S - 1], 0, [0, S - 1]] = 1
    labels = {"right": np.arange(S) == S - 1}
    return check(make_mdp(P, np.zeros((S, 1))), 'P=? [F "right"]', labels=labels)


@pytest.mark.parametrize("S", [61, 601])
def test_a_slowly_mixing_walk_is_solved_dense_or_left_to_policy_iteration(monkeypatch, S):
    """A symmetric walk mixes too slowly for the sweeps' budget: with 59 unknowns in its one
    component the pass's dense policy iteration settles it (no policy iteration on the
    host), with 599 the pass gives up (no candidate) and policy iteration's guess settles
    it; the bounds contain the gambler's-ruin value ``i / (S − 1)``."""
    monkeypatch.setattr(unbounded.Topological, "run", idle)
    passes = []
    solve = sweep_module.Ordered.solve

    def recorded(*args):
        passes.append(solve(*args))
        return passes[-1]

    monkeypatch.setattr(sweep_module.Ordered, "solve", recorded)
    if S < 128:
        monkeypatch.setattr(guess_module, "_policy_iteration", no_policy_iteration)
    res = _check_walk(S)
    assert (passes[0] is None) == (S > 128)
    contains(res, np.arange(S) / (S - 1))
    assert bool(res.converged) and int(res.iterations) == 0


def test_a_check_leaves_no_reference_cycle_holding_its_quotient():
    """The quotient (a large model's edge arrays several times over) is freed when the check
    returns, by reference counting: a cycle through the shared solvers would keep it until
    a full garbage collection (memory grew and a 10⁶-state check slowed 2x)."""
    import gc

    import jax

    rng = np.random.default_rng(5)
    P, R = random_proper_mdp(rng, 8, 2)
    mdp = make_mdp(P, R)
    labels = {"goal": np.arange(8) == 6}
    batch = jax.tree.map(lambda x: np.stack([x, x * 1]), mdp)
    checks = [
        (model, prop)
        for model in (mdp, batch)
        for prop in ('Pmax=? [F "goal"]', 'Rmin=? [F "goal"]')
    ]
    for model, prop in checks:  # (compiled first: a kernel's first compilation leaves
        check(model, prop, labels=labels)  # cyclic garbage that holds its callers' frames)
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        for model, prop in checks:
            check(model, prop, labels=labels)
        gc.collect()
        held = [x for x in gc.garbage if isinstance(x, guess_module._Quotient)]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert not held, f"{len(held)} quotients left to the cyclic garbage collector"


def test_a_chain_with_returns_and_shortcuts_settles_in_the_pass(monkeypatch):
    """zeroconf's shape: a waiting chain ``1 → … → W`` (0.999 on, 0.001 back to the start 0)
    whose second half may also leave early (half to the goal, half back to the start). The
    sweeps visit the one component in depth-first postorder, so each sweep carries the
    chain's values its whole length, and they stop where their moves are the sums' rounding
    (some 5e-14 here, growing and shrinking): the pass settles it (no policy iteration on
    the host). Ordered by the distance to the component's exits, the late states all tied
    at one step and were swept upward, one state a sweep (the pass gave up on zeroconf);
    and a rate measured on rounding noise (above 1) gave up too. The bounds contain the
    optimum, by NumPy's value iteration on the model's numbers."""
    monkeypatch.setattr(unbounded.Topological, "run", idle)
    monkeypatch.setattr(guess_module, "_policy_iteration", no_policy_iteration)
    W = 400
    S = W + 3  # 0 start, 1..W waiting, W+1 goal, W+2 fail
    goal, fail = W + 1, W + 2
    P = np.zeros((S, 2, S))
    P[0, :, 1] = 1
    t = np.arange(1, W)
    P[t, 0, t + 1], P[t, 0, 0] = 0.999, 0.001
    P[t, 1] = P[t, 0]
    late = t[t >= W // 2]
    P[late, 1] = 0
    P[late, 1, goal] = P[late, 1, 0] = 0.5
    P[W, :, goal], P[W, :, fail] = 0.9, 0.1
    P[[goal, fail], :, [goal, fail]] = 1
    labels = {"fail": np.arange(S) == fail}
    mdp = make_mdp(P, np.zeros((S, 2)))
    held = np.asarray(mdp.transitions, np.float64)  # (the model's numbers: float32 or 64)
    held /= held.sum(axis=-1, keepdims=True)
    for prop in ("Pmax", "Pmin"):
        res = check(mdp, f'{prop}=? [F "fail"]', labels=labels)
        x = np.zeros(S)
        x[fail] = 1
        for _ in range(200_000):  # plain value iteration to its fixed point
            q = held @ x
            new = q.max(axis=1) if prop == "Pmax" else q.min(axis=1)
            new[fail] = 1
            if np.max(np.abs(new - x)) < 1e-16:
                break
            x = new
        contains(res, x)
        assert bool(res.converged) and int(res.iterations) == 0


def test_a_failed_dense_solve_hands_the_component_back_to_the_sweeps(monkeypatch):
    """A walk of 8 states, a fair coin at each step and the ends absorbing: its sweeps would
    cost more than a dense solve, so the pass hands the component to ``dense_component``
    once; made to fail there, the component goes back to its sweeps, which settle it (no
    policy iteration) at the gambler's-ruin value ``i / 9``."""
    monkeypatch.setattr(unbounded.Topological, "run", idle)
    monkeypatch.setattr(guess_module, "_policy_iteration", no_policy_iteration)
    handed = []

    def failing(classes, *args):
        handed.append(classes.size)
        return False

    monkeypatch.setattr(sweep_module, "dense_component", failing)
    S = 10
    res = _check_walk(S)
    assert handed and all(size == S - 2 for size in handed)
    assert len(handed) == 2  # once for x, once for y: never twice for one component
    contains(res, np.arange(S) / (S - 1))
    assert bool(res.converged) and int(res.iterations) == 0
