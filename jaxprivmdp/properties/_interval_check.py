"""PRISM properties on interval models: ``check(imdp, 'Pmaxmin=? [F "goal"]', labels=...)``.

PRISM's semantics (4.8 and later) for interval MDPs: two quantifiers, the first the
policy's, the second nature's, which picks a distribution in the row's box each time a row
is used, knowing the history (``Pmaxmin``: the best policy against the worst nature;
``Rminmax``: the least expected cost against the most adverse nature). On an interval DTMC
(one allowed action in every state) one quantifier is nature's (``Pmin=?``, ``Pmax=?``). A
one-quantifier query on an interval MDP is refused, naming the two-quantifier forms: Storm
reads ``Pmax`` there as a silent ``Pmaxmin``, a trap its users have reported.

Unbounded ``F``, ``U``, ``G`` and ``R [F]``: the graph analysis of :mod:`._interval_graph`
decides the states with probability 0 and 1 (the states with infinite expected reward),
then robust interval iteration (:mod:`._interval_iteration`) bounds the rest from both
sides, in float64 on the host's model, the answer narrowed outward to the model's dtype as
for point models. Step-bounded ``F<=k``, ``U<=k``, ``G<=k``, ``X``, ``R [C<=k]``: backward
induction, exact up to the rounding its bounds account for, also under ``jax.jit`` (in the
model's dtype). Total reward ``R [C]``: :mod:`._interval_total`. The policy is stationary
for unbounded properties (among the actions optimal on the lower bound, one that makes
progress towards the target where the policy seeks it), the first step's rule for bounded
ones.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import is_concrete
from ..models.core import INTERVAL_MODELS, IntervalMDP, RaggedIntervalMDP
from ..models.core import nature_choice as _choice
from . import _interval_graph as graph
from ._interval_graph import floor_slack
from ._interval_guess import guess_bounds
from ._interval_iteration import Problem, backward, q_values, run, widening
from ._interval_total import total_reward
from ._labels import check_labels, satisfying
from ._parse import Property, property_error
from ._precision import complement, refuse_traced, tracing, working_tol
from ._result import host_result, traced_result


def quantifiers(prop_: Property, imdp: IntervalMDP) -> tuple[str, str]:
    """``(policy, nature)`` optima, each ``"max"`` or ``"min"``; refuses what PRISM would."""
    text, pos = prop_.text, prop_.positions["operator"]
    dtmc = is_concrete(imdp.action_mask) and bool(
        np.all(np.asarray(imdp.action_mask).sum(axis=1) == 1)
    )
    if prop_.nature is not None:
        return prop_.opt, prop_.nature
    k = prop_.kind
    if prop_.opt is None:
        raise property_error(
            text, pos, f"on an interval model nature's optimum must be given: {k}min=? or "
            f"{k}max=? on an interval DTMC, {k}maxmin=? or {k}minmax=? (policy, then nature) "
            "on an interval MDP",
        )  # fmt: skip
    if not dtmc:
        o = prop_.opt
        raise property_error(
            text, pos, f"an interval MDP needs two quantifiers, the policy's then nature's: "
            f"{k}{o}min=? (against the worst nature) or {k}{o}max=? (the best nature)",
        )  # fmt: skip
    return "max", prop_.opt


def check_interval(imdp: IntervalMDP, prop_: Property, labels, variables, bound, limits):
    """:func:`jaxprivmdp.check` on an interval model (arguments checked there).
    ``limits``: ``(tol, max_iterations)``."""
    policy_opt, nature_opt = quantifiers(prop_, imdp)
    tol, max_iterations = limits
    unbounded = bound is None and prop_.path in ("F", "U", "G", "C")
    if unbounded:
        refuse_traced(prop_, imdp, "graph analysis")
    concrete = unbounded or is_concrete(labels, variables)
    lab = check_labels(imdp, labels, concrete, variables)
    traced = not (concrete and is_concrete(imdp)) or tracing()
    xp = jnp if traced else np

    def sat(f):
        return None if f is None else satisfying(prop_.text, f, labels=lab, xp=xp)

    dtype = np.dtype(imdp.rewards.dtype)
    opts = (policy_opt, nature_opt)
    if traced:
        lower, upper, policy, it = _solve(prop_, imdp, sat, bound, opts, (tol, max_iterations))
        return traced_result(imdp, (lower, upper, policy, it, True))
    with jax.enable_x64(True):
        wide = _float64(imdp)
        limits = (working_tol(tol, dtype), max_iterations)
        lower, upper, policy, it, conv = _solve(prop_, wide, sat, bound, opts, limits, host=True)
    lower, upper = np.asarray(lower), np.asarray(upper)
    if prop_.kind == "P":  # a probability: rounding never takes a bound outside [0, 1]
        lower, upper = np.clip(lower, 0, 1), np.clip(upper, 0, 1)
    out = (lower, upper, policy, it, conv)
    return host_result(imdp, out, dtype, tol if unbounded else None)


def nature_choice(imdp: IntervalMDP, values, *, nature: str) -> jax.Array:
    """The distribution nature picks in every row of an interval model against ``values``.

    Nature's optimal choice in a two-quantifier property is its best response to the
    values: with the values of :func:`check`'s answer (``res.values``, ``nature="min"`` for
    ``Pmaxmin``), the rows below are the adversary the policy ``res.policy`` was checked
    against (for a minimizing nature, optimal once the values are; a maximizing nature
    that must also leave a loop may need its choice made among ties).

    Example::

        res = jp.check(imdp, 'Pmaxmin=? [F "goal"]', labels=labels)
        rows = jp.nature_choice(imdp, res.values, nature="min")  # [S, A, S] or [S, A, K]

    Args:
      imdp: an :class:`IntervalMDP` or a :class:`RaggedIntervalMDP`.
      values: `[S]` a value per state (finite or ``inf``).
      nature: ``"min"`` or ``"max"``: whether nature minimizes ``x · values`` or maximizes.

    Returns:
      `[S, A, N]` in the model's dtype and layout (``N = S`` dense, ``K`` over its
      ``next_states``): each row a distribution within its bounds (the greedy fill of the
      bounds as given: a row whose bounds do not sum exactly around 1 is filled up to its
      bounds). A :class:`RaggedIntervalMDP`: a tuple, one `[n_b, K_b]` per bucket, aligned
      with its ``buckets[b].next_states``. Works under ``jax.jit``.

    Raises:
      ValueError: ``nature`` not ``"min"``/``"max"``; ``values`` not `[S]`.
      TypeError: ``imdp`` not an interval model.
    """
    if not isinstance(imdp, INTERVAL_MODELS):
        raise TypeError(
            f"imdp must be an IntervalMDP or a RaggedIntervalMDP, got {type(imdp).__name__}"
        )
    if nature not in ("min", "max"):
        raise ValueError(f"nature must be 'min' or 'max', got {nature!r}")
    v = jnp.asarray(values, imdp.rewards.dtype)
    if v.shape != (imdp.num_states,):
        raise ValueError(f"values must have shape [S] = ({imdp.num_states},), got {v.shape}")
    sign = 1 if nature == "max" else -1
    return _choice(imdp.lower, imdp.upper, imdp.next_states, v, sign, jnp)


def _float64(imdp: IntervalMDP | RaggedIntervalMDP) -> IntervalMDP | RaggedIntervalMDP:
    """The model in float64 with its bounds read as distributions (``_interval_graph``), on
    the host; a ragged model's bucket by bucket."""

    def normalized(lower, upper):
        return graph.normalized_bounds(np.asarray(lower, np.float64), np.asarray(upper, np.float64))

    if isinstance(imdp, RaggedIntervalMDP):
        buckets = tuple(
            b._replace(rows=np.asarray(b.rows), next_states=np.asarray(b.next_states),
                       lower=lo, upper=up)
            for b in imdp.buckets
            for lo, up in [normalized(b.lower, b.upper)]
        )  # fmt: skip
        layout = dict(buckets=buckets)
    else:
        lo, up = normalized(imdp.lower, imdp.upper)
        ns = None if imdp.next_states is None else np.asarray(imdp.next_states)
        layout = dict(lower=lo, upper=up, next_states=ns)
    return type(imdp)(
        **layout,
        rewards=np.asarray(imdp.rewards, np.float64),
        terminal_reward=np.asarray(imdp.terminal_reward, np.float64),
        discount=np.asarray(imdp.discount, np.float64),
        action_mask=np.asarray(imdp.action_mask, bool),
        horizon=imdp.horizon,
        initial_state=imdp.initial_state,
    )


