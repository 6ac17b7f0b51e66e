"""``jp.certify_property``: a property of the true model, certified from its release.

Oracles: a NumPy value iteration of the true model's reachability probabilities (independent
of the checker), the rewriting of the property into PRISM's two-quantifier forms, and Monte
Carlo over releases (the certified interval holds the true value in at least ``1 − β`` of
them).
"""

import json

import jax
import numpy as np
import pytest

import jaxprivmdp as jp
from jaxprivmdp.cli import main
from jaxprivmdp.experiments._certify import interval_properties

S, A = 6, 2
GOAL, FAIL = 4, 5
LABELS = {"goal": np.arange(S) == GOAL, "fail": np.arange(S) == FAIL}


def true_model(seed=0, *, num_actions=A, horizon=None):
    """States 0-3 move anywhere; 4 (goal) and 5 (fail) are absorbing."""
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.full(S, 1.0), size=(S, num_actions))
    P[GOAL], P[FAIL] = np.eye(S)[GOAL], np.eye(S)[FAIL]
    R = np.ones((S, num_actions))
    R[GOAL] = R[FAIL] = 0.0
    kw = dict(horizon=horizon) if horizon else dict(discount=0.9)
    return jp.make_mdp(P, R, **kw)


def release(mdp, mech, seed=0):
    return jp.privatize(jax.random.key(seed), mdp, mech, support="nonzero")


def reach_probability(mdp, opt):
    """NumPy value iteration of ``P{opt}=? [F "goal"]`` (converges: every transient row is
    positive, so the absorbing states are reached geometrically fast)."""
    P = np.asarray(mdp.transitions, np.float64)
    mask = np.asarray(mdp.action_mask)
    v = (np.arange(S) == GOAL).astype(float)
    for _ in range(5000):
        q = np.where(mask, P @ v, np.nan)
        new = np.nanmax(q, 1) if opt == "max" else np.nanmin(q, 1)
        new[GOAL], new[FAIL] = 1.0, 0.0
        if np.max(np.abs(new - v)) < 1e-15:
            break
        v = new
    return v


# --------------------------------------------------------------------------- the rewriting


@pytest.mark.parametrize(
    "prop, robust, optimistic, lower_from_robust",
    [
        ('Pmax=? [F "goal"]', 'Pmaxmin=? [F "goal"]', 'Pmaxmax=? [F "goal"]', True),
        ('Pmin=? [!"a" U<=5 "g"]', 'Pminmax=? [!"a" U<=5 "g"]', 'Pminmin=? [!"a" U<=5 "g"]', False),
        ('P=? [F "g"]', 'Pmin=? [F "g"]', 'Pmax=? [F "g"]', True),
        ('R{"t"}min=? [F "g"]', 'R{"t"}minmax=? [F "g"]', 'R{"t"}minmin=? [F "g"]', False),
        ("Rmax=? [C<=3]", "Rmaxmin=? [C<=3]", "Rmaxmax=? [C<=3]", True),
        ('R{2}=? [F "g"]', 'R{2}min=? [F "g"]', 'R{2}max=? [F "g"]', True),
        (' Pmax =? [X "g"]', ' Pmaxmin=? [X "g"]', ' Pmaxmax=? [X "g"]', True),
    ],
)
def test_interval_properties(prop, robust, optimistic, lower_from_robust):
    assert interval_properties(prop) == (robust, optimistic, lower_from_robust)


@pytest.mark.integration
def test_refusals():
    mdp = true_model()
    mech = jp.Dirichlet(100.0)
    private = release(mdp, mech)
    prop = 'Pmax=? [F "goal"]'
    for uset in (jp.ExactSet(0.1), jp.PaperSet(0.1)):
        with pytest.raises(ValueError, match="CertifiedSet.*at once"):
            jp.certify_property(private, prop, mech, uset, labels=LABELS)
    with pytest.raises(TypeError, match="object"):
        jp.certify_property(private, prop, mech, "certified", labels=LABELS)
    with pytest.raises(ValueError, match="nature's quantifier"):
        jp.certify_property(private, 'Pmaxmin=? [F "goal"]', mech, jp.CertifiedSet(0.1))
    with pytest.raises(ValueError, match="=\\?"):
        jp.certify_property(private, 'Pmax>=0.5 [F "goal"]', mech, jp.CertifiedSet(0.1))
    with pytest.raises(ValueError, match="mechanism"):
        jp.certify_property(private, prop, None, jp.CertifiedSet(0.1))


