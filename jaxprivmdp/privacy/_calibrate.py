"""Calibration: the largest ``k`` (the least noise) whose per-row guarantee meets a target."""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize

from .._checks import real
from ._row import check_b, check_eta, check_k, check_n, check_target_delta, guarantee, log_k_grid


def calibrate_k(
    target_epsilon: float,
    target_delta: float,
    *,
    b: float,
    eta: float,
    n: int,
    k_bounds: tuple[float, float] = (1e-2, 1e5),
) -> float:
    """The largest ``k`` (the least noise) whose :func:`guarantee` meets both targets.

    The optimal ε does not vanish as ``k → 0``: for ``b <= 1 − nη`` it tends to

    .. math::

        ε_0 = \\log\\frac{M − b/2}{M} + (n−1)\\log\\Big(1 + \\frac{b/2}{(n−1)η}\\Big)
              + \\frac{b}{2η}\\log\\frac{(n−1)(1−η)}{δ},
        \\qquad M = 1 − (n−1)η,

    (``Γ(z) ≈ 1/z`` and ``I_γ(kη, k(1−η)) ≈ (1−η) γ^{kη}`` for small ``k``; the decreased mass
    spread evenly over ``n − 1`` entries, which costs nothing in the limit). Under ℓ1
    adjacency the optimal ε is not monotone in ``k`` (for ``n >= 3`` and ``kη < 1/2`` it dips
    a few tenths of a percent below ``ε_0`` before growing), and targets below its minimum
    are out of reach for any ``k``. The search scans a log grid over ``k_bounds`` for the
    last feasible point and refines the crossing after it with ``brentq`` on ``log k``, so it
    returns the largest feasible ``k`` (up to the grid's resolution of separate feasible
    intervals).

    Args:
      target_epsilon: the ε to meet, ``> 0``.
      target_delta: the δ to meet, in ``(0, 1)``.
      b: the adjacency bound, in ``(0, 1]``.
      eta: the domain's lower bound on every entry, in ``(0, 1/n]``.
      n: the row's dimension, ``>= 2``.
      k_bounds: the search bracket ``(k_lo, k_hi)``, ``0 < k_lo < k_hi``.

    Returns:
      ``k``; ``k_hi`` if every ``k`` in the bracket meets the targets.

    Raises:
      ValueError: for invalid arguments, or if no ``k`` in ``k_bounds`` meets the targets.
    """
    target_epsilon = real("target_epsilon", target_epsilon, low=0.0, low_open=True)
    target_delta = check_target_delta(target_delta)
    n = check_n(n)
    b = check_b(b)
    eta = check_eta(eta, n)
    try:
        k_lo, k_hi = (check_k(v) for v in k_bounds)
    except (TypeError, ValueError):
        raise ValueError(
            f"k_bounds must be two numbers 0 < k_lo < k_hi, got {k_bounds!r}"
        ) from None
    if not k_lo < k_hi:
        raise ValueError(f"k_bounds must be two numbers 0 < k_lo < k_hi, got {k_bounds!r}")

    def excess(log_k):
        g = guarantee(math.exp(log_k), b=b, eta=eta, n=n, target_delta=target_delta)
        return g.epsilon - target_epsilon

    grid = log_k_grid(k_lo, k_hi)
    values = np.array([excess(v) for v in grid])
    feasible = np.flatnonzero(values <= 0)
    if feasible.size == 0:
        i = int(np.argmin(values))
        raise ValueError(
            f"no k in k_bounds={k_bounds!r} meets target_epsilon={target_epsilon!r} at "
            f"target_delta={target_delta!r} (b={b}, eta={eta}, n={n}); the smallest epsilon "
            f"found is {values[i] + target_epsilon:.4g} at k={math.exp(grid[i]):.4g}"
        )
    last = int(feasible[-1])
    if last == grid.size - 1:
        return k_hi
    log_k = optimize.brentq(excess, grid[last], grid[last + 1], xtol=1e-12, rtol=1e-14)
    nudge = 1e-12
    while excess(log_k) > 0:
        log_k -= nudge
        nudge *= 2.0
    return math.exp(log_k)
