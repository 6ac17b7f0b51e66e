"""Spreading a shift over many entries: what the ε and RDP accountings share.

Under ℓ1 adjacency the mass that moves between two rows may be split over many entries.
Both accountings (``_loss.py`` for (ε, δ), ``_rdp.py`` for Rényi DP) reduce the worst case
to a separable problem: the supremum of ``Σ_j F(d_j)`` over at most ``N`` pieces
``d_j >= 0`` with ``Σ d_j = s``, for a per-entry function ``F`` with ``F(0) = 0`` whose
ratio ``F(d)/d`` has a known shape. :class:`Majorant` bounds it through a concave majorant
of ``F`` (``docs/privacy.md``, "Splitting mass between entries", Lemma 3); the other
functions are the log-Gamma differences it needs, computed without cancellation.

Everything is of ``f(u) = log Γ(k u)``: ``f' = k ψ(k u)``, ``f'' = k² ψ'(k u)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy import optimize, special

# Gauss–Legendre on [a, b] with b − a <= a/2: ψ'(k·)'s pole at 0 is >= 5 half-widths from
# the centre, so 20 nodes converge far below float64 rounding.
_GL_X, _GL_W = np.polynomial.legendre.leggauss(20)


def lgk(k: float, u):
    """``f(u) = log Γ(k u)``."""
    return special.gammaln(k * u)


def dlgk(k: float, u):
    """``f'(u) = k ψ(k u)``."""
    return k * special.digamma(k * u)


def _quad(k: float, a: float, length: float, weight: Callable) -> float:
    # Nodes as offsets t from a: the weights are functions of t, never differences of
    # positions (which would lose the digits of a short interval far from 0).
    t = (length / 2) * (1 + _GL_X)
    f2 = (k * k) * special.polygamma(1, k * (a + t))
    return float((length / 2) * np.sum(_GL_W * weight(t) * f2))


def taylor_right(k: float, a: float, length: float) -> float:
    """``∫_0^L (L − t) f''(a + t) dt = f(a + L) − f(a) − L f'(a) >= 0`` for ``a > 0``, ``L >= 0``.

    The closed form cancels when ``L`` is small against ``a`` (its terms are ``~|f(a)|``,
    the result ``~L² f''(a)/2``); there the integral itself is computed (Gauss–Legendre),
    positive term by term.
    """
    if not length > 0:
        return 0.0
    if length <= 0.5 * a:
        return max(_quad(k, a, length, lambda t: length - t), 0.0)
    return max(float(lgk(k, a + length) - lgk(k, a) - length * dlgk(k, a)), 0.0)


def taylor_left(k: float, a: float, length: float) -> float:
    """``∫_0^L t f''(a + t) dt = f(a) − f(a + L) + L f'(a + L) >= 0`` for ``a > 0``, ``L >= 0``."""
    if not length > 0:
        return 0.0
    if length <= 0.5 * a:
        return max(_quad(k, a, length, lambda t: t), 0.0)
    return max(float(lgk(k, a) - lgk(k, a + length) + length * dlgk(k, a + length)), 0.0)


class Majorant:
    """A concave majorant ``H`` of a per-entry function ``F`` on ``[0, s]``, and the bound
    ``sup{Σ_{j<=N} F(d_j) : d_j >= 0, Σ d_j = s} <= N H(s/N)`` it gives.

    Requirements on ``F`` (proved for the functions used here in ``docs/privacy.md``):
    ``F(0) = 0``, ``F`` continuous on ``[0, s]`` and ``C¹`` on ``(0, s]``; with
    ``U(d) = d F'(d) − F(d)`` (so ``(F(d)/d)' = U(d)/d²``), ``F`` is concave on
    ``[inflection, ∞)`` (so ``U`` decreases there), and the ratio ``F(d)/d`` is maximal over
    ``(0, s]`` either at ``0+`` (value ``slope0 = F'(0)``; pass ``None`` when the ratio
    cannot peak there) or at a root ``v̄`` of ``U`` in ``[inflection, s]`` or at ``s``.

    Then ``H(t) = t·F(v̄)/v̄`` on ``[0, v̄]`` and ``F`` on ``[v̄, s]`` is concave (linear, then
    concave with matching slope ``F'(v̄) = F(v̄)/v̄``) and ``>= F`` (below ``v̄`` because the
    ratio is largest at ``v̄``). By Jensen ``Σ_{j<=m} F(d_j) <= m H(s/m) <= N H(s/N)``
    (``m H(s/m)`` grows with ``m`` since ``H`` is concave with ``H(0) = 0``). If the ratio
    peaks at ``0+``, ``H(t) = t·F'(0)`` instead.

    Attributes:
      s: the mass.
      kind: ``"one"`` (``v̄ = s``: one entry takes all, attained), ``"peak"`` (``v̄ < s``) or
        ``"slope"`` (the ratio peaks at ``0+``).
      ratio: ``max F(d)/d`` over ``(0, s]`` (``F'(0)`` for ``"slope"``).
      size: ``v̄`` (``0.0`` for ``"slope"``).
    """

    __slots__ = ("F", "dF", "s", "kind", "ratio", "size")

    def __init__(
        self,
        F: Callable[[float], float],
        dF: Callable[[float], float],
        U: Callable[[float], float],
        s: float,
        inflection: float,
        slope0: float | None = None,
    ):
        self.F, self.dF, self.s = F, dF, s
        if inflection >= s or U(s) >= 0:
            vbar = s  # the ratio still grows at s
        elif U(inflection) <= 0:
            # U falls from its maximum at the inflection, so it never was positive: the
            # ratio decreases on (0, s] (for slope0 None only rounding can get here).
            vbar = inflection if slope0 is None else None
        else:
            vbar = optimize.brentq(U, inflection, s, xtol=1e-300, rtol=4 * np.finfo(float).eps)
        ratio = -math.inf if vbar is None or vbar <= 0 else F(vbar) / vbar
        if slope0 is not None and slope0 > ratio:
            self.kind, self.ratio, self.size = "slope", float(slope0), 0.0
        else:
            self.kind = "one" if vbar == s else "peak"
            self.ratio, self.size = float(ratio), float(vbar)

    def bound(self, pieces: int | None, mass: float | None = None) -> float:
        """``N H(m/N)``: the bound for ``m = mass <= s`` (default ``s``) split into at most
        ``N = pieces`` parts (``None``: unlimited)."""
        m = self.s if mass is None else mass
        if self.kind == "one" and m == self.s:
            return float(self.F(self.s))
        if self.kind != "peak":
            return m * self.ratio
        if pieces is None or m / pieces <= self.size:
            # v̄ is a root found up to rounding, so F(v̄)/v̄ may sit a hair (second order in
            # the root's error) below the true maximum: the pad covers it.
            return m * self.ratio * (1 + 1e-12)
        return pieces * float(self.F(m / pieces))

    def left_slope(self, t: float) -> float:
        """``H'(t−)``, for ``0 < t <= s``."""
        if self.kind == "slope" or t <= self.size:
            return self.ratio
        return float(self.dF(t))


def sign_change(fn: Callable[[float], float], hi: float) -> float:
    """Where ``fn`` turns from positive to negative in ``(0, hi]`` (``inf`` if ``fn(hi) >= 0``),
    for a function with ``fn(0) > 0`` and at most one sign change."""
    if fn(hi) >= 0:
        return math.inf
    return optimize.brentq(fn, 0.0, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps)
