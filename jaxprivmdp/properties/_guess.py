"""Starting bounds for the interval iteration of :func:`jaxprivmdp.check`: guessed, then verified.

Interval iteration shrinks its interval by the chain's mixing rate per step: on a slowly
mixing chain (a 601-state symmetric walk: about 1 − 1.4e-5 per step) it needs millions of
steps, and SCC-wise ordering does not help when the slow part is one strongly connected
component. So, as Storm solves a DTMC by a linear solve and checks a guess in optimistic
value iteration (Hartmanns & Kaminski 2020), a candidate ``x`` comes from policy iteration
with sparse solves on the host (float64, SciPy: :mod:`jaxprivmdp.properties._solve`), on the
quotient by the collapsed end components; ``y`` solves the same system with reward ``x`` (the
values the final policy sums along its paths), and the candidates ``x ± κ y`` are
*verified*: a vector ``u`` with ``B(u) <= u`` (``B`` the Bellman operator, each backup
widened by its rounding ``m``) is above the least fixed point, one with ``B(l) >= l``
below the greatest, and after the precomputation the fixed point is unique (the same fact
interval iteration relies on). A verified pair seeds the iteration, which stops at once
when it already meets ``tol``; a candidate that fails is dropped (the iteration starts from
0 and the visiting-time bound, as without a guess).
Under the guessed policy ``B(x ± κ y) = x ± κ (y − x)``: the slack is ``κ x`` per state, the
same fraction of every state's value (``κ >= tol / (2 · the most expected steps)``, since
``P x <= x``), far above float64's rounding (relative) for any model whose values float64
can tell apart; a uniform slack would drown in the rounding of the states with large values
where the values span many orders of magnitude (brp: 1e-14 to 0.03).
"""

from __future__ import annotations

import copy

import numpy as np

from ._graph import Graph, _distinct
from ._kernels import strong_components
from ._precision import underflow
from ._solve import LOW_RANK, PolicySolver
from ._sweep_guess import Ordered

_MAX_POLICY_ROUNDS = 32
_MAX_STEPS = 1e12
# A switch must gain more than the solves' noise (about 1e-13 relative), or policy
# iteration cycles among tied policies; far below any tol, and the guess is verified anyway.
_SWITCH = 1e-10
# A policy's values may fall below 0 by this much relative to the largest (rounding).
_NEGATIVE = 1e-12
# The compiled pass over the components (:mod:`._sweep_guess`) is tried before policy
# iteration (tests turn it off to reach policy iteration's paths).
SWEEP = True


class _Quotient:
    """The unfixed states modulo the collapsed end components, and their usable pairs."""

    def __init__(self, g: Graph, pre, solvers: dict):
        """``pre``: the precomputation; ``solvers``: see :func:`guess_bounds`."""
        S, A, maybe, group, fixed_value = g.S, g.A, pre.maybe, pre.group, pre.fixed_value
        self.g, self.S, self.A = g, S, A
        rep = np.where(group >= 0, group, np.arange(S))
        is_rep = np.zeros(S, bool)
        is_rep[rep[maybe]] = True  # (a mask, not np.unique: no sort)
        col = np.cumsum(is_rep) - 1
        self.col = np.where(maybe, col[rep], -1)
        self.pair_class = self.col[np.arange(S * A) // A]  # `[S*A]` each pair's class (-1)
        self.n = int(is_rep.sum())
        self.maybe = maybe
        self.fixed_value = np.where(maybe, 0, np.asarray(fixed_value, np.float64))
        self.pairs = (np.asarray(pre.usable, bool) & maybe[:, None]).reshape(-1)
        kept = self.pairs[g.pair]
        self._kept = None if kept.all() else np.flatnonzero(kept)  # (g's edges kept)
        pair, succ, src = _kept(kept, g.pair, g.succ, g.src)
        self._inner = inner = maybe[succ]
        # The edges that leave the unknowns: their pairs and the values they lead to.
        self._outer = (pair[~inner], self.fixed_value[succ[~inner]])
        self._rewards = np.asarray(pre.rewards, np.float64).reshape(-1)
        self.e_pair, succ, src = _kept(inner, pair, succ, src)
        self.e_col, self.e_row = self.col[succ], self.col[src]
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
        backup that does not depend on the unknowns) and ``e_prob``."""
        prob = g.prob if self._kept is None else g.prob[self._kept]
        (pair, value), out = self._outer, ~self._inner
        self.inflow = self._rewards + np.bincount(
            pair, weights=prob[out] * value, minlength=self.S * self.A
        )
        (self.e_prob,) = _kept(self._inner, prob)

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


def _kept(mask, *arrays):
    """The ``arrays`` where ``mask`` holds (the arrays themselves where it always does: on
    large models each copy costs a pass over the transitions), by the mask's indices (found
    once: a boolean index finds them again for each array, 3x slower on 10⁶ entries)."""
    if mask.all():
        return arrays
    at = np.flatnonzero(mask)
    return tuple(x[at] for x in arrays)


def _improve(quo: _Quotient, choice, q, sign, eligible):
    """The policy that switches, in each class where an eligible pair beats its choice by
    more than the solve's accuracy, to the first best eligible pair; None if none does."""
    masked = np.where(eligible, q, -sign * np.inf)
    target = quo.best(masked, sign)
    current = q[choice]
    better = sign * (target - current) > _SWITCH * np.abs(current) + 1e-300
    if not better.any():
        return None
    ids, cols = quo.pair_ids, quo.pair_col
    hit = eligible[ids] & (sign * q[ids] >= sign * target[cols])
    first = np.unique(cols[hit], return_index=True)[1]
    pick_cols, pick_ids = cols[hit][first], ids[hit][first]
    swap = better[pick_cols]
    new = choice.copy()
    new[pick_cols[swap]] = pick_ids[swap]
    return new


