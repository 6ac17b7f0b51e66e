"""``jp.interval_model``: a release as the interval MDP of its uncertainty set's boxes.

Oracles from outside the code under test: SciPy's Beta CDF (each end of a Dirichlet box is
outside the acceptance region of its level), SciPy's chi-squared quantile (the Gaussian
box's radius), and Monte Carlo over releases (the certified box holds every true row at once
in at least ``1 − β`` of them, the exact box each row).
"""

import jax
import numpy as np
import pytest
from scipy import stats

import jaxprivmdp as jp

S, A = 5, 3
K_DIR = 50.0
SIGMA = 0.02


def true_model(seed=0, *, masked=False, dtype=None, zeros=False):
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.full(S, 2.0), size=(S, A))
    if zeros:  # a public zero pattern: privatized with support="nonzero"
        P[:, :, -1] = 0.0
        P /= P.sum(-1, keepdims=True)
    mask = np.ones((S, A), bool)
    if masked:
        mask[1, 2] = mask[3, 0] = False
        P[~mask] = 0.0
    R = rng.uniform(size=(S, A))
    return jp.make_mdp(P, R, discount=0.9, action_mask=mask, dtype=dtype)


def release(mdp, mech, seed=0, **kw):
    return jp.privatize(jax.random.key(seed), mdp, mech, **kw)


def rows_in_box(imdp, P, mask):
    """`[S, A]` whether each allowed true row lies in its box (masked rows: True)."""
    lo, hi = np.asarray(imdp.lower, np.float64), np.asarray(imdp.upper, np.float64)
    inside = np.all((lo <= P) & (P <= hi), axis=-1)
    return inside | ~mask


# --------------------------------------------------------------------------- the boxes


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "mech", [jp.Dirichlet(K_DIR), jp.Gaussian(SIGMA), jp.Laplace(SIGMA)], ids=lambda m: m.name
)
@pytest.mark.integration
def test_certified_box_holds_the_true_rows(mech, dtype):
    with jax.enable_x64(dtype == np.float64):
        mdp = true_model(masked=True, dtype=dtype)
        P, mask = np.asarray(mdp.transitions, np.float64), np.asarray(mdp.action_mask)
        for seed in range(3):  # β = 1e-3: the joint event fails in at most 0.1 % of releases
            imdp = jp.interval_model(release(mdp, mech, seed), mech, jp.CertifiedSet(1e-3))
            assert isinstance(imdp, jp.IntervalMDP)
            assert imdp.lower.dtype == dtype and imdp.upper.dtype == dtype
            assert imdp.lower.shape == (S, A, S) and imdp.next_states is None
            assert rows_in_box(imdp, P, mask).all()


def test_fields_masked_rows_and_clipping():
    mdp = true_model(masked=True)
    mech = jp.Dirichlet(K_DIR)
    private = release(mdp, mech)
    imdp = jp.interval_model(private, mech, jp.ExactSet(0.1))
    lo, hi = np.asarray(imdp.lower), np.asarray(imdp.upper)
    mask = np.asarray(mdp.action_mask)
    assert np.all(lo[~mask] == 0) and np.all(hi[~mask] == 0)
    np.testing.assert_array_equal(np.asarray(imdp.action_mask), mask)
    assert np.all((0 <= lo) & (lo <= hi) & (hi <= 1))
    # The release lies in its own interval model; each allowed row can hold a distribution.
    p_bar = np.asarray(private.transitions)
    assert np.all((lo <= p_bar) & (p_bar <= hi))
    assert np.all(lo.sum(-1)[mask] <= 1) and np.all(hi.sum(-1)[mask] >= 1)
    jp.make_interval_mdp(lo, hi, imdp.rewards, action_mask=mask, discount=0.9)  # valid
    for name in ("rewards", "terminal_reward", "discount"):
        np.testing.assert_array_equal(getattr(imdp, name), getattr(private, name))
    assert (imdp.horizon, imdp.initial_state) == (private.horizon, private.initial_state)


