"""The privacy ledger: ``jp.privacy.Accountant`` composing ``jp.privacy.Release`` events and
dp_accounting's, against oracles built here from the per-row RDP and dp_accounting."""

import math

import dp_accounting
import jax
import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant as rdp

import jaxprivmdp as jp
from jaxprivmdp.privacy import Accountant, Adjacency, Release

# Rows of 2, 3 and 4 entries (every entry >= 0.1 on the support), a masked action and a
# deterministic row (one entry: not private).
P = np.zeros((4, 2, 4))
P[0, 0] = [0.5, 0.5, 0.0, 0.0]
P[0, 1] = [0.2, 0.3, 0.5, 0.0]
P[1, 0] = [0.1, 0.2, 0.3, 0.4]
P[1, 1] = [0.0, 1.0, 0.0, 0.0]
P[2, 0] = [0.0, 0.0, 0.6, 0.4]
P[3, 0] = [0.0, 0.0, 0.0, 1.0]
P[2, 1] = P[3, 1] = [0.25, 0.25, 0.25, 0.25]
MASK = np.array([[True, True], [True, True], [True, False], [True, False]])
R = np.zeros((4, 2))
SIZES = [2, 3, 4, 2]  # the private rows' supports: (0, 0), (0, 1), (1, 0), (2, 0)
DELTA = 1e-5


def model(x64=False):
    with jax.enable_x64(x64):
        return jp.make_mdp(P, R, action_mask=MASK, horizon=3)


def oracle_curve(k, adjacency, orders, sizes=SIZES):
    """The per-row RDP (the public single-row function) combined as the scope says."""
    rows = np.array(
        [[jp.privacy.dirichlet_rdp(k, o, adjacency, n=n) for o in orders] for n in sizes]
    )
    return rows.max(axis=0) if adjacency.scope == "row" else rows.sum(axis=0)


@pytest.mark.parametrize("scope", ["row", "all"])
@pytest.mark.parametrize("layout", ["dense", "sparse"])
@pytest.mark.parametrize("x64", [False, True])
def test_n_identical_dirichlet_releases_are_n_times_one_curve(scope, layout, x64):
    adjacency = Adjacency(0.1, 0.1, scope=scope)
    mdp = model(x64)
    if layout == "sparse":
        mdp = jp.to_sparse(mdp)
    acc = Accountant(adjacency)
    for _ in range(2):
        acc.compose(Release(jp.Dirichlet(5.0), mdp, support="nonzero"), count=2)
    curve = 4 * oracle_curve(5.0, adjacency, acc.orders)
    np.testing.assert_allclose(acc.rdp, curve, rtol=1e-12)
    expected, _ = rdp.compute_epsilon(list(acc.orders), curve.tolist(), DELTA)
    assert math.isfinite(expected)
    assert acc.get_epsilon(DELTA) == pytest.approx(expected, rel=1e-12)
    one = Accountant(adjacency).compose(Release(jp.Dirichlet(5.0), mdp, support="nonzero"))
    assert one.get_epsilon(DELTA) < acc.get_epsilon(DELTA)


def test_smoothing_is_the_public_eta_and_shrinks_b():
    with_zero = P.copy()
    mdp = jp.make_mdp(with_zero, R, action_mask=MASK)
    acc = Accountant(Adjacency(0.1))  # eta from the smoothing
    acc.compose(Release(jp.Dirichlet(5.0), mdp, smoothing=0.05))
    # Every allowed row has n = 4 entries after smoothing; b shrinks to (1 - 4·0.05)·0.1.
    expected = [jp.privacy.dirichlet_rdp(5.0, o, Adjacency(0.08, 0.05), n=4) for o in acc.orders]
    np.testing.assert_allclose(acc.rdp, expected, rtol=1e-12)