def _greedy(quo: _Quotient, estimate, sign):
    """`[n]` the first best pair of each class for the values ``estimate`` (`[S]`)."""
    x = np.zeros(quo.n)
    x[quo.col[quo.maybe]] = estimate[quo.maybe]
    q = quo.q(x)
    target = quo.best(q, sign)
    ids, cols = quo.pair_ids, quo.pair_col
    hit = sign * q[ids] >= sign * target[cols]
    first = np.unique(cols[hit], return_index=True)[1]
    choice = np.full(quo.n, -1, np.int64)
    choice[cols[hit][first]] = ids[hit][first]
    return choice


def _policy_iteration(quo: _Quotient, sign: float, estimate, start=None):
    """Policy iteration from ``start`` (a policy of the quotient: another model's of one
    support) or else the greedy policy of ``estimate``, whichever is evaluated well (proper,
    not too slow), else the attractor: ``(x, w, choice)`` of the last policy evaluated well,
    or None."""
    if quo.only is not None:
        out = quo.evaluate(quo.only)
        return None if out is None else (*out, quo.only)
    choice, out = None, None  # (``out``: the first policy's evaluation, when already made)
    if start is not None and start.shape == (quo.n,):
        choice, out = start, quo.evaluate(start)
    if out is None and estimate is not None:
        choice = _greedy(quo, estimate, sign)
        out = None if np.any(choice < 0) else quo.evaluate(choice)
    if out is None:
        choice = quo.attractor()
    best = None
    for _ in range(_MAX_POLICY_ROUNDS if choice is not None else 0):
        out = quo.evaluate(choice) if out is None else out
        if out is None:
            break
        best = (*out, choice)
        choice, out = _improve(quo, choice, quo.q(out[0]), sign, quo.pairs), None
        if choice is None:
            break
    return best


def _tied_weight(quo: _Quotient, x, choice, sign, tol):
    """The most ``Σ_t x(s_t)`` (expected, along the paths) over the policies that choose, in
    each class, among the pairs within ``tol / 4`` (relative) of the optimum (policy
    iteration from ``choice``), or None if ``choice``'s cannot be solved: with it, ``x ± κ
    Y`` passes the check whichever tied pair ``B`` picks (a tie broken the other way has
    ``x + Σ p Y <= Y`` too)."""
    if quo.only is not None:
        solve = quo.system(choice)
        y = None if solve is None else solve(x, "y")
        return y if y is not None and np.all(np.isfinite(y)) else None
    tied, reward = _ties(quo, x, sign, tol)
    y = None
    for _ in range(_MAX_POLICY_ROUNDS):
        solve = quo.system(choice)
        new_y = None if solve is None else solve(x, "y")
        if new_y is None or not np.all(np.isfinite(new_y)):
            return y
        y = new_y
        inner = quo.e_prob * y[quo.e_col]
        qy = reward + np.bincount(quo.e_pair, weights=inner, minlength=tied.size)
        choice = _improve(quo, choice, qy, 1.0, tied)
        if choice is None:
            return y
    return y


