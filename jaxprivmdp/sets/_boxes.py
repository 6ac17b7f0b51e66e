"""Per-entry boxes: what every set gives the robust kernel, and the blocks that build them.

Every set the bounds use has the form

    {β' P1 + (1 − β') P2 : P1 ∈ Δ(support), P2 ∈ Δ(support), l ≤ P2 ≤ u}

with per-entry bounds ``l ≤ u`` built from the privatized row ``P̄`` and a mixture weight
``β'`` (β or 0); :func:`jaxprivmdp.planning._kernel.robust_backup` optimizes over it exactly. Three
members (``bound=``):

``"paper"``
    Lemma 1's box ``‖P2 − P̄‖∞ ≤ α``, ``α = sqrt(log(1/β) / (2(k + 1)))``, and ``β' = β``:
    the paper's set P̂ (eq. 1), unchanged.
``"exact"``
    The paper's statement with a tighter box. Each entry's marginal is exactly
    ``P̄_i ~ Beta(k p_i, k(1 − p_i))``. For a level ``c`` let ``q_c(p)`` be that Beta's
    ``c``-quantile; the entry's interval is ``{p : q_c(p) ≤ P̄_i ≤ q_{1−c}(p)}``, which
    misses the true ``p_i`` with probability ``≤ 2c`` (the Beta is continuous). With
    ``c = β / (2n)`` over the ``n`` entries of a row (Bonferroni), the whole row lies in its
    box with probability ``≥ 1 − β``: the event Lemma 1 provides, so the paper's Lemma 2 and
    Theorems 1-2 go through unchanged with the same ``β`` mixture.
``"certified"``
    The same per-entry intervals with ``c = β / (2N)`` over all ``N`` entries of all allowed
    rows, and no mixture (``β' = 0``). With probability ``≥ 1 − β`` over the mechanism every
    true row lies in its box at once, so the robust values bound the policy's value on the
    **true** MDP (derivation: ``docs/bounds.md``).

Why Bonferroni and not less: the Dirichlet's entries are negatively associated, but that
bounds the probability of the joint coverage event from above, not from below; no tighter
construction valid for every ``P`` is proved here.

The intervals themselves are computed in ``_beta`` (tabulated quantiles, device lookups).

The set objects are in ``_sets``; a mechanism chooses the block that fits its noise
(:meth:`jaxprivmdp.mechanisms.Mechanism.set_params`): a box ``P̄ ± r`` (Lemma 1's ``α``, or
an additive noise's tail radius: :func:`radius_params`) or the Beta intervals (the Dirichlet
mechanism's exact marginals: :func:`beta_params`). :attr:`SetParams.is_radius_box` tells them
apart by whether the parameters carry Beta tables: a pytree's structure, so the distinction is
static under ``jit`` (it decides the boxes' computation and shapes).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import is_concrete
from ..models.core import Model, RaggedRows, Rows, row_support
from ._beta import BetaTables, device_tables, host_tables, intervals, smallest_width
from ._counts import entry_count, row_count
from ._sets import UncertaintySet


class SetParams(NamedTuple):
    """What a set needs besides the rows: computed once per ``(k, β)`` (a pytree).

    Attributes:
      alpha: a radius box (:attr:`is_radius_box`): the box's radius, rounded up (Lemma 1's,
        or the noise's); Beta intervals: a lower bound on every entry's interval width.
        Either way every capacity of the greedy fill is at least ``min(alpha, 1)``, which
        bounds its width.
      mixture: the weight ``β'`` of the free part: ``β``, or 0 for ``"certified"``.
      tables: the :class:`BetaTables` of per-entry Beta intervals, None for a radius box.
    """

    alpha: jax.Array
    mixture: jax.Array
    tables: BetaTables | None = None

    @property
    def is_radius_box(self) -> bool:
        """True: the box ``P̄ ± alpha``, one radius for every entry of a row; False: each
        entry's exact Beta interval from :attr:`tables`. Static under ``jit`` (whether
        ``tables`` is None is part of the pytree's structure)."""
        return self.tables is None


class RowBox(NamedTuple):
    """Per-entry bounds ``lower ≤ P2 ≤ upper`` in the rows' layout, and the mixture weight.

    Attributes:
      lower: like ``Rows.probs`` (`[..., S]` or `[..., K]`).
      upper: same shape.
      outside: scalar upper bound of a state a successor list does not hold (its ``P̄`` is
        0); used only by sparse rows with the set over the whole simplex.
      mixture: scalar ``β'``.
      caps: ``upper − lower`` (same shape), or None: the kernel then subtracts. Beta boxes
        carry it, computed once for all rows beside the lookups, so that a stage gathers one
        array into its window instead of two.
    """

    lower: jax.Array
    upper: jax.Array
    outside: jax.Array
    mixture: jax.Array
    caps: jax.Array | None = None


def entry_level(mdp: Model, uncertainty_set: UncertaintySet):
    """The per-side level ``c`` of each entry's interval: ``β / (2n)`` over a row's ``n``
    entries (scope ``"row"``) or ``β / (2N)`` over all ``N`` entries (scope ``"model"``)."""
    whole = uncertainty_set.scope == "model"
    aware, counts = uncertainty_set.support_aware, uncertainty_set.counts
    n = entry_count(mdp, support_aware=aware, whole_model=whole, counts=counts)
    return _level(uncertainty_set.beta, 2 * n)


