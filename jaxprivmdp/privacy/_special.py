"""Special functions of the accounting: ``log I_x(a, b)`` also where it underflows float64."""

from __future__ import annotations

import math

import numpy as np
from scipy import special

# The series needs about k·x terms; beyond this many, k is too large for the accounting.
MAX_SERIES_TERMS = 10_000_000


def log_betainc(a: float, b: float, log_x: float) -> float:
    """``log I_x(a, b)``, accurate also where ``I_x`` or ``x`` underflow float64."""
    if log_x > -700.0:
        v = float(special.betainc(a, b, math.exp(log_x)))
        if v > 1e-280:
            return math.log(v)
    return log_betainc_series(a, b, log_x)


def log_betainc_series(a: float, b: float, log_x: float) -> float:
    """``log I_x(a, b)`` from ``x^a (1−x)^b / (a B(a, b)) · ₂F₁(a+b, 1; a+1; x)``, in log space.

    The term ratios ``(a+b+m) x / (a+1+m)`` tend to ``x``; the terms are positive, so there is
    no cancellation. Fast when ``x`` is below the mean ``a/(a+b)`` (where SciPy underflows).
    """
    x = math.exp(log_x)
    log_prefactor = a * log_x + b * math.log1p(-x) - math.log(a) - float(special.betaln(a, b))
    log_sum, log_term, m0, chunk = -math.inf, 0.0, 0, 256
    while True:
        m = np.arange(m0, m0 + chunk, dtype=np.float64)
        log_ratio = np.log(a + b + m) - np.log(a + 1.0 + m) + log_x
        log_terms = log_term + np.concatenate(([0.0], np.cumsum(log_ratio[:-1])))
        log_sum = float(np.logaddexp(log_sum, special.logsumexp(log_terms)))
        log_term = float(log_terms[-1] + log_ratio[-1])
        # Later ratios stay below max(last ratio, x) < 1: a geometric tail bound.
        r = max(float(log_ratio[-1]), log_x)
        if r < 0 and log_term - math.log(-math.expm1(r)) < log_sum - 40.0:
            return log_prefactor + log_sum
        m0 += chunk
        if m0 > MAX_SERIES_TERMS:
            raise ValueError(
                f"k is too large for the accounting: the incomplete beta series I_x(a={a:.4g}, "
                f"b={b:.4g}) at x={x:.4g} needs more than {MAX_SERIES_TERMS} terms; at such k "
                "the mechanism adds almost no noise"
            )
