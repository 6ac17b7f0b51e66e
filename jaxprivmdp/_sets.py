"""The uncertainty-set axis: for privatized rows and ``(k, β)``, per-entry bounds and a weight.

Every set the bounds use has the form

    {β' P1 + (1 − β') P2 : P1 ∈ Δ(support), P2 ∈ Δ(support), l ≤ P2 ≤ u}

with per-entry bounds ``l ≤ u`` built from the privatized row ``P̄`` and a mixture weight
``β'`` (β or 0); :func:`jaxprivmdp._robust.robust_backup` optimizes over it exactly. Three
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

The intervals are exact up to a conservative grid: ``q_c`` and ``q_{1−c}`` are tabulated in
float64 on the host (``scipy.special.betaincinv``, whose float32 counterpart in JAX is not
accurate enough in the tails) at a fixed grid of ``p``, rounded outward to the model's
dtype, and each entry's bound is the next grid point outward (``searchsorted`` on device).
The tables depend only on ``k``, ``c`` and the dtype.
"""

from __future__ import annotations

import functools
from typing import Literal, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from scipy.special import betaincinv

from ._checks import is_concrete, round_up
from ._models import Model, Rows, row_support, transition_rows
from ._robust import outward_radius

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
      alpha: Lemma 1's radius, rounded up (``"paper"``).
      mixture: the weight ``β'`` of the free part: ``β``, or 0 for ``"certified"``.
      grid: `[G]` the grid of ``p`` (``"exact"``/``"certified"``; `[1]` zeros otherwise).
      q_low: `[G]` ``q_c(p)`` at the grid, rounded down.
      q_high: `[G]` ``q_{1−c}(p)`` at the grid, rounded up.
    """

    alpha: jax.Array
    mixture: jax.Array
    grid: jax.Array
    q_low: jax.Array
    q_high: jax.Array


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


@functools.cache
def _grid(dtype_name: str) -> np.ndarray:
    """The grid of ``p`` in (0, 1), exactly representable in ``dtype`` (float64 values).

    Uniform in ``arcsin(sqrt(p))`` (spacing proportional to a Beta's standard deviation at
    every ``p``: about 4e-4·sqrt(p(1 − p))) plus log-spaced points down to 1e-12 near both
    ends, where the interesting bounds of near-zero entries lie.
    """
    theta = np.linspace(0, np.pi / 2, 4097)[1:-1]
    tails = np.logspace(-12, -2, 257)
    p = np.concatenate([np.sin(theta) ** 2, tails, 1 - tails])
    p = np.unique(p.astype(dtype_name)).astype(np.float64)
    return p[(p > 0) & (p < 1)]


@functools.lru_cache(maxsize=256)
def _quantile_tables(k: float, level: float, dtype_name: str):
    """``(grid, q_low, q_high)``: the ``level`` and ``1 − level`` quantiles of
    ``Beta(k p, k(1 − p))`` at the grid, made monotone and rounded outward to ``dtype``."""
    p = _grid(dtype_name)
    q_low = betaincinv(k * p, k * (1 - p), level)
    q_high = betaincinv(k * p, k * (1 - p), 1 - level)
    if not (np.all(np.isfinite(q_low)) and np.all(np.isfinite(q_high))):
        raise ValueError(f"Beta quantiles are not finite for k={k}, level={level}")
    # Exact quantiles increase with p; enforce it outward against rounding: q_low may only
    # go down (a reverse running min), q_high only up (a running max).
    q_low = np.minimum.accumulate(q_low[::-1])[::-1]
    q_high = np.maximum.accumulate(q_high)
    dtype = np.dtype(dtype_name)
    down = -np.asarray(round_up(-q_low, dtype))
    return p.astype(dtype), down.astype(dtype), np.asarray(round_up(q_high, dtype), dtype)


def entry_count(mdp: Model, *, support_aware: bool, whole_model: bool) -> int:
    """How many entries the union bound covers: per row (the largest row) or in all rows.

    Rows of masked actions are never used and not counted. Support-aware sets count each
    row's support (a sparse model's listed successors, a dense model's nonzero entries);
    sets over the whole simplex count all ``S`` entries of a row. A model traced under a
    transformation is counted from its shapes alone (every row, ``K`` or ``S`` entries
    each): an upper bound, so the sets stay valid, only wider.
    """
    rows = transition_rows(mdp)
    width = rows.probs.shape[-1] if support_aware else mdp.num_states
    if not is_concrete(mdp.action_mask, rows.probs, rows.next_states):
        return width * mdp.num_states * mdp.num_actions if whole_model else width
    mask = np.asarray(mdp.action_mask)
    if support_aware:
        listed = rows.next_states >= 0 if rows.next_states is not None else rows.probs > 0
        sizes = np.asarray(listed).sum(-1)
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


def _host_tables(k, level, dtype):
    k = np.asarray(k, np.float64)
    level = np.asarray(level, np.float64)
    out = [
        _quantile_tables(float(kk), float(ll), np.dtype(dtype).name)
        for kk, ll in zip(k.ravel(), np.broadcast_to(level, k.shape).ravel(), strict=True)
    ]
    return tuple(np.stack([o[i] for o in out]).reshape(k.shape + (-1,)) for i in range(3))


def _device_tables(k, level, dtype):
    """The tables for a traced ``k`` or ``β``, through a host callback (no gradient)."""
    size = _grid(np.dtype(dtype).name).size
    shape = jax.ShapeDtypeStruct(jnp.shape(k) + (size,), dtype)
    return jax.pure_callback(
        lambda kk, ll: _host_tables(kk, ll, dtype),
        (shape, shape, shape),
        jax.lax.stop_gradient(k),
        jax.lax.stop_gradient(level),
        vmap_method="broadcast_all",
    )


def paper_params(alpha, beta) -> SetParams:
    """The paper's set for a given radius ``α`` and weight ``β`` (scalars)."""
    alpha = jnp.asarray(alpha)
    empty = jnp.zeros(alpha.shape + (1,), alpha.dtype)
    return SetParams(alpha, jnp.asarray(beta, alpha.dtype), empty, empty, empty)


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
    radius of their noise (:func:`jaxprivmdp._additive.noise_radius`) at level ``β`` per row
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
        tables = _host_tables(k, level, dtype)
    else:
        tables = _device_tables(jnp.asarray(k, dtype), jnp.asarray(level, dtype), dtype)
    return SetParams(jnp.asarray(alpha, dtype), mixture, *map(jnp.asarray, tables))


