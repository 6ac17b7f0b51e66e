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
  [C<=k]`` (reward accumulated in ``k`` steps): backward induction, exact up to rounding, in
  memory ``O(S)`` whatever ``k`` (it keeps the first step's decision rule only, unless
  ``step_policy=True`` asks for the `[k, S]` rules of every step).
- ``P=?``/``R=?``: the same on a DTMC (refused on a model with a choice; PRISM does the same).

φ is a state formula over labels and state variables: ``"goal"``, ``true``, ``false``,
comparisons ``s=2``, ``x+1<=y`` (``= != < <= > >=`` of integer sums; ``variables=``), ``!``,
``&``, ``|``, ``=>``, ``<=>`` and parentheses (PRISM's precedence: ``!`` > ``&`` > ``|`` >
``=>`` > ``<=>``). Boolean queries (``P>=0.9 [...]``, ``Pmax<0.1 [...]``), ``filter(...)``
and several properties at once are :func:`jaxprivmdp.check_all`'s (``_query``). Not
supported (a ValueError naming the position): nested ``P``/``R`` operators, constants other
than ``T`` (a ``.props`` file's are substituted), time intervals (``F>=k``, ``F[a,b]``),
``W``/``R`` (weak until, release), ``S``, ``LRA``, multi-objective queries, ``R [I=k]``,
``R [S]``, ``R [F<=k]`` and, on point models, total reward ``R [C]`` (checked on interval
models: ``jp.interval_model(mdp)`` is a point model as one).

The exact value. Rows are validated to sum to 1 within 3.1e-5 and never renormalized; the
value bounded here is that of the rows read as the distributions they stand for (each row
divided by its sum), which the graph precomputation assumes too. A stored float32 model's
rows sum to 1 only within a few ulps, and its "value of the rows as stored" would make a
state that reaches the target with probability 1 leak mass each step.

Precision. PRISM's and Storm's default, 1e-6 relative, in every dtype mode: a concrete model
is checked in float64 (a ``jax.enable_x64(True)`` block inside the call, its rows divided by
their sums) and the answer narrowed to the model's dtype, ``[lower, upper]`` rounded outward
so that it still holds the exact value (``_precision``). Unbounded properties: interval
iteration, then, if it has not met ``tol`` after a thousand steps, from bounds that
policy iteration guessed and the host verified (``_guess``). A traced model (a step-bounded
property under ``jax.jit``) is checked in its own dtype. :class:`CheckResult`'s ``precision``
says what was reached.

This module is the public boundary: it validates the arguments and dispatches. The grammar is
in ``_parse``, the labels in ``_labels``, the host graph precomputation in
``_graph``, the jitted cores and their rounding in ``_iteration``, the
unbounded properties in ``_unbounded``, their guessed bounds in ``_guess`` and their policy in
``_policy``; the float64 copy and the narrowing of the answer in ``_precision``.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import check_count, check_int, check_range, is_concrete
from ..models.core import INTERVAL_MODELS, Model, check_model
from ._batch import batch_probability, batch_reward, is_batch, unstack
from ._graph import one_per_row
from ._host_form import graph_of, host_batch, host_model
from ._interval_check import check_interval
from ._iteration import solve_bounded
from ._labels import check_labels, satisfying
from ._parse import Property, parse_property, property_error
from ._precision import (
    DEFAULT_TOL,
    complement,
    outward,
    refuse_traced,
    tracing,
    working_tol,
)
from ._result import CheckResult, host_result, stacked, traced_result
from ._unbounded import solve_unbounded_probability, solve_unbounded_reward

DEFAULT_MAX_ITERATIONS = 100_000


def check(
    mdp: Model,
    prop: str,
    *,
    labels: dict | None = None,
    variables: dict | None = None,
    reward_name: str | None = None,
    horizon: int | None = None,
    tol: float | None = None,
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
    step_policy: bool = False,
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
        undiscounted. Masked actions are never chosen. Or a batch of models of one shape, a
        leading axis on every array (``jax.vmap(lambda key: jp.privatize(key, mdp,
        mech))(keys)``): each checked, every field of the result gaining that axis; models of
        one support, action mask and rewards (the releases of one model) share the graph
        precomputation and every loop of an unbounded property.
      prop: the property, e.g. ``'Pmin=? [!"fail" U<=10 "done"]'`` or
        ``'R{"time"}min=? [F "done"]'``.
      labels: ``{name: bool[S]}``, e.g. :func:`load_labels`'s; ``"init"`` defaults to the
        model's initial state. ``"deadlock"`` and every other label must be given.
      variables: ``{name: int[S]}``, the state variables of atoms such as ``s=2`` or ``x>y``
        (:func:`load_variables` reads PRISM's ``.sta``); booleans are 0/1.
      reward_name: the name of the model's reward structure: ``R{"name"}`` must match it
        (``R{1}`` always does). None: any name is accepted (the model has one structure).
      horizon: the value of the constant ``T`` in step bounds (``F<=T``, ``C<=T``);
        default: the model's ``horizon``.
      tol: relative precision of unbounded properties: iterate until every state's interval
        ``[lower, upper]`` has ``upper − lower <= tol · (upper + lower)`` (``precision <=
        tol``), i.e. ``values`` within ``tol`` (relative) of the exact value, or the gap is
        at most ``tiny / eps`` of the dtype (about 1e-292 in float64: values below the
        smallest normal number have no relative precision). Default 1e-6, PRISM's and
        Storm's, in float32 and float64 alike (the check runs in float64).
      max_iterations: a cap on interval iterations (then ``converged`` is False; the bound
        still holds): on each window of states, whose passes are capped at its components
        plus 64, 1,000, 8× more … iterations, up to this; over all states where the
        components' order cannot run. ``iterations`` sums the windows', so it may exceed it.
      step_policy: for a bounded property, also keep the decision rule of every step:
        ``policy`` `[k, S]` (``k S`` int32s: 5 GB for ``k = 1300``, ``S = 10⁶``; on the host
        for a concrete model, as every field: a copy from a GPU). Default
        False: ``policy`` is the `[S]` rule of the first step, and memory does not grow
        with ``k`` (``O(S A)``, the model's size). A Python bool (static under
        ``jax.jit``); unbounded properties ignore it (their policy is stationary).

    Returns:
      A :class:`CheckResult`. Unbounded properties: the final interval ``[lower, upper]``
      of interval iteration; ``values`` its midpoint if converged, else ``lower`` (with
      ``error_bound = upper − lower``, inf if no upper bound was found). Bounded properties:
      backward induction, exact up to the rounding ``[lower, upper]`` accounts for.
      Unbounded properties iterate the strongly connected components of the undecided
      states in topological order, after and between verified guesses.

    Raises:
      ValueError: a property outside the supported subset or malformed (naming the position
        in the string), an unknown label or reward structure, ``P=?``/``R=?`` on a model with
        a choice, negative rewards in ``R [F ...]`` or ``R [C]``, ``R [C]`` on a point model, a
        traced model for an unbounded property (its precomputation runs on the host; bounded
        properties work under ``jax.jit``), a batch of models under ``jax.jit``.
      TypeError: ``step_policy`` not a bool.
    """
    if isinstance(mdp, INTERVAL_MODELS):
        _check_flag("step_policy", step_policy)
        limits = _iteration_limits(tol, max_iterations)
        return _check_interval_model(mdp, prop, labels, variables, reward_name, horizon, limits)
    batch, whole = _batch_models(mdp), mdp
    mdp = check_model(batch[0] if batch else mdp)
    step_policy = _check_flag("step_policy", step_policy)
    prop_ = parse_property(prop)
    tol, max_iterations = _iteration_limits(tol, max_iterations)
    bound, unbounded = _point_property(prop_, mdp, reward_name, horizon)
    concrete = unbounded or is_concrete(labels, variables)
    lab = check_labels(mdp, labels, concrete, variables)
    wides = _shared_batch(whole) if batch and unbounded else None
    if batch and wides is None:  # model by model
        options = dict(labels=labels, variables=variables, reward_name=reward_name)
        limits = dict(horizon=horizon, tol=tol, max_iterations=max_iterations)
        return stacked(
            [check(m, prop, **options, **limits, step_policy=step_policy) for m in batch]
        )
    xp = np if concrete else jnp
    sat = functools.partial(satisfying, prop_.text, labels=lab, xp=xp)
    limits = (tol, max_iterations, step_policy)
    if not (concrete and is_concrete(mdp)) or tracing():  # traced: the model's dtype
        return traced_result(mdp, _solve(prop_, mdp, sat, bound, limits, jnp))
    return _host_check(prop_, mdp, wides, sat, bound, limits, unbounded)


def _shared_batch(whole: Model):
    """The float64 host form of a batched model (:func:`host_batch`, as :func:`_host_check`
    makes one model's) where its models share one support, else None."""
    with jax.enable_x64(True):
        wides, shared = host_batch(whole)
    return wides if shared else None


def _check_interval_model(mdp, prop: str, labels, variables, reward_name, horizon, limits):
    """:func:`check` of an interval model (``limits``: ``(tol, max_iterations)``)."""
    prop_ = parse_property(prop)
    check_reward_structure(prop_, reward_name)
    bound = step_bound(prop_, mdp, horizon)
    total = prop_.path == "C" and bound is None
    if prop_.kind == "R" and is_concrete(mdp.rewards):  # (the widening assumes r >= 0)
        why = "PRISM's rule" if prop_.path == "F" or total else "interval models"
        _check_nonnegative_rewards(prop_, mdp, why)
    return check_interval(mdp, prop_, labels, variables, bound, limits)


def _point_property(prop_: Property, mdp: Model, reward_name, horizon) -> tuple:
    """``(bound, unbounded)`` of a property of a point model (``bound``: the step bound,
    None if none), once the property is one this model can be checked for: its reward
    structure, no total reward, ``P=?``/``R=?`` on a DTMC, a concrete model where unbounded."""
    check_reward_structure(prop_, reward_name)
    bound = step_bound(prop_, mdp, horizon)
    unbounded = bound is None and prop_.path in ("F", "U", "G")
    if prop_.path == "C" and bound is None:
        raise property_error(
            prop_.text, prop_.positions["path"], "total reward R [C] is checked on interval "
            "models only (jp.interval_model(mdp) is this model as one); give a bound: C<=k",
        )  # fmt: skip
    check_dtmc(prop_, mdp)
    if unbounded:
        refuse_traced(prop_, mdp, "graph precomputation")
    return bound, unbounded


def _host_check(prop_: Property, mdp: Model, wides, sat, bound, limits, unbounded: bool):
    """:func:`check` of a concrete model (or of a batch of one support whose first model is
    ``mdp``: ``wides``, its :func:`host_batch` form) on the host in float64, the answer
    narrowed to the model's dtype (``limits``: ``(tol, max_iterations, step_policy)``)."""
    tol, max_iterations, step_policy = limits
    dtype = np.dtype(mdp.rewards.dtype)
    with jax.enable_x64(True):
        wide = host_model(mdp) if wides is None else wides.models[0]
        wide_limits = (working_tol(tol, dtype), max_iterations, step_policy)
        out = _solve(prop_, wide, sat, bound, wide_limits, np, wides)
        lower, upper = (np.asarray(x) for x in out[:2])
        policy = out[2]
    answer_tol = tol if unbounded else None  # (a batch: one answer, a leading axis on each)
    return host_result(mdp, (lower, upper, policy, out[3], out[4]), dtype, answer_tol)


def _batch_models(mdp) -> list | None:
    """The models of a batched model (a leading axis), or None for one model."""
    if not is_batch(mdp):
        return None
    if tracing() or not is_concrete(mdp):
        raise ValueError(
            "a batch of models (a leading axis on every array) is checked on the host: "
            "pass concrete models, outside jax.jit"
        )
    models = unstack(mdp)
    if not models:
        raise ValueError("a batch of models must hold at least one model, got 0")
    for m in models[1:]:
        check_model(m)
    return models


def _solve(prop_: Property, mdp: Model, sat, bound, limits, xp, batch=None):
    """Solves the parsed property: ``(lower, upper, policy, iterations, converged)`` in the
    dtype of ``mdp`` (float64 on the host for unbounded properties). ``limits``: ``(tol,
    max_iterations, step_policy)``; ``batch``: the :class:`~jaxprivmdp.properties._batch.Batch`
    of float64 models of ``mdp``'s support (``mdp`` first), all solved at once (an
    unbounded property): batched answers."""
    tol, max_iterations, step_policy = limits
    dtype = np.dtype(mdp.rewards.dtype)
    minimize = prop_.opt == "min"
    right = sat(prop_.right) if prop_.right is not None else None
    left = sat(prop_.left) if prop_.left is not None else None
    if prop_.kind == "R" and prop_.path == "F":
        _check_nonnegative_rewards(prop_, mdp)
        solve = batch_reward if batch else solve_unbounded_reward
        return solve(graph_of(mdp), batch or mdp, np.asarray(right), minimize, tol, max_iterations)
    if prop_.kind == "R":  # C<=k
        zeros = np.zeros(mdp.num_states, dtype)
        no_fixed = np.zeros(mdp.num_states, bool)
        out = solve_bounded(mdp, mdp.rewards, no_fixed, zeros, zeros, bound, minimize, step_policy)
        return _bounded_interval(out, xp)
    return _probability(mdp, prop_.path, left, right, bound, minimize, (*limits, batch), xp)


def _iteration_limits(tol, max_iterations) -> tuple[float, int]:
    """``(tol, max_iterations)`` checked, with the default ``tol``."""
    if tol is not None:
        check_range("tol", tol, low=0.0, low_open=True, scalar=True)
    max_iterations = min(check_count("max_iterations", max_iterations), 2**31 - 1)
    return (DEFAULT_TOL if tol is None else float(tol)), max_iterations


def _check_flag(name: str, value) -> bool:
    """A Python bool option (static under ``jax.jit``)."""
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def _bounded_interval(out, xp):
    """Backward induction's ``(values, error, ...)`` as ``(lower, upper, ...)``."""
    v, e, *rest = out
    if xp is np:
        v, e = np.asarray(v), np.asarray(e)
    return (*outward(v - e, v + e, xp), *rest)


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
        if not one_per_row(np.asarray(mdp.action_mask, bool)):
            raise property_error(
                prop_.text,
                prop_.positions["operator"],
                f"{prop_.kind}=? needs a DTMC (one allowed action per state); this model has "
                f"choices: use {prop_.kind}max=? or {prop_.kind}min=?",
            )


def _check_nonnegative_rewards(prop_: Property, mdp: Model, why: str = "PRISM's rule") -> None:
    """``R [F ...]`` needs non-negative rewards on the allowed pairs (``why``: PRISM's rule;
    any ``R`` of an interval model, whose backups are widened for ``r >= 0`` only)."""
    R = np.asarray(mdp.rewards)
    neg = np.argwhere((R < 0) & np.asarray(mdp.action_mask))
    if neg.size:
        s, a = (int(i) for i in neg[0])
        raise property_error(
            prop_.text,
            prop_.positions["operator"],
            f"{'R [F ...]' if prop_.path == 'F' else 'R [C]'} needs non-negative rewards "
            f"({why}); reward {R[s, a]:.9g} at "
            f"(state {s}, action {a})",
        )


def _probability(mdp: Model, path, left, right, bound, minimize, limits, xp):
    """A ``P`` property: reachability of ``target`` while avoiding ``avoid`` (``G``: of the
    complement, negated). ``left``/``right``: `[S]` bool, the path's state formulas;
    ``limits``: ``(tol, max_iterations, step_policy, batch)``."""
    tol, max_iterations, step_policy, batch = limits
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
        out = solve_bounded(mdp, no_rewards, nothing, init, init, 1, minimize, step_policy)
        out = _bounded_interval(out, xp)
    elif bound is None:  # unbounded: F, U or G without a step bound
        solve = batch_probability if batch else solve_unbounded_probability
        target, avoid = np.asarray(target), np.asarray(avoid)
        out = solve(graph_of(mdp), batch or mdp, target, avoid, minimize, tol, max_iterations)
    else:
        fixed = target | avoid
        init = target.astype(dtype)
        out = solve_bounded(mdp, no_rewards, fixed, init, init, bound, minimize, step_policy)
        out = _bounded_interval(out, xp)
    if negate:
        lower, upper, *rest = out
        out = (*complement(lower, upper, xp), *rest)
    return out
