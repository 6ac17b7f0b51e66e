"""The releases of a batch, each settled by one compiled call where it can be.

A batch of releases (:mod:`jaxprivmdp.properties._batch`) shares its support, so it shares
the quotient's structure and the compiled pass's order (:mod:`jaxprivmdp.properties._guess`);
only the probabilities differ. For one model, :func:`~jaxprivmdp.properties._guess.guess_bounds`
takes some twenty host steps between its compiled passes (the quotient's weights, ``x``, the
ties, ``y``, ``κ``, the verification, the bounds on the states), which cost more than the
passes themselves on a batch of 10⁴-state releases (crowds: 2.7 of 4 ms a release). Here
:func:`_release_pass` runs those steps for every release in one compiled call, with the same
kernels in the same order (the same bits), and a release it cannot settle (the pass gives up
or wants a dense solve, or a candidate fails its verification) goes the way of one model.
Nothing here is trusted that one model's check does not trust: the bounds are those
:func:`~jaxprivmdp.properties._sweep_kernels.verify_pass` verified.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from . import _guess as guess
from ._graph import weigh_row
from ._guess import guess_usable
from ._iteration import rounding_margin, widened
from ._kernels import compiled
from ._precision import gap_floor, underflow
from ._quotient import _Quotient, pair_inflow
from ._sweep_guess import ties_pass
from ._sweep_kernels import (
    DONE,
    SETTLED,
    WEIGHTS_SETTLED,
    candidates,
    sweep_pass,
    verify_pass,
)
from ._unbounded import host_floor


def _threads(setting: str | None) -> int:
    """The threads a large batch is split among: ``JAXPRIVMDP_THREADS`` (``setting``), a
    positive integer, else one a core this process may use."""
    if setting is None or setting == "":
        cores = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
        return len(cores) if cores else os.cpu_count() or 1
    if not setting.strip().isdigit() or int(setting) < 1:
        raise ValueError(f"JAXPRIVMDP_THREADS must be a positive integer, got {setting!r}")
    return int(setting)


# The releases are split among this many threads: each release's pass is independent of the
# others', and the kernel holds no lock.
THREADS = _threads(os.environ.get("JAXPRIVMDP_THREADS"))
# ... where a batch has at least this many edges in all (32 releases of zeroconf's 2,930: a
# thread's start and the slices' meeting cost about what they save).
THREADED_WORK = 1 << 20


def swept_releases(g, batch, pre, minimize, tol, bounds) -> np.ndarray:
    """`[n]` which releases of ``batch`` (a :class:`~jaxprivmdp.properties._batch.Batch`
    of one support, ``g`` its first model's graph, ``pre`` the shared precomputation) the
    compiled pass settled (verified bounds that meet ``tol``), their bounds written to
    ``bounds`` (``(lower, upper)``, `[n, S]`, holding the starting bounds: each tightened as
    :func:`~jaxprivmdp.properties._unbounded.tightened` tightens it, the others left as
    they were). The releases go in ``THREADS`` slices, one a thread."""
    n = len(batch.models)
    quo = _Quotient(g, pre, {})
    if not (guess.SWEEP and guess_usable(quo)):  # (tests turn the pass off)
        return np.zeros(n, bool)
    structure = (*quo.weighing, quo.pairs, quo.pair_class, quo.col)
    order = quo.ordered
    sign = -1.0 if minimize else 1.0
    floor = underflow(g.degree, np.float64)
    rounding = rounding_margin(batch.models[0])  # (one dtype and row length: the batch's)
    gaps = gap_floor(np.float64)
    limits = (sign, float(tol), int(order.budget), floor, rounding, host_floor(g), gaps)
    ok = np.zeros(n, bool)
    graph = (g.pair, g.at, g.allowed)
    lower, upper = bounds

    def run(part: slice) -> None:
        rows = (lower[part], upper[part])
        _release_pass(order.order, structure, graph, batch.entries[part], limits, rows, ok[part])

    in_threads(run, n, n * g.pair.size)
    return ok


def in_threads(run, n: int, work: int) -> None:
    """``run(part)`` for ``THREADS`` consecutive slices ``part`` of ``range(n)``, each in its
    own thread (the compiled kernels release the GIL: their work runs at once), where the
    ``work`` (edges in all) is at least ``THREADED_WORK``; else ``run(slice(0, n))``."""
    threads = min(THREADS, n) if work >= THREADED_WORK else 1
    parts = [slice(i * n // threads, (i + 1) * n // threads) for i in range(threads)]
    if len(parts) <= 1:
        return run(slice(0, n))
    with ThreadPoolExecutor(len(parts)) as pool:
        list(pool.map(run, parts))  # (list: a thread's error is raised here)


@compiled(error_model="numpy")
def _release_pass(order, structure, graph, entries, limits, bounds, ok):
    """For each release ``i`` (a row of ``entries``, read at the graph's edges ``at``): its
    normalized edge probabilities and host margin (:func:`~jaxprivmdp.properties._graph.weigh_row`,
    :func:`~jaxprivmdp.properties._unbounded.margins`), the quotient's weights, the pass's
    ``x``, the ties, ``y``, ``κ`` and the verification of ``x ∓ κ y``, as
    :func:`~jaxprivmdp.properties._guess.guess_bounds` and its helpers compute them for one
    model; where both sides verify, the bounds tightened on the unfixed states (``bounds =
    (lower, upper)``; each fixed state's bounds are its value already), and ``ok[i]`` where
    they also meet ``tol`` (:func:`~jaxprivmdp.properties._unbounded.meets_tol`'s test)."""
    inner, outer, outer_pair, outer_value, rewards, pairs, pair_class, col = structure
    pair, at, allowed = graph
    sign, tol, budget, floor, rounding, least, gaps = limits
    lower, upper = bounds
    n_cls = order[1].size
    raw, prob, sums = np.empty(at.size), np.empty(at.size), np.empty(allowed.size)
    e_prob = np.empty(inner.size)
    tied = np.zeros(pair_class.size, np.bool_)
    reward = np.zeros(pair_class.size)
    state = np.zeros(3, np.int64)
    for i in range(entries.shape[0]):
        for e in range(at.size):
            raw[e] = entries[i, at[e]]
        margin = max(widened(rounding, weigh_row(pair, raw, allowed, sums, prob)), least)
        for j in range(inner.size):
            e_prob[j] = prob[inner[j]]
        inflow = pair_inflow(outer, outer_pair, outer_value, rewards, prob)
        problem = (pairs, e_prob, inflow)
        x = np.zeros(n_cls)
        state[:] = 0
        if sweep_pass(order, problem, sign, (budget, SETTLED), x, state) != DONE:
            continue
        if np.any(x <= 0):
            continue
        ties_pass(order[4:], problem, pair_class, x, (sign, tol / 4), tied, reward)
        y = np.zeros(n_cls)
        state[:] = 0
        weights = (tied, e_prob, reward)
        if sweep_pass(order, weights, 1.0, (budget, WEIGHTS_SETTLED), y, state) != DONE:
            continue
        fit, lo, up = candidates(x, y, tol)
        if not fit:
            continue
        lo_ok, up_ok = verify_pass(order, problem, sign, margin, floor, lo, up)
        if not (lo_ok and up_ok):
            continue
        ok[i] = True  # (and the bounds meet tol: meets_tol's test, state by state)
        for s in range(col.size):
            if col[s] >= 0:
                lower[i, s] = max(lower[i, s], lo[col[s]])
                upper[i, s] = min(upper[i, s], up[col[s]])
            a, b = lower[i, s], upper[i, s]
            gap = b - a
            ok[i] = ok[i] and np.isfinite(b) and (gap <= tol * (b + a) or gap <= gaps)
