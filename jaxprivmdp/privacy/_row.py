"""Per-row accounting: the (ε, δ) of one row's Dirichlet mechanism (``docs/privacy.md``)."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike
from scipy import optimize, special

from .._checks import ETA_RELATIVE_TOLERANCE, check_int, check_positive, real
from . import _split
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


def _epsilon_log(k: float, b: float, eta: float, log_gamma: float, n: int) -> float:
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


# Pieces of the range of s searched when b > 1 − nη (see _epsilon_log).
_S_PIECES = 8


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


def _log_k_grid(k_lo: float, k_hi: float) -> np.ndarray:
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
        for v in _log_k_grid(*k_bounds)
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

    grid = _log_k_grid(k_lo, k_hi)
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