def _problem(imdp, rewards, fixed, fixed_value, opts, ceiling, xp) -> Problem:
    dtype = rewards.dtype
    n = max(x.shape[-1] for x in jax.tree_util.tree_leaves(imdp.lower))  # a ragged model's:
    rel, absolute = widening(n, dtype)  # its longest bucket
    sign = {"max": 1, "min": -1}
    blocks = jax.tree_util.tree_map(xp.asarray, (imdp.lower, imdp.upper, imdp.next_states))
    return Problem(
        *blocks,
        rewards=xp.asarray(rewards),
        usable=xp.asarray(imdp.action_mask),
        fixed=xp.asarray(fixed),
        fixed_value=xp.asarray(fixed_value, dtype),
        policy_sign=xp.asarray(sign[opts[0]], dtype),
        nature_sign=xp.asarray(sign[opts[1]], dtype),
        rel=xp.asarray(rel, dtype),
        absolute=xp.asarray(absolute, dtype),
        ceiling=xp.asarray(ceiling, dtype),
        floor=xp.asarray(floor_slack(n, dtype), dtype),
    )


def _flip(opts):
    swap = {"max": "min", "min": "max"}
    return swap[opts[0]], swap[opts[1]]


def _solve(prop_, imdp, sat, bound, opts, limits, host=False):
    """``(lower, upper, policy, iterations[, converged])`` of the parsed property."""
    S, A = imdp.num_states, imdp.num_actions
    xp = np if host else jnp
    dtype = imdp.rewards.dtype
    right, left = sat(prop_.right), sat(prop_.left)
    zeros = xp.zeros((S, A), dtype)
    nothing = xp.zeros(S, bool)
    if prop_.kind == "R" and prop_.path == "C" and bound is None:
        return total_reward(imdp, opts, limits, _problem)
    if prop_.kind == "R" and prop_.path == "C":
        zero = xp.zeros(S, dtype)
        return _backward(imdp, imdp.rewards, nothing, zero, opts, bound, host, ceiling=np.inf)
    if prop_.kind == "R":
        return _reward_unbounded(imdp, np.asarray(right), opts, limits)
    negate = prop_.path == "G"
    if negate:  # P[G φ] = 1 − P[F ¬φ], both optima swapped
        target, avoid, opts = ~right, nothing, _flip(opts)
    elif prop_.path in ("F", "X"):
        target, avoid = right, nothing
    else:
        target, avoid = right, ~left & ~right
    if prop_.path == "X":
        out = _backward(imdp, zeros, nothing, target.astype(dtype), opts, 1, host)
    elif bound is None:
        target, avoid = np.asarray(target), np.asarray(avoid)
        out = _probability_unbounded(imdp, target, avoid, opts, limits, complement=negate)
    else:
        fixed = target | avoid
        out = _backward(imdp, zeros, fixed, target.astype(dtype), opts, bound, host)
    if negate:
        lower, upper, *rest = out
        out = (*complement(xp.asarray(lower), xp.asarray(upper), xp), *rest)
    return out


