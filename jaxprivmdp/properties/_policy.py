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
    q = np.asarray(rewards, np.float64).reshape(-1).copy()
    inside = candidate & np.repeat(maybe, A)
    e = inside[g.pair]
    pair, succ, prob = g.pair[e], g.succ[e], g.prob[e]
    with np.errstate(invalid="ignore"):
        q += np.bincount(pair, weights=prob * v[succ], minlength=S * A)
    spread = np.bincount(pair, weights=prob * err[succ], minlength=S * A)
    q = q.reshape(S, A)
    spread = spread.reshape(S, A) + 16 * np.finfo(dtype).eps * np.abs(q)
    inside = inside.reshape(S, A)
    if minimize:
        q = np.where(inside, q, np.inf)
        greedy = np.argmin(q, axis=1)
        with np.errstate(invalid="ignore"):
            near = q - spread <= np.min(q + spread, axis=1, keepdims=True)
    else:
        q = np.where(inside, q, -np.inf)
        greedy = np.argmax(q, axis=1)
        with np.errstate(invalid="ignore"):
            near = q + spread >= np.max(q - spread, axis=1, keepdims=True)
    near = (near & inside).reshape(-1)
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
