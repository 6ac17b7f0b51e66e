"""The host's compiled loops (Numba): the searches of :class:`~jaxprivmdp.properties._graph.Graph`
(the pass of :mod:`jaxprivmdp.properties._sweep_guess` and the verification of a guess are
in :mod:`jaxprivmdp.properties._sweep_kernels`).

Why Numba: each is a worklist or a sequential pass, state by state, whose next step depends on
the last (a breadth-first search's frontier, an attractor's counters, a component's values
read by the next component). NumPy can only run them a layer at a time, a few whole-array
calls per layer (a chain of wlan or brp is thousands of layers deep), and ``scipy.sparse.csgraph``'s
searches need a CSR graph built for each (some 65 µs on a 10³-state model, a pass over
every edge on a large one) and do not count (no attractor) or optimize (no pass). Compiled,
each is one pass over the edges it touches. Whole-array NumPy work that costs several
passes and temporaries of every pair is compiled too, next to its user with :func:`compiled`
(the answer's assembly in ``_precision``, the tie test and the pass's layout in
``_sweep_guess``, the quotient in ``_quotient``, the policy's greedy choice in ``_policy``).
The functions compile on their first call in a fresh environment (3.8–4.3 s for those a
DTMC's check uses, 6.5–7.0 s for an MDP's, on the project's 2-core VM: ``bench_check.py
--fresh``) into Numba's on-disk cache (``cache=True``), which later processes load (0.2 s).
Inside them, loops rather than NumPy's reductions and ``np.array_equal`` (:func:`_equal`):
each overload compiles on its own (0.05–0.3 s).
"""

from __future__ import annotations

import numba
import numpy as np


def compiled(**options):
    """``numba.njit`` (``nogil``) with Numba's on-disk cache where it can write one, without
    it elsewhere (a read-only install with no writable home: Numba refuses ``cache=True``
    there, and each process compiles again instead)."""

    def wrap(fn):
        try:
            return numba.njit(cache=True, nogil=True, **options)(fn)
        except RuntimeError:  # "cannot cache function ...: no locator available"
            return numba.njit(nogil=True, **options)(fn)

    return wrap


@compiled()
def backward_search(succ_ptr, by_succ, src, pair, pair_ok, through, target):  # fmt: skip
    """Breadth first, backward from ``target`` (`[S]` bool) along the edges of pairs in
    ``pair_ok`` (`[S*A]`) from states in ``through`` and not in ``target`` (``by_succ``:
    the edges by successor, ``succ_ptr`` each state's slice; ``src``, ``pair``: each edge's
    state and pair). Returns `[S]` each state's distance (0 on ``target``, -1 where not
    reached) and `[S]` its lowest pair with an edge one step closer (-1 where none)."""
    S = succ_ptr.size - 1
    dist = np.full(S, -1, np.int64)
    lowest = np.full(S, -1, np.int64)
    queue = np.empty(S, np.int64)
    tail = 0
    for s in range(S):
        if target[s]:
            dist[s] = 0
            queue[tail] = s
            tail += 1
    head = 0
    while head < tail:
        t = queue[head]
        head += 1
        for k in range(succ_ptr[t], succ_ptr[t + 1]):
            e = by_succ[k]
            s, p = src[e], pair[e]
            if target[s] or not through[s] or not pair_ok[p]:
                continue
            if dist[s] < 0:
                dist[s] = dist[t] + 1
                lowest[s] = p
                queue[tail] = s
                tail += 1
            elif dist[s] == dist[t] + 1 and p < lowest[s]:
                lowest[s] = p
    return dist, lowest