def _backward(imdp, rewards, fixed, init, opts, steps, host, ceiling=1.0):
    """A step-bounded property by :func:`backward` from ``init`` (the values of the ``fixed``
    states): ``(lower, upper, rule, steps[, converged])``, host arrays when ``host``;
    ``ceiling``: a bound on every value (1 for probabilities)."""
    p = _problem(imdp, rewards, fixed, init, opts, ceiling, np if host else jnp)
    lower, upper, rule = backward(p, init, steps)
    if host:
        return np.asarray(lower), np.asarray(upper), rule, steps, True
    return lower, upper, rule, steps


def _probability_unbounded(imdp, target, avoid, opts, limits, complement=False):
    tol, max_iterations = limits
    e = graph.edges(imdp.lower, imdp.upper, imdp.next_states, imdp.action_mask)
    allowed = ~target & ~avoid
    helps = (opts[0] == "max", opts[1] == "max")
    pos, rank = graph.positive(e, target, allowed, *helps)
    one = graph.almost_sure(e, target, allowed & pos, *helps)
    fixed = ~pos | one
    value = one.astype(np.float64)
    p = _problem(imdp, np.zeros(imdp.rewards.shape), fixed, value, opts, 1.0, np)
    p = jax.tree_util.tree_map(jnp.asarray, p)

    def components(unsettled):
        return graph.staying_components(e, unsettled & ~fixed)

    def guess(lo):
        sigma = _policy(p, e, lo, rank, helps[0], helps[1])
        return guess_bounds(p, e, lo, sigma, tol, complement)

    lo, up = value, np.where(fixed, value, 1.0)
    lo, up, it, met = run(
        p, e, lo, up, tol, max_iterations, probability=True, components=components,
        complement=complement, guess=guess,
    )  # fmt: skip
    policy = _policy(p, e, lo, rank, helps[0], helps[1])
    return lo, up, policy, it, met


