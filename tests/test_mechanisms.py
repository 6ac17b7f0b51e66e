"""The additive-noise mechanisms: projection, guarantees, calibration, their sets.

Oracles: a NumPy sorting projection and a brute-force quadratic program check for the
projection; the privacy loss of the Gaussian and Laplace mechanisms integrated numerically
along the sensitivity direction (independent of the closed forms); Monte Carlo for the
noise radius.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import build_mdp
from scipy import integrate, optimize, stats

import jaxprivmdp as jp
from jaxprivmdp.mechanisms._additive import noise_radius, project_simplex
from jaxprivmdp.privacy import _additive as pa

KEY = jax.random.key(3)


def np_projection(x, support):
    """Condat's sort-based projection in NumPy, one row at a time (the reference)."""
    out = np.zeros_like(x)
    for idx in np.ndindex(x.shape[:-1]):
        v = x[idx][support[idx]]
        u = np.sort(v)[::-1]
        css = np.cumsum(u)
        rho = np.nonzero(u * np.arange(1, len(u) + 1) > css - 1)[0][-1]
        tau = (css[rho] - 1) / (rho + 1)
        out[idx][support[idx]] = np.maximum(v - tau, 0)
    return out


def test_projection_matches_numpy_and_is_a_projection():
    rng = np.random.default_rng(0)
    x = rng.normal(scale=2.0, size=(50, 7))
    support = rng.uniform(size=x.shape) < 0.7
    support[:, 0] = True
    support[3] = False
    support[3, 2] = True  # a single-entry support
    x[5] = 1 / 7  # already on the simplex
    x[6, :3] = 0.9  # ties
    # Compiled, as the mechanisms run it (eagerly: about 25 single-operation compilations).
    got = np.asarray(jax.jit(project_simplex)(jnp.asarray(x), jnp.asarray(support)))
    want = np_projection(x, support)
    np.testing.assert_allclose(got, want, atol=1e-6)
    np.testing.assert_allclose(got.sum(-1), 1, atol=1e-6)
    assert np.all(got[~support] == 0) and np.all(got >= 0)
    # The optimality condition: <x − Πx, y − Πx> <= 0 for simplex points y on the support.
    for i in range(10):
        y = rng.dirichlet(np.ones(7)) * support[i]
        y /= y.sum()
        assert np.dot(x[i] - got[i], y - got[i]) <= 1e-6


def _numerical_delta(log_ratio_pdf, pdf_p, epsilon, lo, hi):
    """∫ max(0, p(x) − e^ε q(x)) dx along one dimension (the hockey-stick divergence).

    The integrand is positive where the privacy loss exceeds ε: that region's edge is found
    by root-finding and integrated up to, so a tiny tail is not missed.
    """

    def f(x):
        return max(0.0, pdf_p(x) * (1 - math.exp(epsilon - log_ratio_pdf(x))))

    edge = optimize.brentq(lambda x: log_ratio_pdf(x) - epsilon, lo, hi)
    return integrate.quad(f, lo, edge, limit=400, epsabs=0, epsrel=1e-10)[0]


@pytest.mark.parametrize("sigma", [0.02, 0.1, 0.5])
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 4.0])
def test_gaussian_delta_matches_the_numerical_privacy_loss(sigma, epsilon):
    """The worst pair differs by Δ = b/√2 along one direction: a 1-D Gaussian pair."""
    b = 0.1
    d = b / math.sqrt(2)
    p = stats.norm(0, sigma)

    def log_ratio(x):  # log p(x) − log q(x), q = N(d, σ²)
        return ((x - d) ** 2 - x**2) / (2 * sigma**2)

    want = _numerical_delta(log_ratio, p.pdf, epsilon, -d - 40 * sigma, d + 40 * sigma)
    assert pa.gaussian_delta(sigma, epsilon, b=b) == pytest.approx(want, rel=1e-5, abs=1e-12)


def test_gaussian_calibration_round_trip():
    for epsilon, delta in [(0.1, 1e-5), (1.0, 1e-3), (8.0, 1e-6)]:
        sigma = pa.calibrate_gaussian(epsilon, delta, b=0.1)
        assert pa.gaussian_delta(sigma, epsilon, b=0.1) <= delta
        assert pa.gaussian_delta(sigma * (1 - 1e-6), epsilon, b=0.1) > delta * (1 - 1e-4)
        assert pa.gaussian_epsilon(sigma, delta, b=0.1) == pytest.approx(epsilon, rel=1e-6)


