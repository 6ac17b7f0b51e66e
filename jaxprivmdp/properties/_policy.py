"""The policy :func:`jaxprivmdp.check` reports for an unbounded property, on the host.

Greedy choices from approximate values can loop forever inside an end component (a pair that
loops back looks as good as the exit it should lead to); :func:`extract_policy` keeps the
greedy choice where it leaves the undecided states with positive probability and routes the
states it would trap, along pairs that may be optimal given the error bounds, toward those
that leave (an attractor, as PRISM and Storm fix their schedulers). On the precomputed
states the policy is the precomputation's (:mod:`jaxprivmdp.properties._unbounded`):
the ``Prob1E`` attractor (reach with probability 1), a pair that stays where the
probability is 0 (min), a pair toward never reaching the target (``Rmax = inf``).
"""

from __future__ import annotations

import numpy as np

from ._graph import Graph
from ._kernels import compiled


def extract_policy(g: Graph, rewards, values, error, candidate, maybe, minimize, dtype):
    """An optimizing policy on ``maybe`` from the final values, that leaves ``maybe``.

    Greedy choices alone can be wrong: inside an end component (collapsed or not) a pair that
    loops back has, up to the precision of the values, the same value as the exit it should
    lead to, and choosing it forever never reaches the target. So the greedy choice is kept
    where it leaves ``maybe`` with positive probability, and the states it would trap take,
    by an attractor, a pair that may be optimal given the error bounds (``q(s, a) = r + Σ p
    v`` is within ``e(s, a) = Σ p error`` of its exact value: a pair is kept unless its
    interval lies wholly on the wrong side of another pair's) with a successor closer to
    the states that leave. Under the result ``maybe`` is left with probability 1 (a proper
    policy), and with exact values its value is optimal.
    """
    if g.deterministic:  # one allowed action per state: nothing to choose
        return g.first_allowed.copy()
    S, A = g.S, g.A
    v = np.asarray(values, np.float64)
    err = np.where(np.isfinite(error), np.asarray(error, np.float64), 0)  # inf: greedy
    rewards = np.ascontiguousarray(rewards, np.float64).reshape(-1)
    inside = candidate & np.repeat(maybe, A)
    greedy = np.empty(S, np.int64)
    near = np.empty(S * A, bool)
    slack = 16 * float(np.finfo(dtype).eps)
    edges = (g.pair, g.succ, g.prob)
    _greedy_and_near(edges, inside, rewards, (v, err), (A, bool(minimize), slack), greedy, near)
    # Keep the greedy choice wherever it leaves `maybe` with positive probability; the
    # states it traps move along possibly-optimal pairs toward those that leave.
    chosen = np.zeros((S, A), bool)
    chosen[np.arange(S), greedy] = True
    leaves = g.reach(~maybe, maybe, chosen.reshape(-1))
    if np.all(leaves | ~maybe):  # the greedy choices leave `maybe` from every state
        return greedy.astype(np.int32)
    reached, witness = g.reach_exists(leaves, maybe, near)
    fix = reached & ~leaves
    return np.where(fix, witness, greedy).astype(np.int32)


@compiled(error_model="numpy")
def _greedy_and_near(edges, inside, rewards, values, options, greedy, near):
    """Fills ``greedy`` (`[S]`) and ``near`` (`[S*A]`) as NumPy's whole-array form computes
    them, bit for bit, in one pass over the edges (sorted by pair) instead of two ``[S, A]``
    reductions along a short axis (2 ms each on wlan's 61,000 states): over the pairs
    ``inside``, ``q = r + Σ p v`` (summed from 0 in edge order, as ``np.bincount`` sums)
    and ``spread = Σ p err + slack |q|``; ``greedy``: each state's first optimal pair
    (``np.argmin``/``np.argmax`` of ``q``, ±inf outside; a NaN first, as they pick it);
    ``near``: the pairs ``inside`` whose interval ``q ∓ spread`` reaches the best other
    side (NaN propagated through the optimum, as ``np.min``/``np.max`` do)."""
    pair, succ, prob = edges
    v, err = values
    A, minimize, slack = options
    S = greedy.size
    q = np.empty(S * A)
    spread = np.empty(S * A)
    e, E = 0, pair.size
    for p in range(S * A):
        acc, acc_err = 0.0, 0.0
        while e < E and pair[e] == p:
            if inside[p]:
                acc += prob[e] * v[succ[e]]
                acc_err += prob[e] * err[succ[e]]
            e += 1
        total = rewards[p] + acc
        spread[p] = acc_err + slack * abs(total)
        q[p] = total if inside[p] else (np.inf if minimize else -np.inf)
    for s in range(S):
        base = s * A
        best, pick, nan = q[base], 0, np.isnan(q[base])
        bound = q[base] + spread[base] if minimize else q[base] - spread[base]
        for a in range(1, A):
            x = q[base + a]
            if not nan:
                if np.isnan(x):
                    pick, nan = a, True
                elif (x < best) if minimize else (x > best):
                    best, pick = x, a
            edge = x + spread[base + a] if minimize else x - spread[base + a]
            if np.isnan(edge) or np.isnan(bound):
                bound = np.nan
            elif (edge < bound) if minimize else (edge > bound):
                bound = edge
        greedy[s] = pick
        for a in range(A):
            p = base + a
            if minimize:
                near[p] = inside[p] and q[p] - spread[p] <= bound
            else:
                near[p] = inside[p] and q[p] + spread[p] >= bound
