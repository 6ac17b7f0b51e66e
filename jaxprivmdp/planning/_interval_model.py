"""A release as an interval MDP: each row ``(s, a)`` becomes its uncertainty set's box.

The bounds and the robust policy optimize over ``B(s, a) = {β' P1 + (1 − β') P2 : l ≤ P2 ≤
u}`` (``jaxprivmdp.sets._boxes``). With no mixture (``β' = 0``, :class:`CertifiedSet`) that
set is the box ``[l, u]`` intersected with the simplex: exactly an IMDP row. What the box
says about the true row depends on the set's union bound:

- :class:`CertifiedSet`: every true row lies in its box *at once* with probability
  ``≥ 1 − β`` over the mechanism (Bonferroni over every entry of every allowed row), so any
  property value over the IMDP brackets the true model's (``docs/bounds.md``).
- :class:`ExactSet`: each true row lies in its box with probability ``≥ 1 − β``, row by
  row, not jointly. The IMDP holds the set's box, not its ``β``-mixture.
- :class:`PaperSet`: refused. Its set P̂ (the paper's eq. 1) is the ``β``-mixture around
  Lemma 1's box, which is not a box; its per-entry hull ``[(1 − β) l, β + (1 − β) u]`` is
  nearly vacuous.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp

from ..mechanisms.core import Mechanism, as_mechanism
from ..models.core import (
    IntervalMDP,
    Model,
    RaggedIntervalMDP,
    RaggedMDP,
    SparseMDP,
    TabularMDP,
    check_model,
    interval_of_point,
    to_padded,
    transition_rows,
)
from ..sets import PaperSet
from ..sets.core import SetParams, UncertaintySet, as_set, row_box
from ._set_up import set_up


def interval_model(
    private: Model,
    mechanism: Mechanism | None = None,
    uncertainty_set: UncertaintySet | None = None,
) -> IntervalMDP | RaggedIntervalMDP:
    """The interval MDP of a release: row ``(s, a)`` is the set's box around ``P̄(s, a)``.

    Entry ``(s, a, s')`` gets ``[l, u] ⊆ [0, 1]``, the per-entry bounds the bounds and the
    robust policy use for ``uncertainty_set`` and releases of ``mechanism`` (the same boxes,
    bit for bit). With a :class:`~jaxprivmdp.CertifiedSet` ``(β)``, with probability
    ``≥ 1 − β`` over the mechanism's noise every allowed true row lies in its box at once:
    any property's value over the IMDP brackets the true model's
    (:func:`~jaxprivmdp.certify_property`). With an :class:`~jaxprivmdp.ExactSet` each row
    holds its true row with probability ``≥ 1 − β``, row by row (not jointly). ``P̄`` always
    lies in its own IMDP.

    A masked action's row is ``l = u = 0``, and the action stays masked. A sparse release
    keeps its successor lists (``next_states``): its lists are the public support, and the
    true rows put no mass elsewhere; with ``support_aware=False`` the union bound still
    counts every state of a row (wider boxes, the bounds' set). A :class:`RaggedMDP` is
    padded first (:func:`~jaxprivmdp.to_padded`, on the host: not under ``jax.jit``).

    With neither ``mechanism`` nor ``uncertainty_set``: the point model as an IMDP
    (``l = u = P``; a :class:`RaggedMDP`'s keeps its buckets: a
    :class:`~jaxprivmdp.RaggedIntervalMDP`).

    Works under ``jax.jit`` (over the release; the set's parameters are computed from a
    concrete ``k`` and ``β``, or through a host callback when they are traced), float32 and
    float64. A traced release's union bound counts every entry of its shapes (wider boxes
    where actions are masked or the set is support-aware): pass ``uncertainty_set.counted(
    model)`` for the boxes of an eager call.

    Args:
      private: the release ``M̄``: a :class:`TabularMDP`, :class:`SparseMDP` or
        :class:`RaggedMDP` (e.g. ``jp.privatize(key, mdp, mechanism)``). A support-aware set
        needs its public support (a release of :func:`~jaxprivmdp.privatize` records it).
      mechanism: the mechanism that released it, an object: ``jp.Dirichlet(k)``,
        ``jp.Gaussian(sigma)``, ``jp.Laplace(scale)``.
      uncertainty_set: ``jp.CertifiedSet(beta)`` or ``jp.ExactSet(beta)``, each with
        ``support_aware=True`` to fix entries outside each row's public support at 0.

    Returns:
      An :class:`~jaxprivmdp.IntervalMDP` with ``private``'s rewards, terminal reward,
      discount, action mask, horizon and initial state; dense `[S, A, S]` bounds for a dense
      release, `[S, A, K]` over the same ``next_states`` for a sparse or ragged one.

    Raises:
      TypeError: a mechanism or set that is not an object (a name or a number).
      ValueError: a :class:`~jaxprivmdp.PaperSet` (not a box: see the message), only one of
        ``mechanism`` and ``uncertainty_set``, a model that is none of the three kinds,
        ``support_aware=True`` on a dense release that records no support, a parameter
        ``<= 0`` or ``beta`` outside ``(0, 1)``.
    """
    check_model(private, "private")
    if (mechanism is None) != (uncertainty_set is None):
        given = "mechanism" if uncertainty_set is None else "uncertainty_set"
        raise ValueError(
            f"interval_model: {given} given alone: pass both the mechanism that released the "
            "model and the set (jp.CertifiedSet(beta) or jp.ExactSet(beta)), or neither "
            "(the point model as an interval model, l = u)"
        )
    if mechanism is None:
        return point_interval(private)
    if isinstance(private, RaggedMDP):
        private = to_padded(private)
    mech = as_mechanism(mechanism, "interval_model", dtype=private.rewards.dtype)
    uset = as_set(uncertainty_set, "interval_model")
    if isinstance(uset, PaperSet):
        raise ValueError(
            "interval_model: the paper's set (jp.PaperSet) is a beta-mixture around Lemma 1's "
            "box (eq. 1), not a box: an interval row would drop its mixture, and its "
            "per-entry hull [(1 - beta) l, beta + (1 - beta) u] is nearly vacuous. Use "
            "jp.CertifiedSet(beta) (every true row in its box at once with probability "
            ">= 1 - beta: certified property values) or jp.ExactSet(beta) (each row's box "
            "from the exact marginals, with probability >= 1 - beta row by row)"
        )
    params, _ = set_up(private, mech, uset)
    return interval_core(private, params, support_aware=uset.support_aware)


def point_interval(mdp: Model) -> IntervalMDP | RaggedIntervalMDP:
    """The point model as an interval model: ``l = u = P``, 0 on masked rows."""
    imdp = interval_of_point(mdp)
    if isinstance(imdp, RaggedIntervalMDP):
        allowed = mdp.action_mask.reshape(-1)
        buckets = []
        for b in imdp.buckets:
            lower = jnp.where(allowed[b.rows][:, None], b.lower, jnp.zeros_like(b.lower))
            buckets.append(b._replace(lower=lower, upper=lower))
        return dataclasses.replace(imdp, buckets=tuple(buckets))
    lower = _masked(imdp.lower, mdp.action_mask)
    return dataclasses.replace(imdp, lower=lower, upper=lower)


def _masked(x: jax.Array, action_mask: jax.Array) -> jax.Array:
    return jnp.where(action_mask[..., None], x, jnp.zeros_like(x))


@functools.partial(jax.jit, static_argnames=("support_aware",))
def interval_core(
    private: TabularMDP | SparseMDP,
    params: SetParams,
    *,
    support_aware: bool,
) -> IntervalMDP:
    """:func:`interval_model` on a validated release and the set's parameters (pure; jit and
    vmap over the release and ``params``)."""
    rows = transition_rows(private)
    box = row_box(rows, params, support_aware=support_aware)
    # An IMDP's bounds must lie in [0, 1]; the box lookups round outward and may step past.
    lower = _masked(jnp.clip(box.lower, 0, 1), private.action_mask)
    upper = _masked(jnp.clip(box.upper, 0, 1), private.action_mask)
    return IntervalMDP(
        lower=lower, upper=upper, next_states=rows.next_states, **private.shared_fields()
    )
