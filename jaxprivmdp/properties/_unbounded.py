"""Unbounded properties of :func:`jaxprivmdp.check`: ``P [φ1 U φ2]`` and ``R [F φ]``.

Each runs the graph precomputation on the host (:mod:`jaxprivmdp.properties._graph`:
the states with value 0 and 1, or infinity; the end components to collapse; the starting upper
bound), then interval iteration in float64 on the device on the states left undecided, their
strongly connected components in topological order (:mod:`jaxprivmdp.properties._topological`;
over all states at once, :mod:`jaxprivmdp.properties._iteration`, where that cannot run),
from bounds that policy iteration guessed and the host verified where it could
(:mod:`jaxprivmdp.properties._guess`), and assembles
the answer on the host: float64 lower and upper bounds and the policy
(:mod:`jaxprivmdp.properties._policy`). Float64 whatever the user's x64 switch: the rounding
of float32 alone would cost about 1e-6 per expected step, above PRISM's default precision.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..models.core import Model
from ._graph import Graph, row_any, row_first, row_max
from ._guess import guess_bounds
from ._iteration import (
    Unfixed,
    host_widening,
    interval_iteration,
    model_rows,
    opt_sign,
    widening_pair,
)
from ._policy import extract_policy
from ._precision import gap_floor, to_device
from ._topological import Topological, fits


class Precomputed(NamedTuple):
    """The host precomputation's answer for :func:`iterate`.

    Attributes:
      rewards: `[S, A]` (zeros for probabilities); usable: `[S, A]` the pairs the optimum
        ranges over; group: `[S]` end-component ids (-1: none); candidate: the pairs a policy
        may use on ``maybe`` (see :func:`extract_policy`); maybe: `[S]` the unfixed states;
        fixed_value: `[S]` the values of the others; upper: a float upper bound on the unfixed
        states, or None; policy: `[S]` the actions chosen so far; infinite: `[S]` states whose
        value is infinite, or None; visit: for rewards, the arguments ``(maybe, pairs, rmax)``
        of the visiting-time bound that gives ``upper`` (:func:`upper_bound`), computed only
        where a guess did not settle the check (it runs a round per layer of the chains).
    """

    rewards: np.ndarray
    usable: np.ndarray
    group: np.ndarray
    candidate: np.ndarray
    maybe: np.ndarray
    fixed_value: np.ndarray
    upper: float | None
    policy: np.ndarray
    infinite: np.ndarray | None = None
    visit: tuple | None = None


# Interval iteration alone first: a model that mixes fast meets ``tol`` within this many
# steps (and its linear systems, random successors, may fill a sparse LU densely; the guess
# checks that cost before it factors). Early, since a verified guess ends the check at once.
WARM_UP_ITERATIONS = 64
# Over all states (no components' order), a model with more transitions than this has the
# guess first, as in the components' order: its iterations run out of the caches, several
# times slower per entry (csma K = 6, 2.7e6 transitions: 64 iterations 2.5 s of a 7 s
# check, after which the guess settled it), while a smaller one often converges in them
# (csma N = 3, K = 4: 38 iterations, 66 ms; the guess 150 ms).
GUESS_FIRST_ABOVE = 1 << 20
# An unverified guess is tried again, from the better estimate of more iterations, after
# GUESS_AGAIN_AFTER iterations, then after GUESS_GROWTH times as many each time.
GUESS_AGAIN_AFTER = 1000
GUESS_GROWTH = 8


def iterate(g, mdp, pre: Precomputed, minimize, tol, max_iterations):
    """Interval iteration in float64 on the unfixed states ``pre.maybe``: in topological
    order (:func:`ordered`) where a starting upper bound is known and the rows pad well
    (:func:`fits`), else over all states in the model's layout (:func:`_jacobi`); verified
    guesses of policy iteration (:func:`guess_bounds`) between. Assembles the answer on the
    host: ``(lower, upper, policy, iterations, converged)``, `[S]` float64 bounds (``upper``
    inf where none is known).
    """
    maybe, upper, infinite = pre.maybe, pre.upper, pre.infinite
    fixed_value = np.asarray(pre.fixed_value, np.float64)
    policy = pre.policy
    if not maybe.any():  # the precomputation decided every state: nothing to iterate
        values = fixed_value if infinite is None else np.where(infinite, np.inf, fixed_value)
        return values, values.copy(), policy.astype(np.int32), 0, True
    widths = margins(mdp, g)
    bounded = upper is not None or pre.visit is not None
    out = ordered([g], [pre], minimize, tol, max_iterations, [widths]) if bounded else None
    if out is not None:
        lo, up, it, conv = (x[0] for x in out)
        it, conv, has_upper = int(it), bool(conv), True
    else:  # (no finite starting bound, or rows too uneven to pad)
        lo, up, it, conv, has_upper = _jacobi(g, mdp, pre, minimize, tol, max_iterations, widths)
    if not has_upper:
        up = np.where(maybe, np.inf, up)
    return (*answer(g, pre, lo, up, minimize), it, conv)


def answer(g, pre: Precomputed, lo, up, minimize):
    """``(lower, upper, policy)`` from the iteration's float64 bounds: the policy greedy
    where the bounds decide it (:func:`extract_policy`), infinite states' bounds inf."""
    maybe, infinite, policy = pre.maybe, pre.infinite, pre.policy.copy()
    if g.deterministic:  # (a DTMC's policy is its one action: no values needed)
        policy[maybe] = g.first_allowed[maybe]
    else:
        values = np.where(np.isfinite(up), lo + (up - lo) / 2, lo)
        error = np.where(maybe, (up - lo) / 2, 0)
        rewards, candidate = pre.rewards, pre.candidate
        best = extract_policy(g, rewards, values, error, candidate, maybe, minimize, np.float64)
        policy[maybe] = best[maybe]
    if infinite is not None:
        lo, up = np.where(infinite, np.inf, lo), np.where(infinite, np.inf, up)
    return lo, up, policy.astype(np.int32)