def row_level(mdp: Model, uncertainty_set: UncertaintySet):
    """The probability a row's box may fail: ``β`` (scope ``"row"``) or ``β / R`` over the
    ``R`` allowed rows (scope ``"model"``)."""
    if uncertainty_set.scope != "model":
        return uncertainty_set.beta
    return _level(uncertainty_set.beta, row_count(mdp, uncertainty_set.counts))


def _level(beta, count: int):
    """``β / count``, never above the exact quotient of the ``β`` given (a smaller level
    only widens a box). Concrete: in float64 on the host. Traced (a sweep over ``β`` under
    ``jit`` or ``vmap``): in ``β``'s dtype, one ulp down (the division rounds to nearest)."""
    if is_concrete(beta):
        level = np.asarray(beta, np.float64) / count
        return float(level) if level.ndim == 0 else level
    level = jnp.asarray(beta) / count
    return jnp.nextafter(level, jnp.zeros_like(level))


def radius_params(alpha, uncertainty_set: UncertaintySet, dtype) -> SetParams:
    """The box ``P̄ ± α`` (``α`` already rounded up to ``dtype``) with the set's weight.

    Concrete values stay NumPy arrays: the jitted cores take them as arguments, and two
    device conversions cost more than a small model's whole bounds on the CPU."""
    xp = np if is_concrete(alpha, uncertainty_set.mixture) else jnp
    alpha = xp.asarray(alpha, dtype)
    mixture = xp.broadcast_to(xp.asarray(uncertainty_set.mixture, dtype), xp.shape(alpha))
    return SetParams(alpha, mixture)


def beta_params(mdp: Model, k, uncertainty_set: UncertaintySet) -> SetParams:
    """The Dirichlet mechanism's exact Beta intervals at :func:`entry_level`, for its ``k``
    (any shape): tabulated on the host for concrete ``k`` and ``β`` (through a callback when
    traced), with ``alpha`` the smallest capacity (the fill width, the role ``α`` plays for
    a box)."""
    dtype = mdp.rewards.dtype
    level = entry_level(mdp, uncertainty_set)
    if is_concrete(k, uncertainty_set.beta):
        tables = host_tables(k, level, dtype)
        widths = np.vectorize(smallest_width)(
            np.asarray(k, np.float64), float(level), np.dtype(dtype).name
        )
        alpha = jnp.asarray(widths, dtype)
    else:
        # The level in the dtype, rounded down (a smaller level only widens the intervals).
        level = jnp.asarray(level, dtype)
        level = jnp.nextafter(level, jnp.zeros_like(level))
        tables = device_tables(jnp.asarray(k, dtype), level, dtype)
        alpha = jnp.zeros(jnp.shape(k), dtype)  # no static width: the fill spans all entries
    params = radius_params(alpha, uncertainty_set, dtype)
    return params._replace(tables=BetaTables(*map(jnp.asarray, tables)))


def row_box(rows: Rows, params: SetParams, *, support_aware: bool) -> RowBox:
    """Every row's :class:`RowBox` (pure; jit/vmap over the rows and ``params``).

    The box ``P̄ ± α`` for a radius box (:attr:`SetParams.is_radius_box`), else the exact
    Beta intervals from the tables.
    """
    if isinstance(rows, RaggedRows):  # one box per block
        return tuple(row_box(b, params, support_aware=support_aware) for b in rows.blocks)
    p = rows.probs
    if params.is_radius_box:
        alpha = params.alpha
        lower, upper = jnp.maximum(p - alpha, 0), jnp.minimum(p + alpha, 1)
        outside = jnp.minimum(alpha, 1)
    else:
        lower, upper = intervals(p, params.tables)
        outside = intervals(jnp.zeros((), p.dtype), params.tables)[1]
    if support_aware:  # entries outside the support are fixed at 0
        inside = row_support(rows)
        lower, upper = jnp.where(inside, lower, 0), jnp.where(inside, upper, 0)
    elif rows.next_states is not None:  # padding slots hold no state
        listed = rows.next_states >= 0
        lower, upper = jnp.where(listed, lower, 0), jnp.where(listed, upper, 0)
    caps = None if params.is_radius_box else upper - lower
    return RowBox(lower, upper, outside, params.mixture, caps)


def box_caps(box: RowBox) -> jax.Array:
    """Each entry's capacity ``upper − lower``: the box's ``caps`` where it carries them.

    A state a successor list does not hold has ``lower`` 0 and ``upper`` ``outside``: its
    capacity is ``outside``."""
    return box.upper - box.lower if box.caps is None else box.caps


def policy_box(box: RowBox, select) -> RowBox:
    """The box rows a decision rule uses: ``select`` picks rows like the transition rows.

    A ragged model's boxes (a tuple, one per block) stay whole: its decision rules use all
    rows, weighted (``planning._policies.policy_rows``)."""
    if isinstance(box, tuple) and not isinstance(box, RowBox):
        return box
    caps = None if box.caps is None else select(box.caps)
    return box._replace(lower=select(box.lower), upper=select(box.upper), caps=caps)