@pytest.mark.parametrize("support_aware", [False, True])
def test_beta_box_ends_against_scipy(support_aware):
    """Each end of a Dirichlet box is a level-``c`` end of the exact Beta marginal: ``c =
    β / (2N)`` over the ``N`` entries of all allowed rows (certified)."""
    mdp = true_model(zeros=True)
    mech, beta = jp.Dirichlet(K_DIR), 0.1
    private = release(mdp, mech, support="nonzero")
    imdp = jp.interval_model(private, mech, jp.CertifiedSet(beta, support_aware=support_aware))
    x = np.asarray(private.transitions, np.float64)
    lo, hi = np.asarray(imdp.lower, np.float64), np.asarray(imdp.upper, np.float64)
    support = np.asarray(private.support)
    n = int(support.sum()) if support_aware else S * S * A
    c = beta / (2 * n)
    inside = support & (x > 0) & (x < 1)
    # At q = l, x is in the upper c-tail of Beta(kq, k(1-q)); at q = u, in its lower c-tail.
    at_l = inside & (lo > 0)
    cdf_l = stats.beta.cdf(x[at_l], K_DIR * lo[at_l], K_DIR * (1 - lo[at_l]))
    assert np.all(cdf_l >= 1 - c * 1.02)
    at_u = inside & (hi < 1)
    cdf_u = stats.beta.cdf(x[at_u], K_DIR * hi[at_u], K_DIR * (1 - hi[at_u]))
    assert np.all(cdf_u <= c * 1.02)
    if support_aware:  # off the public support: fixed at 0
        assert np.all(lo[~support] == 0) and np.all(hi[~support] == 0)
    else:
        assert np.all(hi[~support] > 0)


