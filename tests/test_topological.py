"""The strongly connected components in topological order (``properties/_topological.py``).

Oracles: the schedule's invariants read off the graph (every successor solved no later than
its predecessor, end components never split, each unfixed state once), and NumPy value
iteration to a fixed point (reachability) or a linear solve (rewards of a DTMC) for the
values, with windows narrowed to a few states so that components are both packed and alone
in a wider window.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_check_precision import build, contains, in_mode

import jaxprivmdp.properties._guess as guess_module
import jaxprivmdp.properties._topological as topological
import jaxprivmdp.properties._unbounded as unbounded
from jaxprivmdp.properties import check
from jaxprivmdp.properties._graph import Graph


def layered(rng, S=48, A=2, back=0.15):
    """A goal (``S-2``), a sink (``S-1``) and states that mostly move forward, with back
    edges making cycles of several sizes: `[S, A, S]` rows and an action mask."""
    P = np.zeros((S, A, S))
    for s in range(S - 2):
        for a in range(A):
            k = rng.integers(1, 4)
            ahead = rng.integers(s + 1, S, size=k)
            if rng.random() < back:
                ahead[0] = rng.integers(0, s + 1)
            np.add.at(P[s, a], ahead, rng.random(k) + 0.1)
            P[s, a] /= P[s, a].sum()
    P[S - 2, :, S - 2] = P[S - 1, :, S - 1] = 1
    mask = np.ones((S, A), bool)
    mask[rng.random(S) < 0.3, 1] = False
    return P, mask


def reach_oracle(P, mask, goal, maximize):
    """Value iteration from 0 to a fixed point: the least fixed point is Pmax / Pmin."""
    v = goal.astype(float)
    for _ in range(200_000):
        q = np.where(mask, P @ v, -np.inf if maximize else np.inf)
        new = np.where(goal, 1.0, q.max(1) if maximize else q.min(1))
        if np.max(np.abs(new - v)) < 1e-15:
            break
        v = new
    return v


def precomputation(mdp, goal):
    """The precomputation of ``Pmax [F goal]``, as ``check`` runs it."""
    g = Graph(mdp)
    seen = {}

    def spy(g_, mdp_, pre, minimize, tol, max_iterations):
        seen["pre"] = pre
        return real(g_, mdp_, pre, minimize, tol, max_iterations)

    real = unbounded.iterate
    unbounded.iterate = spy
    try:
        check(mdp, 'Pmax=? [F "goal"]', labels={"goal": goal})
    finally:
        unbounded.iterate = real
    return g, seen["pre"]


@pytest.mark.parametrize("width", [2, 5, 256])
def test_schedule_orders_successors_first(width):
    rng = np.random.default_rng(3)
    P, mask = layered(rng, back=0.3)
    goal = np.arange(P.shape[0]) == P.shape[0] - 2
    with in_mode(True):
        mdp = build(P, np.zeros(mask.shape), sparse=True, x64=True, action_mask=mask)
        g, pre = precomputation(mdp, goal)
    plan = topological.schedule(g, pre, width)
    n = int(pre.maybe.sum())
    state = np.asarray(plan.rows.state)
    assert sorted(state[:n]) == list(np.flatnonzero(pre.maybe)) and np.all(state[n:] == g.S)
    win = plan.windows
    assert win.start[0] == 0 and np.all(win.start[1:] == win.start[:-1] + win.count[:-1])
    assert int(win.count.sum()) == n and np.all(win.count <= plan.widths)
    where = np.full(g.S, -1)
    for w in range(win.start.size):
        where[state[win.start[w] : win.start[w] + win.count[w]]] = w
    pos = np.full(g.S, -1)
    pos[state[:n]] = np.arange(n)
    src = g.pair // g.A
    e = g.allowed[g.pair] & pre.maybe[src] & pre.maybe[g.succ]
    a, b = src[e], g.succ[e]
    # A successor is in an earlier window or in the same one (components are never split).
    assert np.all(where[b] <= where[a])
    assert np.all(win.cap >= 1) and win.loops.dtype == bool
    grouped = pre.group >= 0
    if grouped.any():  # an end component lies in one window
        for lead in np.unique(pre.group[grouped]):
            assert np.unique(where[pre.group == lead]).size == 1


@pytest.mark.parametrize("width", [2, 5, 256])
@pytest.mark.parametrize("opt", ["max", "min"])
@pytest.mark.parametrize("layout", ["dense", "sparse", "ragged"])
def test_reachability_matches_value_iteration(monkeypatch, width, opt, layout):
    monkeypatch.setattr(topological, "WIDTH", width)
    rng = np.random.default_rng(7 if opt == "max" else 5)
    P, mask = layered(rng, back=0.3)
    S = P.shape[0]
    goal = np.arange(S) == S - 2
    exact = reach_oracle(P, mask, goal, opt == "max")
    assert np.mean((exact > 0.01) & (exact < 0.99)) > 0.5  # not decided by the graph alone
    sparse = {"dense": False, "sparse": True, "ragged": "ragged"}[layout]
    for x64 in (False, True):
        with in_mode(x64):
            mdp = build(P, np.zeros(mask.shape), sparse=sparse, x64=x64, action_mask=mask)
            res = check(mdp, f'P{opt}=? [F "goal"]', labels={"goal": goal})
        assert bool(res.converged) and float(res.precision) <= 1e-6
        contains(res, exact.astype(np.asarray(res.lower).dtype))


@pytest.mark.parametrize("width", [2, 7, 256])
def test_dtmc_rewards_match_a_linear_solve(monkeypatch, width):
    """A DTMC whose states all reach the goal: ``R=? [F goal]`` solves ``(I − Q) x = r``."""
    monkeypatch.setattr(topological, "WIDTH", width)
    rng = np.random.default_rng(11)
    S = 40
    P = np.zeros((S, 1, S))
    for s in range(S - 1):
        nxt = rng.integers(max(s - 3, 0), S, size=3)  # short back edges: cycles
        nxt[0] = s + 1  # always a way on
        np.add.at(P[s, 0], nxt, rng.random(3) + 0.2)
        P[s, 0] /= P[s, 0].sum()
    P[S - 1, 0, S - 1] = 1
    R = rng.random((S, 1)) + 0.5
    R[S - 1] = 0
    Q = P[: S - 1, 0, : S - 1]
    exact = np.r_[np.linalg.solve(np.eye(S - 1) - Q, R[: S - 1, 0]), 0]
    with in_mode(True):
        mdp = build(P, R, sparse=True, x64=True)
        res = check(mdp, 'R=? [F "goal"]', labels={"goal": np.arange(S) == S - 1})
    assert bool(res.converged)
    contains(res, exact)


def test_a_capped_pass_keeps_the_bounds_honest(monkeypatch):
    """Windows cut short (a cap of 1 iteration per pass beyond their components) still give
    bounds that contain the value."""
    monkeypatch.setattr(topological, "WIDTH", 3)
    rng = np.random.default_rng(2)
    P, mask = layered(rng, back=0.4)
    S = P.shape[0]
    goal = np.arange(S) == S - 2
    exact = reach_oracle(P, mask, goal, True)
    assert np.mean((exact > 0.01) & (exact < 0.99)) > 0.5
    with in_mode(True):
        mdp = build(P, np.zeros(mask.shape), sparse=True, x64=True, action_mask=mask)
        res = check(mdp, 'Pmax=? [F "goal"]', labels={"goal": goal}, max_iterations=1)
    contains(res, exact)


def never(*args):
    raise AssertionError("the device iteration ran: the compiled pass should have settled it")


@pytest.mark.parametrize("first", ["swept", "iterations", "guess"])
def test_a_model_with_one_long_row_is_iterated_unpadded(monkeypatch, first):
    """One state reaching all others: padding every row to its length would cost 100×
    the transitions, so the check iterates the model's own layout (``fits`` False): not at
    all where the compiled pass's guess settles it first, else (the pass off) after its
    warm-up iterations or (a model with many transitions) after a guess first."""
    if first == "swept":
        monkeypatch.setattr(unbounded, "_device_iteration", never)
    else:
        monkeypatch.setattr(guess_module, "SWEEP", False)
    if first == "guess":
        monkeypatch.setattr(unbounded, "GUESS_FIRST_ABOVE", 0)
    rng = np.random.default_rng(9)
    S = 120
    P = np.zeros((S, 1, S))
    P[0, 0, 1:] = rng.random(S - 1) + 0.1
    for s in range(1, S - 2):
        P[s, 0, [s + 1, rng.integers(1, s + 1), S - 2, S - 1]] += [0.5, 0.3, 0.1, 0.1]
    P[S - 2, 0, S - 2] = P[S - 1, 0, S - 1] = 1
    P /= P.sum(-1, keepdims=True)
    goal = np.arange(S) == S - 2
    mask = np.ones((S, 1), bool)
    exact = reach_oracle(P, mask, goal, True)
    assert np.all((exact[: S - 2] > 0.05) & (exact[: S - 2] < 0.95))
    with in_mode(True):
        mdp = build(P, np.zeros((S, 1)), sparse="ragged", x64=True)
        assert not topological.fits(Graph(mdp))
        res = check(mdp, 'P=? [F "goal"]', labels={"goal": goal})
    assert bool(res.converged) and (int(res.iterations) == 0) == (first != "iterations")
    contains(res, exact)


@pytest.mark.parametrize("layout", ["dense", "sparse", "ragged"])
def test_graph_lists_edges_by_pair(layout):
    """What ``Graph.reach_exists``'s witnesses and the batch's reweighting rely on."""
    rng = np.random.default_rng(4)
    P, mask = layered(rng, S=25)
    sparse = {"dense": False, "sparse": True, "ragged": "ragged"}[layout]
    with in_mode(True):
        g = Graph(build(P, np.zeros(mask.shape), sparse=sparse, x64=True, action_mask=mask))
    assert g.pair.size == int(((P > 0) & mask[:, :, None]).sum())
    assert np.all(np.diff(g.pair) >= 0)
