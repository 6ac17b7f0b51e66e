"""The linear solves of :mod:`jaxprivmdp.properties._guess`: ``(I − P_σ) v = b`` for the
policies ``σ`` of one model, on the host (float64, SciPy), in memory bounded before any
factorization starts.

A policy's matrix lies in the pattern of the union of the usable pairs, so one ordering and
one fill bound, computed once per guess from that pattern, serve every policy it evaluates:

- the strongly connected components (SCCs) of the pattern, successors first: the matrix is
  block triangular, so an LU without pivoting fills only the diagonal blocks and, in each
  row of a later block, the columns of an earlier block that its entries there reach along
  that block's ``U`` (``L21 = A21 U11^{-1}``); an acyclic model (csma, brp) fills nothing;
- within each SCC, reverse Cuthill-McKee, with the highest-degree states (hubs: zeroconf's
  chains all return to one state) moved to the end of their block, where they cost two
  rows of fill instead of a bandwidth the size of the chains; an LU without pivoting fills
  only inside each block's envelope (George & Liu).

Where that bound fits ``MAX_FILL``, SuperLU factors in exactly that order without pivoting
(``permc_spec="NATURAL"``, ``diag_pivot_thresh=0``): ``I − P_σ`` of a proper policy is a
nonsingular M-matrix, for which Gaussian elimination without pivoting is stable, and its
own orderings give no such bound (COLAMD fills a random 20,000-state acyclic model to
580,000 entries in 11 s, a 100,000-state one to 11.6 million in 21 s, where the
topological order fills nothing). Elsewhere (successors drawn at random: any order fills
densely) a Krylov method: GMRES, restarted, unpreconditioned, from the last policy's
solution. Not ILU-preconditioned: ``spilu`` bounds the fill but not the time, which grows
with what it drops (a random 100,000-state model: 10 s at ``fill_factor=2``, 117 s at 3),
while GMRES costs ``O(restart · n)`` memory and ``O(nnz)`` a step by construction, and the
systems that reach it, successors everywhere, mix fast (few steps). Not BiCGSTAB: its
residual is not monotone and stalls short of the 1e-12 policy iteration needs.
"""

from __future__ import annotations

import functools

import numpy as np
from scipy.sparse import csc_matrix, csr_matrix
from scipy.sparse.csgraph import reverse_cuthill_mckee
from scipy.sparse.linalg import gmres, splu
from threadpoolctl import threadpool_limits

from ._kernels import strong_components

# Entries of a factor (12 bytes each in SuperLU: value and index): 1e8 is 1.2 GB, a bound
# (not an estimate) that consensus N = 5 needs (its bound: 5.5e7; its real factor: 7.5e5).
MAX_FILL = 1e8
# Up to this many unknowns even a dense factor is small (1e6 entries, 0.3 s at worst): no
# ordering to compute (it would cost more than the LU), SuperLU's own (COLAMD).
SMALL = 1000
# Hubs tried, in turn, until the bound is within _CHEAP times the matrix's own entries or
# the last try did not halve it (each try: an RCM and a sort, a few ms per 10⁴ unknowns).
_HUBS = (0, 8, 64)
_CHEAP = 16
# GMRES: the Krylov basis (memory: RESTART vectors of n) and the steps per solve.
_RESTART = 20
_KRYLOV_STEPS = 400
# Relative residual a Krylov solve must reach (policy iteration switches on 1e-10 gains).
_KRYLOV_RTOL = 1e-12
# A policy that differs from the last factored one in at most LOW_RANK rows (and whose
# `[n, rows]` block of solves holds at most LOW_RANK_ENTRIES numbers) is solved through that
# factor by the Sherman-Morrison-Woodbury formula instead of a new factorization; its
# capacitance matrix's singular values must lie within MAX_CAPACITANCE_CONDITION of each
# other and of 1 (those of the identity it perturbs).
LOW_RANK = 32
LOW_RANK_ENTRIES = 4_000_000
MAX_CAPACITANCE_CONDITION = 1e8


