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

import numpy as np

from ._graph import Graph
from ._precision import underflow
from ._quotient import _Quotient
from ._sweep_kernels import WEIGHTS_SETTLED, candidates

_MAX_POLICY_ROUNDS = 32
# A switch must gain more than the solves' noise (about 1e-13 relative), or policy
# iteration cycles among tied policies; far below any tol, and the guess is verified anyway.
_SWITCH = 1e-10
# The compiled pass over the components (:mod:`._sweep_guess`) is tried before policy
# iteration (tests turn it off to reach policy iteration's paths).
SWEEP = True


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
    support) or else the greedy policy of ``estimate()``, whichever is evaluated well (proper,
    not too slow), else the attractor: ``(x, w, choice)`` of the last policy evaluated well,
    or None."""
    if quo.only is not None:
        out = quo.evaluate(quo.only)
        return None if out is None else (*out, quo.only)
    choice, out = None, None  # (``out``: the first policy's evaluation, when already made)
    if start is not None and start.shape == (quo.n,):
        choice, out = start, quo.evaluate(start)
    if out is None and estimate is not None:
        choice = _greedy(quo, estimate(), sign)
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
    y = order.solve(quo.e_prob, reward, tied, 1.0, WEIGHTS_SETTLED)
    return None if y is None else (x, y)


def _verified(quo: _Quotient, x, y, sign, tol, margin):
    """``(lower, upper)``: ``x ∓ κ y`` on all `[S]` states where the backups verify it,
    each None where not (or where ``x``, ``y`` are unfit to build them)."""
    fit, lo, up = candidates(x, y, float(tol))
    if not fit:
        return None, None
    a = underflow(quo.g.degree, np.float64)  # (below tiny, rounding is absolute)
    lo_ok, up_ok = quo.ordered.verify(quo.e_prob, quo.inflow, quo.pairs, sign, (margin, a), lo, up)
    return (quo.full(lo) if lo_ok else None), (quo.full(up) if up_ok else None)


def guess_usable(quo: _Quotient) -> bool:
    """Whether the quotient has unknowns and pairs to guess their values from."""
    return quo.n > 0 and quo.pair_ids.size > 0


def guess_bounds(
    g: Graph, pre, minimize, tol, margin, estimate=None, solvers=None, *, swept_only=False
):
    """Verified starting bounds ``(lower, upper)`` (`[S]` float64, each None if its candidate
    failed) for :func:`~jaxprivmdp.properties._iteration.interval_iteration`, whose width
    meets ``tol / 2`` (relative) where the guess was exact to float64's precision.

    ``pre``: the precomputation (``rewards``, ``usable``, ``group``, ``maybe``,
    ``fixed_value``); ``estimate``: a function of no arguments returning `[S]` values to
    start policy iteration from (greedy; called only if it runs), or None (the attractor);
    ``solvers``: a dict shared by the calls for models of one support and precomputation
    (the releases of a batch), which keeps their quotient's structure, linear solver's order
    and the compiled pass's; ``swept_only``: the compiled pass's candidate alone (no policy
    iteration: where iterations are cheaper than its factors)."""
    solvers = {} if solvers is None else solvers
    quo = solvers.get("quotient")  # (one support and precomputation: reweighted)
    quo = _Quotient(g, pre, solvers) if quo is None else quo.reweighted(g, solvers)
    solvers.setdefault("quotient", quo.reweighted(quo.g, None))
    sign = -1.0 if minimize else 1.0
    if not guess_usable(quo):
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
