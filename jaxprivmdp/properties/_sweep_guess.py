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
- a larger component runs Gauss–Seidel sweeps until no value moves by more than some
  64 units in the last place, within a budget of work proportional to the model's edges
  (a slowly mixing component, consensus's shared counter, runs out of it: no candidate).

The same pass gives ``y``, the most expected ``Σ_t x(s_t)`` over the pairs tied with the
optimum (:func:`jaxprivmdp.properties._guess._tied_weight`'s quantity). Nothing here is
trusted: ``x ± κ y`` is verified by the same backups as policy iteration's candidate, and a
candidate that fails falls back to policy iteration. The pass only decides how fast a check
is, never what it answers.

Why Numba: the pass is sequential (each component reads its successors' final values) and
goes state by state, so NumPy's whole-array calls cannot express it without a Python loop
over up to 10⁶ components; SciPy has no such routine (``spsolve_triangular`` solves one
fixed matrix, not an optimum over pairs). The kernels compile on first use (about a second)
into Numba's on-disk cache.
"""

from __future__ import annotations

import functools

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import breadth_first_order

from ._solve import _blocks

# Gauss-Seidel sweeps of one component stop when no value moved by more than this (relative):
# near the sums' rounding (moves of a few units in the last place go on, not shrinking).
SETTLED = 64 * float(np.finfo(np.float64).eps)
# The pass gives up (no candidate) after this many times the quotient's edges of work, plus
# FLOOR edge visits (some 0.2 ms: a small model's component may take a few hundred sweeps).
BUDGET = 16
FLOOR = 100_000


@functools.cache
def _kernel():
    """The compiled pass (Numba imported and the kernel compiled on first use)."""
    import numba

    @numba.njit(cache=True, nogil=True)
    def pass_(comp_ptr, members, cls_ptr, cls_pairs, ok, pair_ptr, e_col, e_prob, inflow, sign,
              budget, x):  # fmt: skip
        """Fills ``x`` component by component; returns False where it gives up."""
        work = 0
        for c in range(comp_ptr.size - 1):
            lo, hi = comp_ptr[c], comp_ptr[c + 1]
            single = hi - lo == 1
            last, sweeps = np.inf, 0
            while True:
                moved = 0.0  # the largest relative move of this sweep
                for i in range(lo, hi):
                    k = members[i]
                    best, found = 0.0, False
                    for j in range(cls_ptr[k], cls_ptr[k + 1]):
                        p = cls_pairs[j]
                        if not ok[p]:
                            continue
                        acc, stay = inflow[p], 0.0
                        for e in range(pair_ptr[p], pair_ptr[p + 1]):
                            if single and e_col[e] == k:
                                stay += e_prob[e]
                            else:
                                acc += e_prob[e] * x[e_col[e]]
                        work += pair_ptr[p + 1] - pair_ptr[p] + 1
                        if stay >= 1.0:
                            return False  # a pair that never leaves: no closed form
                        value = acc / (1.0 - stay)
                        if not found or sign * value > sign * best:
                            best, found = value, True
                    if not found or not np.isfinite(best):
                        return False
                    if best != x[k]:
                        moved = max(moved, abs(best - x[k]) / abs(best))
                    x[k] = best
                sweeps += 1
                if single or moved <= SETTLED:
                    break
                # Geometric convergence at the last sweep's rate: give up early where the
                # sweeps it needs would exceed what is left of the budget.
                rate = moved / last
                last = moved
                if work > budget or (
                    sweeps >= 3
                    and (rate >= 1 or np.log(SETTLED / moved) / np.log(rate) * (work / sweeps)
                         > budget - work)
                ):  # fmt: skip
                    return False
        return True

    return pass_


class Ordered:
    """The quotient's classes by component, successors first, and its pairs by class, in
    the arrays the kernel reads: its pattern alone (built once per guess, used for ``x``
    and ``y``, and shared by the releases of a batch, which share the pattern)."""

    def __init__(self, quo):
        rank = _blocks(quo.n, quo.e_row, quo.e_col)
        self.members = np.lexsort((_to_exits(quo, rank), rank)).astype(np.int64)
        self.comp_ptr = _pointers(rank, int(rank.max()) + 1 if rank.size else 0)
        by_class = np.argsort(quo.pair_col, kind="stable")
        self.cls_pairs = quo.pair_ids[by_class].astype(np.int64)
        self.cls_ptr = _pointers(quo.pair_col, quo.n)
        self.pair_ptr = _pointers(quo.e_pair, quo.S * quo.A)
        self.e_col = quo.e_col.astype(np.int64)
        self.budget = BUDGET * (self.e_col.size + quo.n) + FLOOR
        self.n = quo.n

    def solve(self, prob, inflow, ok, sign: float) -> np.ndarray | None:
        """`[n]` the optimum (``sign``) of ``inflow + Σ prob x`` over the pairs where
        ``ok``, component by component, or None where the pass gives up (``prob``: the
        quotient's edge probabilities; ``inflow``, ``ok``: `[S*A]`)."""
        x = np.zeros(self.n)
        prob = np.ascontiguousarray(prob, np.float64)
        inflow = np.ascontiguousarray(inflow, np.float64)
        done = _kernel()(
            self.comp_ptr, self.members, self.cls_ptr, self.cls_pairs, ok, self.pair_ptr,
            self.e_col, prob, inflow, float(sign), self.budget, x,
        )  # fmt: skip
        return x if done else None


def _to_exits(quo, rank: np.ndarray) -> np.ndarray:
    """`[n]` each class's position in a breadth-first search backward from the classes with
    an edge out of their component (to an earlier component or a fixed state): Gauss-Seidel
    visits a component's classes in this order, so that a chain's values travel its whole
    length in one sweep (the other way round, one class a sweep)."""
    n = quo.n
    cross = rank[quo.e_row] != rank[quo.e_col]
    exits = quo.leaves.copy()
    exits[quo.e_row[cross]] = True
    sources = np.flatnonzero(exits)
    # One search from an extra node `n` with an edge to every exit.
    rows = np.concatenate([quo.e_col, np.full(sources.size, n)])
    cols = np.concatenate([quo.e_row, sources])
    back = csr_matrix((np.ones(rows.size, np.int8), (rows, cols)), shape=(n + 1, n + 1))
    seen = breadth_first_order(back, n, directed=True, return_predecessors=False)
    position = np.full(n + 1, n + 1, np.int64)
    position[seen] = np.arange(seen.size)
    return position[:n]


def _pointers(keys: np.ndarray, n: int) -> np.ndarray:
    """`[n + 1]` CSR pointers of sorted (or grouped by) ``keys`` in ``range(n)``."""
    ptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(keys, minlength=n), out=ptr[1:])
    return ptr
