"""The graph precomputation of :func:`jaxprivmdp.check`, on the host: which states decide.

:class:`Graph` holds the positive-probability edges of the allowed actions and the searches
PRISM and Storm run before iterating: attractors (``Prob0E``/``Prob1E`` for max,
``Prob0A``/``Prob1A`` for min), maximal end components (collapsed before interval iteration,
or the upper bound never leaves 1 inside one), and Baier et al.'s bound on expected visiting
times (the starting upper bound of expected rewards).

Why the precomputation runs on the host: it is a handful of graph searches (attractors,
strongly connected components), each a worklist over the transitions in O(transitions)
whose shape depends on the data; written in NumPy/SciPy and compiled loops (Numba) it is
exact (no rounding: only which probabilities are positive matters) and runs once per
property, while the iteration runs jit-compiled on the device
(:mod:`jaxprivmdp.properties._iteration`).
"""

from __future__ import annotations

import copy

import numpy as np

from ..models.core import Model, RaggedMDP, transition_lists, transition_rows
from ._kernels import (
    attractor,
    backward_search,
    compiled,
    end_components_search,
    prob1e_search,
    staying,
    strong_components,
)

_SMALLEST = float(np.finfo(np.float64).smallest_subnormal)


def _distinct(x: np.ndarray) -> np.ndarray:
    """The distinct values of an int array, sorted (a sort: faster here than ``np.unique``)."""
    x = np.sort(x)
    keep = np.ones(x.size, bool)
    keep[1:] = x[1:] != x[:-1]
    return x[keep]


# NumPy reduces a short last axis row by row: ``mask.any(axis=1)`` takes 0.8 ms on wlan's
# 61,119 × 2 mask, ``max(axis=1)`` 2.2 ms; a column at a time, some 0.03 ms. (Exact: the same
# values, NaN propagated by ``np.maximum`` as by ``np.max``.)
def row_any(x: np.ndarray) -> np.ndarray:
    """``x.any(axis=1)`` of a bool `[S, A]` array (``A >= 1``), a column at a time."""
    out = x[:, 0].copy()
    for a in range(1, x.shape[1]):
        out |= x[:, a]
    return out


def row_max(x: np.ndarray) -> np.ndarray:
    """``x.max(axis=1)`` of a `[S, A]` array (``A >= 1``), a column at a time."""
    out = x[:, 0].copy()
    for a in range(1, x.shape[1]):
        np.maximum(out, x[:, a], out=out)
    return out


def row_first(x: np.ndarray) -> np.ndarray:
    """``np.argmax(x, axis=1)`` of a bool `[S, A]` array: each row's first True (0 if none)."""
    out = np.zeros(x.shape[0], np.int64)
    seen = x[:, 0].copy()
    for a in range(1, x.shape[1]):
        out[x[:, a] & ~seen] = a
        seen |= x[:, a]
    return out


def one_per_row(mask: np.ndarray) -> bool:
    """Whether a bool `[S, A]` array has exactly one True a row (a DTMC's action mask)."""
    return np.count_nonzero(mask) == mask.shape[0] and bool(row_any(mask).all())


def _flags(x) -> np.ndarray:
    """``x`` as a contiguous, writable bool array for a kernel (Numba compiles a kernel
    again for each read-only/writable mix of its arguments: a JAX array's host view is
    read-only)."""
    return np.require(x, bool, ["C", "W"])


def entries(mdp: Model, mask: np.ndarray):
    """``(pair, successor, probability, at)`` of the positive entries of the allowed pairs
    (``mask`` `[S, A]`), row by row (pairs numbered ``s * A + a``), probabilities in
    float64; ``at``: their positions in the flattened ``transition_rows(mdp).probs`` (None
    for a ragged model), where a model of the same support has its probabilities."""
    if isinstance(mdp, RaggedMDP):
        rid, t, p = transition_lists(mdp)
        keep = (p > 0) & mask.reshape(-1)[rid]
        return rid[keep], t[keep], p[keep].astype(np.float64), None
    # Flat indices into `[S*A, K]` (fancy indexing by three arrays costs more).
    rows = transition_rows(mdp)
    probs = np.asarray(rows.probs, np.float64).reshape(mask.size, -1)
    keep = (probs > 0) & mask.reshape(-1, 1)
    if rows.next_states is not None:
        nxt = np.asarray(rows.next_states).reshape(mask.size, -1)
        keep &= nxt >= 0
    flat = np.flatnonzero(keep)
    pair, k = np.divmod(flat, probs.shape[1])
    t = k if rows.next_states is None else nxt.reshape(-1)[flat]
    return pair, t, probs.reshape(-1)[flat], flat


