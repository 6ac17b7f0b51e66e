"""The first candidate of :mod:`jaxprivmdp.properties._guess`: one compiled pass over the
strongly connected components in order, successors first.

Storm's topological solvers settle most of a QVBS model in one pass: brp, crowds, wlan and
zeroconf are chains and small loops, whose components are single states or a few. Policy
iteration reaches the same values only through LU factors of each policy's whole system
(SuperLU: some 0.3 µs a column however little it fills, 4 ms a factor on zeroconf's 17,000
unknowns), a few rounds, and NumPy passes between them. Here, on the quotient of
:class:`~jaxprivmdp.properties._guess._Quotient`:

- a component of one class gets its value in closed form: over its usable pairs, the
  optimum of ``(r + Σ_{t ≠ s} p x_t) / (1 − p_ss)`` (each pair's own fixed point; the
  optimal stationary policy picks one of them), its successors' values already known;
- a larger component runs Gauss–Seidel sweeps (each pair's self-loop in the same closed
  form), its classes in the depth-first postorder (a chain's values travel its whole length
  in one sweep), until no value moves by more than some 64 units in the last place, within
  a budget of work proportional to the model's edges; one of at most 128 classes whose
  sweeps would cost more than some m² gets policy iteration with dense solves (consensus's
  shared counter), and a larger slow one ends the pass: no candidate.

The same pass gives ``y``, the most expected ``Σ_t x(s_t)`` over the pairs tied with the
optimum (:func:`jaxprivmdp.properties._guess._tied_weight`'s quantity). Nothing here is
trusted: ``x ± κ y`` is verified by the same backups as policy iteration's candidate, and a
candidate that fails falls back to policy iteration. The pass only decides how fast a check
is, never what it answers.

The pass is compiled (:mod:`jaxprivmdp.properties._sweep_kernels`: sequential, state by state,
which NumPy's whole-array calls cannot express without a Python loop over the components).
"""

from __future__ import annotations

import numpy as np

from ._kernels import compiled
from ._sweep_kernels import (
    DENSE_WANTED,
    DONE,
    SETTLED,
    dense_component,
    sweep_pass,
    verify_pass,
)

# The pass gives up (no candidate) after this many times the quotient's edges of work, plus
# FLOOR edge visits (some 0.2 ms: a small model's component may take a few hundred sweeps).
BUDGET = 16
FLOOR = 100_000


class Ordered:
    """The quotient's classes by component, successors first, and its pairs by class, in
    the arrays the kernel reads (``order``: see :mod:`jaxprivmdp.properties._sweep_kernels`): its
    pattern alone (built once per guess, used for ``x`` and ``y``, and shared by the
    releases of a batch, which share the pattern)."""

    def __init__(self, quo):
        rank, finish = quo.components
        counts = (int(rank.max()) + 1 if rank.size else 0, quo.S * quo.A)
        layout = _layout(rank, finish, quo.pair_ids, quo.pair_col, quo.e_pair, counts)
        comp_ptr, members, cls_ptr, cls_pairs, pair_ptr = layout
        self.order = (comp_ptr, members, cls_ptr, cls_pairs, pair_ptr, quo.e_col)  # (int64)
        self.budget = BUDGET * (quo.e_col.size + quo.n) + FLOOR
        self.n = quo.n

    def solve(self, prob, inflow, ok, sign: float, settled=SETTLED) -> np.ndarray | None:
        """`[n]` the optimum (``sign``) of ``inflow + Σ prob x`` over the pairs where
        ``ok``, component by component, or None where the pass gives up (``prob``: the
        quotient's edge probabilities; ``inflow``, ``ok``: `[S*A]`; ``settled``: the
        sweeps' relative precision): :func:`sweep_pass`, and :func:`dense_component` on
        each component it hands back."""
        x, at, local = np.zeros(self.n), np.zeros(3, np.int64), None
        problem, sign = _problem(ok, prob, inflow), float(sign)
        comp_ptr, members = self.order[0], self.order[1]
        while True:
            done = sweep_pass(self.order, problem, sign, (self.budget, settled), x, at)
            if done != DENSE_WANTED:
                return x if done == DONE else None
            c = at[0]
            local = np.full(self.n, -1, np.int64) if local is None else local  # (restored)
            classes = members[comp_ptr[c] : comp_ptr[c + 1]]
            solved = dense_component(classes, self.order, problem, sign, x, local)
            at[0], at[2] = (c + 1, 0) if solved else (c, 1)  # (failed: its sweeps go on)

    def ties(self, prob, inflow, ok, pair_class, x, sign: float, tol: float):
        """``(tied, reward)``: `[S*A]` the pairs where ``ok`` whose backup for the values
        ``x`` (`[n]`) is within ``tol / 4`` (relative) of their class's value, and that value
        (0 for a pair of no class): :func:`ties_pass`."""
        tied = np.zeros(pair_class.size, bool)
        reward = np.zeros(pair_class.size)
        problem = _problem(ok, prob, inflow)
        ties_pass(self.order[4:], problem, pair_class, x, (float(sign), tol / 4), tied, reward)
        return tied, reward

    def verify(self, prob, inflow, ok, sign: float, widening, lower, upper) -> tuple[bool, bool]:
        """``(lower_ok, upper_ok)``: whether the backups over the pairs where ``ok``, widened
        by ``widening`` (``(relative, absolute)``), keep ``lower`` (`[n]`) below and
        ``upper`` above themselves (:func:`~jaxprivmdp.properties._sweep_kernels.verify_pass`)."""
        margin, floor = (float(w) for w in widening)
        problem = _problem(ok, prob, inflow)
        return verify_pass(self.order, problem, float(sign), margin, floor, lower, upper)


