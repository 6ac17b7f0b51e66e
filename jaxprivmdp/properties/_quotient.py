"""The quotient of :mod:`jaxprivmdp.properties._guess`'s policy iteration and compiled pass:
the unfixed states modulo the collapsed end components (each a *class*), their usable
pairs, and the edges among them, with what each pair's backup takes from the fixed states.

Built by one compiled pass over the graph's edges (:func:`_structure`: some fifteen NumPy
passes and temporaries before, 0.1 ms of a 10³-state check); a release of a batch, of the
same support, shares the structure and reads its own probabilities (:meth:`_Quotient.reweighted`).
"""

from __future__ import annotations

import copy

import numpy as np

from ._graph import Graph, _distinct
from ._kernels import compiled, strong_components
from ._solve import LOW_RANK, PolicySolver
from ._sweep_guess import Ordered

# A policy whose expected steps exceed this is not evaluated (its system is too ill-conditioned).
_MAX_STEPS = 1e12
# A policy's values may fall below 0 by this much relative to the largest (rounding).
_NEGATIVE = 1e-12


class _Quotient:
    """The unfixed states modulo the collapsed end components, and their usable pairs."""

    def __init__(self, g: Graph, pre, solvers: dict):
        """``pre``: the precomputation; ``solvers``: see :func:`guess_bounds`."""
        S, A, maybe = g.S, g.A, pre.maybe
        self.g, self.S, self.A, self.maybe = g, S, A, maybe
        group = np.ascontiguousarray(pre.group, np.int64)
        fixed = np.ascontiguousarray(pre.fixed_value, np.float64)
        usable = np.ascontiguousarray(pre.usable, bool).reshape(-1)
        self._rewards = np.ascontiguousarray(pre.rewards, np.float64).reshape(-1)
        (self.n, self.col, self.pair_class, self.fixed_value, self.pairs, edges, self._outer,
         self.e_pair, self.e_col, self.e_row) = _structure(
            (g.pair, g.succ, g.src), maybe, group, usable, fixed, A)  # fmt: skip
        self._edges = edges  # (the kept edges inside the unknowns, then those leaving them)
        self._weigh(g)
        self.pair_ids = np.flatnonzero(self.pairs)
        self.pair_col = self.col[self.pair_ids // A]
        # One usable pair per class (a DTMC): its one policy, nothing to improve or tie.
        only = np.bincount(self.pair_col, minlength=self.n) == 1
        self.only = None
        if self.pair_ids.size == self.n and np.all(only):
            self.only = np.empty(self.n, np.int64)
            self.only[self.pair_col] = self.pair_ids
        self._solvers, self._last, self._factored = solvers, None, None

    def _weigh(self, g: Graph) -> None:
        """What reads ``g``'s probabilities: ``inflow`` (`[S*A]` the part of each pair's
        backup that does not depend on the unknowns: :func:`pair_inflow`) and ``e_prob``."""
        inner, outer, *weights = self.weighing
        self.e_prob = g.prob[inner]
        self.inflow = pair_inflow(outer, *weights, g.prob)

    @property
    def weighing(self) -> tuple:
        """What reads a model's probabilities (``g.prob``, `[E]`): ``(inner, outer,
        outer_pair, outer_value, rewards)``: the edges inside the unknowns (``e_prob =
        prob[inner]``) and ``inflow = pair_inflow(outer, outer_pair, outer_value, rewards,
        prob)`` (:meth:`_weigh`)."""
        return (*self._edges, *self._outer, self._rewards)

    def reweighted(self, g: Graph, solvers: dict | None) -> _Quotient:
        """This quotient with the probabilities of ``g``, a graph of the same support (a
        release of a batch: the same edges in the same order), ``solvers`` shared, its own
        policy solves. (``solvers=None``: the template ``solvers`` keeps, which must not
        refer back to that dict: a cycle would hold the quotient's arrays until a full
        garbage collection, and a large model's checks slowed 2x as memory grew.)"""
        out = copy.copy(self)
        out.g, out._last, out._solvers = g, None, solvers
        if g is not self.g:
            out._weigh(g)
        return out

    @property
    def components(self) -> tuple[np.ndarray, np.ndarray]:
        """``(rank, finish)``: `[n]` each class's strongly connected component as its rank,
        successors first, and its place in the depth-first postorder
        (:func:`~jaxprivmdp.properties._kernels.strong_components`; shared, as ``solver``)."""
        if "components" not in self._solvers:
            off = self.e_row != self.e_col
            _, rank, finish = strong_components(self.n, self.e_row[off], self.e_col[off])
            self._solvers["components"] = rank, finish
        return self._solvers["components"]

    @property
    def ordered(self) -> Ordered:
        """The pattern's order for the compiled pass (shared, as ``solver``)."""
        if "ordered" not in self._solvers:
            self._solvers["ordered"] = Ordered(self)
        return self._solvers["ordered"]

    @property
    def solver(self) -> PolicySolver:
        """The policies' linear solver, made on first use (the swept guess needs none; its
        fill-bounded order reads the pattern alone: models of one support share it)."""
        if "solver" not in self._solvers:
            self._solvers["solver"] = PolicySolver(
                self.n, self.e_row, self.e_col, self.components[0]
            )
        return self._solvers["solver"]

    def q(self, x: np.ndarray) -> np.ndarray:
        """`[S*A]` ``r + Σ p v`` of the usable pairs (``x``: the unknowns' values)."""
        return self.inflow + np.bincount(
            self.e_pair, weights=self.e_prob * x[self.e_col], minlength=self.S * self.A
        )

    def full(self, x: np.ndarray) -> np.ndarray:
        """`[S]` the values ``x`` of the unknowns (`[n]`) on their states, the fixed values
        elsewhere."""
        return np.where(self.maybe, x[np.maximum(self.col, 0)], self.fixed_value)

    def best(self, q: np.ndarray, sign: float) -> np.ndarray:
        """`[n]` ``sign`` · the optimum over each class's usable pairs of ``sign · q``."""
        out = np.full(self.n, -np.inf)
        np.maximum.at(out, self.pair_col, sign * q[self.pair_ids])
        return sign * out

    def attractor(self) -> np.ndarray | None:
        """`[n]` a pair per class with a successor in an earlier layer toward the fixed
        states (a proper policy), or None if some class cannot leave. Of the pairs that
        qualify, the one with the most probability into the earlier layers: the lowest one
        may head away and need astronomically many steps (a proper policy too, but one
        whose linear system float64 cannot solve)."""
        g, A = self.g, self.A
        order = np.argsort(self.col, kind="stable")
        ptr = np.searchsorted(self.col[order], np.arange(self.n + 1))
        pair_ptr = np.searchsorted(g.pair, np.arange(self.S * A + 1))
        choice = np.full(self.n, -1, np.int64)
        reached = ~self.maybe.copy()
        new = np.flatnonzero(reached)
        while new.size:
            pid = _distinct(g.pair[g.edges_into(new)])
            pid = pid[self.pairs[pid] & ~reached[pid // A]]
            counts = pair_ptr[pid + 1] - pair_ptr[pid]
            edge = np.repeat(pair_ptr[pid] - (np.cumsum(counts) - counts), counts)
            edge = edge + np.arange(int(counts.sum()))
            mass = np.bincount(
                np.repeat(np.arange(pid.size), counts),
                weights=g.prob[edge] * reached[g.succ[edge]],
                minlength=pid.size,
            )
            cls = self.col[pid // A]
            best = np.lexsort((-mass, cls))
            first = best[np.unique(cls[best], return_index=True)[1]]
            cls, pid = cls[first], pid[first]
            choice[cls] = pid
            counts = ptr[cls + 1] - ptr[cls]
            shift = np.repeat(ptr[cls] - (np.cumsum(counts) - counts), counts)
            new = order[shift + np.arange(int(counts.sum()))]
            new = new[~reached[new]]
            reached[new] = True
        return choice if np.all(choice >= 0) else None

    def system(self, choice: np.ndarray):
        """:meth:`PolicySolver.factor` for the policy ``choice`` (`[n]` a pair per class),
        or :meth:`PolicySolver.updated` from the last factor where few rows changed (the
        last rounds of policy iteration switch a handful of states); the last policy's is
        kept (policy iteration evaluates its final policy again)."""
        key = choice.tobytes()
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        chosen = np.full(self.S * self.A, -1, np.int64)
        chosen[choice] = np.arange(self.n)
        row = chosen[self.e_pair]
        keep = row >= 0
        entries = (row[keep], self.e_col[keep], self.e_prob[keep])
        last = None if self._last is None else self._last[1]
        direct = getattr(last, "columns", False)  # (an LU's solve, not a Krylov one)
        # (more classes switched since the last factor than an update takes: factor at once)
        near = direct and np.count_nonzero(choice != self._factored) <= LOW_RANK
        solve = self.solver.updated(last, *entries) if near else None
        if solve is None:
            solve, self._factored = self.solver.factor(*entries), choice
        self._last = (key, solve)
        return solve

    def evaluate(self, choice: np.ndarray):
        """The values ``x`` and expected steps ``w`` of the policy ``choice``, or None."""
        solve = self.system(choice)
        if solve is None:
            return None
        if solve.columns:  # both right-hand sides in one pass over the factor
            x, w = solve(np.stack([self.inflow[choice], np.ones(self.n)], axis=1)).T
        else:
            x = solve(self.inflow[choice], "x")
            w = None if x is None else solve(np.ones(self.n), "w")
        if w is None:
            return None
        # The system's condition grows with the expected steps ``w``: beyond _MAX_STEPS a
        # float64 solve says little (and a nearly improper policy's values come out < 0).
        if not (np.all(np.isfinite(w)) and np.all(w >= 1 - 1e-9) and np.max(w) <= _MAX_STEPS):
            return None
        # A value that is exactly 0 may come out a rounding below it (-4e-31 through a
        # low-rank update of another policy's factor): clipped; a clearly negative one means
        # a solve that went wrong.
        if not (np.all(np.isfinite(x)) and np.all(x >= -_NEGATIVE * np.max(np.abs(x)))):
            return None
        return np.maximum(x, 0), w


@compiled()
def _structure(edges, maybe, group, usable, fixed, A):
    """The quotient's structure, as :class:`_Quotient` keeps it: ``(n, col, pair_class,
    fixed_value, pairs, (inner, outer), (outer_pair, outer_value), e_pair, e_col, e_row)``:
    each unfixed state's class (``col``: its end component's, the classes numbered in the
    order of their representatives, as ``np.cumsum`` of a mask numbers them; -1 on a fixed
    state), each pair's (``pair_class``), the fixed values (0 on the unfixed states), the
    usable pairs of unfixed states (``pairs``), and of those pairs' edges (``edges``: the
    graph's, sorted by pair) the indices of those inside the unknowns (``inner``) and of
    those leaving them (``outer``, with their pair and the value they lead to); each inner
    edge's pair, class and source class."""
    pair, succ, src = edges
    S = maybe.size
    rep_col = np.full(S, -1, np.int64)
    for s in range(S):
        if maybe[s]:
            rep_col[group[s] if group[s] >= 0 else s] = 0
    n = 0
    for s in range(S):
        if rep_col[s] == 0:
            rep_col[s] = n
            n += 1
    col = np.full(S, -1, np.int64)
    fixed_value = np.zeros(S)
    for s in range(S):
        if maybe[s]:
            col[s] = rep_col[group[s] if group[s] >= 0 else s]
        else:
            fixed_value[s] = fixed[s]
    pair_class = np.empty(S * A, np.int64)
    pairs = np.empty(S * A, np.bool_)
    for p in range(S * A):
        pair_class[p] = col[p // A]
        pairs[p] = usable[p] and maybe[p // A]
    n_inner, n_outer = 0, 0
    for e in range(pair.size):
        if pairs[pair[e]]:
            if maybe[succ[e]]:
                n_inner += 1
            else:
                n_outer += 1
    inner, outer = np.empty(n_inner, np.int64), np.empty(n_outer, np.int64)
    e_pair, e_col = np.empty(n_inner, np.int64), np.empty(n_inner, np.int64)
    e_row = np.empty(n_inner, np.int64)
    outer_pair, outer_value = np.empty(n_outer, np.int64), np.empty(n_outer)
    i, o = 0, 0
    for e in range(pair.size):
        if not pairs[pair[e]]:
            continue
        if maybe[succ[e]]:
            inner[i], e_pair[i], e_col[i], e_row[i] = e, pair[e], col[succ[e]], col[src[e]]
            i += 1
        else:
            outer[o], outer_pair[o], outer_value[o] = e, pair[e], fixed_value[succ[e]]
            o += 1
    return (n, col, pair_class, fixed_value, pairs, (inner, outer), (outer_pair, outer_value),
            e_pair, e_col, e_row)  # fmt: skip


@compiled()
def pair_inflow(outer, outer_pair, outer_value, rewards, prob):
    """`[S*A]` each pair's reward plus its probability into the fixed states times their
    values, summed from 0 in edge order (the bits of ``np.bincount``), then the reward
    added (as ``rewards + np.bincount(...)`` adds)."""
    acc = np.zeros(rewards.size)
    for j in range(outer.size):
        acc[outer_pair[j]] += prob[outer[j]] * outer_value[j]
    out = np.empty(rewards.size)
    for p in range(rewards.size):
        out[p] = rewards[p] + acc[p]
    return out
