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
  form) until no value moves by more than some 64 units in the last place, within a
  budget of work proportional to the model's edges; one of at most 128 classes whose
  sweeps would not settle in it gets policy iteration with dense solves, and a larger slow
  one (consensus's shared counter, zeroconf's retries) ends the pass: no candidate.

The same pass gives ``y``, the most expected ``Σ_t x(s_t)`` over the pairs tied with the
optimum (:func:`jaxprivmdp.properties._guess._tied_weight`'s quantity). Nothing here is
trusted: ``x ± κ y`` is verified by the same backups as policy iteration's candidate, and a
candidate that fails falls back to policy iteration. The pass only decides how fast a check
is, never what it answers.

The pass is compiled (:mod:`jaxprivmdp.properties._kernels`: sequential, state by state,
which NumPy's whole-array calls cannot express without a Python loop over the components).
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import breadth_first_order

from ._kernels import sweep_pass

# The pass gives up (no candidate) after this many times the quotient's edges of work, plus
# FLOOR edge visits (some 0.2 ms: a small model's component may take a few hundred sweeps).
BUDGET = 16
FLOOR = 100_000


class Ordered:
    """The quotient's classes by component, successors first, and its pairs by class, in
    the arrays the kernel reads: its pattern alone (built once per guess, used for ``x``
    and ``y``, and shared by the releases of a batch, which share the pattern)."""

    def __init__(self, quo):
        rank = quo.blocks
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
        done = sweep_pass(
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
