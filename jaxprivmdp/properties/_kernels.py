"""The host's compiled loops (Numba): the searches of :class:`~jaxprivmdp.properties._graph.Graph`,
the pass of :mod:`jaxprivmdp.properties._sweep_guess` and the verification of a guess.

Why Numba: each is a worklist or a sequential pass, state by state, whose next step depends on
the last (a breadth-first search's frontier, an attractor's counters, a component's values
read by the next component). NumPy can only run them a layer at a time, a few whole-array
calls per layer (a chain of wlan or brp is thousands of layers deep), and ``scipy.sparse.csgraph``'s
searches need a CSR graph built for each (some 65 µs on a 10³-state model, a pass over
every edge on a large one) and do not count (no attractor) or optimize (no pass). Compiled,
each is one pass over the edges it touches. Whole-array NumPy work that costs several
passes and temporaries of every pair is compiled too, next to its user with :func:`compiled`
(the answer's assembly in ``_precision``, the tie test in ``_sweep_guess``). The functions
compile on their first call in a fresh environment (some 4.5 s for all of them here) into
Numba's on-disk cache (``cache=True``), which later processes load.
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


# Gauss-Seidel sweeps of one component stop when no value moved by more than this (relative):
# near the sums' rounding (moves of a few units in the last place go on, not shrinking).
SETTLED = 64 * float(np.finfo(np.float64).eps)
# A component of at most DENSE classes whose sweeps would not settle is solved by policy
# iteration with dense solves (DENSE³/3 = 0.7 million operations a round), at most
# DENSE_ROUNDS rounds.
DENSE = 128
DENSE_ROUNDS = 32


# The pass's arguments: ``order`` = ``(comp_ptr, members, cls_ptr, cls_pairs, pair_ptr,
# e_col)``, the quotient's pattern (the components, successors first, as slices of
# ``members``; each class's pairs as a slice of ``cls_pairs``; each pair's edges as a slice
# of ``e_col``), and ``problem`` = ``(ok, e_prob, inflow)``: the pairs that count (`[S*A]`),
# the edges' probabilities, each pair's part of the backup that is known (`[S*A]`).
# (error_model="numpy": a division by zero gives inf or nan, which the pass tests, rather
# than raising from inside the kernel.)


@compiled(error_model="numpy")
def sweep_pass(order, problem, sign, budget, x):
    """The pass of :class:`~jaxprivmdp.properties._sweep_guess.Ordered`: fills ``x``
    (`[n]`) component by component, successors first, with each class's optimum (``sign``)
    over its pairs in ``ok`` of ``inflow + Σ e_prob x[e_col]``, each pair's self-loop in
    closed form (:func:`_best`): a single class at once, a larger component by Gauss-Seidel
    sweeps within ``budget`` edge visits in all, and one of at most ``DENSE`` classes whose
    sweeps would not settle by policy iteration with dense solves
    (:func:`_dense_component`). Returns False where it gives up (``x`` then partial)."""
    comp_ptr, members = order[0], order[1]
    work = 0
    local = np.full(x.size, -1, np.int64)
    for c in range(comp_ptr.size - 1):
        lo, hi = comp_ptr[c], comp_ptr[c + 1]
        single = hi - lo == 1
        last, sweeps, start = np.inf, 0, work
        while True:
            moved = 0.0  # the largest move of this sweep relative to its state's value
            shift, top = 0.0, 0.0  # its largest move and value (the rate's measure)
            for i in range(lo, hi):
                k = members[i]
                best, pick, visits, _ = _best(k, order, problem, x, sign, True, -1)
                work += visits
                if pick < 0 or not np.isfinite(best):
                    return False  # no pair, or one that never leaves: no closed form
                if best != x[k]:
                    moved = max(moved, abs(best - x[k]) / abs(best))
                    shift = max(shift, abs(best - x[k]))
                top = max(top, abs(best))
                x[k] = best
            sweeps += 1
            if single or moved <= SETTLED:
                break
            # Geometric convergence at the last sweep's rate (of the largest move, relative
            # to the largest value: states still at 0 move by 100% while the values spread):
            # give up early where the sweeps it needs would exceed what is left of the budget.
            rate = shift / top / last
            last = shift / top
            if work > budget or (
                sweeps >= 3
                and (rate >= 1 or np.log(SETTLED / moved) / np.log(rate)
                     * ((work - start) / sweeps) > budget - work)
            ):  # fmt: skip
                dense = hi - lo <= DENSE
                if not (dense and _dense_component(members[lo:hi], order, problem, sign, x, local)):
                    return False
                break
    return True


@compiled(error_model="numpy")
def _best(k, order, problem, x, sign, closed, current):
    """``(value, pair, visits, now)``: the optimum (``sign``) over class ``k``'s pairs in
    ``ok`` of their backups ``inflow + Σ e_prob x[e_col]`` (with ``closed``, each pair's
    fixed point ``(inflow + Σ_{t ≠ k} e_prob x_t) / (1 − p_kk)``), its first optimal pair
    (-1 where none is in ``ok``; -2 where, with ``closed``, a pair never leaves ``k``), the
    edges visited (plus one a pair), and the backup of the pair ``current`` (-inf if none)."""
    cls_ptr, cls_pairs, pair_ptr, e_col = order[2], order[3], order[4], order[5]
    ok, e_prob, inflow = problem
    best, pick, visits, now = 0.0, -1, 0, -np.inf
    for j in range(cls_ptr[k], cls_ptr[k + 1]):
        p = cls_pairs[j]
        if not ok[p]:
            continue
        acc, stay = inflow[p], 0.0
        for e in range(pair_ptr[p], pair_ptr[p + 1]):
            if closed and e_col[e] == k:
                stay += e_prob[e]
            else:
                acc += e_prob[e] * x[e_col[e]]
        visits += pair_ptr[p + 1] - pair_ptr[p] + 1
        if stay >= 1.0:
            return best, -2, visits, now
        value = acc / (1.0 - stay)
        if p == current:
            now = value
        if pick < 0 or sign * value > sign * best:
            best, pick = value, p
    return best, pick, visits, now


@compiled(error_model="numpy")
def verify_pass(order, problem, sign, margin, floor, lower, upper):
    """``(lower_ok, upper_ok)``: whether every class's backup (the optimum (``sign``) over
    its pairs in ``ok`` of ``inflow + Σ e_prob v``, summed in order, the first optimal pair
    kept as :func:`_best` keeps it; ``−sign · inf`` for a class without such a pair) widened
    by ``margin`` (relative) and ``floor`` (absolute) stays within the candidate: ``B(u) (1
    + margin) + floor <= u`` for ``upper``, ``B(l) (1 − margin) − floor >= l >= 0`` for
    ``lower``. A NaN candidate fails (the model's numbers are finite). Both candidates in
    one pass over the edges."""
    cls_ptr, cls_pairs, pair_ptr, e_col = order[2], order[3], order[4], order[5]
    ok, e_prob, inflow = problem
    lower_ok, upper_ok = True, True
    for k in range(upper.size):
        low, up, seen = -sign * np.inf, -sign * np.inf, False
        for j in range(cls_ptr[k], cls_ptr[k + 1]):
            p = cls_pairs[j]
            if not ok[p]:
                continue
            low_acc, up_acc = inflow[p], inflow[p]
            for e in range(pair_ptr[p], pair_ptr[p + 1]):
                low_acc += e_prob[e] * lower[e_col[e]]
                up_acc += e_prob[e] * upper[e_col[e]]
            if not seen or sign * low_acc > sign * low:
                low = low_acc
            if not seen or sign * up_acc > sign * up:
                up = up_acc
            seen = True
        upper_ok = upper_ok and up * (1.0 + margin) + floor <= upper[k]
        lower_ok = lower_ok and lower[k] >= 0.0 and low * (1.0 - margin) - floor >= lower[k]
        if not (lower_ok or upper_ok):
            break
    return lower_ok, upper_ok


@compiled(error_model="numpy")
def _dense_component(classes, order, problem, sign, x, local):
    """Policy iteration on one component (``classes``; its successors' values in ``x``)
    from the greedy policy of the current ``x``, each policy's values by a dense solve
    (:func:`_solved`), written to ``x``; False where a policy's system is singular (an
    improper policy), a value is negative or not finite, or the rounds run out (``x`` then
    partial). ``local``: `[n]` all -1 (restored)."""
    pair_ptr, e_col = order[4], order[5]
    e_prob, inflow = problem[1], problem[2]
    m = classes.size
    for i in range(m):
        local[classes[i]] = i
    choice = np.full(m, -1, np.int64)
    settled = False
    for _ in range(DENSE_ROUNDS):
        switched, missing = False, False  # a class switches where a pair beats its choice
        for i in range(m):
            k = classes[i]
            best, pick, _, now = _best(k, order, problem, x, sign, False, choice[i])
            if pick < 0:
                missing = True
            elif choice[i] < 0 or sign * best - sign * now > 1e-12 * abs(now):
                choice[i], switched = pick, True
        if missing or not switched:
            settled = not missing
            break
        mat = np.zeros((m, m))
        b = np.empty(m)
        for i in range(m):
            p = choice[i]
            b[i] = inflow[p]
            mat[i, i] = 1.0
            for e in range(pair_ptr[p], pair_ptr[p + 1]):
                j = local[e_col[e]]
                if j >= 0:
                    mat[i, j] -= e_prob[e]
                else:
                    b[i] += e_prob[e] * x[e_col[e]]
        if not _solved(mat, b):
            break
        top = 0.0
        for i in range(m):
            top = max(top, abs(b[i]))
        low = 0.0
        for i in range(m):
            low = min(low, b[i])
        if low < -1e-12 * top:  # a clearly negative value: a solve gone wrong
            break
        for i in range(m):
            x[classes[i]] = max(b[i], 0.0)
    for i in range(m):
        local[classes[i]] = -1
    return settled


@compiled(error_model="numpy")
def _solved(mat, b) -> bool:
    """Solves ``mat v = b`` in place (``b`` becomes ``v``) by Gaussian elimination with
    partial pivoting; False where a pivot is below 1e-13 (``I − P`` of a proper policy is a
    nonsingular M-matrix; an improper one is singular) or a value is not finite."""
    m = b.size
    for c in range(m):
        r = c
        for i in range(c + 1, m):
            if abs(mat[i, c]) > abs(mat[r, c]):
                r = i
        if abs(mat[r, c]) < 1e-13:
            return False
        if r != c:
            for k in range(c, m):
                mat[c, k], mat[r, k] = mat[r, k], mat[c, k]
            b[c], b[r] = b[r], b[c]
        for i in range(c + 1, m):
            f = mat[i, c] / mat[c, c]
            if f != 0.0:
                for k in range(c, m):
                    mat[i, k] -= f * mat[c, k]
                b[i] -= f * b[c]
    finite = True
    for c in range(m - 1, -1, -1):
        acc = b[c]
        for k in range(c + 1, m):
            acc -= mat[c, k] * b[k]
        b[c] = acc / mat[c, c]
        finite &= np.isfinite(b[c])
    return finite


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
    """``(count, label)``: the strongly connected components of the graph on ``n`` nodes
    with the edges ``src[e] -> dst[e]``, by Tarjan's algorithm (iterative), each labelled
    by the order in which it was completed: a component is completed after every one it
    reaches, so every edge goes to the same or a lower label (successors first). One pass
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
    top, depth, visited, count = 0, 0, 0, 0
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
    return count, label
