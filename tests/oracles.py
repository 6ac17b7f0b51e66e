"""Independent formulas the tests check the library against (not library code).

``dirichlet_divergence`` is the closed-form Rényi divergence of two Dirichlet distributions,
the ground truth for the Rényi-DP bounds; ``paper_params`` builds the paper's box ``P̄ ± α``
with weight ``β`` directly from ``α`` (the library derives ``α`` from a mechanism and a set).
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
from scipy import special

from jaxprivmdp.sets.core import SetParams


def dirichlet_divergence(k: float, p, q, order: float) -> float:
    """``D_λ(Dir(k p) ‖ Dir(k q))`` in closed form."""
    p, q = np.asarray(p, np.float64), np.asarray(q, np.float64)
    a, a2 = k * p, k * q
    mix = order * a + (1 - order) * a2
    if np.any(mix <= 0):
        return math.inf
    log_b = lambda x: special.gammaln(x).sum() - special.gammaln(x.sum())  # noqa: E731
    return float((log_b(mix) - order * log_b(a) - (1 - order) * log_b(a2)) / (order - 1))


def paper_params(alpha, beta) -> SetParams:
    """The box ``P̄ ± α`` with the weight ``β`` (the paper's set for Lemma 1's ``α``)."""
    alpha = jnp.asarray(alpha)
    return SetParams(alpha, jnp.asarray(beta, alpha.dtype))
