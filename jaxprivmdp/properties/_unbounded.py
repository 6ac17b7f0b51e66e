"""Unbounded properties of :func:`jaxprivmdp.check`: ``P [φ1 U φ2]`` and ``R [F φ]``.

Each runs the graph precomputation on the host (:mod:`jaxprivmdp.properties._graph`:
the states with value 0 and 1, or infinity; the end components to collapse; the starting upper
bound), then interval iteration on the device on the states left undecided
(:mod:`jaxprivmdp.properties._iteration`), and assembles the answer on the host: values
(midpoints), error bounds and the policy (:mod:`jaxprivmdp.properties._policy`).
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from ..models.core import Model
from ._graph import Graph
from ._iteration import (
    Unfixed,
    host_widening,
    interval_iteration,
    model_rows,
    opt_sign,
)
from ._policy import extract_policy


class Precomputed(NamedTuple):
    """The host precomputation's answer for :func:`_iterate`.

    Attributes:
      rewards: `[S, A]` (zeros for probabilities); usable: `[S, A]` the pairs the optimum
        ranges over; group: `[S]` end-component ids (-1: none); candidate: the pairs a policy
        may use on ``maybe`` (see :func:`extract_policy`); maybe: `[S]` the unfixed states;
        fixed_value: `[S]` the values of the others; upper: a float upper bound on the unfixed
        states, or None; policy: `[S]` the actions chosen so far; infinite: `[S]` states whose
        value is infinite, or None.
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


def _iterate(g, mdp, pre: Precomputed, minimize, tol, max_iterations):
    """Runs :func:`interval_iteration` on the unfixed states ``pre.maybe`` and assembles the
    answer on the host: values (midpoints), error bounds, the policy, iterations, converged.
    """
    rewards, usable, group, candidate, maybe, fixed_value, upper, policy, infinite = pre
    S = g.S
    dtype = np.dtype(mdp.rewards.dtype)
    has_upper = upper is not None
    if not maybe.any():  # the precomputation decided every state: nothing to iterate
        values = np.asarray(fixed_value, dtype)
        if infinite is not None:
            values = np.where(infinite, np.inf, values).astype(dtype)
        return values, np.zeros(S, dtype), policy.astype(np.int32), 0, True
    problem = Unfixed(
        jnp.asarray(rewards, dtype),
        jnp.asarray(usable),
        jnp.asarray(np.where(group >= 0, group, np.arange(S)).astype(np.int32)),
        jnp.asarray(~maybe),
        jnp.asarray(fixed_value, dtype),
        jnp.full(S, upper if has_upper else 0, dtype),
        jnp.asarray(has_upper),
    )
    lo, up, it, conv = interval_iteration(
        model_rows(mdp),
        problem,
        opt_sign(minimize, dtype),
        jnp.asarray(host_widening(mdp, g) * (1 + 1e-6), dtype),  # rounded up
        jnp.asarray(tol, dtype),
        jnp.asarray(max_iterations, jnp.int32),
    )
    lo, up = np.asarray(lo), np.asarray(up)
    eps = np.finfo(dtype).eps
    if has_upper:
        values = lo + (up - lo) / 2
        error = np.where(maybe, (up - lo) / 2 + eps * up, 0).astype(dtype)
    else:  # the lower bound, with no bound on its error
        values = lo
        error = np.where(maybe, np.inf, 0).astype(dtype)
    best = extract_policy(g, rewards, values, error, candidate, maybe, minimize, dtype)
    policy[maybe] = best[maybe]
    if infinite is not None:
        values = np.where(infinite, np.inf, values).astype(dtype)
    return values, error, policy.astype(np.int32), int(it), bool(conv)


def solve_unbounded_probability(g: Graph, mdp: Model, target, avoid, minimize, tol, max_iterations):
    """Unbounded ``P{min,max} [¬avoid U target]``: values, error, policy, iterations, conv."""
    S, A = g.S, g.A
    policy = g.first_allowed.copy()
    through = ~avoid & ~target
    group = np.full(S, -1, np.int64)
    internal = np.zeros(S * A, bool)
    if minimize:
        positive = g.reach_all(target, through)  # Pmin > 0
        no = ~positive
        stay = g.pairs_within(no).reshape(S, A)
        has_stay = no & stay.any(axis=1)
        policy[has_stay] = np.argmax(stay, axis=1)[has_stay]  # never leave Pmin = 0
        reach_no, _ = g.reach_exists(no, ~target, g.allowed)
        yes = ~reach_no  # Prob1A
        maybe = ~yes & ~no  # no end component left: its states would have Pmin = 0
    else:
        can, _ = g.reach_exists(target, through, g.allowed)
        no = ~can  # Pmax = 0
        yes, witness = g.prob1e(target, through)
        attract = yes & ~target
        policy[attract] = witness[attract]
        maybe = ~yes & ~no
        group, internal = g.end_components(maybe, g.allowed)
    usable = g.mask & ~internal.reshape(S, A)
    pre = Precomputed(
        np.zeros((S, A)), usable, group, g.allowed, maybe, yes.astype(float), 1.0, policy
    )
    return _iterate(g, mdp, pre, minimize, tol, max_iterations)


def solve_unbounded_reward(g: Graph, mdp: Model, target, minimize, tol, max_iterations):
    """Unbounded ``R{min,max} [F target]`` with PRISM's infinities."""
    S, A = g.S, g.A
    dtype = mdp.rewards.dtype
    R = np.asarray(mdp.rewards, np.float64)
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
        bound = g.visit_bound(maybe, sigma.reshape(-1), rmax)
        policy[maybe] = witness[maybe]
    else:
        positive = g.reach_all(target, not_target)
        no = ~positive  # Pmin = 0: some scheduler never reaches the target
        stay = g.pairs_within(no).reshape(S, A)
        has_stay = no & stay.any(axis=1)
        policy[has_stay] = np.argmax(stay, axis=1)[has_stay]
        infinite, toward = g.reach_exists(no, not_target, g.allowed)  # not Prob1A
        on = infinite & ~no
        policy[on] = toward[on]
        finite = ~infinite
        earning = np.any(g.mask & (R > 0), axis=1) & finite & not_target
        earns, _ = g.reach_exists(earning, finite & not_target, g.allowed)
        maybe = earns & finite & not_target
        usable = g.mask.copy()
        candidate = g.allowed
        group = np.full(S, -1, np.int64)
        rmax = np.where(maybe, np.max(np.where(g.mask, R, 0), axis=1), 0)
        bound = g.visit_bound(maybe, g.allowed, rmax)
    big = float(np.finfo(dtype).max) / 16
    upper = None
    if np.isfinite(bound) and bound <= big:
        upper = float(np.nextafter(np.asarray(bound, dtype), np.asarray(np.inf, dtype)))
    rewards = np.where(g.mask, R, 0)
    pre = Precomputed(
        rewards, usable, group, candidate, maybe, np.zeros(S), upper, policy, infinite
    )
    return _iterate(g, mdp, pre, minimize, tol, max_iterations)
