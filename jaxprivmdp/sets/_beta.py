"""The exact Beta intervals of the Dirichlet mechanism's marginals, as device lookups.

Each entry of a Dirichlet release has the marginal ``P̄_i ~ Beta(k p_i, k(1 − p_i))``. For a
level ``c`` let ``F_p`` be that Beta's CDF; the entry's interval is
``A(x) = {p : c ≤ F_p(x) ≤ 1 − c} = [L(x), U(x)]`` (``F_p(x)`` decreases in ``p``), which misses
the true ``p_i`` with probability ``≤ 2c`` (the Beta is continuous). The sets of ``_sets``
(``"exact"``, ``"certified"``) choose ``c``; this module computes the intervals.

``U`` and ``L`` are solved on the host in float64 (``scipy.special.betainc``, whose float32
counterpart in JAX is not accurate enough in the tails) at fixed nodes of ``x`` in
``(0, 1/2]``, 16 per binade, and stored as :class:`BetaTables`: every node value is a checked
bound (``F`` evaluated on its side of the root). On the device each entry interpolates the
two nodes around it linearly (a closed-form index from ``frexp``, exact arithmetic, and two
gathers per bound); the tables are moved outward by a margin that covers the error of that
interpolation. Entries above 1/2 use the mirror symmetry ``A(x) = 1 − A(1 − x)``. The
tables depend only on ``k``, ``c`` and the dtype (their size on none of them), and are
cached; one ``(k, c)`` takes some 10-60 ms of host time.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from scipy.special import betainc, betainccinv, betaincinv, expit, logit, ndtri

from .._checks import host_callback


class BetaTables(NamedTuple):
    """``U`` and ``L`` at the nodes of :func:`x_grid`, for one ``k``, level and dtype.

    Between nodes ``j`` and ``j + 1`` an entry takes ``value[j] + step[j]·w`` (``w`` its
    place in the cell, from 0 to 1); ``step[j]`` is at most ``value[j + 1] − value[j]``, so
    the result never decreases with ``x``. ``upper`` lies above ``U`` and ``lower`` below
    ``L`` by a margin that covers the error of this interpolation (:func:`_margin`).

    Attributes:
      upper, upper_step: `[NODES]` ``U`` at the nodes (rounded up) and the steps.
      lower, lower_step: `[NODES]` ``L`` at the nodes (rounded down) and the steps.
    """

    upper: jax.Array
    upper_step: jax.Array
    lower: jax.Array
    lower_step: jax.Array


# The nodes: STEPS per binade, (1/2 + j/(2 STEPS))·2^e for the frexp exponents e = E0 .. -1
# (j = 0 .. STEPS - 1), then 1/2 and the node after it (never interpolated towards). Below
# FLOOR = 2^(E0 - 1), the first node: U as at FLOOR, L = 0.
STEPS, E0 = 16, -125
FLOOR = 2.0 ** (E0 - 1)
NODES = -E0 * STEPS + 2
HALF = -E0 * STEPS  # the node at 1/2
# The interpolation margin: this many times the chord error that a quadratic with the largest
# second divided difference within two cells would have (h²·|f''|/8). Measured at the
# quarter points of every cell below 1/2 (k = 1e-2 .. 1e8, c = 1e-12 .. 0.05): the chord
# error of U and L is at most 1.07 times that estimate from the cell's own two end nodes;
# the margin is about 1e-3 of U − L.
SAFETY = 4.0


@functools.cache
def x_grid() -> np.ndarray:
    """The `[NODES]` nodes (float64, exact): 16 per binade, 3-6 % apart."""
    exps = np.arange(E0, 0)
    mant = 0.5 + np.arange(STEPS) / (2 * STEPS)
    x = (mant[None, :] * 2.0 ** exps[:, None]).ravel()
    return np.concatenate([x, [0.5, 0.5 + 1 / (2 * STEPS)]])


@functools.cache
def _grid() -> np.ndarray:
    """A grid of ``p`` in (0, 1) (float64) whose quantiles give the solver its brackets.

    Uniform in ``arcsin(sqrt(p))`` plus log-spaced points down to 1e-30 at both ends. Only
    the solver's speed depends on it: every bracket is checked.
    """
    theta = np.linspace(0, np.pi / 2, 513)[1:-1]
    tails = np.logspace(-30, -2, 225)
    p = np.unique(np.concatenate([np.sin(theta) ** 2, tails, 1 - tails]))
    return p[(p > 0) & (p < 1)]


def _p_quantiles(k: float, level: float):
    """``(grid, q_low, q_high)``: the ``level`` and ``1 − level`` quantiles of
    ``Beta(k p, k(1 − p))`` at the grid of ``p`` (float64, made nondecreasing)."""
    p = _grid()
    with np.errstate(all="ignore"):
        q_low = betaincinv(k * p, k * (1 - p), level)
        q_high = betainccinv(k * p, k * (1 - p), level)
    q_low = np.maximum.accumulate(np.nan_to_num(q_low, nan=0.0))
    q_high = np.maximum.accumulate(np.nan_to_num(q_high, nan=0.0))
    return p, q_low, q_high


def _side(k: float, level: float, upper: bool):
    """``f(p, x) -> (positive, g)``: whether ``p`` lies before the root ``U(x)`` (or
    ``L(x)``), and a smooth decreasing function of ``p`` with that sign (for the steps).

    ``U(x) = sup{p : F_p(x) ≥ c}``, ``L(x) = sup{p : 1 − F_p(x) < c}``; ``F_p(x)`` decreases
    in ``p``. The sign is the comparison with ``c`` itself; ``g`` is it on the normal scale
    (``ndtri``), nearly linear in ``p`` wherever the Beta is nearly normal.
    """

    def f(p, x):
        p = np.asarray(p, np.float64)
        a, b = k * p, k * (1 - p)
        with np.errstate(all="ignore"):
            if upper:
                v = betainc(a, b, x)
                pos = v >= level
            else:
                # 1 − F_p(x) = I_{1−x}(b, a), accurate where 1 − x is exact (x >= 2^-47
                # at these nodes); below, 1 − I_x(a, b) is within 1e-15 of it and the
                # test is made that much stricter (a level 1e-15 lower: only outward).
                exact = np.broadcast_to(x >= 2.0**-47, p.shape)
                a, b, xs = (np.broadcast_to(t, p.shape) for t in (a, b, x))
                v = np.empty(p.shape)
                v[exact] = betainc(b[exact], a[exact], 1 - xs[exact])
                v[~exact] = 1 - betainc(a[~exact], b[~exact], xs[~exact])
                target = np.where(exact, level, level - 1e-15)
                pos = v < target
        # The limits p = 0 (a point mass at 0) and p = 1 (at 1).
        pos = np.where(p <= 0, True, np.where(p >= 1, False, pos))
        v = np.where(p <= 0, 1.0 if upper else 0.0, np.where(p >= 1, 0.0 if upper else 1.0, v))
        with np.errstate(all="ignore"):
            g = ndtri(v) - ndtri(level if upper else target)
            g = np.clip(np.nan_to_num(g, nan=0.0), -40, 40)
        return pos, (g if upper else -g)

    return f


def _solve(k: float, level: float, x: np.ndarray, upper: bool, tol=0.0):
    """``(lo, hi)``: float64 brackets of ``U(x)`` (or ``L(x)``) with ``hi − lo`` small.

    ``lo`` is checked to lie before the root and ``hi`` not, so ``lo ≤ root ≤ hi``; the
    steps stop once ``hi − lo`` is below ``tol`` or 1e-6 of the cell (64 at most). The table of
    :func:`_p_quantiles` gives each ``x`` a cell of ``p`` and a guess (interpolated on the
    logit scales); two points a twentieth of the cell either side of it mostly bracket the
    root, else the cell's end on the open side does (widened until checked). Then regula
    falsi on the normal scale (an end kept twice is halved: Illinois; four times,
    bisection): one plain step, then steps that evaluate two points a quarter tolerance
    either side of the estimate, which close the bracket as soon as it is that good. Some 5
    evaluations of ``betainc`` per node.
    """
    p, q_low, q_high = _p_quantiles(k, level)
    f = _side(k, level, upper)
    grid = np.concatenate([[0.0], p, [1.0]])
    q = np.concatenate([[0.0], q_low if upper else q_high, [1.0]])
    # U(x) lies past the last grid p with q_c(p) <= x, L(x) past the last with q_{1-c}(p) < x.
    i = np.searchsorted(q_low, x, side="right") if upper else np.searchsorted(q_high, x)
    ia, ib = i, i + 1  # the cell, as indices into grid (grid[0] = 0)
    lo_p, hi_p = grid[ia], grid[ib]
    with np.errstate(all="ignore"):
        frac = (logit(x) - logit(q[ia])) / (logit(q[ib]) - logit(q[ia]))
        frac = np.clip(np.nan_to_num(frac, nan=0.5, posinf=1.0, neginf=0.0), 0, 1)
        guess = expit(logit(lo_p) + frac * (logit(hi_p) - logit(lo_p)))
        guess = np.where(np.isfinite(guess), guess, lo_p + frac * (hi_p - lo_p))
        frac = np.clip(np.nan_to_num((guess - lo_p) / (hi_p - lo_p), nan=0.5), 0, 1)
    pts = lo_p + np.clip(frac + np.array([[-0.05], [0.05]]), 0, 1) * (hi_p - lo_p)
    pos, g = f(pts, np.broadcast_to(x, pts.shape))
    zero = np.zeros_like(x)
    a, ga, b, gb, have_a, have_b = _narrow(pts, pos, g, zero, zero, zero + 1, zero)
    for step in 2 ** np.arange(2, 13):  # the open ends: the cell's, widened until checked
        na, nb = np.nonzero(~have_a)[0], np.nonzero(~have_b)[0]
        if na.size == 0 and nb.size == 0:
            break
        pa, g_a = f(grid[ia[na]], x[na])
        a[na], ga[na], have_a[na] = grid[ia[na]], g_a, pa
        ia[na] = np.where(pa, ia[na], np.maximum(ia[na] - step, 0))
        pb, g_b = f(grid[ib[nb]], x[nb])
        b[nb], gb[nb], have_b[nb] = grid[ib[nb]], g_b, ~pb
        ib[nb] = np.where(pb, np.minimum(ib[nb] + step, grid.size - 1), ib[nb])
    assert have_a.all() and have_b.all()  # grid[0] = 0 and grid[-1] = 1 always hold
    ga, gb = np.maximum(ga, 0.0), np.minimum(gb, 0.0)
    tol = np.maximum(np.maximum(1e-6 * (hi_p - lo_p), 4 * np.finfo(np.float64).eps * b), tol)
    stale = np.zeros(x.shape, np.int8)  # how often in a row an end was kept: -n a, +n b
    for it in range(64):
        act = np.nonzero(b - a > tol)[0]
        if act.size == 0:
            break
        aa, bb, gaa, gbb, st, tl = a[act], b[act], ga[act], gb[act], stale[act], tol[act]
        wa = gaa * np.where(st <= -2, 0.5, 1.0)
        wb = gbb * np.where(st >= 2, 0.5, 1.0)
        with np.errstate(all="ignore"):
            m = aa + (bb - aa) * wa / (wa - wb)
        m = np.where(np.isfinite(m) & (np.abs(st) < 4), m, 0.5 * (aa + bb))
        around = np.array([[0.0]]) if it == 0 else np.array([[-0.25], [0.25]])
        pts = np.clip(m + around * tl, aa + 1e-3 * tl, bb - 1e-3 * tl)
        pos, g = f(pts, np.broadcast_to(x[act], pts.shape))
        a2, ga2, b2, gb2, moved_a, moved_b = _narrow(pts, pos, g, aa, gaa, bb, gbb)
        a[act], ga[act], b[act], gb[act] = a2, np.maximum(ga2, 0), b2, np.minimum(gb2, 0)
        stale[act] = np.where(
            moved_a & moved_b, 0, np.where(moved_a, np.maximum(st, 0) + 1, np.minimum(st, 0) - 1)
        )
    return a, b


def _narrow(pts, pos, g, a, ga, b, gb):
    """The bracket ``[a, b]`` narrowed by the increasing points ``pts`` `[m, n]` (with their
    signs ``pos`` and values ``g``): ``(a, ga, b, gb, moved_a, moved_b)``."""
    n_pos = pos.sum(0)  # f decreases: the points before the root come first
    last, first = np.maximum(n_pos - 1, 0)[None], np.minimum(n_pos, len(pts) - 1)[None]
    moved_a, moved_b = n_pos > 0, n_pos < len(pts)
    a = np.where(moved_a, np.take_along_axis(pts, last, 0)[0], a)
    ga = np.where(moved_a, np.take_along_axis(g, last, 0)[0], ga)
    b = np.where(moved_b, np.take_along_axis(pts, first, 0)[0], b)
    gb = np.where(moved_b, np.take_along_axis(g, first, 0)[0], gb)
    return a, ga, b, gb, moved_a, moved_b


@functools.lru_cache(maxsize=256)
def _quantile_tables(k: float, level: float) -> tuple[np.ndarray, ...]:
    """``(U_lo, U_hi, L_lo, L_hi)``: float64 brackets of ``U`` and ``L`` at the nodes (the
    Beta quantiles inverted), the dtype aside."""
    x = x_grid()
    u_lo, u_hi = _solve(k, level, x, upper=True)
    # L matters against the width: to 1e-9 of U (below 2^-47, 1 − F is known to 1e-15 only).
    l_lo, l_hi = _solve(k, level, x, upper=False, tol=1e-9 * u_lo)
    return u_lo, u_hi, l_lo, l_hi


def _margin(x: np.ndarray, v: np.ndarray, slack: np.ndarray) -> np.ndarray:
    """Per node, a bound on how far the chord of ``v`` on either adjacent cell is from
    ``v`` itself: SAFETY × ``h²·max|v''|/8`` with ``v''`` estimated by the second divided
    differences of the nodes within two cells, plus the nodes' own bracket widths there
    (``slack``, which could hide curvature)."""
    h = np.diff(x)
    s = np.diff(v) / h
    d2 = np.abs(np.diff(s)) * 2 / (x[2:] - x[:-2])  # at the interior nodes
    d2 = np.concatenate([[d2[0]], d2, [d2[-1]]])
    near = np.max(np.stack([np.roll(d2, r) for r in (-2, -1, 0, 1, 2)]), axis=0)
    near[:2] = np.max(d2[:4])
    near[-2:] = np.max(d2[-4:])
    cell = SAFETY * h**2 * np.maximum(near[:-1], near[1:]) / 8  # per cell
    cell += np.maximum(slack[:-1], slack[1:])
    return np.maximum(np.append(cell, 0.0), np.insert(cell, 0, 0.0))


def _rounded(v: np.ndarray, dtype, up: bool) -> np.ndarray:
    """``v`` (float64) in ``dtype``, rounded up (or down)."""
    out = v.astype(dtype)
    wrong = out.astype(np.float64) < v if up else out.astype(np.float64) > v
    return np.where(wrong, np.nextafter(out, dtype(np.inf if up else -np.inf)), out)


@functools.lru_cache(maxsize=256)
def _interval_tables(k: float, level: float, dtype_name: str) -> tuple[np.ndarray, ...]:
    """:class:`BetaTables` on the host: the node brackets moved out by the margin, made
    monotone outward, in the dtype, with their steps."""
    x = x_grid()
    dtype = np.dtype(dtype_name).type
    u_lo, u_hi, l_lo, l_hi = _quantile_tables(k, level)
    upper = np.minimum(u_hi + _margin(x, u_hi, u_hi - u_lo), 1.0)
    lower = np.maximum(l_lo - _margin(x, l_lo, l_hi - l_lo), 0.0)
    upper = _rounded(np.maximum.accumulate(upper), dtype, up=True)
    lower = _rounded(np.minimum.accumulate(lower[::-1])[::-1], dtype, up=False)

    def steps(v):  # rounded down, so that v[j] + step[j] <= v[j + 1] in the dtype too
        d = _rounded(np.append(np.diff(v.astype(np.float64)), 0.0), dtype, up=False)
        over = (v + d).astype(np.float64) > np.append(v[1:], v[-1]).astype(np.float64)
        return np.where(over, np.nextafter(d, dtype(0)), d)

    return upper, steps(upper), lower, steps(lower)


@functools.lru_cache(maxsize=256)
def smallest_width(k: float, level: float, dtype_name: str) -> float:
    """A lower bound on ``U − L`` over entries ``x <= 1/2``: the fill's capacities.

    Within a cell of nodes the device's ``U`` is at least the linear interpolation of
    ``upper`` at ``x`` (it is looked up at a larger ``x`` and rounded up; ``step`` is exact
    up to the rounding it covers) and its ``L`` at most that of ``lower``: their difference
    is linear in ``x``, so its smaller value at the two nodes bounds it. The box also holds
    ``x``, which can only lower ``L`` to ``x``: ``U − L ≥ upper[j] − min(lower[j + 1],
    x[j + 1])`` bounds that too, and each cell takes the larger bound. Entries just below
    1/2 whose widened value crosses 1/2 take ``U ≥ upper[1/2]`` (:func:`intervals`). A row
    has at most one entry above 1/2, so the greedy fill reaches at most one entry more than
    ``1/width`` (see ``bounds_width``).
    """
    upper, _, lower, _ = (t.astype(np.float64) for t in _interval_tables(k, level, dtype_name))
    eps = float(np.finfo(dtype_name).eps)
    x = x_grid()[: HALF + 1]
    upper, lower = upper[: HALF + 1], lower[: HALF + 1]
    linear = np.minimum((upper - lower)[:-1], (upper - lower)[1:])
    hull = upper[:-1] - np.minimum(lower[1:], x[1:])
    return max(float(np.min(np.maximum(linear, hull))) * (1 - 16 * eps), 0.0)


def host_tables(k, level, dtype):
    k = np.asarray(k, np.float64)
    level = np.asarray(level, np.float64)
    out = [
        _interval_tables(float(kk), float(ll), np.dtype(dtype).name)
        for kk, ll in zip(k.ravel(), np.broadcast_to(level, k.shape).ravel(), strict=True)
    ]
    return tuple(np.stack([o[i] for o in out]).reshape(k.shape + (-1,)) for i in range(4))


def device_tables(k, level, dtype):
    """The tables for a traced ``k`` or ``β``, through a host callback (no gradient)."""
    tables = host_callback(  # the four tables stacked on axis -2 (one result)
        lambda kk, ll: np.stack(host_tables(kk, ll, dtype), axis=-2),
        jnp.shape(k) + (4, NODES),
        dtype,
        jax.lax.stop_gradient(k),
        jax.lax.stop_gradient(level),
        vmap_method="broadcast_all",
    )
    return tuple(tables[..., i, :] for i in range(4))


def cell(y: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(i, w)``: the node below ``y ∈ [0, 1/2]`` (``y`` at least ``FLOOR``) and the place
    of ``y`` in its cell, from 0 to 1.

    With ``y = 1.f·2^(E − bias)`` (a normal number), ``i`` is ``STEPS(E − 1 − bias − E0)``
    plus the top 4 bits of ``f``, and ``w`` the remaining bits of ``f`` over their range:
    ``frexp``'s ``STEPS(e − E0) + ⌊2 STEPS (m − 1/2)⌋`` and its fractional part, bit for bit
    (exact integer arithmetic and an exact conversion), in fewer operations.
    """
    info = jnp.finfo(y.dtype)
    low_bits = info.nmant - 4  # the bits of f below the cell's 4
    ints = jnp.int64 if y.dtype == jnp.float64 else jnp.int32
    bits = jax.lax.bitcast_convert_type(jnp.maximum(y, FLOOR).astype(y.dtype), ints)
    i = (bits >> low_bits) - STEPS * (info.maxexp - 2 + E0)  # maxexp − 1: the bias
    w = (bits & ((1 << low_bits) - 1)).astype(y.dtype) * (2.0**-low_bits)
    return i, w