def test_gaussian_box_radius_against_scipy():
    """The additive mechanisms' box: ``P̄ ± r`` clipped to [0, 1], ``r`` the chi-squared
    tail radius at level ``β / R`` over the ``R`` allowed rows (certified)."""
    mdp = true_model()
    mech, beta = jp.Gaussian(SIGMA), 0.1
    private = release(mdp, mech)
    imdp = jp.interval_model(private, mech, jp.CertifiedSet(beta))
    r = SIGMA * np.sqrt(stats.chi2.isf(beta / (S * A), S))
    x = np.asarray(private.transitions, np.float64)
    np.testing.assert_allclose(np.asarray(imdp.upper), np.minimum(x + r, 1), rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(np.asarray(imdp.lower), np.maximum(x - r, 0), rtol=2e-6, atol=1e-6)
    assert np.all(np.asarray(imdp.upper) >= np.minimum(x + r, 1) - 1e-7)


@pytest.mark.integration
def test_sparse_release_keeps_its_lists():
    mdp = jp.to_sparse(true_model(zeros=True))
    mech = jp.Dirichlet(K_DIR)
    private = release(mdp, mech)
    for aware in (False, True):
        imdp = jp.interval_model(private, mech, jp.CertifiedSet(0.1, support_aware=aware))
        assert imdp.is_sparse and imdp.lower.shape == mdp.next_states.shape
        np.testing.assert_array_equal(np.asarray(imdp.next_states), np.asarray(mdp.next_states))
        padding = np.asarray(mdp.next_states) < 0
        assert np.all(np.asarray(imdp.lower)[padding] == 0)
        assert np.all(np.asarray(imdp.upper)[padding] == 0)
        jp.make_interval_mdp(
            imdp.lower, imdp.upper, imdp.rewards, next_states=imdp.next_states, discount=0.9
        )
    # The same boxes as the dense twin's (support-aware: the lists are the support).
    dense = jp.to_dense(private)
    aware = jp.CertifiedSet(0.1, support_aware=True)
    want = jp.interval_model(dense, mech, aware)
    got = jp.to_dense(jp.interval_model(private, mech, aware))
    np.testing.assert_array_equal(np.asarray(got.lower), np.asarray(want.lower))
    np.testing.assert_array_equal(np.asarray(got.upper), np.asarray(want.upper))


@pytest.mark.integration
def test_ragged_release_is_padded():
    sparse = jp.to_sparse(true_model(zeros=True))
    mech = jp.Dirichlet(K_DIR)
    private = release(jp.to_ragged(sparse), mech)
    imdp = jp.interval_model(private, mech, jp.CertifiedSet(0.1))
    want = jp.interval_model(jp.to_padded(private), mech, jp.CertifiedSet(0.1))
    assert imdp.is_sparse
    np.testing.assert_array_equal(np.asarray(imdp.upper), np.asarray(want.upper))


def test_point_model_as_an_interval_model():
    mdp = true_model(masked=True)
    imdp = jp.interval_model(mdp)
    P = np.asarray(mdp.transitions) * np.asarray(mdp.action_mask)[..., None]
    np.testing.assert_array_equal(np.asarray(imdp.lower), P)
    np.testing.assert_array_equal(np.asarray(imdp.upper), P)


@pytest.mark.integration
def test_jit_matches_eager():
    """Under ``jax.jit`` the same boxes for a set that records the model's counts
    (``counted``); without them the traced model is counted from its shapes: wider boxes."""
    mdp = true_model(masked=True)
    for mech in (jp.Dirichlet(K_DIR), jp.Gaussian(SIGMA)):
        private = release(mdp, mech)
        counted, shapes = jp.CertifiedSet(0.1).counted(mdp), jp.CertifiedSet(0.1)
        eager = jp.interval_model(private, mech, counted)
        np.testing.assert_array_equal(
            np.asarray(eager.upper), np.asarray(jp.interval_model(private, mech, shapes).upper)
        )
        for uset in (counted, shapes):
            fn = jax.jit(lambda m, mech=mech, uset=uset: jp.interval_model(m, mech, uset))
            jitted = fn(private)
            lo, hi = np.asarray(jitted.lower), np.asarray(jitted.upper)
            if uset is counted:
                np.testing.assert_array_equal(lo, np.asarray(eager.lower))
                np.testing.assert_array_equal(hi, np.asarray(eager.upper))
            else:
                assert np.all(lo <= np.asarray(eager.lower))
                assert np.all(hi >= np.asarray(eager.upper))


@pytest.mark.integration
@pytest.mark.parametrize("mech", [jp.Dirichlet(K_DIR), jp.Gaussian(SIGMA)], ids=lambda m: m.name)
def test_the_robust_kernels_boxes(mech):
    """The robust policy's values over the set (the planning kernel) are the interval
    model's ``Rmaxmin=? [C<=T]`` (the property checker): the same boxes, two solvers."""
    T = 4
    with jax.enable_x64(True):
        P = np.asarray(true_model(masked=True).transitions, np.float64)
        R = np.random.default_rng(1).uniform(size=(S, A))
        mask = np.ones((S, A), bool)
        mask[1, 2] = mask[3, 0] = False
        mdp = jp.make_mdp(P, R, horizon=T, action_mask=mask, dtype="float64")
        private = release(mdp, mech)
        uset = jp.CertifiedSet(0.1)
        robust = jp.robust_solve(private, mech, uset)
        res = jp.check(jp.interval_model(private, mech, uset), f"Rmaxmin=? [C<={T}]")
    np.testing.assert_allclose(np.asarray(res.values), np.asarray(robust.values)[0], rtol=1e-9)


def test_refusals():
    mdp = true_model()
    mech = jp.Dirichlet(K_DIR)
    private = release(mdp, mech)
    with pytest.raises(ValueError, match="not a box.*CertifiedSet"):
        jp.interval_model(private, mech, jp.PaperSet(0.1))
    with pytest.raises(ValueError, match="mechanism given alone"):
        jp.interval_model(private, mech)
    with pytest.raises(ValueError, match="uncertainty_set given alone"):
        jp.interval_model(private, uncertainty_set=jp.CertifiedSet(0.1))
    with pytest.raises(TypeError, match="object"):
        jp.interval_model(private, mech, "certified")
    with pytest.raises(TypeError):
        jp.interval_model(private, 50.0, jp.CertifiedSet(0.1))
    with pytest.raises(ValueError, match="support"):  # a dense model with no support
        jp.interval_model(mdp, mech, jp.CertifiedSet(0.1, support_aware=True))
    with pytest.raises(ValueError, match="private"):
        jp.interval_model(np.zeros((2, 2, 2)), mech, jp.CertifiedSet(0.1))


# --------------------------------------------------------------------------- Monte Carlo


@pytest.mark.integration
@pytest.mark.parametrize("mech", [jp.Dirichlet(10.0), jp.Gaussian(0.05)], ids=lambda m: m.name)
def test_coverage_over_releases(mech):
    """Over 200 releases the certified box holds every true row at once in at least
    ``1 − β − 3σ`` of them, and each exact box its row."""
    mdp, beta, n = true_model(masked=True), 0.2, 200
    P, mask = np.asarray(mdp.transitions, np.float64), np.asarray(mdp.action_mask)
    keys = jax.random.split(jax.random.key(7), n)
    releases = jax.vmap(lambda key: jp.privatize(key, mdp, mech))(keys)
    margin = 3 * np.sqrt(beta * (1 - beta) / n)
    boxes = {
        "certified": jp.CertifiedSet(beta).counted(mdp),
        "exact": jp.ExactSet(beta).counted(mdp),
    }
    for name, uset in boxes.items():
        imdps = jax.vmap(lambda m, uset=uset: jp.interval_model(m, mech, uset))(releases)
        inside = np.stack(
            [rows_in_box(jax.tree.map(lambda x, i=i: x[i], imdps), P, mask) for i in range(n)]
        )
        if name == "certified":
            assert inside.all(axis=(1, 2)).mean() >= 1 - beta - margin
        else:
            assert inside.mean(axis=0)[mask].min() >= 1 - beta - margin
