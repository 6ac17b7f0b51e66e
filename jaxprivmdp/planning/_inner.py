"""The inner problem of the cost-of-privacy bounds, solved exactly without an LP.

For a privatized row ``p̄``, a value vector ``v``, ``β ∈ (0, 1)`` and ``α > 0`` the paper's
LP (P) optimizes ``p · v`` over

    P̂ = {β P1 + (1 − β) P2 : P1, P2 ∈ Δ(n), ‖P2 − p̄‖∞ ≤ α}.

The two parts separate: ``min_{P̂} p·v = β min_j v_j + (1 − β) min{x·v : x ∈ Δ(n), l ≤ x ≤ u}``
with ``l = max(p̄ − α, 0)`` and ``u = min(p̄ + α, 1)``. The box-simplex problem is solved by the
greedy fill (exact for this LP: it is a fractional knapsack): start every ``x_j`` at ``l_j``
and pour the remaining mass ``1 − Σ l`` into the entries with the smallest ``v_j`` first, each
up to ``u_j``. That is a sort, a cumulative sum, a clip and a dot product.

One row at a time here (:func:`robust_expectation`); every row of a Bellman recursion at once,
with the fill restricted to the entries it can reach, in :mod:`._kernel`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from .._checks import ROW_SUM_TOLERANCE, check_range, is_concrete


def pour_sorted(slack: jax.Array, caps_sorted: jax.Array) -> jax.Array:
    """The greedy fill: ``clip(slack − Σ_{j<i} cap_(j), 0, cap_(i))`` along the last axis."""
    before = jnp.cumsum(caps_sorted, axis=-1) - caps_sorted
    slack = jnp.broadcast_to(slack, caps_sorted.shape[:-1])[..., None]
    return jnp.clip(slack - before, 0, caps_sorted)


# Windows up to this wide take their running sums as a chain of slices: XLA:CPU lowers
# ``jnp.cumsum`` to a reduce-window, which took ~80 µs a stage on the `[2, 2500, 8]` window of
# a 50×50 gridworld (a third of its bounds on the CPU). XLA adds in blocks of
# 16 in order, so up to 16 these are its bits, and the chain's error stays within the blocked
# sum's, which :func:`jaxprivmdp.planning._rounding.summation_ulps` assumes.
RUNNING_SUM_MAX = 16


def running_sum(x: jax.Array) -> jax.Array:
    """``jnp.cumsum(x, axis=-1)``: for a short last axis, one addition per entry in order."""
    m = x.shape[-1]
    if m > RUNNING_SUM_MAX:
        return jnp.cumsum(x, axis=-1)
    # No optimization barrier in front: XLA:CPU drops it (none is left in the compiled
    # program), and with or without one the times and bits are the same.
    sums = [x[..., 0]]
    for j in range(1, m):
        sums.append(sums[-1] + x[..., j])
    return jnp.stack(sums, axis=-1)


def _check_rows(values, p_bar) -> None:
    if not is_concrete(values, p_bar):
        return
    v, p = np.asarray(values, float), np.asarray(p_bar, float)
    if not np.all(np.isfinite(v)):
        raise ValueError("values must be finite")
    if p.ndim == 0 or not np.all(np.isfinite(p)) or np.any(p < 0):
        raise ValueError("p_bar must be finite, non-negative rows of shape [..., n]")
    sums = p.sum(axis=-1)
    if np.any(np.abs(sums - 1) > ROW_SUM_TOLERANCE):
        bad = float(sums.ravel()[np.argmax(np.abs(sums - 1).ravel())])
        raise ValueError(f"p_bar rows must sum to 1, one sums to {bad:.9g}")


def robust_expectation(
    values: ArrayLike,
    p_bar: ArrayLike,
    *,
    alpha: ArrayLike,
    beta: ArrayLike,
    maximize: bool = False,
) -> jax.Array:
    """Exact ``min`` (or ``max``) of ``p · v`` over ``P̂`` (the paper's LP (P)), no LP solver.

    .. math::
        \\min_{p ∈ P̂} p·v = β \\min_j v_j + (1 − β) \\min\\{x·v : x ∈ Δ(n),
        \\max(p̄ − α, 0) ≤ x ≤ \\min(p̄ + α, 1)\\}

    The second term is the greedy fill in ``v``-order (sort, cumsum, clip, dot).

    Args:
      values: `[..., n]` the value vector ``v`` (broadcast against ``p_bar``).
      p_bar: `[..., n]` the privatized distribution ``p̄`` (rows on the simplex).
      alpha: the radius ``α >= 0`` (broadcast over the leading axes), see
        :func:`concentration_radius`.
      beta: ``β`` in ``(0, 1)`` (broadcast over the leading axes).
      maximize: if True, return the max (the optimistic bound) instead of the min.

    Returns:
      `[...]` the optimal value of the inner problem.

    Raises:
      ValueError: for concrete ``alpha < 0``, ``beta`` outside ``(0, 1)``, non-finite
        values, or ``p_bar`` rows that are negative or do not sum to 1.

    References:
      Gohari, Hale, Topcu, CDC 2020, eq. (1) and problem (P), Section V.
    """
    check_range("alpha", alpha, low=0.0)
    check_range("beta", beta, low=0.0, high=1.0, low_open=True, high_open=True)
    _check_rows(values, p_bar)
    v, p_bar = jnp.asarray(values), jnp.asarray(p_bar)
    dtype = jnp.result_type(v, p_bar, float)
    v, p_bar = jnp.broadcast_arrays(v.astype(dtype), p_bar.astype(dtype))
    batch = p_bar.shape[:-1]
    alpha = jnp.broadcast_to(jnp.asarray(alpha, dtype), batch)[..., None]
    beta = jnp.broadcast_to(jnp.asarray(beta, dtype), batch)
    w = -v if maximize else v
    lower = jnp.maximum(p_bar - alpha, 0)
    caps = jnp.minimum(p_bar + alpha, 1) - lower
    slack = jnp.maximum(1 - jnp.sum(lower, axis=-1), 0)
    order = jnp.argsort(w, axis=-1)
    w_sorted = jnp.take_along_axis(w, order, axis=-1)
    pour = pour_sorted(slack, jnp.take_along_axis(caps, order, axis=-1))
    inner = jnp.sum(lower * w, axis=-1) + jnp.sum(pour * w_sorted, axis=-1)
    out = beta * w_sorted[..., 0] + (1 - beta) * inner
    return -out if maximize else out