def _reward_unbounded(imdp, target, opts, limits):
    tol, max_iterations = limits
    e = graph.edges(imdp.lower, imdp.upper, imdp.next_states, imdp.action_mask)
    helps = (opts[0] == "min", opts[1] == "min")  # the cost's minimizers seek the target
    sure = graph.almost_sure(e, target, ~target, *helps)
    infinite = ~sure
    fixed = target | infinite
    value = np.where(infinite, np.inf, 0.0)
    p = _problem(imdp, imdp.rewards, fixed, value, opts, np.inf, np)
    p = jax.tree_util.tree_map(jnp.asarray, p)
    lo, up = value, np.where(fixed, value, np.inf)
    free = graph.edges(imdp.lower, imdp.upper, imdp.next_states,
                       imdp.action_mask & (imdp.rewards == 0))  # fmt: skip
    if graph.staying_components(free, ~fixed):  # the minimizer may loop at no cost
        lo, _, it, _ = run(p, e, lo, up, tol, max_iterations, probability=False, components=None)
        up = np.where(fixed, value, np.inf)
        met = bool(np.all(fixed))
    else:
        lo, up, it, met = run(p, e, lo, up, tol, max_iterations, probability=False, components=None)
    _, rank = graph.positive(e, target, ~target, *helps)
    policy = _policy(p, e, lo, rank, helps[0], helps[1])
    return lo, up, policy, it, met


def _policy(p: Problem, e, lo, rank, policy_seeks: bool, nature_helps: bool) -> np.ndarray:
    """A stationary policy: the best action on ``lo`` (ties within 1e-9 relative), preferring,
    where the policy seeks the target, an action whose row reaches a state of lower
    :func:`graph.positive` rank (so that ties inside a loop do not keep it there)."""
    q = np.asarray(_q_values(p, jnp.asarray(lo[None])))[0]
    sign = float(p.policy_sign)
    score = np.where(np.asarray(p.usable), sign * np.nan_to_num(q, posinf=1e300), -np.inf)
    best = score.max(axis=1, keepdims=True)
    near = score >= best - 1e-9 * np.maximum(np.abs(best), 1.0)
    if policy_seeks:
        src = e.row // e.allowed.shape[1]
        closer = (rank[e.target] >= 0) & ((rank[e.target] < rank[src]) | (rank[src] < 0))
        lo_in, up_in = e.inside(closer)
        hits = e.can_hit if nature_helps else e.must_hit
        progress = hits(np.arange(e.allowed.size), lo_in, up_in).reshape(score.shape)
        score = np.where(near & progress, score + 1e300, score)
    return np.argmax(score, axis=1).astype(np.int32)


_q_values = jax.jit(q_values)


__all__ = ["check_interval", "nature_choice"]