@compiled()
def attractor(succ_ptr, by_succ, pair, A, pair_ok, base, cand):  # fmt: skip
    """`[S]` bool: the least ``R ⊇ base`` with every state of ``cand`` all of whose pairs
    in ``pair_ok`` (`[S*A]`) have an edge into ``R`` (``pair``: each edge's pair): each
    state counts its pairs not yet hit; a state added to ``R`` hits the pairs of the edges
    into it, and a state of ``cand`` whose count reaches 0 is added."""
    S = succ_ptr.size - 1
    left = np.zeros(S, np.int64)
    for p in range(pair_ok.size):
        if pair_ok[p]:
            left[p // A] += 1
    reached = base.copy()
    queue = np.empty(S, np.int64)
    tail = 0
    for s in range(S):
        if not reached[s] and cand[s] and left[s] == 0:
            reached[s] = True
        if reached[s]:
            queue[tail] = s
            tail += 1
    hit = np.zeros(pair_ok.size, np.bool_)
    head = 0
    while head < tail:
        t = queue[head]
        head += 1
        for k in range(succ_ptr[t], succ_ptr[t + 1]):
            p = pair[by_succ[k]]
            if not pair_ok[p] or hit[p]:
                continue
            hit[p] = True
            s = p // A
            left[s] -= 1
            if left[s] == 0 and cand[s] and not reached[s]:
                reached[s] = True
                queue[tail] = s
                tail += 1
    return reached


@compiled()
def strong_components(n, src, dst):
    """``(count, label, finish)``: the strongly connected components of the graph on ``n``
    nodes with the edges ``src[e] -> dst[e]``, by Tarjan's algorithm (iterative), each
    labelled by the order in which it was completed: a component is completed after every
    one it reaches, so every edge goes to the same or a lower label (successors first);
    ``finish``: each node's place in the depth-first search's postorder (a node finishes
    after every successor it reached first, so only the edges back to the search's path
    go to a later place: within a component, the order that lets Gauss-Seidel carry a
    chain's values along it in one sweep). One pass
    over the edges, where ``scipy.sparse.csgraph`` needs a CSR matrix built and validated
    first (some 0.1 ms a call on a 10³-state model; a check makes several)."""
    ptr = np.zeros(n + 1, np.int64)
    for e in range(src.size):
        ptr[src[e] + 1] += 1
    for v in range(n):
        ptr[v + 1] += ptr[v]
    adj = np.empty(src.size, np.int64)
    fill = ptr[:-1].copy()
    for e in range(src.size):
        adj[fill[src[e]]] = dst[e]
        fill[src[e]] += 1
    index = np.full(n, -1, np.int64)
    low = np.zeros(n, np.int64)
    label = np.full(n, -1, np.int64)
    stack = np.empty(n, np.int64)  # Tarjan's: visited, no component yet
    call = np.empty(n, np.int64)  # the depth-first path, and each node's next edge
    nxt = np.empty(n, np.int64)
    finish = np.empty(n, np.int64)
    top, depth, visited, count, done = 0, 0, 0, 0, 0
    for root in range(n):
        if index[root] >= 0:
            continue
        index[root] = low[root] = visited
        visited += 1
        stack[top], call[0], nxt[0] = root, root, ptr[root]
        top, depth = top + 1, 1
        while depth > 0:
            v = call[depth - 1]
            if nxt[depth - 1] < ptr[v + 1]:
                w = adj[nxt[depth - 1]]
                nxt[depth - 1] += 1
                if index[w] < 0:
                    index[w] = low[w] = visited
                    visited += 1
                    stack[top], call[depth], nxt[depth] = w, w, ptr[w]
                    top, depth = top + 1, depth + 1
                elif label[w] < 0:  # on the stack: in v's component or an open one
                    low[v] = min(low[v], index[w])
                continue
            depth -= 1
            finish[v], done = done, done + 1
            if low[v] == index[v]:  # v roots a component: pop it
                while True:
                    top -= 1
                    label[stack[top]] = count
                    if stack[top] == v:
                        break
                count += 1
            if depth > 0:
                u = call[depth - 1]
                low[u] = min(low[u], low[v])
    return count, label, finish


@compiled()
def prob1e_search(graph, A, allowed, pair_ok, through, target):
    """:meth:`~jaxprivmdp.properties._graph.Graph.prob1e`'s nested fixed point in one call
    (``graph`` = ``(succ_ptr, by_succ, src, pair, succ)``): ``U`` = the states that reach
    ``target`` along ``pair_ok`` through ``through``; then, until ``U`` stays, the states
    that reach it along the pairs of ``pair_ok`` that stay in ``U``, less those forced out
    of it (every pair may leave: :func:`attractor`). Returns :func:`backward_search`'s
    ``(dist, lowest)`` on the fixed point, whose reached states and lowest pairs are the
    answer and its attractor's actions. (Some ten Python-level steps a round before, each a
    pass over the edges or the pairs; a 10³-state model's checks were 0.2 ms in them.)"""
    succ_ptr, by_succ, src, pair, succ = graph
    dist, lowest = backward_search(succ_ptr, by_succ, src, pair, pair_ok, through, target)
    u = dist >= 0
    while True:
        stay = staying(pair, succ, allowed, pair_ok, u)
        dist, lowest = backward_search(succ_ptr, by_succ, src, pair, stay, through & u, target)
        v = dist >= 0
        if _equal(u, v):
            return dist, lowest
        # A state all of whose pairs may lead out of ``v`` reaches ``target`` with
        # probability < 1 too: dropping them all at once keeps ``v`` above the greatest
        # fixed point and saves a round per layer of them.
        u = v & ~attractor(succ_ptr, by_succ, pair, A, pair_ok, ~v, v & ~target)


@compiled()
def staying(pair, succ, allowed, pair_ok, inside):
    """`[S*A]` the pairs of ``pair_ok`` (and ``allowed``) none of whose edges leaves
    ``inside``."""
    out = pair_ok & allowed
    for e in range(pair.size):
        if not inside[succ[e]]:
            out[pair[e]] = False
    return out


@compiled()
def end_components_search(graph, A, allowed, pair_ok, states):
    """:meth:`~jaxprivmdp.properties._graph.Graph.end_components`'s refinement in one call
    (``graph`` = ``(src, pair, succ)``): the pairs of ``pair_ok`` of ``states`` that stay
    in them; then, until nothing changes, the strongly connected components of their edges,
    the pairs that leave their component dropped, the states left without a pair dropped
    and the pairs into them. Returns ``(group, pairs)``: each state's end component as its
    lowest state (-1 outside any), and the pairs internal to one."""
    src, pair, succ = graph
    S = states.size
    cur = states.copy()
    pairs = staying(pair, succ, allowed, pair_ok, cur)
    for p in range(pairs.size):
        pairs[p] = pairs[p] and cur[p // A]
    while True:
        kept = np.empty(pair.size, np.int64)
        m = 0
        for e in range(pair.size):
            if pairs[pair[e]]:
                kept[m] = e
                m += 1
        kept = kept[:m]
        comp = strong_components(S, src[kept], succ[kept])[1]
        new_pairs = pairs.copy()
        for e in kept:
            if comp[src[e]] != comp[succ[e]]:
                new_pairs[pair[e]] = False
        new_cur = np.zeros(S, np.bool_)
        for p in range(new_pairs.size):
            if new_pairs[p] and cur[p // A]:
                new_cur[p // A] = True
        stay = staying(pair, succ, allowed, new_pairs, new_cur)
        for p in range(new_pairs.size):
            new_pairs[p] = stay[p] and new_cur[p // A]
        if _equal(new_cur, cur) and _equal(new_pairs, pairs):
            break
        cur, pairs = new_cur, new_pairs
    group = np.full(S, -1, np.int64)
    lowest = np.full(S, S, np.int64)
    for s in range(S):
        if cur[s]:
            lowest[comp[s]] = min(lowest[comp[s]], s)
    for s in range(S):
        if cur[s]:
            group[s] = lowest[comp[s]]
    return group, pairs


@compiled()
def _equal(a, b):
    """Whether the masks ``a`` and ``b`` (of one size) are equal: a loop, as
    ``np.array_equal`` compiles 0.1 s longer in a fresh environment."""
    for i in range(a.size):
        if a[i] != b[i]:
            return False
    return True
