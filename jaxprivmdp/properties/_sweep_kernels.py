"""The compiled pass of :mod:`jaxprivmdp.properties._sweep_guess` (Gauss-Seidel sweeps over
the components in order, policy iteration with dense solves on a small slow one) and the
verification of a guess (:func:`verify_pass`): sequential loops, state by state, compiled
with :func:`~jaxprivmdp.properties._kernels.compiled` (why Numba: see there).
"""

from __future__ import annotations

import numpy as np

from ._kernels import compiled

# Gauss-Seidel sweeps of one component stop when no value moved by more than this (relative):
# near the sums' rounding (moves of a few units in the last place go on, not shrinking).
SETTLED = 64 * float(np.finfo(np.float64).eps)
# The pass for ``y`` (the weights of :func:`~jaxprivmdp.properties._guess._verified`'s
# candidates ``x ± κ y``) stops at this: ``x ± κ y`` verifies where ``y − P y`` stays within
# a fraction of ``x`` (its slack is ``κ x``), and sweeps from 0 keep ``y − P y <= x``
# (they rise to the fixed point), so ``y`` needs no more (half the sweeps of zeroconf's
# retry chain). A ``y`` that is off only fails its verification.
WEIGHTS_SETTLED = 1e-6
# Moves below NOISE (relative) that grow from one sweep to the next are the sums' rounding
# (a 400-state chain's reach 5e-14 and wobble): settled too. (Nothing here is trusted: a
# candidate that is off fails its verification.)
NOISE = 4096 * float(np.finfo(np.float64).eps)
# A component of at most DENSE classes whose sweeps would be slow is solved by policy
# iteration with dense solves (at most DENSE³/3 = 0.7 million operations a round; a few
# entries a row fill far less), at most DENSE_ROUNDS rounds.
DENSE = 128
DENSE_ROUNDS = 32
# Policy iteration on such a component costs about DENSE_WORK · m² edge visits (measured on
# consensus: 7 rounds of 107 classes, 25 µs each): it runs first where sweeps would cost more.
DENSE_WORK = 1


# The pass's arguments: ``order`` = ``(comp_ptr, members, cls_ptr, cls_pairs, pair_ptr,
# e_col)``, the quotient's pattern (the components, successors first, as slices of
# ``members``; each class's pairs as a slice of ``cls_pairs``; each pair's edges as a slice
# of ``e_col``), and ``problem`` = ``(ok, e_prob, inflow)``: the pairs that count (`[S*A]`),
# the edges' probabilities, each pair's part of the backup that is known (`[S*A]`).
# (error_model="numpy": a division by zero gives inf or nan, which the pass tests, rather
# than raising from inside the kernel.)


# What :func:`sweep_pass` returns: every component done; given up (``x`` partial); or a
# component of at most DENSE classes whose sweeps are slow, for :func:`dense_component`.
DONE, GAVE_UP, DENSE_WANTED = 0, 1, 2


