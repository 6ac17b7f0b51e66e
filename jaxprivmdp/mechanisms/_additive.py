"""Additive-noise mechanisms for transition rows: noise, then projection onto the simplex.

``P̄(s, a) = Π(P(s, a) + Z)`` with ``Z`` i.i.d. Gaussian (standard deviation σ) or Laplace
(scale λ) on each entry of the row's support and ``Π`` the Euclidean projection onto the
simplex over that support (entries outside stay exactly 0). The projection is
post-processing, so ``P̄`` is as private as ``P + Z`` (``privacy/_additive.py``).

The uncertainty set its noise implies: ``P(s, a)`` lies in the simplex over the support, a
convex set, so ``Π`` is non-expansive there and ``‖P̄ − P‖∞ <= ‖P̄ − P‖₂ <= ‖Z‖₂``. A tail
bound ``‖Z‖₂ <= r`` that holds with probability ``>= 1 − level`` therefore puts the true
row in the box ``‖P2 − P̄‖∞ <= r`` (:func:`noise_radius`).
"""

from __future__ import annotations

import dataclasses
import math
from typing import ClassVar

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike
from scipy import special, stats

from .._refusals import refuses
from ..privacy import (
    Adjacency,
    calibrate_gaussian,
    calibrate_laplace,
    gaussian_epsilon,
    laplace_epsilon,
)
from ._base import Mechanism, RowGuarantee


def project_simplex(x: jax.Array, support: jax.Array) -> jax.Array:
    """Euclidean projection of each row of ``x`` onto the simplex over its ``support``.

    The sort-based algorithm (Held, Wolfe & Crowder 1974; Duchi et al. 2008): with ``u`` the
    supported entries sorted in decreasing order, ``ρ`` the largest ``j`` with
    ``u_j − (Σ_{i<=j} u_i − 1)/j > 0`` and ``τ = (Σ_{i<=ρ} u_i − 1)/ρ``, the projection is
    ``max(x − τ, 0)`` on the support and 0 elsewhere. Written here rather than taken from
    ``optax.projections.projection_simplex`` because that one projects onto the whole
    simplex; the rows here are projected over their support (a mask) only.

    Args:
      x: `[..., n]` rows.
      support: `[..., n]` bool, the entries that may be positive (at least one per row).

    Returns:
      `[..., n]` rows on the simplex, 0 outside the support.
    """
    n = x.shape[-1]
    u = -jnp.sort(jnp.where(support, -x, jnp.inf), axis=-1)  # decreasing; -inf off support
    finite = jnp.isfinite(u)
    css = jnp.cumsum(jnp.where(finite, u, 0), axis=-1)
    j = jnp.arange(1, n + 1, dtype=x.dtype).reshape((1,) * (x.ndim - 1) + (n,))
    positive = finite & (u - (css - 1) / j > 0)
    rho = jnp.maximum(jnp.sum(positive, axis=-1, keepdims=True), 1)
    tau = (jnp.take_along_axis(css, rho - 1, axis=-1) - 1) / rho.astype(x.dtype)
    return jnp.where(support, jnp.maximum(x - tau, 0), 0)


def add_noise(key, rows, scale, support, action_mask, noise: str) -> jax.Array:
    """``Π(rows + Z)`` per allowed row; masked rows come out as zeros (pure, jit/vmap)."""
    if noise == "gaussian":
        z = jax.random.normal(key, rows.shape, rows.dtype)
    else:
        z = jax.random.laplace(key, rows.shape, rows.dtype)
    private = project_simplex(rows + scale * z, support)
    return jnp.where(action_mask[..., None], private, jnp.zeros_like(private))


def noise_radius(noise: str, scale, n: int, level: float) -> float:
    """``r`` with ``P(‖Z‖₂ > r) <= level`` for ``n`` i.i.d. entries of the given scale (host).

    Gaussian: ``‖Z‖₂² / σ²`` is chi-squared with ``n`` degrees of freedom, so ``r`` is
    ``σ`` times the square root of its ``1 − level`` quantile (exact). Laplace: two valid
    bounds, the smaller is used (both depend only on ``n``, λ and the level, not on the
    data, so taking the smaller one keeps the level): ``‖Z‖₂ <= ‖Z‖₁`` and ``‖Z‖₁ / λ`` is
    Gamma(n, 1) (a sum of ``n`` unit exponentials); or ``‖Z‖₂ <= √n ‖Z‖∞`` with
    ``P(‖Z‖∞ > t) <= n e^{−t/λ}``.
    """
    scale = float(scale)
    if noise == "gaussian":
        return scale * math.sqrt(stats.chi2.isf(level, n))
    by_l1 = float(special.gammainccinv(n, level))
    by_max = math.sqrt(n) * math.log(n / level)
    return scale * min(by_l1, by_max)


# --------------------------------------------------------------------------- the members


class _Additive(Mechanism):
    """An additive scale family: ``Π(p + parameter · Z)``, ``Z`` i.i.d. unit noise."""

    noise: ClassVar[str]

    def privatize(self, key, rows, support, action_mask):
        return add_noise(key, rows, self.parameter, support, action_mask, self.noise)

    def unit_radius(self, n: int, level: float) -> float:
        return noise_radius(self.noise, 1.0, n, level)


@dataclasses.dataclass(frozen=True)
class Gaussian(_Additive):
    """The Gaussian mechanism with the projection: ``P̄ = Π(p + N(0, σ² I))``.

    Args:
      sigma: the noise's standard deviation ``σ > 0`` (larger = more noise, more privacy).

    Its (ε, δ) is the analytic Gaussian mechanism's (Balle & Wang 2018) for ℓ2 sensitivity
    ``b/√2`` of b-adjacent rows (``jaxprivmdp.privacy.gaussian_epsilon``):
    ``jp.Gaussian(sigma).epsilon(jp.privacy.Adjacency(b), delta=...)``.
    """

    sigma: ArrayLike
    name: ClassVar[str] = "gaussian"
    noise: ClassVar[str] = "gaussian"

    @refuses("b", "eta")
    def epsilon(self, adjacency: Adjacency, *, delta, n=None):
        return gaussian_epsilon(float(self.sigma), delta, adjacency)

    @classmethod
    @refuses("b", "eta")
    def calibrate(cls, epsilon, delta, adjacency: Adjacency, *, n=None):
        return cls(calibrate_gaussian(epsilon, delta, adjacency))


@dataclasses.dataclass(frozen=True)
class Laplace(_Additive):
    """The Laplace mechanism with the projection: ``P̄ = Π(p + Laplace(λ))`` per entry.

    Args:
      scale: the noise's scale ``λ > 0`` (larger = more noise); pure ``ε = b/λ``, ``δ = 0``.
    """

    scale: ArrayLike
    name: ClassVar[str] = "laplace"
    noise: ClassVar[str] = "laplace"

    @refuses("b", "eta")
    def epsilon(self, adjacency: Adjacency, *, delta=0.0, n=None):
        return laplace_epsilon(float(self.scale), adjacency)

    @refuses("b", "eta")
    def guarantee(self, adjacency: Adjacency, *, delta=0.0, n=None) -> RowGuarantee:
        return RowGuarantee(self.epsilon(adjacency), 0.0, adjacency.b)

    @classmethod
    @refuses("b", "eta")
    def calibrate(cls, epsilon, delta, adjacency: Adjacency, *, n=None):
        return cls(calibrate_laplace(epsilon, adjacency))