def test_laplace_epsilon_is_the_privacy_loss_bound():
    """Max over x of the log density ratio of Laplace(0, λ) and Laplace(shift, λ), ℓ1 = b."""
    scale, b = 0.05, 0.1
    # The worst pair shifts b/2 on each of two entries: the loss is |x1| − |x1 − b/2| + ...
    xs = np.linspace(-1, 1, 20001)
    one = (np.abs(xs - b / 2) - np.abs(xs)) / scale
    assert 2 * one.max() == pytest.approx(pa.laplace_epsilon(scale, b=b), rel=1e-6)
    assert pa.calibrate_laplace(pa.laplace_epsilon(scale, b=b), b=b) == pytest.approx(scale)


@pytest.mark.parametrize("noise", ["gaussian", "laplace"])
def test_noise_radius_holds_the_true_row_by_monte_carlo(noise):
    """P(‖Π(p + Z) − p‖∞ > r) <= level, the box the bounds use."""
    rng = np.random.default_rng(1)
    n, trials, level, scale = 6, 20000, 0.2, 0.1
    p = rng.dirichlet(np.ones(n))
    support = np.ones((trials, n), bool)
    rows = np.broadcast_to(p, (trials, n))
    out = jax.jit(
        lambda k: {"gaussian": jp.Gaussian, "laplace": jp.Laplace}[noise](scale).privatize(
            k, jnp.asarray(rows, jnp.float32), jnp.asarray(support), jnp.ones(trials, bool)
        )
    )(KEY)
    miss = np.mean(np.abs(np.asarray(out) - p).max(-1) > noise_radius(noise, scale, n, level))
    assert miss <= level
    if noise == "gaussian":  # the χ² tail is exact for ‖Z‖₂: the ℓ∞ miss is rarer still
        z = rng.normal(scale=scale, size=(trials, n))
        l2_miss = np.mean(np.linalg.norm(z, axis=-1) > noise_radius(noise, scale, n, level))
        assert l2_miss == pytest.approx(level, abs=4 * math.sqrt(level * (1 - level) / trials))


@pytest.mark.integration
@pytest.mark.parametrize("mechanism", ["gaussian", "laplace"])
def test_additive_mechanisms_in_synthesize_and_sweep(mechanism):
    mdp = build_mdp(0)
    cls = {"gaussian": jp.Gaussian, "laplace": jp.Laplace}[mechanism]
    out = jp.synthesize(KEY, mdp, cls(0.05), jp.CertifiedSet(0.1))
    p_bar = np.asarray(out.private_transitions)
    np.testing.assert_allclose(p_bar.sum(-1), 1, atol=1e-5)
    assert np.all(out.lower <= out.private_values + 1e-5)
    assert np.all(out.private_values <= out.upper + 1e-5)
    res = jp.sweep(KEY, mdp, cls.grid([0.05]), num_trials=2)
    assert res.cost.shape == (1, 2)


def test_a_mechanism_name_is_a_clear_error():
    with pytest.raises(TypeError, match="takes the mechanism as an object"):
        jp.synthesize(KEY, build_mdp(0), "exponential")


# --------------------------------------------------------------------------- the frontier


