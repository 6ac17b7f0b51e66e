"""Certified property values of the true model from its release: :func:`certify_property`.

A release ``M̄`` of a :class:`~jaxprivmdp.CertifiedSet` ``(β)`` becomes the interval MDP of
its boxes (:func:`~jaxprivmdp.interval_model`), which holds every true row at once with
probability ``≥ 1 − β`` over the mechanism. On that event the true model is one of the
models nature may pick, so for every policy ``π`` its true value lies between nature's
minimum and maximum, and

    Pmaxmin ≤ max_π min_nature ≤ max_π P^π_true = Pmax_true ≤ max_π max_nature = Pmaxmax,

likewise ``Pminmin ≤ Pmin_true ≤ Pminmax``, the same for ``R``, and on a chain (one action
per state) ``Pmin ≤ P_true ≤ Pmax`` over nature. The checker's ``lower``/``upper`` are valid
bounds on the exact values of those two-quantifier properties, so ``[lower of the first,
upper of the second]`` holds the true value with probability ``≥ 1 − β``. The robust
policy (the ``Pmaxmin`` check's for a maximum, ``Pminmax``'s for a minimum) is certified too:
its true value is at least ``Pmaxmin``'s lower bound (at most ``Pminmax``'s upper bound) on
the same event.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..mechanisms.core import Mechanism
from ..planning import interval_model
from ..properties import CheckResult, check
from ..properties.core import parse_property
from ..sets import CertifiedSet
from ..sets.core import UncertaintySet, as_set


class CertifiedProperty(NamedTuple):
    """A property's value on the true model, certified from a release.

    With probability at least ``confidence`` over the mechanism's noise (not given the
    release), ``lower ≤ true value ≤ upper`` in every state at once, and ``policy``'s true
    value is at least ``robust.lower`` for a maximum (at most ``robust.upper`` for a
    minimum). Its arrays are NumPy where the checks ran on the host (a concrete release; see
    :class:`~jaxprivmdp.CheckResult`), ``jax.Array`` under ``jax.jit``.

    Attributes:
      lower: `[S]` the certified lower bound of the true model's value in each state.
      upper: `[S]` the certified upper bound (``inf`` where an expected reward may be).
      value_at_initial: `[2]` ``(lower, upper)`` at the model's initial state.
      policy: `[S]` int32, the robust policy (for a step-bounded property the rule of the
        first step, as :class:`~jaxprivmdp.CheckResult`'s): for ``max`` the ``maxmin``
        check's, for ``min`` the ``minmax`` check's; on a chain its only action.
      robust: the :class:`~jaxprivmdp.CheckResult` of the worst case over nature
        (``Pmaxmin`` for ``Pmax``, ``Pminmax`` for ``Pmin``, ``Pmin`` for ``P`` on a chain).
      optimistic: the :class:`~jaxprivmdp.CheckResult` of the best case (``Pmaxmax``,
        ``Pminmin``, ``Pmax``).
      confidence: ``1 − β``.
      uncertainty_set: the set (a :class:`~jaxprivmdp.CertifiedSet`).
      mechanism: the mechanism that released the model.
      robust_property, optimistic_property: the two-quantifier properties checked on the
        interval model.
    """

    lower: jax.Array | np.ndarray
    upper: jax.Array | np.ndarray
    value_at_initial: jax.Array | np.ndarray
    policy: jax.Array | np.ndarray
    robust: CheckResult
    optimistic: CheckResult
    confidence: jax.Array | float
    uncertainty_set: UncertaintySet
    mechanism: Mechanism
    robust_property: str
    optimistic_property: str


def interval_properties(prop: str) -> tuple[str, str, bool]:
    """``(robust, optimistic, lower_from_robust)``: a point model's property rewritten for its
    interval model. ``'Pmax=? [F "g"]'`` gives ``'Pmaxmin=? [F "g"]'`` and ``'Pmaxmax=? [F
    "g"]'`` (the certified interval's lower end is the robust check's); ``Pmin`` gives
    ``Pminmax`` and ``Pminmin`` (its upper end is the robust check's); ``P=?`` on a chain
    gives ``Pmin`` and ``Pmax``; the same for ``R``.

    Raises:
      ValueError: a malformed property, a comparison (``P>=0.9``: give ``=?``), or one
        already with two quantifiers (it is about an interval model, not the true one).
    """
    parsed = parse_property(prop)
    where = parsed.positions
    if parsed.nature is not None:
        raise ValueError(
            f"property {prop!r} already has nature's quantifier: certify the true model's "
            f"property ('{parsed.kind}max=? [...]', '{parsed.kind}min=? [...]' or "
            f"'{parsed.kind}=? [...]'), and the interval model's two checks are formed from it"
        )
    if parsed.comparison is not None:
        raise ValueError(
            f"property {prop!r} compares with a threshold: give its numerical form "
            f"('{parsed.kind}max=? [...]'); the certified interval answers the comparison"
        )
    head = parsed.kind
    if parsed.reward is not None:
        reward = f'"{parsed.reward}"' if isinstance(parsed.reward, str) else parsed.reward
        head += f"{{{reward}}}"
    opt = parsed.opt or ""
    worst, best = {"max": ("min", "max"), "min": ("max", "min"), "": ("min", "max")}[opt]
    before, rest = prop[: where["operator"]], prop[where["query"] :]
    robust, optimistic = (f"{before}{head}{opt}{nature}{rest}" for nature in (worst, best))
    return robust, optimistic, opt != "min"


def certify_property(
    private,
    prop: str,
    mechanism: Mechanism,
    uncertainty_set: UncertaintySet,
    *,
    labels: dict | None = None,
    variables: dict | None = None,
    reward_name: str | None = None,
    tol: float | None = None,
) -> CertifiedProperty:
    """The true model's value of ``prop``, certified from its release ``private``.

    Checks the two-quantifier forms of ``prop`` on :func:`~jaxprivmdp.interval_model`
    ``(private, mechanism, uncertainty_set)``: for ``'Pmax=? [F "goal"]'``, ``Pmaxmin`` and
    ``Pmaxmax``. With probability at least ``1 − β`` over the mechanism's noise (a frequency
    over releases of the fixed true model; nothing is claimed given one release) the true
    model's ``Pmax`` lies in ``[Pmaxmin's lower bound, Pmaxmax's upper bound]`` in every
    state at once, and the robust policy's true value is at least ``Pmaxmin``'s lower bound.
    ``Pmin`` and ``R{...}min``: ``[Pminmin, Pminmax]``, the ``Pminmax`` policy. ``P=?`` and
    ``R=?`` on a chain (one allowed action per state): ``[Pmin, Pmax]`` over nature. The
    derivation is in the module; the properties and labels are those of
    :func:`~jaxprivmdp.check`.

    Example::

        private = jp.privatize(jp.secure_key(), mdp, jp.Dirichlet(200.0))
        cert = jp.certify_property(
            private, 'Pmax=? [F "goal"]', jp.Dirichlet(200.0), jp.CertifiedSet(0.1),
            labels=labels,
        )
        cert.value_at_initial  # [lower, upper], with probability >= 0.9

    Args:
      private: the release (a :class:`TabularMDP`, :class:`SparseMDP` or
        :class:`RaggedMDP`), unmodified: the set's guarantee is about the mechanism's draws.
      prop: the true model's property, one quantifier (``Pmax=?``, ``Pmin=?``,
        ``R{"name"}min=?``; ``P=?``/``R=?`` on a chain), with ``F``, ``U``, ``G``, ``X``,
        step bounds, or ``C<=k``.
      mechanism: the mechanism that released ``private``, an object (``jp.Dirichlet(k)``,
        ``jp.Gaussian(sigma)``, ``jp.Laplace(scale)``).
      uncertainty_set: ``jp.CertifiedSet(beta)`` (``support_aware=True`` allowed): the one
        set whose boxes hold every row at once.
      labels: as for :func:`~jaxprivmdp.check`.
      variables: as for :func:`~jaxprivmdp.check`.
      reward_name: as for :func:`~jaxprivmdp.check`.
      tol: as for :func:`~jaxprivmdp.check`.

    Returns:
      A :class:`CertifiedProperty`.

    Raises:
      ValueError: a set other than :class:`~jaxprivmdp.CertifiedSet` (an
        :class:`~jaxprivmdp.ExactSet`'s boxes hold row by row, each with probability
        ``≥ 1 − β``, not jointly, and a property depends on every row at once), a property
        with two quantifiers or a comparison, or what :func:`~jaxprivmdp.interval_model`
        and :func:`~jaxprivmdp.check` refuse.
      TypeError: a mechanism or set that is not an object.
    """
    uset = _certified_set(uncertainty_set, mechanism)
    robust_prop, optimistic_prop, lower_from_robust = interval_properties(prop)
    imdp = interval_model(private, mechanism, uset)
    options = dict(labels=labels, variables=variables, reward_name=reward_name, tol=tol)
    robust, optimistic = (check(imdp, p, **options) for p in (robust_prop, optimistic_prop))
    low, high = (robust, optimistic) if lower_from_robust else (optimistic, robust)
    lower, upper, s0 = low.lower, high.upper, imdp.initial_state
    xp = np if isinstance(lower, np.ndarray) else jnp  # (where the checks ran: CheckResult)
    return CertifiedProperty(
        lower=lower,
        upper=upper,
        value_at_initial=xp.stack([lower[s0], upper[s0]]),
        policy=robust.policy,
        robust=robust,
        optimistic=optimistic,
        confidence=1 - uset.beta,
        uncertainty_set=uset,
        mechanism=mechanism,
        robust_property=robust_prop,
        optimistic_property=optimistic_prop,
    )


def _certified_set(uncertainty_set, mechanism) -> CertifiedSet:
    """The set of :func:`certify_property`, which must be a :class:`CertifiedSet`, with the
    mechanism given."""
    uset = as_set(uncertainty_set, "certify_property")
    if not isinstance(uset, CertifiedSet):
        raise ValueError(
            f"certify_property needs jp.CertifiedSet(beta), got {type(uset).__name__}: only "
            "its boxes hold every true row at once with probability >= 1 - beta; an "
            "ExactSet's (or the paper's) hold row by row, and a property's value depends "
            "on every row at once"
        )
    if mechanism is None:
        raise ValueError("certify_property needs the mechanism that released the model")
    return uset