# --------------------------------------------------------------------------- certified values


@pytest.mark.parametrize("opt", [pytest.param("max", marks=pytest.mark.integration), "min"])
def test_interval_holds_the_true_value_and_the_policy_its_floor(opt):
    mdp = true_model()
    mech = jp.Dirichlet(200.0)
    truth = reach_probability(mdp, opt)
    for seed in range(3):  # β = 1e-3: the joint event fails in at most 0.1 % of releases
        cert = jp.certify_property(
            release(mdp, mech, seed),
            f'P{opt}=? [F "goal"]',
            mech,
            jp.CertifiedSet(1e-3, support_aware=True),
            labels=LABELS,
        )
        lower, upper = np.asarray(cert.lower), np.asarray(cert.upper)
        assert np.all(lower <= truth + 1e-9) and np.all(truth <= upper + 1e-9)
        assert upper[0] - lower[0] < 0.6  # informative at k = 200
        np.testing.assert_array_equal(cert.value_at_initial, [lower[0], upper[0]])
        assert cert.confidence == pytest.approx(0.999)
        # The robust policy's true value: at least its floor (max), at most its ceiling (min).
        chain = jp.make_mdp(
            np.asarray(mdp.transitions)[np.arange(S), np.asarray(cert.policy)][:, None],
            np.zeros((S, 1)),
            discount=0.9,
        )
        value = reach_probability(chain, "max")
        if opt == "max":
            assert np.all(value >= np.asarray(cert.robust.lower) - 1e-9)
        else:
            assert np.all(value <= np.asarray(cert.robust.upper) + 1e-9)


@pytest.mark.integration
def test_sparse_and_ragged_releases():
    """A sparse release certifies what its dense twin does; a ragged one is padded."""
    mech, uset = jp.Dirichlet(500.0), jp.CertifiedSet(0.01, support_aware=True)
    sparse = jp.privatize(jax.random.key(0), jp.to_sparse(true_model()), mech)
    prop = 'Pmax=? [F "goal"]'
    got = jp.certify_property(sparse, prop, mech, uset, labels=LABELS)
    want = jp.certify_property(jp.to_dense(sparse), prop, mech, uset, labels=LABELS)
    np.testing.assert_allclose(got.value_at_initial, want.value_at_initial, rtol=1e-6)
    ragged = jp.to_ragged(sparse)
    got = jp.certify_property(ragged, prop, mech, uset, labels=LABELS)
    np.testing.assert_allclose(got.value_at_initial, want.value_at_initial, rtol=1e-6)
    truth = reach_probability(true_model(), "max")[0]
    assert want.value_at_initial[0] <= truth <= want.value_at_initial[1]


@pytest.mark.integration
def test_chain_reward_and_bounded_properties():
    mech = jp.Dirichlet(300.0)
    uset = jp.CertifiedSet(1e-3, support_aware=True)
    chain = true_model(num_actions=1)
    cert = jp.certify_property(release(chain, mech), 'P=? [F "goal"]', mech, uset, labels=LABELS)
    truth = reach_probability(chain, "max")
    assert np.all(np.asarray(cert.lower) <= truth + 1e-9)
    assert np.all(truth <= np.asarray(cert.upper) + 1e-9)
    assert cert.robust_property == 'Pmin=? [F "goal"]'

    mdp = true_model(horizon=5)
    labels = {**LABELS, "end": LABELS["goal"] | LABELS["fail"]}
    for prop in ('Rmin=? [F "end"]', 'Pmax=? [F<=4 "goal"]', "Rmax=? [C<=3]"):
        want = jp.check(mdp, prop, labels=labels)
        cert = jp.certify_property(release(mdp, mech), prop, mech, uset, labels=labels)
        assert np.all(np.asarray(cert.lower) <= np.asarray(want.upper) + 1e-6), prop
        assert np.all(np.asarray(want.lower) <= np.asarray(cert.upper) + 1e-6), prop