@compiled(error_model="numpy")
def sweep_pass(order, problem, sign, limits, x, at):
    """The pass of :class:`~jaxprivmdp.properties._sweep_guess.Ordered`: fills ``x``
    (`[n]`) component by component, successors first, with each class's optimum (``sign``)
    over its pairs in ``ok`` of ``inflow + Σ e_prob x[e_col]``, each pair's self-loop in
    closed form (:func:`_best`): a single class at once, a larger component by Gauss-Seidel
    sweeps until no value moves by more than ``settled`` (relative), within ``budget`` edge
    visits in all (``limits = (budget, settled)``). ``at`` = ``[component, work, tried]``: where
    the pass starts, the work spent so far, and whether that component's dense solve was
    tried (and failed: its sweeps go on). Returns ``DONE``, ``GAVE_UP`` (``x`` then
    partial), or ``DENSE_WANTED`` with ``at`` at a component of at most ``DENSE`` classes
    whose sweeps would cost more than ``DENSE_WORK · m²``: the caller solves it by
    :func:`dense_component` and starts the pass again (that kernel, some 1.5 s to compile,
    is compiled only for a model that needs it)."""
    comp_ptr, members = order[0], order[1]
    budget, settled = limits
    work = at[1]
    for c in range(at[0], comp_ptr.size - 1):
        lo, hi = comp_ptr[c], comp_ptr[c + 1]
        single = hi - lo == 1
        last, sweeps, start, tried = np.inf, 0, work, c == at[0] and at[2] == 1
        while True:
            moved = 0.0  # the largest move of this sweep relative to its state's value
            shift, top = 0.0, 0.0  # its largest move and value (the rate's measure)
            for i in range(lo, hi):
                k = members[i]
                best, pick, visits, _ = _best(k, order, problem, x, sign, True, -1)
                work += visits
                if pick < 0 or not np.isfinite(best):
                    return GAVE_UP  # no pair, or one that never leaves: no closed form
                if best != x[k]:
                    moved = max(moved, abs(best - x[k]) / abs(best))
                    shift = max(shift, abs(best - x[k]))
                top = max(top, abs(best))
                x[k] = best
            sweeps += 1
            if single or moved <= settled:
                break
            # Geometric convergence at the last sweep's rate (of the largest move, relative
            # to the largest value: states still at 0 move by 100% while the values spread):
            # the work the sweeps still need, or inf.
            rate = shift / top / last
            last = shift / top
            if rate >= 1 and moved <= NOISE:
                break  # moves near the sums' rounding that no longer shrink: settled
            if sweeps < 3 and work <= budget:
                continue
            need = np.inf
            if rate < 1:
                need = np.log(settled / moved) / np.log(rate) * ((work - start) / sweeps)
            # A component of at most DENSE classes goes to policy iteration once its sweeps,
            # spent and still needed, would cost more than its dense rounds (some m² each),
            # or the budget runs out; where that fails the sweeps go on, within the budget.
            m = hi - lo
            slow = work - start + need > DENSE_WORK * m * m
            if not tried and m <= DENSE and (slow or work > budget):
                at[0], at[1], at[2] = c, work, 0
                return DENSE_WANTED
            if work > budget or need > budget - work:
                return GAVE_UP
    return DONE


@compiled(error_model="numpy", inline="always")
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
def candidates(x, y, tol):
    """``(fit, lower, upper)``: the candidates ``x ∓ κ y`` (`[n]`) of a guess, ``κ = tol / 2
    / max(y / x)``, and whether ``x``, ``y`` are fit to build them (``x > 0``, ``y >= x``
    up to 1e-9): one form for one model's guess and a batch's releases (the same bits).
    (Loops, not NumPy's reductions: their compilation cost 0.5 s of a fresh first call.)"""
    top = 0.0
    for i in range(x.size):
        if not (x[i] > 0 and y[i] >= x[i] * (1 - 1e-9)):
            return False, x, x
        top = max(top, y[i] / x[i])
    kappa = tol / 2 / top
    lower, upper = np.empty(x.size), np.empty(x.size)
    for i in range(x.size):
        lower[i], upper[i] = x[i] - kappa * y[i], x[i] + kappa * y[i]
    return True, lower, upper


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
def dense_component(classes, order, problem, sign, x, local):
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
    """Solves ``mat v = b`` in place (``b`` becomes ``v``) by Gaussian elimination without
    pivoting, each row's work bounded by the last nonzero column of the rows it takes (a
    policy's ``I − P`` inside a component has a few entries a row: some 280 of 107²);
    False where a pivot is below 1e-13 or a value is not finite. ``I − P`` of a proper
    policy is a nonsingular M-matrix, weakly diagonally dominant by rows: its pivots
    without pivoting are positive and the elimination is stable (growth factor at most 2);
    an improper policy's is singular, a pivot of 0 up to rounding."""
    m = b.size
    last = np.empty(m, np.int64)  # each row's last nonzero column (grows as it fills)
    for i in range(m):
        last[i] = i
        for k in range(m - 1, i, -1):
            if mat[i, k] != 0.0:
                last[i] = k
                break
    for c in range(m):
        pivot = mat[c, c]
        if not pivot >= 1e-13:
            return False
        for i in range(c + 1, m):
            f = mat[i, c]
            if f != 0.0:
                f /= pivot
                for k in range(c + 1, last[c] + 1):
                    mat[i, k] -= f * mat[c, k]
                b[i] -= f * b[c]
                last[i] = max(last[i], last[c])
    finite = True
    for c in range(m - 1, -1, -1):
        acc = b[c]
        for k in range(c + 1, last[c] + 1):
            acc -= mat[c, k] * b[k]
        b[c] = acc / mat[c, c]
        finite &= np.isfinite(b[c])
    return finite
