"""Per-row accounting: the (ε, δ) of one row's Dirichlet mechanism (``docs/privacy.md``)."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike
from scipy import optimize, special

from .._checks import ETA_RELATIVE_TOLERANCE, check_int, check_positive, real
from ._special import log_betainc


class Guarantee(NamedTuple):
    """The (ε, δ) of one row's Dirichlet mechanism with the ε-optimal good set.

    Attributes:
      epsilon: the worst-case privacy loss on the good set (exact, see the module docstring).
      delta: the bound on the probability of leaving the good set (``<= target_delta``).
      gamma: the good set's threshold ``γ`` (``x_l >= γ`` for all ``l``); may underflow to
        ``0.0`` in float64, ``log_gamma`` is always exact.
      k: the mechanism's parameter.
      b: the adjacency bound ``‖p − q‖₁ <= b``.
      eta: the domain's lower bound on every entry.
      n: the row's dimension.
      log_gamma: ``log γ``.
    """

    epsilon: float
    delta: float
    gamma: float
    k: float
    b: float
    eta: float
    n: int
    log_gamma: float


# --------------------------------------------------------------------------- validation


def check_n(n) -> int:
    return check_int("n", n, low=2)


def check_k(k) -> float:
    return real("k", k, low=0.0, low_open=True)


def check_k_array(k) -> np.ndarray:
    check_positive("k", k, scalar=False)
    return np.asarray(k, dtype=np.float64)


def check_b(b) -> float:
    return real("b", b, low=0.0, high=1.0, low_open=True)


def check_eta(eta, n: int) -> float:
    """``η ∈ (0, 1/n]``; values a rounding above ``1/n`` are taken as ``1/n``."""
    v = real("eta", eta)
    if not 0 < v <= (1 + ETA_RELATIVE_TOLERANCE) / n:
        raise ValueError(f"eta must lie in (0, 1/n] = (0, {1 / n!r}] for n = {n}, got {eta!r}")
    return min(v, 1.0 / n)


def check_target_delta(target_delta) -> float:
    return real("target_delta", target_delta, low=0.0, high=1.0, low_open=True, high_open=True)


def _resolve_log_gamma(gamma, log_gamma, n: int) -> float:
    if (gamma is None) == (log_gamma is None):
        raise ValueError("pass exactly one of gamma and log_gamma")
    if gamma is not None:
        v = real("gamma", gamma)
        if not 0 < v < 1 / n:
            raise ValueError(
                f"gamma must lie in (0, 1/n) = (0, {1 / n!r}) for n = {n}, got {gamma!r}"
            )
        return math.log(v)
    v = real("log_gamma", log_gamma)
    if not v < -math.log(n):
        raise ValueError(
            f"log_gamma must lie in (-inf, log(1/n)) = (-inf, {-math.log(n)!r}) for n = {n}, "
            f"got {log_gamma!r}"
        )
    return v


def _log_ratio_bound(log_gamma: float, n: int) -> float:
    """``c = log((1 − (n−1)γ)/γ)``, the largest ``log(x_j/x_i)`` on the good set."""
    return math.log1p(-(n - 1) * math.exp(log_gamma)) - log_gamma


def _gamma_term(k, t, eta: float, n: int):
    """``D(t) = log B(kη, kM) − log B(k(η+t), k(M−t))``, ``M = 1 − (n−1)η``."""
    big = 1.0 - (n - 1) * eta
    return special.betaln(k * eta, k * big) - special.betaln(k * (eta + t), k * (big - t))


def _worst_t(k: float, b: float, eta: float, n: int, c: float) -> float:
    """The ``t`` maximising ``φ(t) = D(t) + k t c`` over ``(0, min(b/2, 1 − nη)]``."""
    big = 1.0 - (n - 1) * eta
    t_max = min(b / 2, big - eta)
    if t_max <= (big - eta) / 2:
        return t_max  # φ' > 0 on the whole range: the closed form.

    def slope(t):
        return special.digamma(k * (big - t)) - special.digamma(k * (eta + t)) + c

    if slope(t_max) >= 0:
        return t_max
    return optimize.brentq(slope, (big - eta) / 2, t_max, xtol=1e-15, rtol=4 * np.finfo(float).eps)


def _epsilon_log(k: float, b: float, eta: float, log_gamma: float, n: int) -> float:
    if 1.0 - n * eta <= 0:
        return 0.0  # the domain is the single point p = uniform: no adjacent pair differs.
    c = _log_ratio_bound(log_gamma, n)
    t = _worst_t(k, b, eta, n, c)
    return float(_gamma_term(k, t, eta, n) + k * t * c)


def _log_delta(k: float, eta: float, log_gamma: float, n: int) -> float:
    """``log[(n−1) I_γ(kη, k(1−η)) + I_γ(k/n, k(1−1/n))]``."""
    small = math.log(n - 1) + log_betainc(k * eta, k * (1 - eta), log_gamma)
    large = log_betainc(k / n, k * (1 - 1 / n), log_gamma)
    return float(np.logaddexp(small, large))


# --------------------------------------------------------------------------- per row


def epsilon(
    k: ArrayLike,
    *,
    b: float,
    eta: float,
    gamma: float | None = None,
    n: int,
    log_gamma: float | None = None,
):
    """The worst-case privacy loss of ``Dirichlet(k·p)`` on the good set ``{x >= γ}``.

    For ``b <= 1 − nη`` (the usual case)

    .. math::

        ε(k) = \\log\\frac{B(kη,\\, k(1−(n−1)η))}{B(k(η + b/2),\\, k(1−(n−1)η − b/2))}
               + \\frac{k b}{2}\\,\\log\\frac{1 − (n−1)γ}{γ},

    otherwise the same expression maximised over the half-shift ``t <= min(b/2, 1 − nη)``
    instead of ``t = b/2``. This is the exact supremum of the privacy loss over b-adjacent
    rows with entries ``>= η`` and outputs with entries ``>= γ`` (derivation in the module
    docstring); it is attained. For ``η = 1/n`` the domain is one point and ``ε = 0``.

    Args:
      k: the mechanism's parameter(s), ``> 0``; a scalar or an array `[K]`.
      b: the adjacency bound, in ``(0, 1]``.
      eta: the domain's lower bound on every entry, in ``(0, 1/n]``.
      gamma: the good set's threshold, in ``(0, 1/n)``.
      n: the row's dimension, ``>= 2``.
      log_gamma: ``log γ`` instead of ``gamma`` (for thresholds that underflow float64).

    Returns:
      ε as a float for a scalar ``k``, else a float64 array shaped like ``k``.

    Raises:
      ValueError: for arguments outside the ranges above or non-finite values.

    References:
      Gohari et al., IEEE TIFS 2021, the mechanism's privacy theorem (re-derived here, see
      the module docstring).
    """
    n = check_n(n)
    ks = check_k_array(k)
    b = check_b(b)
    eta = check_eta(eta, n)
    lg = _resolve_log_gamma(gamma, log_gamma, n)
    if 1.0 - n * eta <= 0:
        out = np.zeros_like(ks)
    elif b <= 1.0 - n * eta:
        out = _gamma_term(ks, b / 2, eta, n) + ks * (b / 2) * _log_ratio_bound(lg, n)
    else:
        out = np.vectorize(lambda kk: _epsilon_log(kk, b, eta, lg, n), otypes=[float])(ks)
    return float(out) if out.ndim == 0 else out


def delta(
    k: ArrayLike,
    *,
    eta: float,
    gamma: float | None = None,
    n: int,
    log_gamma: float | None = None,
):
    """A bound on the probability that ``Dirichlet(k·p)`` leaves the good set ``{x >= γ}``.

    .. math::

        δ = (n − 1)\\, I_γ(kη, k(1−η)) + I_γ(k/n, k(1 − 1/n))
          \\;<=\\; n\\, I_γ(kη, k(1−η)),

    valid for every input ``p`` with entries ``>= η`` (union bound over entries; each entry
    is Beta-distributed and ``P[Beta(kp, k(1−p)) < γ]`` decreases in ``p``; the largest entry
    is ``>= 1/n``). Each term ``P[x_l < γ] = I_γ(kp_l, k(1−p_l))`` is exact; the slack is the
    union bound and taking every entry at its worst case at once.

    Args:
      k: the mechanism's parameter(s), ``> 0``; a scalar or an array `[K]`.
      eta: the domain's lower bound on every entry, in ``(0, 1/n]``.
      gamma: the good set's threshold, in ``(0, 1/n)``.
      n: the row's dimension, ``>= 2``.
      log_gamma: ``log γ`` instead of ``gamma``.

    Returns:
      δ as a float for a scalar ``k``, else a float64 array shaped like ``k``.

    Raises:
      ValueError: for arguments outside the ranges above or non-finite values.

    References:
      Gohari et al., IEEE TIFS 2021, the mechanism's privacy theorem (its δ; the union
      bound is refined here).
    """
    n = check_n(n)
    ks = check_k_array(k)
    eta = check_eta(eta, n)
    lg = _resolve_log_gamma(gamma, log_gamma, n)
    # A union bound can exceed 1; a probability cannot.
    out = np.minimum(
        np.exp(np.vectorize(lambda kk: _log_delta(kk, eta, lg, n), otypes=[float])(ks)), 1.0
    )
    return float(out) if out.ndim == 0 else out


def _optimal_log_gamma(k: float, eta: float, n: int, target: float) -> float:
    """The largest ``log γ`` (up to ~1e-15 relative) with ``δ(γ) <= target``."""
    log_target = math.log(target)

    def excess(lg):
        return _log_delta(k, eta, lg, n) - log_target

    # γ → 1/n from below (the open end of its range).
    hi = -math.log(n) + math.log1p(-1e-9)
    # Not reached for target_delta < 1: δ(1/n) >= n·P[Beta(k/n, k(1−1/n)) < 1/n] >= n/2,
    # as the median of Beta(a, b) with a <= b is at most its mean.
    if excess(hi) <= 0:  # pragma: no cover
        return hi
    lo, step = hi - 1.0, 1.0
    while excess(lo) > 0:  # log δ ~ kη·log γ as γ → 0: doubling steps reach it.
        step *= 2.0
        lo = hi - step
        if step > 1e300:  # pragma: no cover - would need k·η ~ 1e-300
            raise ValueError(f"no gamma meets target_delta for k={k}, eta={eta}, n={n}")
    lg = optimize.brentq(excess, lo, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=500)
    # brentq may land a hair on the infeasible side; step down until δ <= target, checked
    # on the reported (exponentiated) δ.
    nudge = 4 * np.finfo(float).eps * max(1.0, abs(lg))
    while math.exp(_log_delta(k, eta, lg, n)) > target:
        lg -= nudge
        nudge *= 2.0
    return lg


def guarantee(k: float, *, b: float, eta: float, n: int, target_delta: float) -> Guarantee:
    """The smallest ε of one row's mechanism at a given δ, choosing the good set's ``γ``.

    ε decreases and δ increases in ``γ``, so the best ``γ`` solves ``δ(γ) = target_delta``
    (a root search in ``log γ``). If even ``γ → 1/n`` meets the target, ``γ`` is taken just
    below ``1/n``.

    Args:
      k: the mechanism's parameter, ``> 0``.
      b: the adjacency bound, in ``(0, 1]``.
      eta: the domain's lower bound on every entry, in ``(0, 1/n]``.
      n: the row's dimension, ``>= 2``.
      target_delta: the δ to meet, in ``(0, 1)``.

    Returns:
      A :class:`Guarantee` with ``delta <= target_delta`` and the smallest ``epsilon``.

    Raises:
      ValueError: for arguments outside the ranges above or non-finite values.

    References:
      Gohari et al., IEEE TIFS 2021, the mechanism's privacy theorem.
    """
    n = check_n(n)
    k = check_k(k)
    b = check_b(b)
    eta = check_eta(eta, n)
    target_delta = check_target_delta(target_delta)
    lg = float(_optimal_log_gamma(k, eta, n, target_delta))
    return Guarantee(
        epsilon=float(_epsilon_log(k, b, eta, lg, n)),
        delta=math.exp(_log_delta(k, eta, lg, n)),
        gamma=math.exp(lg),
        k=k,
        b=b,
        eta=eta,
        n=n,
        log_gamma=lg,
    )


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

    The optimal ε grows with ``k`` (checked on grids in the tests), but it does not vanish
    as ``k → 0``: for ``b <= 1 − nη`` it tends to

    .. math::

        ε_0 = \\log\\frac{(η + b/2)(M − b/2)}{η M} + \\frac{b}{2η}\\log\\frac{(n−1)(1−η)}{δ},
        \\qquad M = 1 − (n−1)η,

    (``Γ(z) ≈ 1/z`` and ``I_γ(kη, k(1−η)) ≈ (1−η) γ^{kη}`` for small ``k``), so targets
    below ``ε_0`` are out of reach for any ``k``. The search scans a log grid over
    ``k_bounds`` for the last feasible point and refines the crossing after it with
    ``brentq`` on ``log k`` (so it also returns the largest feasible ``k`` if ε were not
    monotone between grid points' crossings).

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

    grid = np.linspace(math.log(k_lo), math.log(k_hi), 64)
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
