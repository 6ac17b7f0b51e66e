"""The uncertainty-set axis: for privatized rows and ``(k, β)``, per-entry bounds and a weight.

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

For the additive-noise mechanisms (``jaxprivmdp.mechanisms._registry``) every ``bound`` is a box
``P̄ ± r`` with ``r`` from their noise's tail (kind ``"radius"``, like the paper's); the
Beta intervals (kind ``"beta"``) are the Dirichlet mechanism's.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import is_concrete
from ..models._rows import Model, Rows, row_support, transition_rows
from ._beta import BetaTables, device_tables, host_tables, intervals, smallest_width
from ._radius import outward_radius

Bound = Literal["paper", "exact", "certified"]
BOUNDS: tuple[str, ...] = ("paper", "exact", "certified")


def check_bound(bound) -> str:
    """``bound`` itself if it names a set, else a ValueError listing them."""
    if bound not in BOUNDS:
        raise ValueError(f"bound must be one of {', '.join(map(repr, BOUNDS))}, got {bound!r}")
    return bound


class SetParams(NamedTuple):
    """What a set needs besides the rows: computed once per ``(k, β)`` (a pytree).

    Attributes:
      alpha: kind ``"radius"``: the box's radius, rounded up (Lemma 1's, or the noise's);
        kind ``"beta"``: a lower bound on every entry's interval width. Either way every
        capacity of the greedy fill is at least ``min(alpha, 1)``, which bounds its width.
      mixture: the weight ``β'`` of the free part: ``β``, or 0 for ``"certified"``.
      tables: the :class:`BetaTables` (kind ``"beta"``), None otherwise.
    """

    alpha: jax.Array
    mixture: jax.Array
    tables: BetaTables | None = None


class RowBox(NamedTuple):
    """Per-entry bounds ``lower ≤ P2 ≤ upper`` in the rows' layout, and the mixture weight.

    Attributes:
      lower: like ``Rows.probs`` (`[..., S]` or `[..., K]`).
      upper: same shape.
      outside: scalar upper bound of a state a successor list does not hold (its ``P̄`` is
        0); used only by sparse rows with the set over the whole simplex.
      mixture: scalar ``β'``.
    """

    lower: jax.Array
    upper: jax.Array
    outside: jax.Array
    mixture: jax.Array


def entry_count(mdp: Model, *, support_aware: bool, whole_model: bool) -> int:
    """How many entries the union bound covers: per row (the largest row) or in all rows.

    Rows of masked actions are never used and not counted. Support-aware sets count each
    row's public support (:func:`jaxprivmdp.models._rows.row_support`: a sparse model's listed
    successors, the support a dense release records; never ``P̄ > 0``); sets over the whole
    simplex count all ``S`` entries of a row. A model traced under a transformation is
    counted from its shapes alone (every row, ``K`` or ``S`` entries each): an upper bound,
    so the sets stay valid, only wider.
    """
    rows = transition_rows(mdp)
    width = rows.probs.shape[-1] if support_aware else mdp.num_states
    if not is_concrete(mdp.action_mask, rows.support):
        return width * mdp.num_states * mdp.num_actions if whole_model else width
    mask = np.asarray(mdp.action_mask)
    if support_aware:
        sizes = np.asarray(row_support(rows)).sum(-1)
    else:
        sizes = np.full(mask.shape, mdp.num_states)
    sizes = np.where(mask, sizes, 0)
    return int(sizes.sum() if whole_model else max(int(sizes.max()), 1))


def row_count(mdp: Model) -> int:
    """The allowed rows (all ``S·A`` for a model traced under a transformation)."""
    if not is_concrete(mdp.action_mask):
        return mdp.num_states * mdp.num_actions
    return max(int(np.asarray(mdp.action_mask).sum()), 1)


def set_level(mdp: Model, beta, bound: str, support_aware: bool):
    """The per-side level ``c`` of each entry's interval: ``β / (2n)`` (``"exact"``, over a
    row's ``n`` entries) or ``β / (2N)`` (``"certified"``, over all ``N`` entries)."""
    n = entry_count(mdp, support_aware=support_aware, whole_model=bound == "certified")
    return beta / (2 * n)