def margins(mdp, g) -> tuple[float, float]:
    """``(device, host)``: the widening of a device backup (:func:`host_widening`) and of
    the guess's checks on the host, whose sums run in order over at most ``g.degree`` terms
    of the normalized rows (each entry within ``(degree + 1) u`` of the exact quotient, the
    row sum it is divided by being computed too): rigorous, unlike the device's
    blocked-summation heuristic for long dense rows."""
    margin = host_widening(mdp, g)
    return margin, max(margin, host_floor(g))


def host_floor(g: Graph) -> float:
    """The least host margin of :func:`margins`: each normalized entry ``p / ŝ``, ``ŝ``
    itself a computed sum of up to ``g.degree`` terms."""
    return (2 * g.degree + 8) * float(np.finfo(np.float64).eps) / 2 * (1 + 1e-6)


def tightened(g, pre, minimize, tol, margin, lo, up, has_upper, solvers=None, *, swept_only=False):
    """``(lower, upper, has_upper, verified)``: the bounds tightened by :func:`guess_bounds`
    from their midpoint (``verified``: both sides held; ``solvers``, ``swept_only``: see there)."""

    def estimate():
        return np.where(np.isfinite(up) & has_upper, lo + (up - lo) / 2, lo)

    lower0, upper0 = guess_bounds(
        g, pre, minimize, tol, margin, estimate, solvers, swept_only=swept_only
    )
    if lower0 is not None:
        lo = np.maximum(lo, lower0)  # both are lower bounds
    if upper0 is not None:
        up = np.minimum(up, upper0) if has_upper else upper0
        has_upper = True
    return lo, up, has_upper, lower0 is not None and upper0 is not None


