"""Accounting of the additive-noise mechanisms on b-adjacent rows: Gaussian and Laplace.

Rows ``p, q`` of one (state, action) are ``b``-adjacent when ``‖p − q‖₁ <= b``, with any
number of entries changed (general ℓ1 adjacency, as for the Dirichlet mechanism). Both lie on
the simplex, so ``Σ (p − q) = 0`` and the difference's mass splits ``b/2`` up, ``b/2`` down:
the ℓ1 sensitivity of the identity is ``b`` and its ℓ2 sensitivity is ``b/√2`` (all of each
half on one entry). The projection onto the simplex that follows the noise is
post-processing and changes nothing here.

- Gaussian ``N(0, σ² I)``: the analytic Gaussian mechanism (Balle & Wang, ICML 2018,
  Theorem 8): with ``Δ`` the ℓ2 sensitivity it is (ε, δ)-DP iff
  ``Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ) <= δ``; the exact privacy profile, so the
  calibration below is the smallest σ for a target (ε, δ).
- Laplace with scale λ per entry: pure ε-DP with ``ε = b/λ`` (Dwork & Roth 2014, Thm 3.6).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, special

from .._checks import real


def l2_sensitivity(b: float) -> float:
    """``max ‖p − q‖₂`` over rows with ``‖p − q‖₁ <= b``: ``b / √2``."""
    return b / math.sqrt(2.0)


def _log_ndtr(x):
    return special.log_ndtr(x)


def gaussian_delta(sigma: float, epsilon: float, *, b: float) -> float:
    """The exact δ(ε) of the Gaussian mechanism with standard deviation ``sigma``.

    ``Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ)`` (Balle & Wang 2018, Theorem 8), computed
    from ``log Φ`` so that it stays accurate when both terms are tiny.
    """
    sigma = real("sigma", sigma, low=0.0, low_open=True)
    epsilon = real("epsilon", epsilon, low=0.0)
    delta_ = l2_sensitivity(real("b", b, low=0.0, high=1.0, low_open=True))
    u = delta_ / (2 * sigma)
    v = epsilon * sigma / delta_
    first = _log_ndtr(u - v)
    second = epsilon + _log_ndtr(-u - v)
    if second >= first:
        return 0.0
    return float(math.exp(first) * -math.expm1(second - first))


def gaussian_epsilon(sigma: float, delta: float, *, b: float) -> float:
    """The smallest ε at which the Gaussian mechanism with ``sigma`` is (ε, δ)-DP.

    Rounded up: the returned ε always satisfies ``gaussian_delta(sigma, ε, b=b) <= delta``.
    """
    delta = real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    if gaussian_delta(sigma, 0.0, b=b) <= delta:
        return 0.0
    hi = 1.0
    while gaussian_delta(sigma, hi, b=b) > delta:
        hi *= 2.0
        if hi > 1e6:
            raise ValueError(f"no epsilon below 1e6 reaches delta={delta} with sigma={sigma}")
    eps = optimize.brentq(
        lambda e: gaussian_delta(sigma, e, b=b) - delta, 0.0, hi, xtol=1e-14, rtol=1e-15
    )
    # brentq's root may sit on either side of the crossing: step up until δ(ε) <= delta.
    step = 4 * np.finfo(float).eps * max(eps, 1e-300)
    while gaussian_delta(sigma, eps, b=b) > delta:
        eps += step
        step *= 2.0
    return float(eps)


def calibrate_gaussian(epsilon: float, delta: float, *, b: float) -> float:
    """The smallest σ whose Gaussian mechanism is (ε, δ)-DP on b-adjacent rows.

    δ(ε) decreases in σ and depends on σ only through ``σ/Δ`` (``Δ = b/√2``), so ``σ/Δ`` is
    the root of ``δ = delta`` (brentq on its log), then stepped up until the library's own
    :func:`gaussian_delta` at the returned σ is ``<= delta`` (never above the target, not
    even by a rounding).
    """
    epsilon = real("epsilon", epsilon, low=0.0, low_open=True)
    delta = real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    scale = l2_sensitivity(real("b", b, low=0.0, high=1.0, low_open=True))

    def excess(log_ratio):
        return gaussian_delta(scale * math.exp(log_ratio), epsilon, b=b) - delta

    hi = 0.0
    while excess(hi) > 0:
        hi += 4.0
        if hi > 100.0:  # σ > e^100 Δ
            raise ValueError(f"no sigma reaches (epsilon={epsilon}, delta={delta})")
    lo = hi - 4.0
    while excess(lo) <= 0:
        lo -= 4.0
        if lo < -700.0:  # pragma: no cover - δ → 1 as σ → 0, so this is never reached
            return float(scale * math.exp(lo))
    log_ratio = optimize.brentq(excess, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps)
    sigma = scale * math.exp(log_ratio)
    while gaussian_delta(sigma, epsilon, b=b) > delta:
        sigma = np.nextafter(sigma, np.inf) * (1 + 1e-12)
    return float(sigma)


def laplace_epsilon(scale: float, *, b: float) -> float:
    """Pure ε of the Laplace mechanism with ``scale`` per entry: ``b / scale``."""
    scale = real("scale", scale, low=0.0, low_open=True)
    return real("b", b, low=0.0, high=1.0, low_open=True) / scale


def calibrate_laplace(epsilon: float, *, b: float) -> float:
    """The scale ``b / ε`` of the ε-DP Laplace mechanism on b-adjacent rows."""
    epsilon = real("epsilon", epsilon, low=0.0, low_open=True)
    return real("b", b, low=0.0, high=1.0, low_open=True) / epsilon
