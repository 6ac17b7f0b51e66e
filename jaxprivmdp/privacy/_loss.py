"""The worst-case privacy loss (ε) of one row's Dirichlet mechanism at a given good set.

:func:`worst_loss` is the supremum of the privacy loss over ℓ1-adjacent rows of the
η-domain and outputs with every entry ``>= γ`` (``docs/privacy.md``, steps 1-4): the
two-entry closed form where all the moved mass comes from one entry, else a bound on
spreading it over several entries (:class:`_Spread`, through ``_split``'s concave majorant).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, special

from . import _split


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


def _two_entry_epsilon(k: float, b: float, eta: float, log_gamma: float, n: int) -> float:
    """The worst loss when the mass moves between two entries (exact for ``n = 2``)."""
    c = _log_ratio_bound(log_gamma, n)
    t = _worst_t(k, b, eta, n, c)
    return float(_gamma_term(k, t, eta, n) + k * t * c)


class _Spread:
    r"""The part of the privacy loss from the entries that go down, under ℓ1 adjacency.

    With ``s`` the mass that moves, the entries ``j`` that go down (by ``d_j``, to ``η``)
    and an output ``x`` in the good set contribute (``docs/privacy.md``, step 3)

    .. math:: J(s) = \sup \sum_j [k d_j \log(x_j/γ) − A(d_j)],\qquad A(d) = g(η+d) − g(η),

    over at most ``n − 1`` pieces with ``Σ d_j = s`` and ``Σ_j (x_j − γ) <= Y = 1 − nγ``.
    For every multiplier ``τ > 0`` (weak duality on the budget ``Y``)
    ``J(s) <= kτY + sup Σ_j φ_τ(d_j)`` with the per-entry function

    .. math:: φ_τ(d) = k[d \log(d/(τγ)) − d + τγ]_{d > τγ} − A(d),

    whose split is bounded by its concave majorant (:class:`_split.Majorant`).
    """

    def __init__(self, k: float, eta: float, log_gamma: float, n: int):
        self.k, self.eta, self.lg, self.n = k, eta, log_gamma, n
        self.budget = -math.expm1(math.log(n) + log_gamma)  # Y = 1 − nγ
        self.log_x1 = math.log1p(-(n - 1) * math.exp(log_gamma))  # log(1 − (n−1)γ)
        # χ(d) = k d log d − A(d) is convex below d_c and concave above (χ'' ∝
        # 1 − kd ψ'(k(η + d)) changes sign once; never for kη >= 1/2).
        self.inflection = (
            math.inf
            if k * eta >= 0.5
            else _split.sign_change(
                lambda d: 1.0 - k * d * special.polygamma(1, k * (eta + d)), 1.0
            )
        )

    def phi(self, d: float, log_tau: float) -> float:
        """``φ_τ(d)``."""
        k, eta = self.k, self.eta
        a = float(_split.lgk(k, eta + d) - _split.lgk(k, eta))
        log_thr = log_tau + self.lg
        if d > 0 and math.log(d) > log_thr:
            return k * (d * (math.log(d) - log_thr) - d + math.exp(log_thr)) - a
        return -a

    def majorant(self, s: float, log_tau: float) -> _split.Majorant | None:
        """The concave majorant of ``φ_τ`` on ``[0, s]``; None where ``φ_τ`` is concave."""
        k, eta = self.k, self.eta
        log_thr = log_tau + self.lg  # log(τγ): pieces above it get x > γ
        thr = math.exp(log_thr)
        if s <= thr or self.inflection <= thr:
            # Concave below τγ, and above it wherever χ is, with matching slopes at τγ.
            return None

        def dF(d):
            active = k * (math.log(d) - log_thr) if d > 0 and math.log(d) > log_thr else 0.0
            return active - float(_split.dlgk(k, eta + d))

        def U(d):  # d φ' − φ = k(d − τγ)⁺ − ∫_0^d t g''(η + t) dt
            return k * max(d - thr, 0.0) - _split.taylor_left(k, eta, d)

        return _split.Majorant(
            lambda d: self.phi(d, log_tau),
            dF,
            U,
            s,
            max(self.inflection, thr),
            slope0=-float(_split.dlgk(k, eta)),
        )

    def dual(self, mass: float, log_tau: float, major) -> float:
        """``kτY + N H(mass/N)`` (``H = φ_τ`` where ``major`` is None, by Jensen)."""
        pieces = self.n - 1
        base = self.k * math.exp(log_tau) * self.budget
        if major is None:
            return base + pieces * self.phi(mass / pieces, log_tau)
        return base + major.bound(pieces, mass)

    def log_tau_one(self, s: float) -> float:
        """The multiplier at which all of ``s`` on one entry is tight: ``τ = s/(1 − (n−1)γ)``."""
        return math.log(s) - self.log_x1

    def best_log_tau(self, s: float) -> float:
        """The multiplier that makes :meth:`dual` at ``s`` smallest (any ``τ`` is valid)."""
        lt0 = self.log_tau_one(s)
        major = self.majorant(s, lt0)
        if major is not None and major.kind == "one":
            return lt0  # tight: all of s on one entry
        if self.n * math.exp(self.lg) < 1e-8:
            # With γ this small the budget Y = 1 − nγ binds for every split alike: the best
            # τ is within ~nγ of τ₀ (checked on random scans), so searching gains nothing.
            return lt0
        res = optimize.minimize_scalar(
            lambda lt: self.dual(s, lt, self.majorant(s, lt)),
            bounds=(lt0 - 10.0, lt0 + 1.0),
            method="bounded",
            options={"xatol": 1e-7},
        )
        return float(res.x) if res.fun < self.dual(s, lt0, major) else lt0

    def bound(self, s: float) -> float:
        """``min_τ`` of :meth:`dual` at ``s`` (any ``τ`` is valid; the search only tightens)."""
        lt = self.best_log_tau(s)
        return self.dual(s, lt, self.majorant(s, lt))


# Pieces of the range of s searched when b > 1 − nη (see worst_loss).
_S_PIECES = 8


def worst_loss(k: float, b: float, eta: float, log_gamma: float, n: int) -> float:
    """The worst privacy loss over ℓ1-adjacent rows and good outputs (``docs/privacy.md``)."""
    if 1.0 - n * eta <= 0:
        return 0.0  # the domain is the single point p = uniform: no adjacent pair differs.
    if n == 2:
        return _two_entry_epsilon(k, b, eta, log_gamma, n)  # two entries: nothing to spread
    spread = _Spread(k, eta, log_gamma, n)
    big = 1.0 - (n - 1) * eta
    free = 1.0 - n * eta  # the most mass that can move

    def rise(s):  # the entry that goes up ends at M = 1 − (n−1)η
        return float(_split.lgk(k, big) - _split.lgk(k, big - s))

    if b <= free:
        # The loss grows with s up to (1 − nη)/2 (step 4): the worst case moves all of b/2.
        s = b / 2
        major = spread.majorant(s, spread.log_tau_one(s))
        if major is not None and major.kind == "one":
            # All of s on one entry is the worst case: the two-entry closed form, exactly.
            return _two_entry_epsilon(k, b, eta, log_gamma, n)
        return rise(s) + spread.bound(s)
    # The worst s lies in [(1 − nη)/2, s_max]. On a piece [a, c] of that range, for a fixed τ
    # and the majorant built on [0, c], rise(s) + kτY + N H(s/N) bounds the loss at every s
    # and is concave in s (both parts are): its maximum is found reliably. Pieces keep the
    # majorant close to φ_τ near each s (a majorant on [0, c] is loose below c).
    s_max, s_lo = min(b / 2, free), free / 2
    edges = np.linspace(s_lo, s_max, _S_PIECES + 1)
    best = -math.inf
    for a, c in zip(edges[:-1], edges[1:], strict=True):
        log_tau = spread.best_log_tau(c)
        major = spread.majorant(c, log_tau)

        def value(s, major=major, log_tau=log_tau):
            return rise(s) + spread.dual(s, log_tau, major)

        res = optimize.minimize_scalar(
            lambda s, value=value: -value(s),
            bounds=(a, c),
            method="bounded",
            options={"xatol": 1e-12 * c},
        )
        # The pad: Brent's maximiser of a concave function is found up to xatol.
        best = max(best, max(-float(res.fun), value(a), value(c)) * (1 + 1e-12))
    return best
