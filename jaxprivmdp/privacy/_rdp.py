"""Rényi-DP of the row mechanisms, and composition over many rows (basic vs RDP).

When every (state, action) row may change, the whole-MDP guarantee is the composition of
``R`` row mechanisms. Basic composition adds the rows' ε and δ; Rényi-DP composes far
better: RDP curves add, and one conversion to (ε, δ) at the end pays ``log(1/δ)`` once.

**The Dirichlet mechanism's RDP** (derived in ``docs/privacy.md``). For concentrations
``α = k p`` and ``α' = k q`` (both summing to ``k``) the Rényi divergence of order ``λ > 1``
between ``Dir(α)`` and ``Dir(α')`` is, with ``f(x) = log Γ(k x)``,

    D_λ = (1/(λ−1)) Σ_i h(p_i, q_i),   h(p, q) = f(λp + (1−λ)q) − λ f(p) − (1−λ) f(q),

finite when every ``λp_i + (1−λ)q_i > 0`` (the Beta integral; Gil, Alajaji & Linder 2013).
Rows are adjacent under **general ℓ1 adjacency**: ``‖p − q‖₁ <= b`` with any number of
entries changed, every entry ``>= η``. An entry that goes up by ``d`` contributes at most
``G₊(d) = h(η, η + d)`` (convex: the rising mass is worst on one entry) and one that goes
down by ``d`` at most ``G₋(d) = h(η + d, η)``, which is convex and then possibly concave:
spreading the falling mass over several entries can be worse than moving it from one, so
its split is bounded with a concave majorant (``_split.Majorant``), and the number of
entries that can fall (``n − 2``, or ``n − 1`` with spare mass ``1 − nη − s`` on one entry)
is accounted for. The result is exact when one falling entry is the worst case (always for
``kη >= 1/2``, where it is the two-entry closed form
``(1/(λ−1)) [h(η, η + b/2) + h(η + b/2, η)]``) and for ``n = 2``; otherwise it is an upper
bound, above the best split by at most the rounding of the number of entries. Each ``h``
is evaluated as a sum of Taylor remainders that are ``>= 0`` term by term, so the
divergence is accurate to a few ulps even for ``k b`` tiny, and never negative.

The Gaussian and Laplace mechanisms' RDP and every conversion to (ε, δ) come from
``dp_accounting`` (Google's accountant): its ``RdpAccountant`` and ``compute_epsilon``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from scipy import special

from .._checks import check_int, real
from . import _additive, _row, _split
from ._mdp import share, sum_up

# Orders λ for the RDP conversions: dp_accounting's default grid, plus finer ones near 1
# for the Dirichlet mechanism, whose RDP is finite only below 1 + 2η/b.
DEFAULT_ORDERS = tuple(
    sorted(
        {1.0 + x / 100 for x in range(1, 100)}
        | {1.0 + x / 10 for x in range(10, 100)}
        | set(range(11, 64))
        | {128.0, 256.0, 512.0}
    )
)


def _up(k: float, lam: float, base: float, d: float) -> float:
    """``h(base, base + d)``: an entry at ``base`` that goes up by ``d`` (``>= 0``).

    ``h(p, q) = f(λp + (1−λ)q) − λ f(p) − (1−λ) f(q)`` with the linear terms of ``f`` around
    ``p`` cancelled, i.e. as two Taylor remainders, both ``>= 0`` (no cancellation):
    ``∫_{p−(λ−1)d}^{p} (u − p + (λ−1)d) f'' + (λ−1) ∫_p^{p+d} (p + d − u) f''``.
    """
    return _split.taylor_left(k, base - (lam - 1) * d, (lam - 1) * d) + (
        lam - 1
    ) * _split.taylor_right(k, base, d)


def _down(k: float, lam: float, base: float, v: float) -> float:
    """``h(base + v, base)``: an entry that goes down by ``v`` to ``base`` (``>= 0``),
    ``∫_{q+v}^{q+λv} (q + λv − u) f'' + (λ−1) ∫_q^{q+v} (u − q) f''`` with ``q = base``."""
    return _split.taylor_right(k, base + v, (lam - 1) * v) + (lam - 1) * _split.taylor_left(
        k, base, v
    )


def _down_majorant(k: float, lam: float, base: float, s: float) -> _split.Majorant:
    """The concave majorant of ``G₋(v) = h(base + v, base)`` on ``[0, s]``.

    ``G₋'' = λ[λ f''(base + λv) − f''(base + v)]`` is positive and then (if at all) negative:
    ``docs/privacy.md`` proves the single sign change from the convexity of ``1/ψ'``.
    """

    def F(v):
        return _down(k, lam, base, v)

    def dF(v):
        return lam * float(_split.dlgk(k, base + lam * v) - _split.dlgk(k, base + v))

    def U(v):
        return v * dF(v) - F(v)

    def curvature(v):
        return lam * special.polygamma(1, k * (base + lam * v)) - special.polygamma(
            1, k * (base + v)
        )

    return _split.Majorant(F, dF, U, s, _split.sign_change(curvature, s))


def dirichlet_rdp(k: float, order: float, *, b: float, eta: float, n: int | None = None) -> float:
    """The RDP ``ε(λ)`` of one row's Dirichlet mechanism under ℓ1 adjacency (module docstring).

    Rows ``p, q`` in the η-domain (every entry ``>= η``) are adjacent when
    ``‖p − q‖₁ <= b``, with any number of entries changed. The result is a supremum over all
    such pairs: exact when the worst case moves the mass between two entries (always for
    ``n = 2``, and whenever ``kη >= 1/2``), otherwise an upper bound within the rounding of
    a whole number of entries (``docs/privacy.md``). Never negative; ``inf`` for
    ``λ >= 1 + 2η/b`` (for ``1 + η/s`` with ``s = min(b/2, 1 − nη)`` when ``n`` is given).

    Args:
      k: the mechanism's parameter, ``> 0``.
      order: the Rényi order ``λ > 1``.
      b: the adjacency bound, in ``(0, 1]``.
      eta: the public lower bound on every entry.
      n: the row's dimension, ``>= 2``; ``None`` gives a bound valid for every ``n``
        (the decreased mass may spread over any number of entries).

    Returns:
      ``ε(λ)`` as a float.
    """
    k = real("k", k, low=0.0, low_open=True)
    lam = real("order", order, low=1.0, low_open=True)
    b = real("b", b, low=0.0, high=1.0, low_open=True)
    if n is None:
        eta = real("eta", eta, low=0.0, high=0.5, low_open=True)
        s = b / 2
    else:
        n = _row.check_n(n)
        eta = _row.check_eta(eta, n)
        # No more than 1 − nη can move: every entry that goes down ends >= η.
        s = min(b / 2, 1.0 - n * eta)
        if s <= 0:
            return 0.0  # the domain is the single point p = uniform
    if lam >= 1 + eta / s:
        return math.inf
    up = _up(k, lam, eta, s)
    down = _down_majorant(k, lam, eta, s)
    if n is None:
        total = up + down.bound(None)
    else:
        spare = max(1.0 - n * eta - s, 0.0)  # mass above the minimum if every entry changes
        # Every entry changes (no entry left to hold the spare mass): one entry holds all of
        # it (each entry's term is convex and decreasing in its spare mass), either the one
        # that goes up or one that goes down.
        if n == 2:
            total = max(up + _down(k, lam, eta + spare, s), _up(k, lam, eta + spare, s) + down.F(s))
        else:
            # Some entry unchanged (or two going up): at most n − 2 entries go down.
            total = up + down.bound(n - 2)
            total = max(total, _up(k, lam, eta + spare, s) + down.bound(n - 1))
            # One entry going down holds the spare mass: it adds at most ratio_spare per
            # unit mass, against at least H'(s/(n−2)) per unit lost by the others.
            spare_ratio = _down_majorant(k, lam, eta + spare, s).ratio
            slope = down.left_slope(s / (n - 2))
            total = max(total, up + down.bound(n - 2) + s * max(spare_ratio - slope, 0.0))
    return float(max(total, 0.0) / (lam - 1))


def additive_event(mechanism: str, parameter: float, *, b: float):
    """dp_accounting's event for one row of the Gaussian (``σ``) or Laplace (scale ``λ``)
    mechanism on b-adjacent rows: its noise over the sensitivity, ``σ/(b/√2)`` (ℓ2) or
    ``λ/b`` (ℓ1), the sensitivities of ``_additive``."""
    import dp_accounting

    if mechanism == "gaussian":
        return dp_accounting.GaussianDpEvent(parameter / _additive.l2_sensitivity(b))
    if mechanism == "laplace":
        return dp_accounting.LaplaceDpEvent(parameter / b)
    raise ValueError(f"mechanism must be 'gaussian' or 'laplace', got {mechanism!r}")


class RowComposition(NamedTuple):
    """The guarantee of ``num_rows`` row mechanisms that may all change, two ways.

    Attributes:
      basic_epsilon: ``R·ε_row`` at ``δ_row = δ / R`` (basic composition).
      rdp_epsilon: ε from the composed RDP curve at the same total ``δ``.
      delta: the total δ of both (the Laplace mechanism's basic δ is 0).
      order: the RDP order that gave ``rdp_epsilon``.
      num_rows: ``R``.
    """

    basic_epsilon: float
    rdp_epsilon: float
    delta: float
    order: float
    num_rows: int


def compose_rows(
    mechanism: str,
    parameter: float,
    *,
    num_rows: int,
    delta: float,
    b: float,
    eta: float | None = None,
    n: int | None = None,
    orders=DEFAULT_ORDERS,
) -> RowComposition:
    """The (ε, δ) of ``num_rows`` rows privatized independently, all of which may change.

    Args:
      mechanism: ``"dirichlet"``, ``"gaussian"`` or ``"laplace"``.
      parameter: its ``k``, ``σ`` or scale ``λ``.
      num_rows: ``R >= 1``.
      delta: the total δ in ``(0, 1)``.
      b: the adjacency bound per row.
      eta, n: the Dirichlet mechanism's public lower bound and row dimension.
      orders: RDP orders to optimize the conversion over.

    Returns:
      :class:`RowComposition`: basic and RDP composition side by side.
    """
    from dp_accounting.rdp import rdp_privacy_accountant as rdp

    num_rows = check_int("num_rows", num_rows, low=1)
    delta = real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    orders = [float(o) for o in orders]
    if mechanism == "dirichlet":
        if eta is None or n is None:
            raise ValueError("the Dirichlet mechanism's accounting needs eta and n")
        row = _row.guarantee(parameter, b=b, eta=eta, n=n, target_delta=share(delta, num_rows))
        basic = sum_up([row.epsilon], [num_rows])
        curve = [
            sum_up([dirichlet_rdp(parameter, o, b=b, eta=eta, n=n)], [num_rows]) for o in orders
        ]
        eps, order = rdp.compute_epsilon(orders, curve, delta)
    elif mechanism in ("gaussian", "laplace"):
        event = additive_event(mechanism, parameter, b=b)
        if mechanism == "gaussian":
            row_eps = _additive.gaussian_epsilon(parameter, share(delta, num_rows), b=b)
            basic = sum_up([row_eps], [num_rows])
        else:
            basic = sum_up([_additive.laplace_epsilon(parameter, b=b)], [num_rows])
        accountant = rdp.RdpAccountant(orders)
        accountant.compose(event, num_rows)
        eps, order = accountant.get_epsilon_and_optimal_order(delta)
    else:
        raise ValueError(
            f"mechanism must be 'dirichlet', 'gaussian' or 'laplace', got {mechanism!r}"
        )
    return RowComposition(float(basic), float(eps), delta, float(order), num_rows)
