"""The privacy–utility frontier: every mechanism at the same (ε, δ), on one MDP.

For each target ε (at one δ) every mechanism is calibrated to its least-noise parameter
(``privacy.calibrate``), then one :func:`sweep` per mechanism runs all reachable targets:
privatize, synthesize, bound, and evaluate the private policy on the true MDP. A target a
mechanism cannot reach (the Dirichlet mechanism's ε has a floor as ``k → 0``) is kept as
unreachable, with NaN values, never dropped.

The guarantee is per row, for ``b``-adjacent rows (one row differs by at most ``b`` in ℓ1,
with any number of its entries changed: general ℓ1 adjacency, the same for every
mechanism): the MDP's guarantee when one (state, action) row may change. For the Dirichlet
mechanism it also needs a public lower bound ``η`` on the rows' entries and the row
dimension ``n``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import NamedTuple

import jax
import numpy as np

from .._checks import check_count, check_probability, check_range
from .._refusals import mechanism_form, refuses
from ..io.core import json_number
from ..mechanisms import Dirichlet, Gaussian, Laplace, Mechanism
from ..models.core import Model, RaggedMDP, transition_rows
from ..planning.core import evaluate_core, solve_core
from ..privacy import Adjacency, compose_rows
from ..privacy.core import PrivateRows, as_adjacency, ragged_rows, rows_of_input, smallest_entry
from ..properties.core import (
    BEST_CASE,
    WORST_CASE,
    PropertyModel,
    as_problem,
    host_problem_input,
    in_property_scale,
)
from ..sets.core import PAPER_SET, UncertaintySet, as_set
from ._chunks import Chunking
from ._sweep import sweep


class FrontierResult(NamedTuple):
    """Per mechanism (dict keys, in the order asked), per target ε.

    Attributes:
      epsilons: `[E]` the target ε's.
      delta: the target δ (the Laplace mechanism meets it with δ = 0).
      parameter: ``{mechanism: [E]}`` the calibrated parameter (NaN where unreachable).
      reachable: ``{mechanism: [E]}`` bool.
      floor: ``{mechanism: float}`` the smallest ε the mechanism reaches (0 for the
        additive ones; for the Dirichlet mechanism its ε at the smallest ``k`` searched).
      true_value, lower, upper, cost: ``{mechanism: [E, N]}`` at ``s0``, as in
        :class:`SweepResult` (NaN where unreachable); ``lower <= upper`` in the problem's own
        scale.
      optimal_value: the non-private optimum ``V*(s0)``.
      n: the row dimension used for calibration; eta: the public lower bound used; b: the
        adjacency bound.
      all_rows: ``{mechanism: [E, 2]}`` the whole-MDP ε at ``delta`` when every one of the
        ``num_rows`` private rows may change: basic composition and Rényi-DP composition
        (:func:`jaxprivmdp.privacy.compose_rows`), NaN where unreachable (0 with no private
        row).
      num_rows: the private rows: allowed rows with at least two entries on the support the
        mechanism privatizes over (a deterministic row is returned unchanged and costs
        nothing), the count of ``privacy.mdp_guarantee(..., adjacency="all")``.
      parameter_name: ``{mechanism: str}`` the name of its parameter (``k``, ``sigma``, ...).
      minimize: the objective's direction (True: a cost, minimized).

    Properties ``worst_case`` and ``best_case`` (``{mechanism: [E, N]}``): ``lower`` and
    ``upper`` for a maximization, ``upper`` and ``lower`` for a minimization.
    """

    epsilons: np.ndarray
    delta: float
    parameter: dict
    reachable: dict
    floor: dict
    true_value: dict
    lower: dict
    upper: dict
    cost: dict
    optimal_value: float
    n: int
    eta: float
    b: float
    all_rows: dict
    num_rows: int
    parameter_name: dict
    minimize: bool = False

    worst_case = WORST_CASE
    best_case = BEST_CASE

    def rows(self) -> list[dict]:
        """One flat row per (mechanism, ε): means and stds over trials, for CSV/JSON.

        The bounds as ``lower``/``upper`` and ``worst_case``/``best_case`` (relative to
        ``objective``, ``"maximize"`` or ``"minimize"``). Unreachable targets have
        ``reachable: False`` and None for every number; a number that is not finite is None
        (JSON's ``null``, the convention of every file jaxprivmdp writes).
        """
        out = []
        for m in self.parameter:
            for i, eps in enumerate(self.epsilons):
                row = {
                    "mechanism": m,
                    "parameter_name": self.parameter_name[m],
                    "epsilon": float(eps),
                    "delta": self.delta if m != "laplace" else 0.0,
                    "parameter": float(self.parameter[m][i]),
                    "reachable": bool(self.reachable[m][i]),
                    "all_rows_basic_epsilon": float(self.all_rows[m][i, 0]),
                    "all_rows_rdp_epsilon": float(self.all_rows[m][i, 1]),
                }
                for q in (*_QUANTITIES, "worst_case", "best_case"):
                    x = getattr(self, q)[m][i]
                    row[f"{q}_mean"] = float(np.mean(x))
                    row[f"{q}_std"] = float(np.std(x, ddof=1)) if x.size > 1 else 0.0
                row["optimal_value"] = self.optimal_value
                row["objective"] = "minimize" if self.minimize else "maximize"
                finite = {k: json_number(v) if isinstance(v, float) else v for k, v in row.items()}
                out.append(finite)
        return out


def public_eta(mdp: Model) -> float:
    """The smallest positive entry of the allowed rows: the Dirichlet accounting's ``η``.

    Using it treats that lower bound as public knowledge, as the accounting requires. The
    guarantee must cover the user's rows, not their rounding to the model's dtype: a
    float32 model stores 0.1 as 0.10000000149, above the true 0.1. So below float64 the
    stored minimum is lowered by one unit of its dtype's relative precision: a value
    rounded to nearest lies within half a unit of the input, so the result is a float64
    number never above the true smallest entry.
    """
    if isinstance(mdp, RaggedMDP):  # bucket by bucket: the same entries, never padded
        smallest = smallest_entry(mdp)
    else:
        allowed = np.asarray(transition_rows(mdp).probs)[np.asarray(mdp.action_mask)]
        smallest = allowed[allowed > 0].min()
    value = float(smallest)  # exact: every float dtype converts exactly to float64
    if np.dtype(smallest.dtype) == np.float64:
        return value
    info = np.finfo(smallest.dtype)
    # One unit of relative precision (at least one subnormal step), never below half.
    return max(value - max(value * float(info.eps), float(info.smallest_subnormal)), value / 2)


def problem_rows(model: Model, prop: PropertyModel | None, support) -> PrivateRows:
    """The rows the mechanisms change: one count of private rows and of their entries (a
    ragged model's bucket by bucket; a property's decided states are one-entry self-loops)."""
    if isinstance(model, RaggedMDP):
        return ragged_rows(model, support)
    return rows_of_input(host_problem_input(model, prop, support))


def _mechanism_class(m) -> type[Mechanism]:
    """A mechanism class, or a TypeError with the class form (for a name or an object)."""
    if isinstance(m, type) and issubclass(m, Mechanism):
        return m
    name = m if isinstance(m, str) else getattr(m, "name", None)
    form = mechanism_form(name, instance=False)
    raise TypeError(f"frontier() takes mechanism classes, got {m!r}: pass {form}")


def _calibrate(cls, eps, delta, adjacency: Adjacency, n, num_rows):
    """``(params [E], all_rows [E, 2])``: each target's least-noise parameter (NaN where
    the mechanism cannot reach it) and the whole-MDP ε, basic and Rényi-DP composition."""
    params = np.full(eps.size, np.nan)
    for i, e in enumerate(eps):
        try:
            params[i] = cls.calibrate(float(e), delta, adjacency, n=n).parameter
        except ValueError:
            pass  # unreachable: kept as NaN
    composed = np.full((eps.size, 2), np.nan)
    for i in np.flatnonzero(np.isfinite(params)):
        if num_rows == 0:  # nothing is privatized: nothing to compose
            composed[i] = 0.0
            continue
        c = compose_rows(cls(params[i]), adjacency, num_rows=num_rows, delta=delta, n=n)
        composed[i] = c.basic_epsilon, c.rdp_epsilon
    return params, composed


def _values_at(key, mdp, cls, params, num_trials, sweep_options, progress) -> dict:
    """``{quantity: [E, N]}``: one sweep over the reachable parameters (NaN elsewhere)."""
    ok = np.isfinite(params)
    values = {q: np.full((params.size, num_trials), np.nan) for q in _QUANTITIES}
    if ok.any():
        grid = cls(params[ok])
        report = None if progress is None else (lambda d, t: progress(cls.name, d, t))
        if "sampler" in grid.static_options():  # the Dirichlet's: sweeps sample fast
            grid = dataclasses.replace(grid, sampler="fast")
        res = sweep(
            key,
            mdp,
            grid,
            num_trials=num_trials,
            chunking=Chunking(progress=report),
            **sweep_options,
        )
        for q in values:
            values[q][ok] = np.asarray(getattr(res, q))
    return values


_ALL_MECHANISMS = (Dirichlet, Gaussian, Laplace)
_ADJACENCY = Adjacency(0.1)
_QUANTITIES = ("true_value", "lower", "upper", "cost")


def _optimal(model: Model) -> float:
    """The non-private optimum ``V*(s0)`` (of the transformed model, for a property)."""
    values = evaluate_core(model, solve_core(model, None, 10_000).policy)
    s0 = model.initial_state
    return float(values[0, s0] if model.is_finite_horizon else values[s0])


@refuses("beta", "b", "eta", "support_aware", "k", "ks", "bound")
def frontier(
    key: jax.Array,
    mdp: Model | PropertyModel,
    mechanisms: Sequence[type[Mechanism]] = _ALL_MECHANISMS,
    bound: UncertaintySet = PAPER_SET,
    *,
    epsilons: Sequence[float],
    delta: float = 1e-3,
    adjacency: Adjacency = _ADJACENCY,
    num_trials: int = 50,
    support: str | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> FrontierResult:
    """The value of the private policy against ε, for every mechanism at the same (ε, δ).

    Args:
      key: PRNG key (one independent sub-key per mechanism).
      mdp: the true MDP (dense, sparse or ragged), or a :class:`PropertyModel` (values in the
        property's scale; only the undecided states' rows are private and counted), such as
        :func:`minimizing` ``(mdp)`` (a cost).
      mechanisms: mechanism classes (``jp.Dirichlet``, ``jp.Gaussian``, ``jp.Laplace``, or
        any :class:`~jaxprivmdp.Mechanism` that can ``calibrate``). The Dirichlet's releases
        are drawn with its ``"fast"`` sampler.
      bound: the bounds' set, an object (default ``jp.PaperSet(0.1)``; with
        ``support_aware=True`` restricted to each row's support), see
        :func:`cost_of_privacy`.
      epsilons: the target ε's, each ``> 0``.
      delta: the target δ in ``(0, 1)`` (the Laplace mechanism is pure ε-DP).
      adjacency: ``jp.privacy.Adjacency(b, eta)``: rows that differ by at most ``b`` in
        ℓ1 (default 0.1); ``eta`` the public lower bound on every entry (Dirichlet
        accounting), default: the smallest positive entry of the allowed rows
        (:func:`public_eta`: in float64, never above the input's value), which is then
        treated as public.
      num_trials: releases per (mechanism, ε).
      support: ``None`` or ``"nonzero"`` (privatize over each row's nonzero entries).
      progress: optional ``progress(mechanism, done, total)`` after each chunk.

    Returns:
      :class:`FrontierResult`.

    Raises:
      TypeError: mechanism names or instances in place of classes, a set or an adjacency
        that is not an object (the 0.2 keyword form).
      ValueError: for ``ε <= 0``, ``δ`` outside ``(0, 1)`` or an empty list.
    """
    model, prop = as_problem(mdp)
    eps = np.asarray(epsilons, np.float64)
    if eps.ndim != 1 or eps.size == 0:
        raise ValueError(f"epsilons must be a non-empty 1-D sequence, got {epsilons!r}")
    check_range("epsilons", eps, low=0.0, low_open=True, scalar=False)
    check_probability("delta", delta)
    adjacency = as_adjacency("frontier", adjacency)
    num_trials = check_count("num_trials", num_trials)
    if isinstance(mechanisms, str | type) or not mechanisms:
        raise ValueError(f"mechanisms must be a non-empty list of classes, got {mechanisms!r}")
    classes = [_mechanism_class(m) for m in mechanisms]
    bound = as_set(bound, "frontier")
    rows = problem_rows(model, prop, support)
    n, num_rows = rows.dimension, int(rows.states.size)
    eta = public_eta(model) if adjacency.eta is None else adjacency.eta
    adjacency = dataclasses.replace(adjacency, eta=eta)
    b = adjacency.b
    sweep_options = dict(bound=bound, support=support)
    fields = ("all_rows", "parameter", "reachable", "floor", "parameter_name", *_QUANTITIES)
    out = {q: {} for q in fields}
    for m_index, cls in enumerate(classes):
        params, composed = _calibrate(cls, eps, float(delta), adjacency, n, num_rows)
        m_key = jax.random.fold_in(key, m_index)
        values = _values_at(m_key, mdp, cls, params, num_trials, sweep_options, progress)
        out["all_rows"][cls.name] = composed
        out["parameter"][cls.name] = params
        out["reachable"][cls.name] = np.isfinite(params)
        out["floor"][cls.name] = float(cls.floor(float(delta), adjacency, n=n))
        out["parameter_name"][cls.name] = cls.parameter_name()
        for q, v in values.items():
            out[q][cls.name] = v
    scalars = dict(epsilons=eps, delta=float(delta), n=n, eta=eta, b=float(b), num_rows=num_rows)
    minimize = prop is not None and prop.minimize
    result = FrontierResult(optimal_value=_optimal(model), **scalars, **out, minimize=minimize)
    return in_property_scale(prop, result, ("optimal_value",), bounds=None)