@pytest.mark.integration
def test_coverage_over_releases():
    """Over 200 releases ``[Pmaxmin, Pmaxmax]`` holds the true ``Pmax`` at the initial state
    in at least ``1 − β − 3σ`` of them."""
    mdp, mech, beta, n = true_model(1), jp.Dirichlet(500.0), 0.2, 200
    truth = reach_probability(mdp, "max")[0]
    uset = jp.CertifiedSet(beta, support_aware=True)
    hits, widths = 0, []
    for seed in range(n):
        cert = jp.certify_property(
            release(mdp, mech, seed), 'Pmax=? [F "goal"]', mech, uset, labels=LABELS
        )
        low, high = np.asarray(cert.value_at_initial)
        hits += bool(low <= truth <= high)
        widths.append(high - low)
    assert hits / n >= 1 - beta - 3 * np.sqrt(beta * (1 - beta) / n)
    assert np.mean(widths) < 0.35  # the intervals say something (about 0.24 here)


# --------------------------------------------------------------------------- command line


@pytest.fixture
def release_file(tmp_path):
    """A release of ``true_model()`` written by ``jaxprivmdp privatize`` (seeded)."""
    mdp = true_model()
    src = tmp_path / "model.npz"
    np.savez(src, transitions=np.asarray(mdp.transitions), rewards=np.asarray(mdp.rewards))
    lab = tmp_path / "model.lab"
    lab.write_text('0="init" 1="goal" 2="fail"\n0: 0\n4: 1\n5: 2\n')
    out = tmp_path / "release.npz"
    argv = ["privatize", "--mdp", str(src), "--k", "200", "--eta", "5e-5"]
    assert main([*argv, "--support", "nonzero", "--seed", "3", "--out", str(out)]) == 0
    return out, lab


@pytest.mark.cli
def test_cli_refusals(release_file, tmp_path, capsys):
    out, lab = release_file
    base = ["check", "--release", str(out), "--labels", str(lab), "--out", str(tmp_path / "o")]
    prop = ["--property", 'Pmax=? [F "goal"]']
    cases = [
        (["--set", "exact", *prop], "CertifiedSet"),
        (["--props", str(lab), *prop], "--props"),
        ([], "--property"),
    ]
    for extra, message in cases:
        capsys.readouterr()
        assert main([*base, *extra]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
    # --set and --beta belong to --release.
    argv = ["check", "--mdp", str(out), *prop, "--beta", "0.1", "--out", str(tmp_path / "p")]
    assert main([*argv, "--labels", str(lab), "--horizon", "3"]) == 2
    assert "--beta: for --release" in capsys.readouterr().err
    # One of --mdp and --release.
    with pytest.raises(SystemExit):
        main(["check", *prop, "--out", str(tmp_path / "q")])


@pytest.mark.cli
def test_cli_prints_the_certified_interval(release_file, tmp_path, capsys):
    out, lab = release_file
    prop = 'Pmax=? [F "goal"]'
    folder = tmp_path / "o"
    argv = ["check", "--release", str(out), "--set", "certified", "--beta", "0.1"]
    assert main([*argv, "--property", prop, "--labels", str(lab), "--out", str(folder)]) == 0
    printed = capsys.readouterr().out
    assert "with probability >= 0.9 over the mechanism's noise" in printed
    meta = json.loads((folder / "check.json").read_text())
    low, high = meta["certified_interval_at_initial_state"]
    assert f"[{low:.10g}, {high:.10g}]" in printed
    with jax.enable_x64(True):
        private = jp.load_mdp(out, discount=0.9, dtype="float64")
        cert = jp.certify_property(
            private, prop, jp.Dirichlet(200.0), jp.CertifiedSet(0.1), labels=LABELS
        )
    np.testing.assert_allclose([low, high], np.asarray(cert.value_at_initial), rtol=1e-9)
    assert low <= reach_probability(true_model(), "max")[0] <= high