def _ties(quo: _Quotient, x, sign, tol):
    """``(tied, reward)``: `[S*A]` the usable pairs within ``tol / 4`` (relative) of the
    optimum for the values ``x``, and each pair's class's value (the reward of ``y``)."""
    return quo.ordered.ties(quo.e_prob, quo.inflow, quo.pairs, quo.pair_class, x, sign, tol)


def _swept(quo: _Quotient, sign, tol):
    """``(x, y)`` from one compiled pass over the components in order
    (:mod:`jaxprivmdp.properties._sweep_guess`), or None where it gives up."""
    if not SWEEP:
        return None
    order = quo.ordered
    x = order.solve(quo.e_prob, quo.inflow, quo.pairs, sign)
    if x is None or np.any(x <= 0):
        return None
    tied, reward = _ties(quo, x, sign, tol)
    y = order.solve(quo.e_prob, reward, tied, 1.0)
    return None if y is None else (x, y)


def _verified(quo: _Quotient, x, y, sign, tol, margin):
    """``(lower, upper)``: ``x ∓ κ y`` on all `[S]` states where the backups verify it,
    each None where not (or where ``x``, ``y`` are unfit to build them)."""
    if np.any(x <= 0) or not np.all(y >= x * (1 - 1e-9)):
        return None, None
    kappa = tol / 2 / float(np.max(y / x))

    def full(v):
        return np.where(quo.maybe, v[np.maximum(quo.col, 0)], quo.fixed_value)

    up, lo = x + kappa * y, x - kappa * y
    a = underflow(quo.g.degree, np.float64)  # (below tiny, rounding is absolute)
    lo_ok, up_ok = quo.ordered.verify(quo.e_prob, quo.inflow, quo.pairs, sign, (margin, a), lo, up)
    return (full(lo) if lo_ok else None), (full(up) if up_ok else None)


def guess_bounds(
    g: Graph, pre, minimize, tol, margin, estimate=None, solvers=None, *, swept_only=False
):
    """Verified starting bounds ``(lower, upper)`` (`[S]` float64, each None if its candidate
    failed) for :func:`~jaxprivmdp.properties._iteration.interval_iteration`, whose width
    meets ``tol / 2`` (relative) where the guess was exact to float64's precision.

    ``pre``: the precomputation (``rewards``, ``usable``, ``group``, ``maybe``,
    ``fixed_value``); ``estimate``: `[S]` values to start policy iteration from (greedy), or
    None (the attractor); ``solvers``: a dict shared by the calls for models of one support
    and precomputation (the releases of a batch), which keeps their quotient's structure,
    linear solver's order and the compiled pass's; ``swept_only``: the compiled pass's
    candidate alone (no policy iteration: where iterations are cheaper than its factors)."""
    solvers = {} if solvers is None else solvers
    quo = solvers.get("quotient")  # (one support and precomputation: reweighted)
    quo = _Quotient(g, pre, solvers) if quo is None else quo.reweighted(g, solvers)
    solvers.setdefault("quotient", quo.reweighted(quo.g, None))
    sign = -1.0 if minimize else 1.0
    if quo.n == 0 or quo.pair_ids.size == 0:
        return None, None
    swept = _swept(quo, sign, tol)
    first = (None, None) if swept is None else _verified(quo, *swept, sign, tol, margin)
    if swept_only or (first[0] is not None and first[1] is not None):
        return first
    # The releases of a batch are near one another: the last one's optimal policy is a
    # better start than the attractor (a guess again on one model starts from its estimate).
    last = solvers.get("choice", (None, None))
    out = _policy_iteration(quo, sign, estimate, last[1] if last[0] != id(g) else None)
    if out is None or np.any(out[0] <= 0):
        return first
    x, _, choice = out
    solvers["choice"] = (id(g), choice)
    y = _tied_weight(quo, x, choice, sign, tol)
    if y is None:
        return first
    lo, up = _verified(quo, x, y, sign, tol, margin)
    return (first[0] if lo is None else lo), (first[1] if up is None else up)
