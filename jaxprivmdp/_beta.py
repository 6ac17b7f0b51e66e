"""The exact Beta intervals of the Dirichlet mechanism's marginals, as device lookups.

Each entry of a Dirichlet release has the marginal ``P̄_i ~ Beta(k p_i, k(1 − p_i))``. For a
level ``c`` let ``q_c(p)`` be that Beta's ``c``-quantile; the entry's interval is
``{p : q_c(p) ≤ P̄_i ≤ q_{1−c}(p)}``, which misses the true ``p_i`` with probability
``≤ 2c`` (the Beta is continuous). The sets of ``_sets`` (``"exact"``, ``"certified"``) choose
``c``; this module computes the intervals.

The intervals are exact up to conservative grids: ``q_c`` and ``q_{1−c}`` are tabulated in
float64 on the host (``scipy.special.betaincinv``, whose float32 counterpart in JAX is not
accurate enough in the tails) at a fixed grid of ``p``; from them ``U(x)`` and ``L(x)`` are
tabulated at two fixed grids of ``x`` (:class:`BetaTables`), and on the device each entry
takes ``U`` at the next grid point above it and ``L`` at the next one below (a closed-form
index and a gather). The tables depend only on ``k``, ``c`` and the dtype, and are cached.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from scipy.special import betaincinv


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
    low_size = (LOW_MAX_EXP - LOW_MIN_EXP) * LOW_STEPS + 1
    low = jax.ShapeDtypeStruct(jnp.shape(k) + (low_size,), dtype)
    high = jax.ShapeDtypeStruct(jnp.shape(k) + (HIGH_POINTS + 1,), dtype)
    return jax.pure_callback(
        lambda kk, ll: host_tables(kk, ll, dtype),
        (low, low, high, high),
        jax.lax.stop_gradient(k),
        jax.lax.stop_gradient(level),
        vmap_method="broadcast_all",
    )


def intervals(x: jax.Array, t: BetaTables) -> tuple[jax.Array, jax.Array]:
    """Each entry's ``[L, U]``: the tables at the next grid point of ``x`` outward.

    Low grid: ``frexp`` gives ``x = m·2^e`` exactly, and the index of the grid point below
    (above) is ``16(e − e0) + ⌊32(m − 1/2)⌋`` (``⌈·⌉``), exact arithmetic. High grid: the
    index of ``t(x)`` moved one more step outward, which covers the rounding of ``√``.
    """
    finfo = jnp.finfo(x.dtype)
    _, _, dt = x_grids()
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