@pytest.mark.parametrize("scope", ["row", "all"])
def test_gaussian_and_laplace_are_dp_accountings_own(scope):
    b, sigma, scale = 0.1, 0.05, 0.2
    mdp = model()
    acc = Accountant(Adjacency(b, scope=scope))
    acc.compose(Release(jp.Gaussian(sigma), mdp, support="nonzero"), count=3)
    rows = 4 if scope == "all" else 1
    ref = dp_accounting.rdp.RdpAccountant(list(acc.orders))
    ref.compose(dp_accounting.GaussianDpEvent(sigma / (b / math.sqrt(2))), 3 * rows)
    assert acc.get_epsilon(DELTA) == ref.get_epsilon(DELTA)
    assert acc.get_delta(2.0) == ref.get_delta(2.0)
    acc.compose(Release(jp.Laplace(scale), mdp, support="nonzero"))
    ref.compose(dp_accounting.LaplaceDpEvent(scale / b), rows)
    assert acc.get_epsilon(DELTA) == ref.get_epsilon(DELTA)
    # A DpEvent composes as it is.
    acc.compose(dp_accounting.GaussianDpEvent(3.0), 2)
    ref.compose(dp_accounting.GaussianDpEvent(3.0), 2)
    assert acc.get_epsilon(DELTA) == ref.get_epsilon(DELTA)
    assert len(acc.ledger) == 3 and acc.ledger[2][1] == 2


def test_mixed_history_adds_the_curves():
    adjacency = Adjacency(0.1, 0.1)
    mdp = model()
    acc = Accountant(adjacency)
    acc.compose(Release(jp.Dirichlet(5.0), mdp, support="nonzero"))
    acc.compose(Release(jp.Gaussian(0.05), mdp, support="nonzero"))
    ref = dp_accounting.rdp.RdpAccountant(list(acc.orders))
    ref.compose(dp_accounting.GaussianDpEvent(0.05 / (0.1 / math.sqrt(2))))
    np.testing.assert_allclose(
        acc.rdp, oracle_curve(5.0, adjacency, acc.orders) + ref.rdp, rtol=1e-12
    )
    alone = Accountant(adjacency).compose(Release(jp.Dirichlet(5.0), mdp, support="nonzero"))
    assert acc.get_epsilon(DELTA) > alone.get_epsilon(DELTA)


def test_epsilon_and_delta_are_monotone_and_inverse():
    acc = Accountant(Adjacency(0.1, 0.1))
    assert acc.get_epsilon(DELTA) == 0.0 and acc.get_delta(1.0) == 0.0  # nothing released
    acc.compose(Release(jp.Dirichlet(5.0), model(), support="nonzero"), count=3)
    deltas = [1e-9, 1e-7, 1e-5, 1e-3, 1e-1]
    eps = [acc.get_epsilon(d) for d in deltas]
    assert all(a > b for a, b in zip(eps, eps[1:], strict=False))
    for d, e in zip(deltas, eps, strict=True):
        back = acc.get_delta(e)
        assert back <= d * (1 + 1e-9)
        assert back == pytest.approx(d, rel=1e-6)
    ds = [acc.get_delta(e) for e in (1.0, 5.0, 10.0, 20.0)]
    assert all(a >= b for a, b in zip(ds, ds[1:], strict=False))


def test_refusals():
    mdp = model()
    acc = Accountant(Adjacency(0.1, 0.1))
    release = Release(jp.Dirichlet(5.0), mdp, support="nonzero")
    with pytest.raises(ValueError, match="one neighbouring relation"):
        acc.compose(Release(jp.Dirichlet(5.0), mdp, support="nonzero", adjacency=Adjacency(0.2)))
    for count in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="count"):
            acc.compose(release, count)
    for target in (0.0, 1.0, -0.1, 1.5, math.nan):
        with pytest.raises(ValueError, match="target_delta"):
            acc.get_epsilon(target)
    with pytest.raises(ValueError, match="target_epsilon"):
        acc.get_delta(-1.0)
    with pytest.raises(TypeError, match="Release\\(mech, mdp\\)"):
        acc.compose(jp.Gaussian(0.1))
    with pytest.raises(TypeError, match="DpEvent"):
        acc.compose("gaussian")
    with pytest.raises(TypeError, match="object"):
        Accountant(0.1)
    with pytest.raises(TypeError, match="model"):
        Release(jp.Dirichlet(5.0), P)
    with pytest.raises(ValueError, match="eta"):
        Accountant(Adjacency(0.1)).compose(release)
    with pytest.raises(ValueError, match="below eta"):
        Accountant(Adjacency(0.1, 0.2)).compose(release)
    acc.compose(release)
    other = jp.make_mdp(np.full((2, 1, 2), 0.5), np.zeros((2, 1)))
    with pytest.raises(ValueError, match="one private model"):
        acc.compose(Release(jp.Dirichlet(5.0), other))
    poisson = dp_accounting.PoissonSampledDpEvent(0.1, dp_accounting.GaussianDpEvent(1.0))
    assert not acc.supports(poisson) and acc.supports(release)
    with pytest.raises(ValueError, match="cannot compose"):
        acc.compose(poisson)
    assert len(acc.ledger) == 1  # nothing refused was recorded


