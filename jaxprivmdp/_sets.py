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

The intervals are exact up to conservative grids: ``q_c`` and ``q_{1−c}`` are tabulated in
float64 on the host (``scipy.special.betaincinv``, whose float32 counterpart in JAX is not
accurate enough in the tails) at a fixed grid of ``p``; from them ``U(x)`` and ``L(x)`` are
tabulated at two fixed grids of ``x`` (:class:`BetaTables`), and on the device each entry
takes ``U`` at the next grid point above it and ``L`` at the next one below (a closed-form
index and a gather). The tables depend only on ``k``, ``c`` and the dtype, and are cached.

For the additive-noise mechanisms (``jaxprivmdp._mechanisms``) every ``bound`` is a box
``P̄ ± r`` with ``r`` from their noise's tail (kind ``"radius"``, like the paper's); the
Beta intervals (kind ``"beta"``) are the Dirichlet mechanism's.
"""

from __future__ import annotations

import functools
from typing import Literal, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from scipy.special import betaincinv

from ._checks import is_concrete
from ._models import Model, Rows, row_support, transition_rows
from ._robust import outward_radius

Bound = Literal["paper", "exact", "certified"]
BOUNDS: tuple[str, ...] = ("paper", "exact", "certified")


def check_bound(bound) -> str:
    """``bound`` itself if it names a set, else a ValueError listing them."""
    if bound not in BOUNDS:
        raise ValueError(f"bound must be one of {', '.join(map(repr, BOUNDS))}, got {bound!r}")
    return bound


class BetaTables(NamedTuple):
    """Each entry's interval ``[L(x), U(x)]`` at two fixed grids of ``x`` (one ``k``, level).

    ``U`` and ``L`` increase with ``x``; an entry takes ``U`` at the next grid point above
    it and ``L`` at the next one below, so the lookup is an index computed with cheap
    arithmetic (no search, no transcendental function) and a gather (:func:`x_grids`):

    - below ``2^-10``: ``(1/2 + j/32)·2^e`` for every binary exponent ``e`` down to
      ``2^-126``, ``j = 0..15`` (a log-like grid, 3 % apart; the index comes from ``frexp``);
    - above: uniform in ``t = √x`` up to 1/2 and ``t = 2√(1/2) − √(1 − x)`` beyond.

    Attributes:
      upper_low, lower_low: `[N + 1]` ``U`` and ``L`` at the low grid.
      upper_high, lower_high: `[M + 1]` ``U`` and ``L`` at the high grid.
    """

    upper_low: jax.Array
    lower_low: jax.Array
    upper_high: jax.Array
    lower_high: jax.Array


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
    ``Beta(k p, k(1 − p))`` at the grid of ``p``, in float64, made monotone outward."""
    p = _grid(dtype_name)
    q_low = betaincinv(k * p, k * (1 - p), level)
    q_high = betaincinv(k * p, k * (1 - p), 1 - level)
    if not (np.all(np.isfinite(q_low)) and np.all(np.isfinite(q_high))):
        raise ValueError(f"Beta quantiles are not finite for k={k}, level={level}")
    # Exact quantiles increase with p; enforce it outward against rounding: q_low may only
    # go down (a reverse running min), q_high only up (a running max).
    q_low = np.minimum.accumulate(q_low[::-1])[::-1]
    q_high = np.maximum.accumulate(q_high)
    return p, q_low, q_high


# The x grids of BetaTables. Low: binades 2^LOW_MIN_EXP .. 2^LOW_MAX_EXP (frexp exponents
# LOW_MIN_EXP + 1 .. LOW_MAX_EXP), LOW_STEPS points each. High: HIGH_POINTS + 1 points
# uniform in t from 0 to √2.
LOW_MIN_EXP, LOW_MAX_EXP, LOW_STEPS, HIGH_POINTS = -126, -10, 16, 4096
LOW_TOP = 2.0**LOW_MAX_EXP
LOW_FLOOR = 2.0**LOW_MIN_EXP  # below: U as at LOW_FLOOR, L = 0


@functools.cache
def x_grids():
    """``(low, high, dt)``: the two grids of ``x`` (float64) and the high grid's step."""
    exps = np.arange(LOW_MIN_EXP + 1, LOW_MAX_EXP + 1)  # frexp: x = m·2^e, m in [1/2, 1)
    mant = 0.5 + np.arange(LOW_STEPS) / (2 * LOW_STEPS)
    low = np.append((mant[None, :] * 2.0 ** exps[:, None]).ravel(), LOW_TOP)
    dt = np.sqrt(2.0) / HIGH_POINTS
    t = np.arange(HIGH_POINTS + 1) * dt
    half = np.sqrt(0.5)
    high = np.where(t <= half, t**2, 1 - (2 * half - np.minimum(t, 2 * half)) ** 2)
    return low, np.clip(high, 0, 1), dt


def _host_interval(k: float, level: float, dtype_name: str):
    """``(U, L)``: each as a function of float64 ``x`` on the host, from the p-grid tables.

    ``U(x)`` is the first grid ``p`` whose ``c``-quantile exceeds ``x`` (every larger ``p``
    is rejected too), ``L(x)`` the last grid ``p`` whose ``(1 − c)``-quantile is below
    ``x``; both are grid points of ``p``, exactly representable in the dtype.
    """
    p, q_low, q_high = _quantile_tables(k, level, dtype_name)

    def upper(x):
        i = np.searchsorted(q_low, x, side="right")
        return np.where(i < p.size, p[np.minimum(i, p.size - 1)], 1.0)

    def lower(x):
        j = np.searchsorted(q_high, x, side="left") - 1
        return np.where(j >= 0, p[np.maximum(j, 0)], 0.0)

    return upper, lower


