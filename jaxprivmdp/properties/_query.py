"""Boolean queries, filters and several properties at once: :func:`check_all`.

Each property's numbers come from :func:`~._check.check`; this module adds PRISM's answer on
top of them (the grammar is in ``_query_parse``).

- A boolean query ``P⋈p [φ]`` (``⋈`` one of ``>= > <= <``) holds in a state when the
  probability satisfies the bound *for every scheduler* (PRISM's semantics): on a model with a
  choice, ``P>=p``/``P>p`` compare ``Pmin``, ``P<=p``/``P<p`` compare ``Pmax`` (the same for
  ``R``). With an explicit optimum (Storm's ``Pmax>=p``) that optimum; on a DTMC its value.
- The verdict is honest about the numerical error. Each state's value lies in the interval
  ``[lower, upper]`` of the check (the result's ``lower``/``upper``). A state is *decided*
  when the bound holds, or fails, for every number of its interval. When the threshold lies
  inside the interval of a state of an unbounded property, the property is checked once more
  with a relative precision finer than the threshold's distance to the value (down to 10
  ulps of the dtype); a state still undecided after that (its value is the threshold up to
  rounding, or the iteration could not get closer) is reported in ``decided`` as False, with
  ``satisfied`` the comparison of its value, which is PRISM's answer.
- ``filter(op, prop, states)``: ``op`` over the states where ``states`` holds (default: all),
  PRISM's semantics. A property without a filter is answered at the initial state.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import is_concrete
from ..models.core import INTERVAL_MODELS, Model, check_model
from ._batch import is_batch
from ._check import check
from ._labels import check_labels, satisfying
from ._parse import Formula, Property, property_error
from ._query_parse import Filter, Query, numerical_text, parse_query, split_properties
from ._result import CheckResult

_BOOLEAN_OPS = ("forall", "exists", "count")
_NUMERIC_OPS = ("min", "max", "sum", "avg", "range", "argmin", "argmax")
_FOR_ALL = {">=": "min", ">": "min", "<=": "max", "<": "max"}


class QueryResult(NamedTuple):
    """The answer to a boolean query such as ``P>=0.9 [F<=10 "goal"]``, per state.

    Attributes:
      satisfied: `[S]` bool, where the bound holds (the comparison of ``result.values``).
      decided: `[S]` bool, where the comparison holds, or fails, for every number of the
        state's interval (see the module); False: the threshold lies within the numerical error.
      verdict_at_initial: scalar bool, ``satisfied[mdp.initial_state]``.
      result: the :class:`CheckResult` of the numerical query compared (``Pmin=? [...]`` for
        ``P>=p`` on a model with a choice).
    """

    satisfied: jax.Array
    decided: jax.Array
    verdict_at_initial: jax.Array
    result: CheckResult


class FilterResult(NamedTuple):
    """The answer to ``filter(op, prop, states)``.

    Attributes:
      value: ``forall``/``exists``: bool; ``count``: int; ``min``/``max``/``sum``/``avg``:
        float; ``range``: `[2]` (min, max); ``argmin``/``argmax``: `[S]` bool, the states of
        the filter attaining it; ``state``/``first``: the value (or truth) at the filter's one
        state / its first; ``print``: `[S]`, the values (or truths) of every state (those of
        the filter are ``states``).
      states: `[S]` bool, the filter's states.
      decided: scalar bool: False when a state the answer depends on is undecided
        (:class:`QueryResult`); True for numerical and state-formula properties.
      error_bound: a bound on ``|value − exact|`` for numerical values (the shape of
        ``value``; 0 for counts and truths).
      result: the filtered property's answer: a :class:`CheckResult`, a :class:`QueryResult`
        or, for a state formula, its `[S]` bool truth.
    """

    value: jax.Array
    states: jax.Array
    decided: jax.Array
    error_bound: jax.Array
    result: CheckResult | QueryResult | jax.Array


def check_all(
    mdp: Model,
    properties,
    *,
    labels: dict | None = None,
    variables: dict | None = None,
    reward_name: str | None = None,
    horizon: int | None = None,
    tol: float | None = None,
    max_iterations: int | None = None,
    step_policy: bool = False,
) -> list:
    """Checks several PRISM properties on one model: numerical, boolean and filter queries.

    Example::

        props = jp.load_properties("model.props")      # or 'P>=0.9 [F<=10 "goal"]; ...'
        for r in jp.check_all(mdp, props, labels=jp.load_labels("model.lab"),
                              variables=jp.load_variables("model.sta")):
            ...  # a CheckResult, QueryResult or FilterResult, one per property

    Args:
      mdp: a :class:`TabularMDP`, :class:`SparseMDP` or :class:`RaggedMDP` (concrete: this
        runs on the host).
      properties: a string of properties separated by ``;``, or a list of strings (such as
        :func:`load_properties`'s). Each may start with a name, ``"name": ``, and is a
        numerical query (``Pmax=? [F "goal"]``, as :func:`check` takes), a boolean query
        (``P>=0.9 [F<=10 "goal"]``, ``Pmax<0.1 [...]``, ``R{"time"}<=5 [F "done"]``) or
        ``filter(op, prop[, states])`` with ``op`` one of forall, exists, count, min, max,
        sum, avg, range, argmin, argmax, state, first, print.
      labels: as in :func:`check`.
      variables: as in :func:`check`.
      reward_name: as in :func:`check`.
      horizon: as in :func:`check`.
      tol: as in :func:`check`.
      max_iterations: as in :func:`check` (None: its default).
      step_policy: as in :func:`check`: the `[k, S]` policy of every bounded property (of
        the numerical query a boolean query or a filter compares, too).

    Returns:
      A list, one answer per property in order: a :class:`CheckResult` for a numerical
      query, a :class:`QueryResult` for a boolean query, a :class:`FilterResult` for a filter.

    Raises:
      ValueError: as :func:`check` for each property (naming the position in it); a filter
        whose states are empty (PRISM: "filter satisfies no states"), ``filter(state, ...)``
        over more than one state, an operator that does not fit the property's type
        (``forall`` of a number, ``min`` of a truth), a batch of models.
    """
    if is_batch(mdp):  # filters and verdicts read one model's states
        raise ValueError(
            "check_all takes one model, got a batch (a leading axis on every array): "
            "jp.check checks a batch for one numerical query, or call check_all per model"
        )
    if not isinstance(mdp, INTERVAL_MODELS):  # an interval model: each query through check
        mdp = check_model(mdp)
    if not is_concrete(mdp):
        raise ValueError(
            "check_all runs on the host (filters, verdicts): give it a concrete model; under "
            "jax.jit use jp.check with a step-bounded numerical query"
        )
    if isinstance(properties, str):
        properties = split_properties(properties)
    if not isinstance(properties, list | tuple) or not properties:
        raise ValueError("properties must be a non-empty string or list of strings")
    options = {"labels": labels, "variables": variables, "reward_name": reward_name}
    options.update(horizon=horizon, tol=tol, step_policy=step_policy)
    if max_iterations is not None:
        options["max_iterations"] = max_iterations
    return [answer(mdp, parse_query(p), options) for p in properties]


def answer(mdp: Model, query: Query, options: dict):
    """One parsed property's answer (see :func:`check_all`)."""
    body = query.body
    if isinstance(body, Filter):
        return _filter(mdp, body, options)
    if body.comparison is None:
        return check(mdp, query.text, **options)
    return _boolean(mdp, body, query.start, len(body.text), options)


def _is_dtmc(mdp: Model) -> bool:
    return bool(np.all(np.asarray(mdp.action_mask).sum(axis=1) == 1))


def _boolean(mdp: Model, prop: Property, start: int, end: int, options: dict) -> QueryResult:
    """``P⋈p [...]``: the numerical query of the right optimum, compared (see the module)."""
    opt = None if prop.opt is not None or _is_dtmc(mdp) else _FOR_ALL[prop.comparison]
    text = numerical_text(prop, start, end, opt)
    res = _checked_as(mdp, prop.text[start:end].strip(), text, options)
    satisfied, decided = _compare(res, prop.comparison, prop.threshold)
    if not decided.all() and prop.bound is None and prop.path in ("F", "U", "G"):
        tol = _finer_tol(res, decided, prop.threshold)
        if tol is not None and bool(res.converged):
            res = check(mdp, text, **{**options, "tol": tol})
            satisfied, decided = _compare(res, prop.comparison, prop.threshold)
    s0 = mdp.initial_state
    return QueryResult(
        satisfied=jnp.asarray(satisfied),
        decided=jnp.asarray(decided),
        verdict_at_initial=jnp.asarray(satisfied[s0]),
        result=res,
    )


def _checked_as(mdp: Model, original: str, text: str, options: dict) -> CheckResult:
    """:func:`check` of ``text``, the numerical query of ``original``: its errors name both."""
    try:
        return check(mdp, text, **options)
    except ValueError as e:
        message, head = str(e), f"property {text!r}"
        if message.startswith(head):
            message = f"property {original!r}, checked as {text!r}" + message[len(head) :]
        raise ValueError(message) from None


def interval(res: CheckResult) -> tuple[np.ndarray, np.ndarray]:
    """Each state's ``[lower, upper]`` in float64."""
    return np.asarray(res.lower, np.float64), np.asarray(res.upper, np.float64)


def _compare(res: CheckResult, op: str, p: float) -> tuple[np.ndarray, np.ndarray]:
    """``(satisfied, decided)``: the value compared, and whether its whole interval agrees."""
    cmp = {">=": np.greater_equal, ">": np.greater, "<=": np.less_equal, "<": np.less}[op]
    values = np.asarray(res.values, np.float64)
    lower, upper = interval(res)
    holds = cmp(lower, p) & cmp(upper, p)
    fails = ~cmp(lower, p) & ~cmp(upper, p)
    return cmp(values, p), holds | fails


def _finer_tol(res: CheckResult, decided: np.ndarray, p: float) -> float | None:
    """A relative precision that separates every undecided value from the threshold ``p``,
    or None when none can (a value equal to ``p``, or finer than 10 ulps)."""
    v = np.abs(np.asarray(res.values, np.float64)[~decided])
    gap = np.abs(v - p)
    floor = 10 * float(np.finfo(np.asarray(res.values).dtype).eps)
    tol = float(np.min(gap / (4 * np.maximum(v, np.finfo(np.float64).tiny))))
    return tol if tol >= floor else None


def _filter(mdp: Model, f: Filter, options: dict) -> FilterResult:
    """``filter(op, inner, states)`` (PRISM's semantics)."""
    lab = check_labels(mdp, options["labels"], True, options["variables"])
    states = np.ones(mdp.num_states, bool)
    if f.states is not None:
        states = np.asarray(satisfying(f.text, f.states, lab, np))
    if not states.any():
        raise property_error(f.text, f.pos, "the filter's states are empty (no state satisfies it)")
    inner = f.inner
    if isinstance(inner, Formula):
        result = jnp.asarray(satisfying(f.text, inner, lab, np))
        truth, truth_decided = np.asarray(result), np.ones(mdp.num_states, bool)
    elif inner.comparison is not None:
        end = f.inner_start + len(f.inner_text)
        result = _boolean(mdp, inner, f.inner_start, end, options)
        truth, truth_decided = np.asarray(result.satisfied), np.asarray(result.decided)
    else:
        result = check(mdp, f.inner_text, **options)
        return _numeric_filter(f, states, result)
    value, needs = _boolean_filter(f, states, truth)
    decided = bool(truth_decided[needs].all())
    if f.op in ("forall", "exists"):  # one decided counterexample (witness) settles it
        settles = truth_decided & states & (truth if f.op == "exists" else ~truth)
        decided = decided or bool(settles.any())
    return FilterResult(
        jnp.asarray(value), jnp.asarray(states), jnp.asarray(decided), jnp.zeros(()), result
    )


def _boolean_filter(f: Filter, states: np.ndarray, truth: np.ndarray):
    """``(value, the states the value depends on)`` of a filter over truths."""
    if f.op in _NUMERIC_OPS:
        raise property_error(
            f.text, f.pos, f"filter({f.op}, ...) needs a numerical property (=?), not a truth"
        )
    if f.op == "forall":
        return bool(truth[states].all()), states
    if f.op == "exists":
        return bool(truth[states].any()), states
    if f.op == "count":
        return int(truth[states].sum()), states
    if f.op == "print":
        return truth, states
    one = _one_state(f, states)
    return bool(truth[one]), np.arange(states.size) == one


def _one_state(f: Filter, states: np.ndarray) -> int:
    """The state of ``filter(state, ...)`` (exactly one) or ``filter(first, ...)``."""
    which = np.flatnonzero(states)
    if f.op == "state" and which.size != 1:
        raise property_error(
            f.text,
            f.pos,
            f"filter(state, ...) needs exactly one state in the filter, got {which.size}",
        )
    return int(which[0])


def _numeric_filter(f: Filter, states: np.ndarray, res: CheckResult) -> FilterResult:
    """A filter over the values of a numerical query, with its error bound."""
    if f.op in _BOOLEAN_OPS:
        raise property_error(
            f.text, f.pos, f"filter({f.op}, ...) needs a truth (a boolean query or formula)"
        )
    v = np.asarray(res.values, np.float64)
    lower, upper = interval(res)
    with np.errstate(invalid="ignore"):  # inf − inf where the value is infinite
        err = np.nan_to_num(np.maximum(v - lower, upper - v), nan=0.0)
    sel_v, sel_e = v[states], err[states]
    if f.op in ("min", "max", "range"):
        lo, hi = sel_v.min(), sel_v.max()
        value = {"min": lo, "max": hi, "range": np.array([lo, hi])}[f.op]
        error = sel_e.max() if f.op != "range" else np.array([sel_e.max()] * 2)
    elif f.op == "sum":
        value, error = sel_v.sum(), sel_e.sum()
    elif f.op == "avg":
        value, error = sel_v.mean(), sel_e.mean()
    elif f.op in ("argmin", "argmax"):
        best = sel_v.min() if f.op == "argmin" else sel_v.max()
        value, error = states & (v == best), np.zeros(())
    elif f.op == "print":
        value, error = v, err
    else:
        one = _one_state(f, states)
        value, error = v[one], err[one]
    dtype = np.asarray(res.values).dtype
    value = value if np.asarray(value).dtype == np.bool_ else np.asarray(value, dtype)
    return FilterResult(
        jnp.asarray(value),
        jnp.asarray(states),
        jnp.asarray(True),
        jnp.asarray(np.asarray(error, dtype)),
        res,
    )
