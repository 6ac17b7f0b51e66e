"""PRISM properties on the library's models: ``check(mdp, 'Pmax=? [F "goal"]', labels=...)``.

What PRISM and Storm users ask of an MDP (or a DTMC: an MDP with one allowed action per
state), for the subset of PRISM's property language below, solved as those tools solve it:

- ``P{max,min}=? [F φ]``, ``[φ1 U φ2]``, ``[G φ]``: unbounded reachability (until,
  invariance). A graph precomputation on the host finds the states with probability exactly 0
  and 1 (PRISM's ``Prob0E``/``Prob1E`` for max, ``Prob0A``/``Prob1A`` for min), then
  *interval iteration* (Haddad & Monmege 2014; Baier, Klein, Leuschner, Parker, Wunderlich
  2017) iterates a lower bound up from 0 and an upper bound down from 1 until they meet. For
  max, the maximal end components among the remaining states are collapsed first (their
  states share one value, the best exit of the component): without that the upper bound never
  leaves 1 inside a component that can loop forever. For min no component remains (a
  minimizer stays in it forever, so its states have probability 0 and were precomputed).
- ``R{"name"}{max,min}=? [F φ]``: expected reward until φ, PRISM's semantics: ``inf`` where
  the optimizing scheduler does not reach φ with probability 1 (``Rmin``: not ``Prob1E``;
  ``Rmax``: not ``Prob1A``). The states with value 0 are precomputed too; for min, end
  components of zero-reward actions are collapsed (without that the lower bound would stay at
  0 inside them). The upper bound starts from Baier et al.'s bound on expected visiting times
  (``Σ_s max_a r(s, a) / d_s``, ``d_s`` a lower bound on the probability of never returning
  to ``s``): over every scheduler for max, over one proper scheduler (the ``Prob1E``
  attractor) for min.
- ``P{max,min}=? [F<=k φ]``, ``[φ1 U<=k φ2]``, ``[G<=k φ]``, ``[X φ]``, ``R{max,min}=?
  [C<=k]`` (reward accumulated in ``k`` steps): backward induction, exact up to rounding.
- ``P=?``/``R=?``: the same on a DTMC (refused on a model with a choice; PRISM does the same).

φ is a state formula over labels: ``"goal"``, ``true``, ``false``, ``!``, ``&``, ``|``,
``=>``, ``<=>`` and parentheses (PRISM's precedence: ``!`` > ``&`` > ``|`` > ``=>`` >
``<=>``). Not supported (a ValueError naming the position): bounds such as ``P>=0.5`` or
``P<0.1`` (only ``=?`` queries), nested ``P``/``R`` operators, variables (``s=3``) and
constants other than ``T``, time intervals (``F>=k``, ``F[a,b]``), ``W``/``R`` (weak until,
release), ``S``, ``LRA``, ``filter``, multi-objective queries, ``R [I=k]``, ``R [S]``,
``R [F<=k]`` and total reward ``R [C]``.

The exact value. Rows are validated to sum to 1 within 3.1e-5 and never renormalized; the
value bounded here is that of the rows read as the distributions they stand for (each row
divided by its sum), which the graph precomputation assumes too. A stored float32 model's
rows sum to 1 only within a few ulps, and its "value of the rows as stored" would make a
state that reaches the target with probability 1 leak mass each step.

This module is the public boundary: it validates the arguments and dispatches. The grammar is
in ``_parse``, the labels in ``_labels``, the host graph precomputation in
``_graph``, the jitted cores and their rounding in ``_iteration``, the
unbounded properties in ``_unbounded`` and their policy in ``_policy``.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import check_count, check_int, check_range, is_concrete
from ..models.core import Model, check_model
from ._graph import Graph
from ._iteration import solve_bounded
from ._labels import check_labels, satisfying
from ._parse import Property, parse_property, property_error
from ._unbounded import solve_unbounded_probability, solve_unbounded_reward

# Relative precision asked of unbounded properties by default: PRISM's and Storm's default
# (1e-6, relative) in float64; in float32 rounding alone costs about 1e-6 per expected step.
DEFAULT_TOL = {np.dtype(np.float64): 1e-6, np.dtype(np.float32): 1e-4}
DEFAULT_MAX_ITERATIONS = 100_000


class CheckResult(NamedTuple):
    """The answer to a property, per state.

    Attributes:
      values: `[S]` the value of the property in each state (probabilities; expected rewards,
        ``inf`` where PRISM reports infinity). Unbounded properties: the midpoint of the
        interval iteration's final lower and upper bounds.
      policy: the optimizing deterministic policy, int32: `[S]` for unbounded properties,
        `[k, S]` (``policy[t]`` at step ``t``, ``t = 0`` first) for bounded ones. Never a
        masked action. For ``P=?``/``R=?`` on a DTMC, its only action.
      error_bound: `[S]` a bound on ``|values − exact|`` in the working dtype, ``exact``
        being the value of the model's rows read as distributions (see the module): half the
        final interval (unbounded), the accumulated rounding (bounded), 0 where the
        precomputation decided the value; ``inf`` where no upper bound could be found (see
        :func:`check`).
      value_at_initial: scalar ``values[model.initial_state]``.
      converged: scalar bool: every state's interval met ``tol`` (always True for bounded
        properties).
      iterations: scalar int: interval iterations (or the step bound ``k``).
    """

    values: jax.Array
    policy: jax.Array
    error_bound: jax.Array
    value_at_initial: jax.Array
    converged: jax.Array
    iterations: jax.Array


def check(
    mdp: Model,
    prop: str,
    *,
    labels: dict | None = None,
    reward_name: str | None = None,
    horizon: int | None = None,
    tol: float | None = None,
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
) -> CheckResult:
    """Checks a PRISM property on a model, as PRISM and Storm do (see the module).

    Example::

        labels = jp.load_labels("model.lab")
        res = jp.check(mdp, 'Pmax=? [F "goal"]', labels=labels)
        res.value_at_initial, res.error_bound[mdp.initial_state], res.policy

    Args:
      mdp: a :class:`TabularMDP` or :class:`SparseMDP`. Its ``rewards`` `[S, A]` are the
        reward structure of ``R`` properties (a state reward plus the action's expected
        transition reward, as :func:`load_mdp` builds them); its ``discount``, ``horizon``
        (except as ``T``) and ``terminal_reward`` are not used: PRISM's properties are
        undiscounted. Masked actions are never chosen.
      prop: the property, e.g. ``'Pmin=? [!"fail" U<=10 "done"]'`` or
        ``'R{"time"}min=? [F "done"]'``.
      labels: ``{name: bool[S]}``, e.g. :func:`load_labels`'s; ``"init"`` defaults to the
        model's initial state. ``"deadlock"`` and every other label must be given.
      reward_name: the name of the model's reward structure: ``R{"name"}`` must match it
        (``R{1}`` always does). None: any name is accepted (the model has one structure).
      horizon: the value of the constant ``T`` in step bounds (``F<=T``, ``C<=T``);
        default: the model's ``horizon``.
      tol: relative precision of unbounded properties: iterate until every state's interval
        ``[lower, upper]`` has ``upper − lower <= tol · (upper + lower)``, i.e. ``values``
        within ``tol`` (relative) of the exact value. Default 1e-6 in float64 (PRISM's and
        Storm's), 1e-4 in float32.
      max_iterations: a cap on interval iterations (then ``converged`` is False; the bound
        still holds).

    Returns:
      A :class:`CheckResult`. Unbounded properties: ``values`` are the midpoints of the final
      intervals and ``error_bound`` their half-widths (0 on precomputed states); an
      expected-reward property whose upper bound would overflow the dtype reports the lower
      bound with ``error_bound`` inf. Bounded properties: backward induction, exact up to the
      rounding ``error_bound`` reports.

    Raises:
      ValueError: a property outside the supported subset or malformed (naming the position
        in the string), an unknown label or reward structure, ``P=?``/``R=?`` on a model with
        a choice, negative rewards in ``R [F ...]``, a traced model for an unbounded property
        (its precomputation runs on the host; bounded properties work under ``jax.jit``).
    """
    mdp = check_model(mdp)
    prop_ = parse_property(prop)
    tol, max_iterations = _iteration_limits(np.dtype(mdp.rewards.dtype), tol, max_iterations)
    check_reward_structure(prop_, reward_name)
    bound = step_bound(prop_, mdp, horizon)
    unbounded = bound is None and prop_.path in ("F", "U", "G")
    check_dtmc(prop_, mdp)

    concrete = unbounded or is_concrete(labels)
    if unbounded and not is_concrete(mdp):
        raise property_error(
            prop_.text,
            prop_.positions["path"],
            "unbounded properties need a concrete model "
            "(the graph precomputation runs on the host); under jax.jit use a step-bounded one",
        )
    lab = check_labels(mdp, labels, concrete)
    xp = np if concrete else jnp
    sat = functools.partial(satisfying, prop_.text, labels=lab, xp=xp)
    out = _solve(prop_, mdp, sat, bound, tol, max_iterations, xp)
    return _result(mdp, out)


def _solve(prop_: Property, mdp: Model, sat, bound, tol, max_iterations, xp):
    """Solves the parsed property: ``(values, error, policy, iterations, converged)``."""
    dtype = np.dtype(mdp.rewards.dtype)
    minimize = prop_.opt == "min"
    right = sat(prop_.right) if prop_.right is not None else None
    left = sat(prop_.left) if prop_.left is not None else None
    if prop_.kind == "R" and prop_.path == "F":
        _check_nonnegative_rewards(prop_, mdp)
        return solve_unbounded_reward(
            Graph(mdp), mdp, np.asarray(right), minimize, tol, max_iterations
        )
    if prop_.kind == "R":  # C<=k
        zeros = np.zeros(mdp.num_states, dtype)
        no_fixed = np.zeros(mdp.num_states, bool)
        return solve_bounded(mdp, mdp.rewards, no_fixed, zeros, zeros, bound, minimize)
    return _probability(mdp, prop_.path, left, right, bound, minimize, tol, max_iterations, xp)


def _iteration_limits(dtype: np.dtype, tol, max_iterations) -> tuple[float, int]:
    """``(tol, max_iterations)`` checked, with the dtype's default ``tol``."""
    if tol is not None:
        check_range("tol", tol, low=0.0, low_open=True, scalar=True)
    max_iterations = min(check_count("max_iterations", max_iterations), 2**31 - 1)
    return (DEFAULT_TOL[dtype] if tol is None else float(tol)), max_iterations


def check_reward_structure(prop_: Property, reward_name: str | None) -> None:
    """``R{i}`` must be ``R{1}``, ``R{"name"}`` the model's ``reward_name`` when given."""
    text, pos = prop_.text, prop_.positions
    if prop_.kind == "R":
        if isinstance(prop_.reward, int) and prop_.reward != 1:
            raise property_error(
                text, pos["reward"], f"no reward structure {prop_.reward} (the model has one: 1)"
            )
        if isinstance(prop_.reward, str) and reward_name is not None:
            if prop_.reward != reward_name:
                raise property_error(
                    text,
                    pos["reward"],
                    f"no reward structure {prop_.reward!r} (the model's is {reward_name!r})",
                )


def step_bound(prop_: Property, mdp: Model, horizon: int | None) -> int | None:
    """The step bound ``k``, ``T`` resolved to ``horizon`` or the model's; None if unbounded."""
    bound = prop_.bound
    if bound == "T":
        bound = horizon if horizon is not None else mdp.horizon
        if bound is None:
            raise property_error(
                prop_.text, prop_.positions["bound"], "T needs horizon= (the model has no horizon)"
            )
        bound = check_int("horizon", bound, low=0)
    return bound


def check_dtmc(prop_: Property, mdp: Model) -> None:
    """``P=?``/``R=?`` need a DTMC (not checked on a traced mask: computed as the max)."""
    if prop_.opt is None and is_concrete(mdp.action_mask):
        if np.any(np.asarray(mdp.action_mask).sum(axis=1) != 1):
            raise property_error(
                prop_.text,
                prop_.positions["operator"],
                f"{prop_.kind}=? needs a DTMC (one allowed action per state); this model has "
                f"choices: use {prop_.kind}max=? or {prop_.kind}min=?",
            )


def _check_nonnegative_rewards(prop_: Property, mdp: Model) -> None:
    """``R [F ...]`` needs non-negative rewards on the allowed pairs (PRISM's rule)."""
    R = np.asarray(mdp.rewards)
    neg = np.argwhere((R < 0) & np.asarray(mdp.action_mask))
    if neg.size:
        s, a = (int(i) for i in neg[0])
        raise property_error(
            prop_.text,
            prop_.positions["operator"],
            f"R [F ...] needs non-negative rewards (PRISM's rule); reward {R[s, a]:.9g} at "
            f"(state {s}, action {a})",
        )


def _probability(mdp: Model, path, left, right, bound, minimize, tol, max_iterations, xp):
    """A ``P`` property: reachability of ``target`` while avoiding ``avoid`` (``G``: of the
    complement, negated). ``left``/``right``: `[S]` bool, the path's state formulas."""
    S = mdp.num_states
    dtype = np.dtype(mdp.rewards.dtype)
    no_rewards = np.zeros((S, mdp.num_actions), dtype)
    negate = path == "G"
    nothing = xp.zeros(S, bool)
    if negate:  # P[G φ] = 1 − P[F ¬φ], the optimum swapped
        target, avoid, minimize = ~right, nothing, not minimize
    elif path in ("F", "X"):
        target, avoid = right, nothing
    else:
        target, avoid = right, ~left & ~right
    if path == "X":
        init = target.astype(dtype)
        out = solve_bounded(mdp, no_rewards, nothing, init, init, 1, minimize)
    elif bound is None:  # unbounded: F, U or G without a step bound
        out = solve_unbounded_probability(
            Graph(mdp), mdp, np.asarray(target), np.asarray(avoid), minimize, tol, max_iterations
        )
    else:
        fixed = target | avoid
        init = target.astype(dtype)
        out = solve_bounded(mdp, no_rewards, fixed, init, init, bound, minimize)
    if negate:
        v, e, policy, it, conv = out
        out = (1 - v, e + np.finfo(dtype).eps * (e > 0), policy, it, conv)
    return out


def _result(mdp: Model, out) -> CheckResult:
    """The solvers' ``(values, error, policy, iterations, converged)`` as a CheckResult."""
    values, error, policy, it, conv = out
    if isinstance(values, np.ndarray):  # host results: transfers, no eager device ops
        initial = jnp.asarray(values[mdp.initial_state])
    else:
        initial = values[mdp.initial_state]
    return CheckResult(
        values=jnp.asarray(values),
        policy=jnp.asarray(policy),
        error_bound=jnp.asarray(error),
        value_at_initial=initial,
        converged=jnp.asarray(conv),
        iterations=jnp.asarray(it, jnp.int32),
    )