def blocks(n: int, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """`[n]` each unknown's SCC as its rank in an order where every edge ``row -> col``
    goes to the same or an earlier rank (successors first): Tarjan's completion order."""
    return strong_components(n, rows, cols)[1]


def _bound(n: int, rows, cols, block, hubs: int):
    """``(order, fill)``: the positions of the unknowns (`[n]` position -> unknown) in the
    block order, RCM inside each block with the ``hubs`` highest-degree unknowns of the
    blocks last, and a bound on the entries of its LU without pivoting (the diagonal
    counted twice, as SuperLU stores it)."""
    intra = block[rows] == block[cols]
    ri, ci = rows[intra], cols[intra]
    hub = np.zeros(n, bool)
    if hubs:
        degree = np.bincount(ri, minlength=n) + np.bincount(ci, minlength=n)
        hub[np.argsort(-degree, kind="stable")[:hubs]] = True
    keep = ~hub[ri] & ~hub[ci]
    body = csr_matrix((np.ones(int(keep.sum()), np.int8), (ri[keep], ci[keep])), shape=(n, n))
    rcm = np.empty(n, np.int64)
    rcm[reverse_cuthill_mckee(body, symmetric_mode=False)] = np.arange(n)
    order = np.lexsort((rcm, hub, block))
    pos = np.empty(n, np.int64)
    pos[order] = np.arange(n)
    at = np.arange(n)
    first_col, first_row = at.copy(), at.copy()  # each row's / column's envelope start
    np.minimum.at(first_col, pos[ri], pos[ci])
    np.minimum.at(first_row, pos[ci], pos[ri])
    envelope = int(np.sum(at - first_col) + np.sum(at - first_row))
    # A row's entries in an earlier block fill (L21 = A21 U11⁻¹) the columns reachable from
    # them along U11's entries, each within its envelope (u_jk ≠ 0 needs first_row[k] <=
    # j): from column j, at most up to the fixed point of j -> max{k : first_row[k] <= j}.
    reach = at.copy()
    np.maximum.at(reach, first_row, at)
    reach = np.maximum.accumulate(reach)
    while not np.array_equal(step := reach[reach], reach):  # pointer jumping
        reach = step
    key = rows[~intra] * n + block[cols[~intra]]
    sort = np.argsort(key, kind="stable")
    key, xp = key[sort], pos[cols[~intra]][sort]
    inter = 0
    if key.size:
        head = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
        inter = int(np.sum(np.maximum.reduceat(reach[xp], head) - np.minimum.reduceat(xp, head)))
    return order, rows.size + 2 * n + envelope + inter


class PolicySolver:
    """Solves ``(I − P_σ) v = b`` for policies ``σ`` whose off-diagonal entries lie in the
    pattern ``rows -> cols`` (`[E]` each, unknowns ``0..n-1``): a direct LU in a fixed
    order where its fill bound is within ``MAX_FILL`` (``direct``), GMRES elsewhere."""

    def __init__(self, n: int, rows: np.ndarray, cols: np.ndarray, block=None):
        """``block``: :func:`blocks` of the pattern where the caller has it."""
        self.n = n
        self._start: dict = {}
        self.small = n <= SMALL and n * n <= MAX_FILL
        if self.small:
            self.fill, self.direct = n * n, True
            self.order = self.pos = np.arange(n)
            return
        off = rows != cols  # (repeated entries only make the bound larger)
        r, c = rows[off], cols[off]
        block = blocks(n, r, c) if block is None else block
        best = None
        if n and block.max() == n - 1:  # acyclic: triangular in the blocks' order, no fill
            best = (np.argsort(block), r.size + 2 * n)
        for hubs in _HUBS if n and best is None else ():
            order, fill = _bound(n, r, c, block, hubs)
            last, best = best, best if best is not None and best[1] <= fill else (order, fill)
            if fill <= _CHEAP * (r.size + 2 * n) or (last is not None and 2 * fill > last[1]):
                break
        self.fill = best[1] if best else 0
        self.direct = self.fill <= MAX_FILL
        self.order = best[0] if best else np.zeros(0, np.int64)  # position -> unknown
        self.pos = np.empty(n, np.int64)  # unknown -> position
        self.pos[self.order] = np.arange(n)

    def factor(self, rows: np.ndarray, cols: np.ndarray, probs: np.ndarray):
        """A function ``solve(b, key)`` -> `[n]` ``v`` (None where a Krylov solve missed
        its residual) for the policy with entries ``P[rows, cols] = probs``; None if the
        matrix is singular (an improper policy). ``key`` names the right-hand side, whose
        last solution starts the next Krylov solve of the same key. ``solve.columns``: it
        also takes `[n, m]` right-hand sides (a direct solve: several columns cost about
        one pass over the factor)."""
        n = self.n
        if self.direct:
            m = _system(n, self.pos[rows], self.pos[cols], probs, csc_matrix)
            # SymmetricMode: the same factor, 2-4x faster (no column etree of AᵀA).
            order = {"permc_spec": "NATURAL", "diag_pivot_thresh": 0.0}
            try:
                lu = splu(m) if self.small else splu(m, **order, options={"SymmetricMode": True})
            except RuntimeError:  # singular: an improper policy
                return None

            direct = self._refined(lu.solve, m)
            direct.entries = lu.L.nnz + lu.U.nnz  # (the fill the bound is about)
            direct.lu, direct.matrix = lu, m
            return direct
        m = _system(n, rows, cols, probs, csr_matrix)

        def krylov(b, key=None):
            return _gmres(m, b, self._start, key)

        krylov.columns = False
        return krylov

    def updated(self, base, rows: np.ndarray, cols: np.ndarray, probs: np.ndarray):
        """:meth:`factor`'s solve for the policy with entries ``P[rows, cols] = probs``,
        through the factor of ``base`` (a direct solve :meth:`factor` returned; an updated
        one's ``factored`` is that) where the two matrices differ in at most ``LOW_RANK``
        rows (``base`` itself where they are equal): ``A = A₀ + U Vᵀ`` (``U`` the unit
        columns of the changed rows, ``Vᵀ`` their change), so ``A⁻¹ b = y − Z C⁻¹ Vᵀ y``
        with ``y = A₀⁻¹ b``, ``Z = A₀⁻¹ U`` and ``C = I + Vᵀ Z`` (Sherman-Morrison-Woodbury),
        refined once against ``A`` itself. None where it does not apply (more rows, or an
        ill-conditioned ``C``: ``A`` may be singular): then factor."""
        base = getattr(base, "factored", base)
        m = _system(self.n, self.pos[rows], self.pos[cols], probs, csc_matrix)
        change = (m - base.matrix).tocsr()
        change.eliminate_zeros()
        at = np.flatnonzero(np.diff(change.indptr))
        k = at.size
        if k == 0:
            return base
        if k > LOW_RANK or k * self.n > LOW_RANK_ENTRIES:
            return None
        unit = np.zeros((self.n, k))
        unit[at, np.arange(k)] = 1.0
        z = base.lu.solve(unit).reshape(self.n, k)
        v = change[at]
        capacitance = np.eye(k) + v @ z
        if not np.all(np.isfinite(capacitance)):
            return None
        # (singular with A; against I's singular values of 1 as much as against its own)
        sigma = np.linalg.svd(capacitance, compute_uv=False)
        if sigma[-1] * MAX_CAPACITANCE_CONDITION < max(1.0, sigma[0]):
            return None

        def solve(b):
            y = base.lu.solve(b)
            return y - z @ np.linalg.solve(capacitance, v @ y)

        direct = self._refined(solve, m)
        direct.factored = base  # (later updates: from that factor)
        return direct

    def _refined(self, solve, m):
        """``solve`` (of ``m``, in this order) for right-hand sides in the unknowns' order,
        `[n]` or `[n, columns]`, with one step of iterative refinement against ``m``."""

        def direct(b, key=None):
            bp = b[self.order]
            v = solve(bp)
            v = v + solve(bp - m @ v)
            return v[self.pos]

        direct.columns = True
        return direct


def _system(n: int, rows, cols, probs, kind):
    """``I − P`` as a ``kind`` matrix (one construction: duplicates, a self-loop's entry
    and the diagonal, are summed)."""
    at = np.arange(n)
    data = np.concatenate([np.ones(n), -probs])
    return kind((data, (np.concatenate([at, rows]), np.concatenate([at, cols]))), shape=(n, n))


def one_blas_thread(fn):
    """``fn`` run with BLAS on one thread: a Krylov method's vector operations (10⁵-10⁶
    entries) gain nothing from OpenBLAS's threads, which spin when the cores are busy
    (BiCGSTAB on 10⁵ unknowns: 1.9 s with them on 2 busy cores, 0.08 s without)."""

    @functools.wraps(fn)
    def single(*args, **kwargs):
        with threadpool_limits(limits=1, user_api="blas"):
            return fn(*args, **kwargs)

    return single


@one_blas_thread
def _gmres(m, b, starts: dict, key):
    """GMRES for ``m v = b`` from ``starts[key]`` (stored back on success), one restart
    cycle at a time, given up (None) when the rate so far would not reach
    ``_KRYLOV_RTOL`` within ``_KRYLOV_STEPS`` (a slowly mixing system, hopeless without a
    preconditioner: each further step would be wasted), or made no progress."""
    norm = float(np.linalg.norm(b))
    v = starts.get(key)
    cycles = max(1, _KRYLOV_STEPS // _RESTART)
    for done in range(1, cycles + 1):
        v, _ = gmres(m, b, v, rtol=_KRYLOV_RTOL, atol=0.0, restart=_RESTART, maxiter=1)
        res = float(np.linalg.norm(b - m @ v)) / max(norm, 1e-300)
        if res <= 10 * _KRYLOV_RTOL or norm == 0:
            starts[key] = v
            return v
        # GMRES often speeds up as it goes: give up only on twice the budget at this rate.
        if not res < 1 or np.log(res) / done * 2 * cycles > np.log(_KRYLOV_RTOL):
            return None
    return None
