"""Rényi-DP of the row mechanisms and composition over rows (basic vs RDP).

Oracles: the Rényi divergence of two Beta densities by numerical integration (for the
closed form), random two-entry adjacent pairs (for the supremum; general ℓ1 pairs in
tests/test_privacy_general.py), and the Gaussian mechanism's
textbook RDP curve ``λΔ²/(2σ²)`` (Mironov 2017) for the accountant.
"""

import math

import numpy as np
import pytest
from oracles import dirichlet_divergence
from scipy import integrate, stats

import jaxprivmdp as jp
from jaxprivmdp.privacy import _additive as pa
from jaxprivmdp.privacy import compose_rows, dirichlet_rdp


@pytest.mark.parametrize(("k", "order"), [(2.0, 1.5), (10.0, 2.0), (40.0, 1.2)])
def test_dirichlet_divergence_matches_numerical_integration(k, order):
    p, q = np.array([0.3, 0.7]), np.array([0.35, 0.65])
    P, Q = stats.beta(k * p[0], k * p[1]), stats.beta(k * q[0], k * q[1])
    integral = integrate.quad(
        lambda x: math.exp(order * P.logpdf(x) + (1 - order) * Q.logpdf(x)), 0, 1, limit=200
    )[0]
    want = math.log(integral) / (order - 1)
    assert dirichlet_divergence(k, p, q, order) == pytest.approx(want, rel=1e-7)


@pytest.mark.parametrize("k", [1.0, 10.0, 100.0])
def test_dirichlet_rdp_is_the_supremum_over_adjacent_rows(k):
    """Random two-entry pairs stay below it, and for n = 3 the worst one attains it.
    Pairs that spread the mass over more entries: test_privacy_general.py."""
    rng = np.random.default_rng(int(k))
    b, eta = 0.1, 0.05
    for order in [1.1, 1.5, 1.9]:
        bounds = {n: dirichlet_rdp(k, order, jp.privacy.Adjacency(b, eta), n=n) for n in (3, 4, 5)}
        bound = bounds[3]
        assert dirichlet_rdp(k, order, jp.privacy.Adjacency(b, eta)) >= max(
            bounds.values()
        )  # any n
        for _ in range(300):
            n = int(rng.integers(3, 6))
            p = eta + rng.dirichlet(np.ones(n)) * (1 - n * eta)
            up, down = rng.choice(n, 2, replace=False)
            d = rng.uniform(0, b / 2)
            q = p.copy()
            q[up] += d
            q[down] -= d
            if q[down] < eta:
                continue
            assert dirichlet_divergence(k, p, q, order) <= bounds[n] * (1 + 1e-12)
        worst_p = np.array([eta, eta + b / 2, 1 - 2 * eta - b / 2])
        worst_q = np.array([eta + b / 2, eta, 1 - 2 * eta - b / 2])
        assert dirichlet_divergence(k, worst_p, worst_q, order) == pytest.approx(bound)
    assert math.isinf(dirichlet_rdp(k, 1 + 2 * eta / b, jp.privacy.Adjacency(b, eta)))
    assert math.isinf(dirichlet_rdp(k, 1 + 2 * eta / b, jp.privacy.Adjacency(b, eta), n=3))


def test_gaussian_rdp_composition_matches_the_textbook_curve():
    from dp_accounting.rdp import rdp_privacy_accountant as rdp

    sigma, rows, delta = 0.05, 50, 1e-5
    orders = [1.5, 2.0, 4.0, 8.0, 16.0, 32.0]
    got = compose_rows(
        jp.Gaussian(sigma), jp.privacy.Adjacency(0.1), num_rows=rows, delta=delta, orders=orders
    )
    noise = sigma / pa.l2_sensitivity(0.1)
    curve = [rows * o / (2 * noise**2) for o in orders]
    want, _ = rdp.compute_epsilon(orders, curve, delta)
    assert got.rdp_epsilon == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize(
    "mechanism", [jp.Dirichlet(10.0), jp.Gaussian(0.05), jp.Laplace(0.05)], ids=repr
)
def test_rdp_beats_basic_composition_over_many_rows(mechanism):
    adjacency = jp.privacy.Adjacency(0.1, 0.1)
    out = compose_rows(mechanism, adjacency, num_rows=400, delta=1e-3, n=3)
    assert 0 < out.rdp_epsilon < out.basic_epsilon
    one = compose_rows(mechanism, adjacency, num_rows=1, delta=1e-3, n=3)
    assert out.basic_epsilon == pytest.approx(400 * one.basic_epsilon, rel=0.5)


def test_compose_rows_bad_input():
    with pytest.raises(TypeError, match="takes a mechanism object"):
        compose_rows("exponential", jp.privacy.Adjacency(0.1), num_rows=2, delta=0.001)
    with pytest.raises(ValueError, match="needs eta and n"):
        compose_rows(jp.Dirichlet(1.0), jp.privacy.Adjacency(0.1), num_rows=2, delta=0.001)
    with pytest.raises(ValueError, match="delta"):
        compose_rows(jp.Gaussian(1.0), jp.privacy.Adjacency(0.1), num_rows=2, delta=0.0)