def ordered(graphs, pres: list[Precomputed], minimize, tol, max_iterations, widths):
    """For ``n`` models of one support (``graphs``, ``pres``, ``widths``: each model's graph,
    precomputation and :func:`margins`; ``n = 1`` for one model): a verified guess first
    (policy iteration: :func:`guess_bounds`), then passes of :class:`Topological` (the
    components in order, all models in each loop) from the bounds, each window capped at
    its components plus ``WARM_UP_ITERATIONS`` iterations, then plus ``GUESS_AGAIN_AFTER``
    and ``GUESS_GROWTH`` times more, guessing again between passes for the models not
    converged. Returns ``(lower, upper, iterations, converged)``: `[n, S]`, `[n, S]`,
    `[n]`, `[n]`; or None where passes are needed but cannot run (no finite upper bound, or
    rows too uneven to pad: :func:`fits`)."""
    pre, passes = pres[0], None
    if not fits(graphs[0]):  # (checked first: the guesses would be made again there)
        return None
    fixed = np.asarray(pre.fixed_value, np.float64)
    lo = np.empty((len(pres), fixed.size))
    lo[:] = np.where(pre.maybe, 0.0, fixed)
    first = [np.inf if p.upper is None else p.upper for p in pres]  # (inf: see p.visit)
    up = np.where(pre.maybe, np.asarray(first, np.float64)[:, None], fixed)
    it, stop = np.zeros(len(pres), np.int64), min(max_iterations, WARM_UP_ITERATIONS)
    # A guess first for every model (a verified one settles it: measured faster than a
    # shared pass first on a batch, brp N = 1024: 45 vs 88 ms a model).
    todo, capped = np.arange(len(pres)), np.ones(len(pres), bool)
    solvers = {}  # (one support, one precomputation: one order for every model's solves)
    while True:
        verified = False
        for i in todo:  # (the first time: every model)
            lo[i], up[i], _, ok = tightened(
                graphs[i], pres[i], minimize, tol, widths[i][1], lo[i], up[i], True, solvers
            )
            verified |= ok
        met = meets_tol(lo, up, tol)
        if met.all() or (
            it.any() and (stop >= max_iterations or not (capped[~met].any() or verified))
        ):
            return lo, up, it, met  # (not capped, nothing verified: stationary)
        if it.any():
            stop = min(max_iterations, max(GUESS_AGAIN_AFTER, GUESS_GROWTH * stop))
        if passes is None:  # (built only when a guess did not settle every model)
            for i in np.flatnonzero(~np.all(np.isfinite(up), axis=1)):
                visit = pres[i].visit
                bound = None if visit is None else upper_bound(graphs[i], visit)
                if bound is None:
                    return None  # no finite bound: the components' order cannot start
                up[i] = np.minimum(up[i], np.where(pre.maybe, bound, fixed))
            raw = np.stack([h.raw for h in graphs])
            passes = Topological(graphs[0], pre, minimize, max(w[0] for w in widths), tol, raw)
        lo, up, more, capped = passes.run(lo, up, stop)
        it += more
        todo = np.flatnonzero(~meets_tol(lo, up, tol))


def meets_tol(lo, up, tol) -> np.ndarray:
    """`[n]` :func:`interval_iteration`'s test, per model: every interval finite and within
    ``tol`` (relative) or :func:`gap_floor`."""
    gap, floor = up - lo, gap_floor(np.float64)  # (the rule of ``precision``: either test)
    return np.all(np.isfinite(up) & ((gap <= tol * (up + lo)) | (gap <= floor)), axis=1)