class Graph:
    """The positive-probability edges of the allowed actions, on the host (NumPy).

    Pairs ``(s, a)`` are numbered ``s * A + a``; edges are listed by pair (``np.nonzero``'s
    order; a ragged model's lists come sorted by row), which searches rely on (a state's
    first edge in a selection is its lowest pair). Reachability and attractors run as one
    compiled pass over the edges by successor each (:mod:`jaxprivmdp.properties._kernels`):
    the chains of models such as brp have thousands of layers, a NumPy round each.
    """

    def __init__(self, mdp: Model):
        mask = np.array(mdp.action_mask, bool)  # (writable: the kernels take it as is)
        S, A = mask.shape
        pair, t, p, self.at = entries(mdp, mask)
        self.S, self.A = S, A
        self.mask = mask
        self.allowed = mask.reshape(-1)
        self.pair = pair.astype(np.int64)
        self.src = self.pair // A  # each edge's state (kept: a pass each)
        self.succ = t.astype(np.int64)
        self._weigh(p)
        self.by_succ = np.argsort(self.succ, kind="stable")
        self.succ_ptr = np.zeros(S + 1, np.int64)
        np.cumsum(np.bincount(self.succ, minlength=S), out=self.succ_ptr[1:])
        self.degree = int(np.bincount(self.pair, minlength=1).max()) if self.pair.size else 1
        self.first_allowed = row_first(mask).astype(np.int32)
        self.has_action = row_any(mask)
        # One allowed action everywhere (a DTMC): the attractors are single searches.
        self.deterministic = one_per_row(mask)

    def _weigh(self, p: np.ndarray) -> None:
        """``prob`` (each row read as the distribution it stands for), ``row_error`` (the
        largest ``|Σ p − 1|`` over the allowed pairs) and ``raw`` (as stored: the device's
        backups use these and widen for ``Σ p ≠ 1``) of the edges' entries ``p``."""
        sums = np.bincount(self.pair, weights=p, minlength=self.S * self.A)
        self.prob = p / sums[self.pair]
        self.row_error = float(np.max(np.abs(sums[self.allowed] - 1), initial=0))
        self.raw = p  # (weigh_row: the same bits, compiled, for a batch's releases)

    def release(self, raw: np.ndarray) -> Graph:
        """This graph with the entries ``raw`` (`[E]`, on the same edges: a release of a
        batch, of one support)."""
        out = copy.copy(self)
        out._weigh(raw)
        return out

    def edges_into(self, states: np.ndarray) -> np.ndarray:
        """Edge indices whose successor is in ``states`` (int array)."""
        starts, ends = self.succ_ptr[states], self.succ_ptr[states + 1]
        counts = ends - starts
        total = int(counts.sum())
        if total == 0:
            return np.zeros(0, np.int64)
        shift = np.repeat(starts - (np.cumsum(counts) - counts), counts)
        return self.by_succ[shift + np.arange(total)]

    def pairs_within(self, inside: np.ndarray) -> np.ndarray:
        """`[S*A]` bool: allowed pairs all of whose successors lie in ``inside``."""
        return staying(self.pair, self.succ, self.allowed, self.allowed, _flags(inside))

    def _search(self, target, through, pair_ok):
        """:func:`~jaxprivmdp.properties._kernels.backward_search` from ``target``."""
        flags = (_flags(x) for x in (pair_ok, through, target))
        return backward_search(self.succ_ptr, self.by_succ, self.src, self.pair, *flags)

    def reach_exists(self, target, through, pair_ok):
        """Least ``R ⊇ target`` with every ``s ∈ through`` that has a pair in ``pair_ok``
        with a successor in ``R``. Returns ``R`` and each added state's witness action (the
        lowest pair with a successor one layer closer to ``target``; -1 elsewhere)."""
        return self._witnessed(*self._search(target, through, pair_ok), target)

    def _witnessed(self, dist, lowest, target):
        """``(reached, witness)`` from a backward search's ``(dist, lowest)``."""
        reached = dist >= 0
        witness = np.where(reached & ~target, lowest % self.A, -1).astype(np.int32)
        return reached, witness

    def reach(self, target, through, pair_ok):
        """The set :meth:`reach_exists` returns."""
        return self._search(target, through, pair_ok)[0] >= 0

    def reach_all(self, target, through):
        """Least ``R ⊇ target`` with every ``s ∈ through`` all of whose allowed pairs have a
        successor in ``R`` (the states where every scheduler reaches ``target`` with positive
        probability)."""
        return self._forced(target, through & self.has_action, self.allowed)

    def _forced(self, base, cand, pair_ok):
        """Least ``R ⊇ base`` with every ``s ∈ cand`` all of whose pairs in ``pair_ok``
        have a successor in ``R``: the classic attractor, each state counting its pairs
        not yet hit (:func:`~jaxprivmdp.properties._kernels.attractor`, O(transitions))."""
        pair_ok, base, cand = (_flags(x) for x in (pair_ok, base, cand))
        return attractor(self.succ_ptr, self.by_succ, self.pair, self.A, pair_ok, base, cand)

    def prob1e(self, target, through, pair_ok=None):
        """States with a scheduler reaching ``target`` with probability 1 while staying in
        ``through`` (PRISM's ``Prob1E``), using only pairs in ``pair_ok``; with the
        scheduler's attractor actions (each moves toward ``target`` and stays in the set):
        :func:`~jaxprivmdp.properties._kernels.prob1e_search`."""
        pair_ok = self.allowed if pair_ok is None else pair_ok
        pair_ok, through, target = (_flags(x) for x in (pair_ok, through, target))
        edges = (self.succ_ptr, self.by_succ, self.src, self.pair, self.succ)
        dist, lowest = prob1e_search(edges, self.A, self.allowed, pair_ok, through, target)
        return self._witnessed(dist, lowest, target)

    def end_components(self, states, pair_ok):
        """Maximal end components inside ``states`` using pairs in ``pair_ok``.

        Returns ``group`` (each state's component, as its lowest state; -1 outside any) and
        the pairs internal to a component (all successors in it). The classic refinement:
        strongly connected components, drop pairs that leave theirs, drop states left
        without a pair, repeat (:func:`~jaxprivmdp.properties._kernels.end_components_search`).
        """
        pair_ok, states = _flags(pair_ok), _flags(states)
        edges = (self.src, self.pair, self.succ)
        return end_components_search(edges, self.A, self.allowed, pair_ok, states)

    def visit_bound(self, maybe, pairs, rmax):
        """Baier et al. (CAV 2017, §4): an upper bound on the expected reward collected in
        ``maybe`` under every scheduler using ``pairs``, ``Σ_s rmax_s / d_s``; inf if none.

        ``d_s`` is a lower bound on the probability, from ``s``'s next step on, of never
        visiting a state of ``s``'s strongly connected component that was not processed
        before ``s`` (hence of never returning to ``s``): mass leaving ``maybe`` or the
        component counts 1, mass on a processed state ``t`` counts ``d_t``, the minimum over
        ``s``'s pairs. States are processed in rounds, each using the rounds before it, so
        ``1/d_s`` bounds the expected number of visits of ``s``. Needs no end component in
        ``maybe`` (otherwise some state is never processed and the bound is inf).
        """
        S, A = self.S, self.A
        eps = np.finfo(np.float64).eps
        shrink = 1 - 2 * (self.degree + 3) * eps  # the rounding of each d_s, downward
        src_pair = self.pair
        src = self.src
        use = pairs[src_pair] & maybe[src]
        inside = use & maybe[self.succ]
        comp = strong_components(S, src[inside], self.succ[inside])[1]
        same = inside & (comp[src] == comp[self.succ])
        acc = np.zeros(S * A)
        out = use & ~same
        np.add.at(acc, src_pair[out], self.prob[out])
        n_pairs = (pairs.reshape(S, A) & maybe[:, None]).sum(axis=1)
        valid = np.zeros(S, np.int64)
        np.add.at(valid, np.flatnonzero(pairs & (acc > 0)) // A, 1)
        # Edges within a component, grouped by successor, for the incremental updates.
        e_same = np.flatnonzero(same)
        order = e_same[np.argsort(self.succ[e_same], kind="stable")]
        ptr = np.searchsorted(self.succ[order], np.arange(S + 1))
        d = np.zeros(S)
        done = np.zeros(S, bool)
        pairs2 = pairs.reshape(S, A)
        new = np.flatnonzero(maybe & (valid == n_pairs))
        while new.size:
            vals = np.where(pairs2[new], acc.reshape(S, A)[new], np.inf).min(axis=1)
            # (below tiny a product's rounding is absolute: up to half the smallest number)
            d[new] = np.maximum(vals * shrink - (self.degree + 3) * _SMALLEST, 0)
            done[new] = True
            counts = ptr[new + 1] - ptr[new]
            total = int(counts.sum())
            shift = np.repeat(ptr[new] - (np.cumsum(counts) - counts), counts)
            e = order[shift + np.arange(total)]
            e = e[~done[src[e]]]
            pid = src_pair[e]
            upid = _distinct(pid)
            before = acc[upid] > 0
            np.add.at(acc, pid, self.prob[e] * d[self.succ[e]])
            np.add.at(valid, upid[~before & (acc[upid] > 0)] // A, 1)
            cand = _distinct(upid // A)
            new = cand[maybe[cand] & ~done[cand] & (valid[cand] == n_pairs[cand])]
        if not np.all(done[maybe]) or np.any(d[maybe] <= 0):
            return np.inf
        n = int(maybe.sum())
        with np.errstate(over="ignore"):
            total = float(np.sum(rmax[maybe] / d[maybe]))
        return total * (1 + 2 * (n + 2) * eps)


@compiled()
def weigh_row(pair, p, allowed, sums, out):
    """Fills ``out`` (`[E]`) with each edge's share ``p / sums[pair]`` of its pair's sum
    (``sums``, `[pairs]`, summed from 0 in edge order: ``np.bincount``'s bits) and returns
    the largest ``|sum − 1|`` over the ``allowed`` pairs (0 if none): one pass each (the
    ``bincount``, gather and division took 0.6 ms a release of crowds' 136,000 edges)."""
    sums[:] = 0.0
    for e in range(pair.size):
        sums[pair[e]] += p[e]
    for e in range(pair.size):
        out[e] = p[e] / sums[pair[e]]
    error = 0.0
    for q in range(allowed.size):
        if allowed[q]:
            error = max(error, abs(sums[q] - 1.0))
    return error