@functools.lru_cache(maxsize=256)
def _interval_tables(k: float, level: float, dtype_name: str) -> tuple[np.ndarray, ...]:
    """:class:`BetaTables` on the host: ``U`` and ``L`` at both grids of ``x``."""
    upper, lower = _host_interval(k, level, dtype_name)
    low, high, _ = x_grids()
    dtype = np.dtype(dtype_name)
    return tuple(f(x).astype(dtype) for x in (low, high) for f in (upper, lower))


@functools.lru_cache(maxsize=256)
def smallest_width(k: float, level: float, dtype_name: str) -> float:
    """A lower bound on ``U − L`` over entries ``x <= 1/2``: the fill's capacities.

    ``U − L`` is piecewise constant in ``x`` with breaks at the tabulated quantiles: its
    minimum is taken at every break and on both sides of it. The device's intervals are
    wider still (outward grid points, ``P̄`` itself added), so the bound holds for them. A
    row has at most one entry above 1/2, so the greedy fill reaches at most one entry more
    than ``1/width`` (see ``bounds_width``).
    """
    upper, lower = _host_interval(k, level, dtype_name)
    _, q_low, q_high = _quantile_tables(k, level, dtype_name)
    tiny = LOW_FLOOR  # the device looks U up at x >= LOW_FLOOR
    x = np.concatenate([q_low, q_high, [0.0, tiny, 0.5]])
    x = np.clip(np.concatenate([x, np.nextafter(x, -1), np.nextafter(x, 2)]), 0, 0.5)
    return float(np.min(upper(np.maximum(x, tiny)) - lower(x))) * (1 - 1e-9)


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
        _interval_tables(float(kk), float(ll), np.dtype(dtype).name)
        for kk, ll in zip(k.ravel(), np.broadcast_to(level, k.shape).ravel(), strict=True)
    ]
    return tuple(np.stack([o[i] for o in out]).reshape(k.shape + (-1,)) for i in range(4))


def _device_tables(k, level, dtype):
    """The tables for a traced ``k`` or ``β``, through a host callback (no gradient)."""
    low_size = (LOW_MAX_EXP - LOW_MIN_EXP) * LOW_STEPS + 1
    low = jax.ShapeDtypeStruct(jnp.shape(k) + (low_size,), dtype)
    high = jax.ShapeDtypeStruct(jnp.shape(k) + (HIGH_POINTS + 1,), dtype)
    return jax.pure_callback(
        lambda kk, ll: _host_tables(kk, ll, dtype),
        (low, low, high, high),
        jax.lax.stop_gradient(k),
        jax.lax.stop_gradient(level),
        vmap_method="broadcast_all",
    )


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
        # The smallest capacity, in the role α plays for the paper's box: the fill width.
        widths = np.vectorize(smallest_width)(
            np.asarray(k, np.float64), float(level), np.dtype(dtype).name
        )
        alpha = jnp.asarray(widths, dtype)
    else:
        tables = _device_tables(jnp.asarray(k, dtype), jnp.asarray(level, dtype), dtype)
    tables = BetaTables(*map(jnp.asarray, tables))
    return SetParams(jnp.asarray(alpha, dtype), mixture, tables)


def _intervals(x: jax.Array, params: SetParams) -> tuple[jax.Array, jax.Array]:
    """Each entry's ``[L, U]``: the tables at the next grid point of ``x`` outward.

    Low grid: ``frexp`` gives ``x = m·2^e`` exactly, and the index of the grid point below
    (above) is ``16(e − e0) + ⌊32(m − 1/2)⌋`` (``⌈·⌉``), exact arithmetic. High grid: the
    index of ``t(x)`` moved one more step outward, which covers the rounding of ``√``.
    """
    finfo = jnp.finfo(x.dtype)
    _, _, dt = x_grids()
    t = params.tables
    low_max, high_max = t.upper_low.shape[-1] - 1, t.upper_high.shape[-1] - 1
    # The sampler rounds: the exact draw lies within a few ulps of x (below tiny if x == 0).
    x_high = jnp.clip(x * (1 + 8 * finfo.eps), LOW_FLOOR, 1)
    x_low = jnp.clip(x * (1 - 8 * finfo.eps), 0, 1)

    def low_index(v, rounding):
        m, e = jnp.frexp(jnp.maximum(v, LOW_FLOOR))
        step = rounding((m - 0.5) * (2 * LOW_STEPS)).astype(jnp.int32)
        return (e - (LOW_MIN_EXP + 1)) * LOW_STEPS + step

    def high_index(v, rounding, shift):
        half = np.sqrt(0.5)
        tv = jnp.where(v <= 0.5, jnp.sqrt(v), 2 * half - jnp.sqrt(1 - v))
        return rounding(tv / dt).astype(jnp.int32) + shift

    small = x_high < LOW_TOP
    i = jnp.where(small, low_index(x_high, jnp.ceil), high_index(x_high, jnp.ceil, 1))
    i = jnp.clip(i, 0, jnp.where(small, low_max, high_max))
    upper = jnp.where(small, t.upper_low[i], t.upper_high[i])
    small = x_low < LOW_TOP
    j = jnp.where(small, low_index(x_low, jnp.floor), high_index(x_low, jnp.floor, -1))
    below = (j < 0) | (x_low < LOW_FLOOR)  # below the first grid point: L = 0
    j = jnp.clip(j, 0, jnp.where(small, low_max, high_max))
    lower = jnp.where(below, 0, jnp.where(small, t.lower_low[j], t.lower_high[j]))
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