def _jacobi(g, mdp, pre: Precomputed, minimize, tol, max_iterations, widths):
    """:func:`interval_iteration` over all states, in the model's own layout (no upper bound
    to start from, which the components' order needs, or rows too uneven to pad: see
    :func:`fits`): the compiled pass's guess alone (which often settles it), then
    ``WARM_UP_ITERATIONS`` from the best bounds known (the visiting-time bound computed only
    where the guess gave no upper bound), then verified guesses between runs: ``(lower,
    upper, iterations, converged, has_upper)``."""
    margin, host = widths
    run = functools.partial(_device_iteration, mdp, pre, minimize, margin, tol)
    lo, up, has_upper = np.zeros(g.S), np.zeros(g.S), False
    warm_up = 0 if g.pair.size > GUESS_FIRST_ABOVE else WARM_UP_ITERATIONS
    it, stop = 0, min(max_iterations, warm_up)
    if warm_up:  # the compiled pass's guess alone first: cheap, and often enough
        lo, up, has_upper, _ = tightened(
            g, pre, minimize, tol, host, lo, up, False, swept_only=True
        )
        if has_upper and meets_tol(lo[None], up[None], tol)[0]:
            return lo, up, 0, True, True
    if not has_upper:  # the precomputation's bound, else the visiting-time bound (a pass)
        bound = pre.upper
        if bound is None and pre.visit is not None:
            bound = upper_bound(g, pre.visit)
        if bound is not None:
            up, has_upper = np.full(g.S, bound), True
    while True:
        lo, up, more, conv = run(lo, up, has_upper, max(stop - it, 0))
        it += more
        if conv or it >= max_iterations:
            return lo, up, it, conv, has_upper
        lo, up, has_upper, verified = tightened(g, pre, minimize, tol, host, lo, up, has_upper)
        again = max(GUESS_AGAIN_AFTER, GUESS_GROWTH * it)
        stop = max_iterations if verified else min(max_iterations, again)


def _device_iteration(
    mdp, pre: Precomputed, minimize, margin, tol, lower0, upper0, has_upper, max_iterations
):
    """:func:`interval_iteration` in float64 (``mdp``: the float64 copy) from ``[lower0,
    upper0]``: ``(lower, upper, iterations, converged)`` on the host. One compilation per
    model shape."""
    S = mdp.num_states
    lower0, upper0 = to_device(lower0, upper0)
    with jax.enable_x64(True):
        problem = Unfixed(
            jnp.asarray(pre.rewards, jnp.float64),
            jnp.asarray(pre.usable),
            jnp.asarray(np.where(pre.group >= 0, pre.group, np.arange(S)).astype(np.int32)),
            jnp.asarray(~pre.maybe),
            jnp.asarray(pre.fixed_value, jnp.float64),
            jnp.asarray(upper0, jnp.float64),
            jnp.asarray(has_upper),
            jnp.asarray(lower0, jnp.float64),
        )
        lo, up, it, conv = interval_iteration(
            model_rows(mdp),
            problem,
            opt_sign(minimize, jnp.float64),
            widening_pair(mdp, margin),
            jnp.asarray(tol, jnp.float64),
            jnp.asarray(max_iterations, jnp.int32),
        )
        return np.asarray(lo), np.asarray(up), int(it), bool(conv)


def solve_unbounded_probability(g: Graph, mdp: Model, target, avoid, minimize, tol, max_iterations):
    """Unbounded ``P{min,max} [¬avoid U target]``: values, error, policy, iterations, conv."""
    pre = probability_problem(g, target, avoid, minimize)
    return iterate(g, mdp, pre, minimize, tol, max_iterations)


def solve_unbounded_reward(g: Graph, mdp: Model, target, minimize, tol, max_iterations):
    """Unbounded ``R{min,max} [F target]`` with PRISM's infinities."""
    pre = reward_problem(g, np.asarray(mdp.rewards, np.float64), target, minimize)
    return iterate(g, mdp, pre, minimize, tol, max_iterations)