def test_additive_release_allows_zero_entries():
    mdp = jp.make_mdp(P, R, action_mask=MASK)
    acc = Accountant(Adjacency(0.1, scope="all")).compose(Release(jp.Gaussian(0.05), mdp))
    # Without a support every allowed row holds 4 entries: 6 private rows.
    ref = dp_accounting.rdp.RdpAccountant(list(acc.orders))
    ref.compose(dp_accounting.GaussianDpEvent(0.05 / (0.1 / math.sqrt(2))), 6)
    assert acc.get_epsilon(DELTA) == ref.get_epsilon(DELTA)


def test_supports_is_what_compose_takes():
    mdp = model()
    release = Release(jp.Dirichlet(5.0), mdp, support="nonzero")
    other = jp.make_mdp(np.full((2, 1, 2), 0.5), np.zeros((2, 1)))
    cases = [
        (Accountant(Adjacency(0.1)), release),  # no public eta
        (Accountant(Adjacency(0.1, 0.2)), release),  # a row below eta
        (
            Accountant(Adjacency(0.1, 0.1)),
            Release(jp.Dirichlet(5.0), mdp, adjacency=Adjacency(0.2)),
        ),
        (Accountant(Adjacency(0.1, 0.1)).compose(release), Release(jp.Gaussian(0.1), other)),
    ]
    for acc, event in cases:
        assert not acc.supports(event)
        with pytest.raises(ValueError):
            acc.compose(event)
    acc = Accountant(Adjacency(0.1, 0.1))
    for event in (release, Release(jp.Gaussian(0.1), mdp), Release(jp.Laplace(0.1), mdp)):
        assert acc.supports(event)
        acc.compose(event)
    assert len(acc.ledger) == 3 and acc.supports(release)  # supports composed nothing


def test_a_release_is_of_a_model_and_release_files_take_the_internal_path():
    from jaxprivmdp.privacy.core import PrivateRows, model_rows, release_of_rows

    rows = model_rows(model(), "nonzero")
    assert rows.sizes.tolist() == SIZES
    with pytest.raises(TypeError, match="model"):
        Release(jp.Dirichlet(5.0), rows)
    # A release file's rows: their sizes and the eta they were verified against.
    zeros = np.zeros(len(SIZES), np.int64)
    known = PrivateRows(zeros, zeros, np.array(SIZES), np.full(len(SIZES), 0.1), (4, 2))
    from_file = release_of_rows(jp.Dirichlet(5.0), known)
    adjacency = Adjacency(0.1, 0.1)
    got = Accountant(adjacency).compose(from_file).get_epsilon(DELTA)
    want = Accountant(adjacency).compose(Release(jp.Dirichlet(5.0), model(), support="nonzero"))
    assert got == want.get_epsilon(DELTA)
    with pytest.raises(ValueError, match="below eta"):  # the file's rows hold no more than 0.1
        Accountant(Adjacency(0.1, 0.2)).compose(from_file)
    with pytest.raises(TypeError, match="PrivateRows"):
        release_of_rows(jp.Dirichlet(5.0), model())