def paper_params(alpha, beta) -> SetParams:
    """The box ``P̄ ± α`` with the weight ``β`` (the paper's set for Lemma 1's ``α``)."""
    alpha = jnp.asarray(alpha)
    return SetParams(alpha, jnp.asarray(beta, alpha.dtype))


def set_kind(mechanism: str, bound: str) -> str:
    """``"radius"`` (a box ``P̄ ± α``) or ``"beta"`` (exact Beta intervals): static."""
    if mechanism == "dirichlet" and bound != "paper":
        return "beta"
    return "radius"


def _unit_radius(mechanism, n: int, level) -> jax.Array | float:
    """An additive mechanism's radius per unit of its scale (it is linear in the scale)."""
    if is_concrete(level):
        return mechanism.radius(1.0, n, float(level))
    return jax.pure_callback(
        lambda lv: np.asarray(mechanism.radius(1.0, n, float(lv)), np.float32),
        jax.ShapeDtypeStruct((), jnp.float32),
        jax.lax.stop_gradient(level),
    )


def set_params(mdp: Model, k, beta, bound: str, support_aware: bool, mechanism) -> SetParams:
    """The set's parameters for the mechanism's parameter ``k`` (any shape) and scalar ``β``.

    Dirichlet: Lemma 1's ``α`` (``"paper"``) or Beta-quantile tables, tabulated on the host
    for concrete ``k`` and ``β`` (through a callback when traced). Additive mechanisms: the
    radius of their noise (:func:`jaxprivmdp.mechanisms._additive.noise_radius`) at level
    ``β`` per row
    (``"paper"``, ``"exact"``: their tail bound is already exact) or ``β / R`` over all ``R``
    allowed rows (``"certified"``), times the scale, rounded up.
    """
    dtype = mdp.rewards.dtype
    kind = set_kind(mechanism.name, bound)
    mixture_weight = 0.0 if bound == "certified" else beta
    if mechanism.name != "dirichlet":
        n = entry_count(mdp, support_aware=support_aware, whole_model=False)
        level = beta / row_count(mdp) if bound == "certified" else beta
        unit = jnp.asarray(_unit_radius(mechanism, n, level), dtype)
        alpha = jnp.asarray(k, dtype) * unit * (1 + 4 * jnp.finfo(dtype).eps)
    else:
        alpha = outward_radius(k, beta, dtype)
    mixture = jnp.broadcast_to(jnp.asarray(mixture_weight, dtype), jnp.shape(alpha))
    if kind == "radius":
        return paper_params(jnp.asarray(alpha, dtype), mixture)
    level = set_level(mdp, beta, bound, support_aware)
    if is_concrete(k, beta):
        tables = host_tables(k, level, dtype)
        # The smallest capacity, in the role α plays for the paper's box: the fill width.
        widths = np.vectorize(smallest_width)(
            np.asarray(k, np.float64), float(level), np.dtype(dtype).name
        )
        alpha = jnp.asarray(widths, dtype)
    else:
        tables = device_tables(jnp.asarray(k, dtype), jnp.asarray(level, dtype), dtype)
    tables = BetaTables(*map(jnp.asarray, tables))
    return SetParams(jnp.asarray(alpha, dtype), mixture, tables)


def row_box(rows: Rows, params: SetParams, *, kind: str, support_aware: bool) -> RowBox:
    """Every row's :class:`RowBox` (pure; jit/vmap over the rows and ``params``).

    ``kind`` (:func:`set_kind`): ``"radius"``, the box ``P̄ ± α``; ``"beta"``, the exact
    Beta intervals from the tables.
    """
    p = rows.probs
    if kind == "radius":
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
    return RowBox(lower, upper, outside, params.mixture)


def policy_box(box: RowBox, select) -> RowBox:
    """The box rows a decision rule uses: ``select`` picks rows like the transition rows."""
    return box._replace(lower=select(box.lower), upper=select(box.upper))