@pytest.mark.integration
def test_frontier_calibrates_every_mechanism_and_keeps_unreachable_targets():
    mdp = jp.examples.investment()
    res = jp.frontier(KEY, mdp, epsilons=[0.5, 8.0], delta=1e-3, num_trials=3, support="nonzero")
    assert list(res.parameter) == ["dirichlet", "gaussian", "laplace"]
    # The Dirichlet mechanism's floor on Example 1 is about 3.75: 0.5 is out of reach.
    assert res.reachable["dirichlet"].tolist() == [False, True]
    assert np.isnan(res.true_value["dirichlet"][0]).all()
    assert 3 < res.floor["dirichlet"] < 8
    k = res.parameter["dirichlet"][1]
    g = jp.privacy.guarantee(k, jp.privacy.Adjacency(0.1, res.eta), n=res.n, target_delta=0.001)
    assert g.epsilon <= 8.0 + 1e-9 and g.delta <= 1e-3
    sigma = res.parameter["gaussian"]
    assert np.all(np.diff(sigma) < 0)  # more privacy, more noise
    for i, eps in enumerate([0.5, 8.0]):
        assert pa.gaussian_delta(sigma[i], eps, b=0.1) <= 1e-3
        assert pa.laplace_epsilon(res.parameter["laplace"][i], b=0.1) == pytest.approx(eps)
    rows = res.rows()
    assert len(rows) == 6 and rows[0]["reachable"] is False and rows[0]["true_value_mean"] is None
    assert res.optimal_value == pytest.approx(0.9)


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        (dict(epsilons=[0.0]), "epsilons must be > 0"),
        (dict(epsilons=[1.0], delta=1.0), "delta must lie in"),
        (dict(epsilons=[]), "non-empty"),
        (dict(epsilons=[1.0], mechanisms=[]), "non-empty list of classes"),
    ],
)
def test_frontier_bad_input(kw, match):
    with pytest.raises(ValueError, match=match):
        jp.frontier(KEY, build_mdp(0), **kw)
    with pytest.raises(TypeError, match=r"mechanism classes.*jp\.Gaussian"):
        jp.frontier(KEY, build_mdp(0), epsilons=[1.0], mechanisms=["gaussian"])


@pytest.mark.cli
def test_frontier_command(tmp_path, capsys):
    import json

    from jaxprivmdp.cli import main

    out = tmp_path / "fr"
    args = ["frontier", "--example", "1", "--epsilons", "8", "0.5", "--trials", "2"]
    assert main(args + ["--out", str(out)]) == 0
    for name in ("frontier.png", "frontier.pdf", "frontier.csv", "frontier.json"):
        assert (out / name).stat().st_size > 0
    meta = json.loads((out / "frontier.json").read_text())
    dirichlet = [r for r in meta["results"] if r["mechanism"] == "dirichlet"]
    assert [r["epsilon"] for r in dirichlet] == [0.5, 8.0]  # sorted
    assert [r["reachable"] for r in dirichlet] == [False, True]
    assert "cannot reach" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["frontier", "--epsilons", "1", "--out", str(out)])  # no --example / --mdp
    assert main(["frontier", "--example", "1", "--epsilons", "-1", "--out", str(out)]) == 2


def test_additive_mechanism_under_jit_and_vmap_over_its_scale():
    mdp = build_mdp(0)
    sigmas = jnp.asarray([0.02, 0.2])
    run = jax.jit(jax.vmap(lambda s: jp.synthesize(KEY, mdp, jp.Gaussian(s)).cost))
    want = [float(jp.synthesize(KEY, mdp, jp.Gaussian(s)).cost) for s in sigmas]
    np.testing.assert_allclose(run(sigmas), want, rtol=1e-5)


@pytest.mark.integration
def test_privatize_any_mechanism_returns_the_same_kind_of_model():
    grid = jp.examples.gridworld(4, 4, horizon=5)
    support = np.asarray(grid.probs) > 0
    mask = np.asarray(grid.action_mask)
    for mech in [jp.Dirichlet(20.0), jp.Gaussian(0.05), jp.Laplace(0.05)]:
        out = jp.privatize(KEY, grid, mech)
        assert isinstance(out, jp.SparseMDP)
        p = np.asarray(out.probs)
        np.testing.assert_allclose(p.sum(-1)[mask], 1, atol=1e-5)
        assert np.all(p[~support] == 0) and np.all(p >= 0)
    same = jp.privatize(KEY, build_mdp(0), jp.Dirichlet(7.0), support="nonzero")
    want = jp.dirichlet_mechanism(KEY, build_mdp(0), jp.Dirichlet(7.0), support="nonzero")
    np.testing.assert_array_equal(same.transitions, want.transitions)
    with pytest.raises(ValueError, match="sigma must be > 0"):
        jp.privatize(KEY, grid, jp.Gaussian(-1.0))
    with pytest.raises(TypeError, match="takes the mechanism as an object"):
        jp.privatize(KEY, grid, "uniform")