def _problem(ok, prob, inflow) -> tuple:
    """The kernels' ``problem``: ``(ok, e_prob, inflow)`` as contiguous float64 arrays."""
    return ok, np.ascontiguousarray(prob, np.float64), np.ascontiguousarray(inflow, np.float64)


@compiled()
def ties_pass(edges, problem, pair_class, x, test, tied, reward):
    """Fills ``reward`` (each pair's class's value ``x[c]``) and ``tied`` (``ok`` and
    ``sign (reward − q) <= slack |q|``, ``test = (sign, slack)``), ``q = inflow + Σ p x``
    summed as ``np.bincount`` sums (from 0, edge by edge, then the inflow added: the bits
    of NumPy's whole-array form, in one pass instead of five over every pair)."""
    pair_ptr, e_col = edges
    ok, e_prob, inflow = problem
    sign, slack = test
    for p in range(pair_class.size):
        if pair_class[p] < 0:
            continue
        reward[p] = x[pair_class[p]]
        acc = 0.0
        for e in range(pair_ptr[p], pair_ptr[p + 1]):
            acc += e_prob[e] * x[e_col[e]]
        q = inflow[p] + acc
        tied[p] = ok[p] and sign * (reward[p] - q) <= slack * abs(q)


@compiled()
def _layout(rank, finish, pair_ids, pair_col, e_pair, counts):
    """``(comp_ptr, members, cls_ptr, cls_pairs, pair_ptr)`` of :class:`Ordered`: the
    classes by component (``rank``), inside one in depth-first postorder (``finish``), the
    usable pairs by class (``pair_col``; in order of ``pair_ids`` inside one), and each
    pair's slice of the edges (``e_pair``, sorted), as CSR pointers and counting sorts (one
    pass each, where NumPy's stable sorts and bincounts took some 50 µs a 10³-state check).
    ``counts``: ``(components, pairs)``."""
    n = finish.size
    comp_ptr = _pointers(rank, counts[0])
    members = np.empty(n, np.int64)
    postorder = np.empty(n, np.int64)
    for k in range(n):
        postorder[finish[k]] = k
    fill = comp_ptr[:-1].copy()
    for k in postorder:
        members[fill[rank[k]]] = k
        fill[rank[k]] += 1
    cls_ptr = _pointers(pair_col, n)
    cls_pairs = np.empty(pair_ids.size, np.int64)
    fill = cls_ptr[:-1].copy()
    for j in range(pair_ids.size):
        cls_pairs[fill[pair_col[j]]] = pair_ids[j]
        fill[pair_col[j]] += 1
    return comp_ptr, members, cls_ptr, cls_pairs, _pointers(e_pair, counts[1])


@compiled()
def _pointers(keys, n):
    """`[n + 1]` CSR pointers of ``keys`` in ``range(n)`` (the start of each key's run once
    sorted by key)."""
    ptr = np.zeros(n + 1, np.int64)
    for k in keys:
        ptr[k + 1] += 1
    for i in range(n):
        ptr[i + 1] += ptr[i]
    return ptr
