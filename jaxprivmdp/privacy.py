"""(ε, δ) accounting for the Dirichlet mechanism, per row and for a whole MDP.

The mechanism outputs ``x ~ Dirichlet(k·p)`` for a row ``p`` of the transition function.
This module answers: which (ε, δ) does a given ``k`` buy, and which ``k`` buys a target
(ε, δ)? It is plain NumPy/SciPy float64 bookkeeping (no JAX), done in log space because the
optimal ``γ`` below is often far smaller than the smallest float64 (``γ ≈ 10⁻⁴⁰⁰``).

Setting (Gohari et al., TIFS 2021):

* **Domain.** Rows ``p`` in the simplex of dimension ``n`` with every entry ``>= η``.
  ``η`` is a *public* assumption: the guarantee covers every pair of rows in this domain.
* **Adjacency.** ``p`` and ``q`` are b-adjacent if they differ in two entries ``i, j`` only
  and ``‖p − q‖₁ <= b``, i.e. ``q_i = p_i + t``, ``q_j = p_j − t``, ``|t| <= b/2``.
* **Good outputs.** ``Ω₁ = {x : x_l >= γ for all l}``; ``δ`` bounds ``P[x ∉ Ω₁]``.

What is promised: probabilistic (ε, δ)-DP of one row's mechanism for b-adjacent rows in the
η-domain (the privacy loss is ``<= ε`` on ``Ω₁`` and ``P[Ω₁ᶜ] <= δ``), which implies ordinary
(ε, δ)-DP. Policy synthesis on the privatized MDP is post-processing and keeps the guarantee.
:func:`mdp_guarantee` lifts the per-row guarantee to a whole MDP for two notions of MDP
adjacency (one row changes, or every row may change).

What is not promised: nothing about rows outside the η-domain (entries below ``η`` or a
different support), nothing about the public structure (the zero pattern with
``support="nonzero"``, which actions are allowed, the dimension). The analysis is of the
ideal real-valued mechanism: floating-point sampling artefacts (Mironov 2012, "On
significance of the least significant bits for differential privacy") are not defended
against, and the sampler's randomness must be secret and fresh.

Derivation of ``ε`` (checked numerically in ``tests/test_privacy.py``). With ``t > 0``
(otherwise swap ``i`` and ``j``) the privacy loss at an output ``x`` is

.. math::

    L(x) = \\underbrace{g(q_i) + g(q_j) − g(p_i) − g(p_j)}_{D}
           + k t \\log(x_j / x_i),  \\qquad g(u) := \\log Γ(k u).

1. On ``Ω₁``, ``x_j / x_i <= (1 − (n−1)γ)/γ``, attained at ``x*`` with ``x_i = γ``,
   ``x_j = 1 − (n−1)γ`` and all other entries ``γ``. Write ``c = log((1 − (n−1)γ)/γ) > 0``.
2. ``g`` is convex, so its increments ``g(u + t) − g(u)`` grow with ``u``:
   ``D = [g(p_i + t) − g(p_i)] − [g(p_j) − g(p_j − t)]`` grows with ``p_i`` and shrinks with
   ``p_j``. In the domain ``q_j = p_j − t >= η`` and ``p_i + p_j <= 1 − (n−2)η``, so the
   maximum is at ``p_j = η + t``, ``p_i = M − t`` with ``M := 1 − (n−1)η`` (all other entries
   ``η``; ``q`` then has ``q_i = M``, ``q_j = η``), which needs ``t <= 1 − nη``:
   ``D(t) = log B(kη, kM) − log B(k(η+t), k(M−t))``.
3. ``φ(t) = D(t) + k t c`` is concave (``φ'' = −k²[ψ'(k(η+t)) + ψ'(k(M−t))] < 0``) with
   ``φ'(t) = k[ψ(k(M−t)) − ψ(k(η+t)) + c] > 0`` for ``t <= (1 − nη)/2``. Hence for
   ``b <= 1 − nη`` the worst case is ``t = b/2``:

   .. math::

       ε(k) = \\log\\frac{B(kη,\\, k(1−(n−1)η))}{B(k(η + b/2),\\, k(1−(n−1)η − b/2))}
              + \\frac{k b}{2}\\,\\log\\frac{1 − (n−1)γ}{γ}.

   For ``b > 1 − nη`` the maximiser over ``t ∈ (0, min(b/2, 1 − nη)]`` is found by a 1-D
   root search on ``φ'`` (concave, so the stationary point is the maximum).
4. The maximisers in steps 1 and 2 are independent choices (``x*`` for the output, the
   ``(p, q)`` pair for the inputs), so they are attained together: ``ε`` is the *exact*
   worst-case privacy loss over the domain and ``Ω₁``, not just an upper bound.

Derivation of ``δ``. By the union bound ``P[x ∉ Ω₁] <= Σ_l P[x_l < γ]`` with
``x_l ~ Beta(k p_l, k(1 − p_l))``. ``F(p) := I_γ(kp, k(1−p))`` decreases in ``p`` (the family
``Beta(kp, k(1−p))`` is stochastically increasing in ``p``: couple
``X_p = G_{kp} / (G_{kp} + G_{k(1−p)})`` with Gamma variates and split ``G_{kp'}`` for
``p' > p``). Every entry is ``>= η`` and the largest is ``>= 1/n``, so

.. math::

    δ <= (n − 1)\\, I_γ(kη, k(1−η)) + I_γ(k/n, k(1 − 1/n)) <= n\\, I_γ(kη, k(1−η)).

The middle expression is what :func:`delta` returns (a slight refinement of the right one).
For ``n = 2`` the two events are disjoint (``γ < 1/2``), so the probability at
``p = (η, 1 − η)`` is exactly ``I_γ(kη, k(1−η)) + 1 − I_{1−γ}(kη, k(1−η))``; the bound
replaces its second term (``F(1 − η)``) by ``F(1/2)``, a negligible difference when ``γ`` is
small. (``n·I_γ(kη, k(1−η))`` is *not* exact for ``n = 2``: it counts ``F(η)`` twice.)

References:
  P. Gohari, B. Wu, C. Hawkins, M. Hale, U. Topcu, "Differential Privacy on the Unit Simplex
  via the Dirichlet Mechanism", IEEE Trans. Information Forensics and Security 16, 2021
  (Definition 1: b-adjacency; probabilistic DP; the mechanism's (ε, δ) theorem).
  P. Gohari, M. Hale, U. Topcu, "Privacy-Preserving Policy Synthesis in Markov Decision
  Processes", IEEE CDC 2020 (Algorithm 1; privacy by post-processing, Section III).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Literal, NamedTuple

import numpy as np
from numpy.typing import ArrayLike
from scipy import optimize, special

from ._mechanism import prepare_mechanism_input

__all__ = [
    "Composition",
    "Guarantee",
    "MDPGuarantee",
    "calibrate_k",
    "compose",
    "delta",
    "epsilon",
    "format_table",
    "guarantee",
    "mdp_guarantee",
]

Adjacency = Literal["row", "all"]


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


class Composition(NamedTuple):
    """Basic composition of several guarantees.

    Attributes:
      epsilon: the sum of the epsilons.
      delta: the sum of the deltas.
      num_mechanisms: how many guarantees were composed.
    """

    epsilon: float
    delta: float
    num_mechanisms: int


class MDPGuarantee(NamedTuple):
    """The (ε, δ) of privatizing every allowed row of an MDP, see :func:`mdp_guarantee`.

    Attributes:
      epsilon: the MDP-level ε.
      delta: the MDP-level δ.
      adjacency: ``"row"`` or ``"all"``, the notion of adjacent MDPs it refers to.
      num_rows: how many rows are privatized (rows with a one-entry support are not).
      per_row: ``{(state, action): Guarantee}`` for every privatized row.
    """

    epsilon: float
    delta: float
    adjacency: str
    num_rows: int
    per_row: Mapping[tuple[int, int], Guarantee]


# --------------------------------------------------------------------------- validation


def _finite(name: str, value) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a real number, got {value!r}") from None
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return v


def _check_n(n) -> int:
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 2:
        raise ValueError(f"n must be an integer >= 2, got {n!r}")
    return int(n)


def _check_k(k) -> float:
    v = _finite("k", k)
    if v <= 0:
        raise ValueError(f"k must be > 0, got {k!r}")
    return v


def _check_k_array(k) -> np.ndarray:
    arr = np.asarray(k, dtype=np.float64)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"k must be finite, got {k!r}")
    if np.any(arr <= 0):
        raise ValueError(f"k must be > 0, got {arr[arr <= 0].ravel()[:5].tolist()}")
    return arr


def _check_b(b) -> float:
    v = _finite("b", b)
    if not 0 < v <= 1:
        raise ValueError(f"b must lie in (0, 1], got {b!r}")
    return v


def _check_eta(eta, n: int) -> float:
    v = _finite("eta", eta)
    # A tiny slack lets eta = 1/n computed in floating point through.
    if not 0 < v <= (1 + 1e-12) / n:
        raise ValueError(f"eta must lie in (0, 1/n] = (0, {1 / n!r}] for n = {n}, got {eta!r}")
    return min(v, 1.0 / n)


def _check_target_delta(target_delta) -> float:
    v = _finite("target_delta", target_delta)
    if not 0 < v < 1:
        raise ValueError(f"target_delta must lie in (0, 1), got {target_delta!r}")
    return v


def _resolve_log_gamma(gamma, log_gamma, n: int) -> float:
    if (gamma is None) == (log_gamma is None):
        raise ValueError("pass exactly one of gamma and log_gamma")
    if gamma is not None:
        v = _finite("gamma", gamma)
        if not 0 < v < 1 / n:
            raise ValueError(
                f"gamma must lie in (0, 1/n) = (0, {1 / n!r}) for n = {n}, got {gamma!r}"
            )
        return math.log(v)
    v = _finite("log_gamma", log_gamma)
    if not v < -math.log(n):
        raise ValueError(
            f"log_gamma must lie in (-inf, log(1/n)) = (-inf, {-math.log(n)!r}) for n = {n}, "
            f"got {log_gamma!r}"
        )
    return v


# --------------------------------------------------------------------------- numerics


def _log_betainc(a: float, b: float, log_x: float) -> float:
    """``log I_x(a, b)``, accurate also where ``I_x`` or ``x`` underflow float64."""
    if log_x > -700.0:
        v = float(special.betainc(a, b, math.exp(log_x)))
        if v > 1e-280:
            return math.log(v)
    return _log_betainc_series(a, b, log_x)


def _log_betainc_series(a: float, b: float, log_x: float) -> float:
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
        if m0 > 10_000_000:  # pragma: no cover - needs k·x ~ 1e7
            raise RuntimeError(f"incomplete beta series did not converge: a={a}, b={b}, x={x}")


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
    small = math.log(n - 1) + _log_betainc(k * eta, k * (1 - eta), log_gamma)
    large = _log_betainc(k / n, k * (1 - 1 / n), log_gamma)
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
    n = _check_n(n)
    ks = _check_k_array(k)
    b = _check_b(b)
    eta = _check_eta(eta, n)
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
    n = _check_n(n)
    ks = _check_k_array(k)
    eta = _check_eta(eta, n)
    lg = _resolve_log_gamma(gamma, log_gamma, n)
    out = np.exp(np.vectorize(lambda kk: _log_delta(kk, eta, lg, n), otypes=[float])(ks))
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
    n = _check_n(n)
    k = _check_k(k)
    b = _check_b(b)
    eta = _check_eta(eta, n)
    target_delta = _check_target_delta(target_delta)
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
    target_epsilon = _finite("target_epsilon", target_epsilon)
    if target_epsilon <= 0:
        raise ValueError(f"target_epsilon must be > 0, got {target_epsilon!r}")
    target_delta = _check_target_delta(target_delta)
    n = _check_n(n)
    b = _check_b(b)
    eta = _check_eta(eta, n)
    try:
        k_lo, k_hi = (_check_k(v) for v in k_bounds)
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


# --------------------------------------------------------------------------- composition


def compose(guarantees: Iterable) -> Composition:
    """Basic composition: ``Σ ε`` and ``Σ δ`` over independent mechanisms.

    Valid for ordinary and for probabilistic (ε, δ)-DP: on the intersection of the good sets
    the privacy losses add, and a union bound covers the bad sets.

    Args:
      guarantees: objects with ``epsilon`` and ``delta`` attributes (e.g. :class:`Guarantee`).

    Returns:
      A :class:`Composition`.

    References:
      C. Dwork, A. Roth, "The Algorithmic Foundations of Differential Privacy", 2014,
      Theorem 3.16.
    """
    eps, dlt, count = 0.0, 0.0, 0
    for g in guarantees:
        eps += float(g.epsilon)
        dlt += float(g.delta)
        count += 1
    return Composition(epsilon=eps, delta=dlt, num_mechanisms=count)


def mdp_guarantee(
    k: float,
    transitions: ArrayLike,
    *,
    b: float,
    eta: float | None = None,
    target_delta: float,
    action_mask: ArrayLike | None = None,
    support: Literal["nonzero"] | None = None,
    smoothing: float | None = None,
    adjacency: Adjacency = "row",
) -> MDPGuarantee:
    """The (ε, δ) of privatizing every allowed row of an MDP with ``Dirichlet(k·P(s, a))``.

    Which rows are privatized, and how, follows :func:`jaxprivmdp.dirichlet_mechanism` with
    the same ``action_mask``, ``support`` and ``smoothing``: every allowed row ``(s, a)``, of
    dimension ``n = S``, or with ``support="nonzero"`` ``n =`` the size of its nonzero support.
    Rows whose support has one entry are deterministic, not privatized and cost nothing: they
    reveal nothing beyond the support structure, which is public.

    Adjacency of two MDPs (same states, actions, action mask and zero pattern):

    * ``"row"``: they differ in **one** row ``P(s, a)``, and that row pair is b-adjacent.
      The rows are privatized independently and all others have identical inputs, so the
      MDP guarantee is the per-row one of the differing row; since it may be any row,
      ``ε = max ε_r`` and ``δ = max δ_r``, each row meeting ``target_delta``. This is ordinary
      (ε, δ)-DP; a *probabilistic* DP statement (one good set for all possible differing rows)
      would need ``δ = Σ δ_r``.
    * ``"all"``: **every** row may differ, each pair b-adjacent. Basic composition over the
      privatized rows: ``ε = Σ ε_r``, ``δ = Σ δ_r``, with ``target_delta`` split equally
      (each row gets ``target_delta / num_rows``), so ``δ <= target_delta``.

    The domain bound ``eta``: the guarantee holds for every pair of rows with entries
    ``>= η`` on the support, so ``eta`` should be a *public* bound, and passing it explicitly
    is the intended use. With ``eta=None`` each row's own minimum entry (after smoothing) is
    used: convenient for exploration, but the resulting ε depends on the private data and
    itself leaks it, and an adjacent row with a smaller entry is not covered.

    With ``smoothing=η_s`` the mechanism's input is ``p̃ = (1 − nη_s) p + η_s`` (entries
    ``>= η_s``; ``eta=η_s`` is then the natural public bound). Adjacency refers to the raw
    rows ``p``: b-adjacent raw rows give smoothed rows differing in the same two entries by
    ``(1 − nη_s)·b`` in ℓ1, which is the ``b`` the accounting uses (``ε = 0`` for
    ``η_s = 1/n``, where the output no longer depends on the data).

    Args:
      k: the mechanism's parameter, ``> 0``.
      transitions: `[S, A, S]` the non-private transition probabilities.
      b: the per-row adjacency bound, in ``(0, 1]``.
      eta: the public lower bound on every (smoothed) entry on the support; None means
        ``smoothing`` when it is given, else each row's minimum (see the caveat above).
      target_delta: the MDP-level δ to meet, in ``(0, 1)``.
      action_mask: `[S, A]` bool, True = allowed; masked rows are not privatized.
      support: None (rows must be strictly positive) or ``"nonzero"`` (the zero pattern is
        public, rows are privatized over their nonzero entries).
      smoothing: ``η_s`` in ``(0, 1/S]``, as in the mechanism; not with ``support``.
      adjacency: ``"row"`` or ``"all"``, see above.

    Returns:
      An :class:`MDPGuarantee`; with no privatized row, ``ε = δ = 0``.

    Raises:
      ValueError: invalid arguments; a row with a zero entry under ``support=None`` and no
        smoothing; a row with an entry below a given ``eta`` (so also ``eta > 1/n``).

    References:
      Gohari, Hale, Topcu, CDC 2020, Algorithm 1 (rows privatized independently).
    """
    k = _check_k(k)
    b = _check_b(b)
    target_delta = _check_target_delta(target_delta)
    if adjacency not in ("row", "all"):
        raise ValueError(f"adjacency must be 'row' or 'all', got {adjacency!r}")
    if support not in (None, "nonzero"):
        raise ValueError(f"support must be None or 'nonzero', got {support!r}")
    # The same validation, smoothing and support rules as the mechanism itself.
    inp = prepare_mechanism_input(
        transitions,
        action_mask=action_mask,
        support=support,
        smoothing=smoothing,
        dtype=np.float64,
    )
    P, supp, mask = inp.rows, inp.support, inp.action_mask
    if eta is None and smoothing is not None:
        eta = smoothing  # the public bound that smoothing guarantees
    if eta is not None:
        eta = _finite("eta", eta)
        if eta <= 0:
            raise ValueError(f"eta must lie in (0, 1/n], got {eta!r}")

    rows: list[tuple[tuple[int, int], int, float, float]] = []
    for s, a in zip(*np.nonzero(mask), strict=True):
        s, a = int(s), int(a)
        p = P[s, a]
        entries = p[supp[s, a]]
        n = entries.size
        if n == 1:
            continue  # deterministic row: nothing to hide beyond the public support.
        row_min = float(entries.min())
        if eta is not None and row_min < eta:
            raise ValueError(
                f"transitions row (state {s}, action {a}) has an entry {row_min!r} below "
                f"eta={eta!r}: the row is outside the domain the guarantee covers"
            )
        row_b = b if smoothing is None else (1.0 - n * smoothing) * b
        rows.append(((s, a), n, row_b, row_min if eta is None else eta))

    row_delta = target_delta if adjacency == "row" else target_delta / max(len(rows), 1)
    cache: dict[tuple[int, float, float], Guarantee] = {}
    per_row: dict[tuple[int, int], Guarantee] = {}
    for key, n, row_b, row_eta in rows:
        cache_key = (n, row_b, row_eta)
        if cache_key not in cache:
            if row_b <= 0:  # smoothing = 1/n: the output is Dirichlet(k/n·1), data-free.
                cache[cache_key] = Guarantee(0.0, 0.0, math.nan, k, 0.0, row_eta, n, math.nan)
            else:
                cache[cache_key] = guarantee(k, b=row_b, eta=row_eta, n=n, target_delta=row_delta)
        per_row[key] = cache[cache_key]

    if not per_row:
        return MDPGuarantee(0.0, 0.0, adjacency, 0, per_row)
    if adjacency == "row":
        eps = max(g.epsilon for g in per_row.values())
        dlt = max(g.delta for g in per_row.values())
    else:
        eps, dlt, _ = compose(per_row.values())
    return MDPGuarantee(eps, dlt, adjacency, len(per_row), per_row)


def _format_log10(log_value: float) -> str:
    """``exp(log_value)`` in scientific notation, also far below float64's range."""
    if not math.isfinite(log_value):
        return "nan" if math.isnan(log_value) else ("0" if log_value < 0 else "inf")
    exponent = log_value / math.log(10)
    e = math.floor(exponent)
    mantissa = 10 ** (exponent - e)
    if mantissa >= 9.995:
        mantissa, e = 1.0, e + 1
    return f"{mantissa:.2f}e{e:+d}"


def format_table(guarantees: Iterable[Guarantee]) -> str:
    """A plain-text table with columns ``k``, ``epsilon``, ``delta``, ``gamma``.

    Args:
      guarantees: :class:`Guarantee` objects, one per line.

    Returns:
      The table as a string (no trailing newline).
    """
    lines = [f"{'k':>10}  {'epsilon':>12}  {'delta':>10}  {'gamma':>12}"]
    for g in guarantees:
        log_delta = math.log(g.delta) if g.delta > 0 else -math.inf
        lines.append(
            f"{g.k:>10.4g}  {g.epsilon:>12.6g}  {_format_log10(log_delta):>10}  "
            f"{_format_log10(g.log_gamma):>12}"
        )
    return "\n".join(lines)
