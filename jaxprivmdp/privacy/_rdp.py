"""Rényi-DP of the row mechanisms, and composition over many rows (basic vs RDP).

When every (state, action) row may change, the whole-MDP guarantee is the composition of
``R`` row mechanisms. Basic composition adds the rows' ε and δ; Rényi-DP composes far
better: RDP curves add, and one conversion to (ε, δ) at the end pays ``log(1/δ)`` once.

**The Dirichlet mechanism's RDP** (derived here; ``docs/privacy.md``). For concentrations
``α = k p`` and ``α' = k q`` (both summing to ``k``) the Rényi divergence of order ``λ > 1``
between ``Dir(α)`` and ``Dir(α')`` is, with ``f(x) = log Γ(k x)``,

    D_λ = (1/(λ−1)) Σ_i h(p_i, q_i),   h(p, q) = f(λp + (1−λ)q) − λ f(p) − (1−λ) f(q),

finite when every ``λp_i + (1−λ)q_i > 0`` (the Beta integral; Gil, Alajaji & Linder 2013).
``h(p, p) = 0``; ``h(p, p ± d)`` is convex in ``d`` (``f`` is convex) and decreases in ``p``
(``f''`` = ``k²ψ'`` decreases). Over rows with every entry ``>= η`` that differ by at most
``b`` in ℓ1, the entries that go up share at most ``b/2`` and those that go down at most
``b/2``; a convex function that is 0 at 0 is superadditive, so the sum is largest with each
half on one entry, at the smallest entries allowed:

    ε(λ) = (1/(λ−1)) [h(η, η + b/2) + h(η + b/2, η)],   for λ < 1 + 2η/b (∞ beyond).

For rows of ``n >= 3`` entries it is attained by ``p = (η, η + b/2, …)``,
``q = (η + b/2, η, …)``, so it is exact there (an upper bound for ``n = 2``).
The Gaussian and Laplace mechanisms' RDP and every conversion to (ε, δ) come from
``dp_accounting`` (Google's accountant): its ``RdpAccountant`` and ``compute_epsilon``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from scipy import special

from .._checks import check_int, real
from . import _additive, _row

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


def dirichlet_rdp(k: float, order: float, *, b: float, eta: float) -> float:
    """The exact RDP ``ε(λ)`` of one row's Dirichlet mechanism (module docstring)."""
    k = real("k", k, low=0.0, low_open=True)
    lam = real("order", order, low=1.0, low_open=True)
    b = real("b", b, low=0.0, high=1.0, low_open=True)
    eta = real("eta", eta, low=0.0, high=0.5, low_open=True)
    d = b / 2
    if lam >= 1 + eta / d:
        return math.inf

    def f(x):
        return special.gammaln(k * x)

    def h(p, q):
        return f(lam * p + (1 - lam) * q) - lam * f(p) - (1 - lam) * f(q)

    return float((h(eta, eta + d) + h(eta + d, eta)) / (lam - 1))


def dirichlet_divergence(k: float, p, q, order: float) -> float:
    """``D_λ(Dir(k p) ‖ Dir(k q))`` in closed form (for tests and audits)."""
    p, q = np.asarray(p, np.float64), np.asarray(q, np.float64)
    a, a2 = k * p, k * q
    mix = order * a + (1 - order) * a2
    if np.any(mix <= 0):
        return math.inf
    log_b = lambda x: special.gammaln(x).sum() - special.gammaln(x.sum())  # noqa: E731
    return float((log_b(mix) - order * log_b(a) - (1 - order) * log_b(a2)) / (order - 1))


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
    import dp_accounting
    from dp_accounting.rdp import rdp_privacy_accountant as rdp

    num_rows = check_int("num_rows", num_rows, low=1)
    delta = real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    orders = [float(o) for o in orders]
    if mechanism == "dirichlet":
        if eta is None or n is None:
            raise ValueError("the Dirichlet mechanism's accounting needs eta and n")
        row = _row.guarantee(parameter, b=b, eta=eta, n=n, target_delta=delta / num_rows)
        basic = num_rows * row.epsilon
        curve = [num_rows * dirichlet_rdp(parameter, o, b=b, eta=eta) for o in orders]
        eps, order = rdp.compute_epsilon(orders, curve, delta)
    elif mechanism in ("gaussian", "laplace"):
        if mechanism == "gaussian":
            noise = parameter / _additive.l2_sensitivity(b)
            event = dp_accounting.GaussianDpEvent(noise)
            basic = num_rows * _additive.gaussian_epsilon(parameter, delta / num_rows, b=b)
        else:
            event = dp_accounting.LaplaceDpEvent(parameter / b)
            basic = num_rows * _additive.laplace_epsilon(parameter, b=b)
        accountant = rdp.RdpAccountant(orders)
        accountant.compose(event, num_rows)
        eps, order = accountant.get_epsilon_and_optimal_order(delta)
    else:
        raise ValueError(
            f"mechanism must be 'dirichlet', 'gaussian' or 'laplace', got {mechanism!r}"
        )
    return RowComposition(float(basic), float(eps), delta, float(order), num_rows)