def _intervals(x: jax.Array, params: SetParams) -> tuple[jax.Array, jax.Array]:
    """Each entry's ``[L, U]`` from the quantile tables, outward to the next grid point."""
    finfo = jnp.finfo(x.dtype)
    # The sampler rounds: the exact draw lies within a few ulps of x (below tiny if x == 0).
    x_high = jnp.maximum(x * (1 + 8 * finfo.eps), finfo.tiny)
    x_low = x * (1 - 8 * finfo.eps)
    size = params.grid.shape[-1]
    # U: the first grid p whose c-quantile exceeds x (all larger p are rejected too).
    i = jnp.searchsorted(params.q_low, x_high, side="right")
    upper = jnp.where(i < size, params.grid[jnp.minimum(i, size - 1)], 1)
    # L: the last grid p whose (1 − c)-quantile is below x (all smaller p are rejected too).
    j = jnp.searchsorted(params.q_high, x_low, side="left") - 1
    lower = jnp.where(j >= 0, params.grid[jnp.maximum(j, 0)], 0)
    # P̄ itself lies in its set (the paper's Lemma 2 takes P1 = P2 = P̄).
    return jnp.minimum(lower, x), jnp.maximum(upper, x)


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
        lower, upper = _intervals(p, params)
        outside = _intervals(jnp.zeros((), p.dtype), params)[1]
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