def _next(r: jax.Array, up: bool) -> jax.Array:
    """``nextafter(r, +inf)`` (``up``, ``r ≥ +0``) or ``max(nextafter(r, −inf), 0)`` (finite
    ``r ≠ −0``) from the bits, read as a signed integer: for floats ``≥ +0`` they grow by one
    per float (subnormals included). Minus one is negative for ``r = +0`` and ``r < 0`` (not
    the smallest integer: ``r ≠ −0``), and its ``max`` with 0 is ``+0``, as the float one.
    ``jnp.nextafter`` (NaN and signs handled per entry) was most of the lookup's cost.
    """
    bits = jax.lax.bitcast_convert_type(r, jnp.int64 if r.dtype == jnp.float64 else jnp.int32)
    return jax.lax.bitcast_convert_type(bits + 1 if up else jnp.maximum(bits - 1, 0), r.dtype)


def _lookup(y: jax.Array, up: jax.Array, values: jax.Array, steps: jax.Array) -> jax.Array:
    """The table (``upper`` where ``up``, else ``lower``) interpolated at ``y ∈ [0, 1/2]``,
    rounded outward (up where ``up``). ``values``, ``steps``: ``upper`` then ``lower``.

    The cell and the place ``w`` in it: :func:`cell` (exact, so the index and ``w`` never
    err). The index lies in ``[0, 2 NODES)``: ``take`` needs no wrap of negative indices.
    """
    eps = jnp.finfo(y.dtype).eps
    i, w = cell(y)
    i = i + jnp.where(up, 0, NODES)
    # Both terms are >= 0. step lies at most 2 ulps below the exact difference (2 ulps of
    # the result at most) and the two roundings here add half an ulp each: 1 ± 4 eps
    # covers them. The result never decreases with y (fl(a + step·w) <= fl(a + step)).
    a, step = jnp.take(values, i, mode="clip"), jnp.take(steps, i, mode="clip")
    v = (a + step * w) * jnp.where(up, 1 + 4 * eps, 1 - 4 * eps)
    # A select, not a zero node in the table: XLA:CPU lets LLVM fuse a product into a
    # following `1 − v` (one FMA, other bits); between them the select keeps it from that.
    return jnp.where(up | (y >= FLOOR), v, 0)