def probability_problem(g: Graph, target, avoid, minimize) -> Precomputed:
    """The precomputation of ``P{min,max} [¬avoid U target]`` (it depends on the graph
    only: the same for every model of one support)."""
    S, A = g.S, g.A
    policy = g.first_allowed.copy()
    through = ~avoid & ~target
    group = np.full(S, -1, np.int64)
    internal = np.zeros(S * A, bool)
    if g.deterministic:  # a DTMC: Prob0 and Prob1 by one search each
        no = ~g.reach(target, through, g.allowed)
        yes = ~g.reach(no, ~target, g.allowed)
        # (no end component lies in `maybe`: a DTMC's is a closed set, whose states never
        # reach the target outside it, so they would have probability 0)
        maybe = ~yes & ~no
    elif minimize:
        positive = g.reach_all(target, through)  # Pmin > 0
        no = ~positive
        stay = g.pairs_within(no).reshape(S, A)
        has_stay = no & row_any(stay)
        policy[has_stay] = row_first(stay)[has_stay]  # never leave Pmin = 0
        yes = ~g.reach(no, ~target, g.allowed)  # Prob1A
        maybe = ~yes & ~no  # no end component left: its states would have Pmin = 0
    else:
        no = ~g.reach(target, through, g.allowed)  # Pmax = 0
        yes, witness = g.prob1e(target, through)
        attract = yes & ~target
        policy[attract] = witness[attract]
        maybe = ~yes & ~no
        group, internal = g.end_components(maybe, g.allowed)
    usable = g.mask & ~internal.reshape(S, A)
    return Precomputed(
        np.zeros((S, A)), usable, group, g.allowed, maybe, yes.astype(float), 1.0, policy
    )


def reward_problem(g: Graph, R, target, minimize):
    """The precomputation of ``R{min,max} [F target]`` (rewards ``R`` `[S, A]` float64)
    without its upper bound, and the arguments ``(maybe, pairs, rmax)`` of the visiting-time
    bound that gives it (:func:`upper_bound`: the only part that reads the probabilities)."""
    S, A = g.S, g.A
    policy = g.first_allowed.copy()
    not_target = ~target
    if minimize:
        finite, witness = g.prob1e(target, not_target)  # Rmin < inf
        infinite = ~finite
        usable = g.mask & g.pairs_within(finite).reshape(S, A)
        candidate = usable.reshape(-1).copy()
        zero_pairs = (g.allowed & (R.reshape(-1) == 0)) & candidate
        zero, zero_witness = g.prob1e(target, not_target & finite, zero_pairs)
        on = zero & ~target
        policy[on] = zero_witness[on]
        maybe = finite & ~zero
        group, internal = g.end_components(maybe, zero_pairs)
        usable &= ~internal.reshape(S, A)
        # An upper bound: the expected reward of the Prob1E attractor scheduler (proper).
        sigma = np.zeros((S, A), bool)
        idx = np.flatnonzero(maybe)
        sigma[idx, witness[idx]] = True
        rmax = np.where(maybe, R[np.arange(S), np.maximum(witness, 0)], 0)
        visit = (maybe, sigma.reshape(-1), rmax)
        policy[maybe] = witness[maybe]
    else:
        positive = g.reach_all(target, not_target)
        no = ~positive  # Pmin = 0: some scheduler never reaches the target
        stay = g.pairs_within(no).reshape(S, A)
        has_stay = no & row_any(stay)
        policy[has_stay] = row_first(stay)[has_stay]
        infinite, toward = g.reach_exists(no, not_target, g.allowed)  # not Prob1A
        on = infinite & ~no
        policy[on] = toward[on]
        finite = ~infinite
        earning = row_any(g.mask & (R > 0)) & finite & not_target
        earns = g.reach(earning, finite & not_target, g.allowed)
        maybe = earns & finite & not_target
        usable = g.mask.copy()
        candidate = g.allowed
        group = np.full(S, -1, np.int64)
        rmax = np.where(maybe, row_max(np.where(g.mask, R, 0)), 0)
        visit = (maybe, g.allowed, rmax)
    rewards = np.where(g.mask, R, 0)
    return Precomputed(
        rewards, usable, group, candidate, maybe, np.zeros(S), None, policy, infinite, visit
    )


def upper_bound(g: Graph, visit) -> float | None:
    """The visiting-time bound (:meth:`Graph.visit_bound`) as a starting upper bound, or
    None where it is infinite or too large to iterate from."""
    bound = g.visit_bound(*visit)
    if np.isfinite(bound) and bound <= float(np.finfo(np.float64).max) / 16:
        return float(np.nextafter(bound, np.inf))
    return None
