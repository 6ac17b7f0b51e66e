"""Per-row accounting: the (ε, δ) of one row's Dirichlet mechanism (``docs/privacy.md``).

The checks of the per-row parameters (``n``, ``k``, ``b``, ``η``, ``δ``); ε and δ at a
given good set (:func:`epsilon`, :func:`delta`, the loss itself in ``_loss``); the good set
that meets a target δ with the smallest ε (:func:`guarantee`); and the smallest ε any ``k``
on the calibration grid buys (:func:`smallest_epsilon`; the search for ``k`` is in
``_calibrate``).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike
from scipy import optimize

from .._checks import ETA_RELATIVE_TOLERANCE, check_int, check_positive, real
from ._loss import worst_loss
from ._special import log_betainc


class Guarantee(NamedTuple):
    """The (ε, δ) of one row's Dirichlet mechanism with the ε-optimal good set.

    Attributes:
      epsilon: the worst-case privacy loss on the good set over ℓ1-adjacent rows
        (:func:`epsilon`).
      delta: the bound on the probability of leaving the good set (``<= target_delta``).
      gamma: the good set's threshold ``γ`` (``x_l >= γ`` for all ``l``); may underflow to
        ``0.0`` in float64, ``log_gamma`` is always exact.
      k: the mechanism's parameter.
      b: the adjacency bound ``‖p − q‖₁ <= b`` (general ℓ1 adjacency).
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


def _log_delta(k: float, eta: float, log_gamma: float, n: int) -> float:
    """``log[(n−1) I_γ(kη, k(1−η)) + I_γ(k/n, k(1−1/n))]``."""
    small = math.log(n - 1) + log_betainc(k * eta, k * (1 - eta), log_gamma)
    large = log_betainc(k / n, k * (1 - 1 / n), log_gamma)
    return float(np.logaddexp(small, large))


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

    The supremum of ``log Dir(x; kp) − log Dir(x; kq)`` over rows with every entry ``>= η``
    that are adjacent under **general ℓ1 adjacency** (``‖p − q‖₁ <= b``, any number of
    entries changed) and outputs with every entry ``>= γ`` (``docs/privacy.md``). When the
    worst case moves all the mass from one entry (always for ``n = 2`` and for ``kη >= 1/2``)
    it is, for ``b <= 1 − nη``, the two-entry closed form

    .. math::

        ε(k) = \\log\\frac{B(kη,\\, k(1−(n−1)η))}{B(k(η + b/2),\\, k(1−(n−1)η − b/2))}
               + \\frac{k b}{2}\\,\\log\\frac{1 − (n−1)γ}{γ},

    attained (for ``b > 1 − nη``, the same maximised over the half-shift). When spreading the
    mass over several entries is worse, it is a bound from a concave majorant of the split
    and a Lagrange multiplier on the output (attained by equal pieces, or above the best
    split by the rounding of the number of pieces). For ``η = 1/n`` the domain is one point
    and ``ε = 0``.

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
    out = np.vectorize(lambda kk: worst_loss(kk, b, eta, lg, n), otypes=[float])(ks)
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
        epsilon=float(worst_loss(k, b, eta, lg, n)),
        delta=math.exp(_log_delta(k, eta, lg, n)),
        gamma=math.exp(lg),
        k=k,
        b=b,
        eta=eta,
        n=n,
        log_gamma=lg,
    )


def log_k_grid(k_lo: float, k_hi: float) -> np.ndarray:
    """The grid of ``log k`` that :func:`calibrate_k` scans (and :func:`smallest_epsilon`)."""
    return np.linspace(math.log(k_lo), math.log(k_hi), 64)


def smallest_epsilon(
    *, b: float, eta: float, n: int, target_delta: float, k_bounds=(1e-2, 1e5)
) -> float:
    """The smallest ε that :func:`calibrate_k` can reach: the minimum over its grid of ``k``.

    ε is not monotone in ``k`` (it dips a few tenths of a percent below its ``k → 0`` limit),
    so the value at the smallest ``k`` is not the floor.
    """
    return min(
        guarantee(math.exp(v), b=b, eta=eta, n=n, target_delta=target_delta).epsilon
        for v in log_k_grid(*k_bounds)
    )