def intervals(x: jax.Array, t: BetaTables) -> tuple[jax.Array, jax.Array]:
    """Each entry's ``[L, U]``: the tables interpolated at ``x``, outward, nondecreasing in x.

    ``U`` is looked up at ``x`` widened up by 8 ulps (and at least ``FLOOR``), ``L`` at ``x``
    widened down, both through the mirror ``U(x) = 1 − L(1 − x)``, ``L(x) = 1 − U(1 − x)``
    where that point is above 1/2 (``1 − x`` is exact there).
    """
    eps = jnp.finfo(x.dtype).eps
    values = jnp.concatenate([t.upper, t.lower])
    steps = jnp.concatenate([t.upper_step, t.lower_step])
    x = jnp.clip(x, 0, 1)
    # The sampler rounds: the exact draw lies within a few ulps of x (below FLOOR if x == 0).
    x_high = jnp.minimum(x * (1 + 8 * eps), 1)
    x_low = x * (1 - 8 * eps)
    # 1 − v lies in [1/2, 1] (v <= 1/2) or is exact (v >= 1/2): at most half an ulp off,
    # so one ulp outward covers it. Across 1/2 the two sides agree through the direct U at
    # 1/2 (no direct U exceeds it, and no mirrored L falls below 1 minus it, one ulp out).
    u_half = t.upper[HALF] * (1 + 4 * eps)
    l_half = jnp.maximum(jnp.nextafter(1 - u_half, -jnp.ones_like(u_half)), 0)
    # Mirrored, v is in [0, 1) for U and [0, 1 + 4 eps] for L: 1 − v suits _next. The
    # selects `where(a < b, a, b)` are min(a, b) (`>`: max) bit for bit, without the NaN
    # handling, as a is no NaN (x's reaches the result as b) and nothing is −0 (clip gives
    # +0). v >= +0: max(min(v, l_half), 0) = min(v, max(l_half, 0)).
    flip = x_high > 0.5
    v = _lookup(jnp.where(flip, 1 - x_high, x_high), ~flip, values, steps)
    mirror = _next(1 - v, up=True)
    upper = jnp.where(flip, jnp.where(mirror > u_half, mirror, u_half), v)
    flip = x_low > 0.5
    v = _lookup(jnp.where(flip, 1 - x_low, x_low), flip, values, steps)
    lower = jnp.where(flip, _next(1 - v, up=False), jnp.where(v < l_half, v, l_half))
    # P̄ itself lies in its set (the paper's Lemma 2 takes P1 = P2 = P̄).
    upper = jnp.where(upper < 1, upper, 1)
    return jnp.where(lower < x, lower, x), jnp.where(upper > x, upper, x)
