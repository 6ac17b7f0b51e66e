"""A release exported with its metadata (``save_mdp(..., metadata=)``, ``privatize --out
x.drn``) and the composition of several releases (``jaxprivmdp privacy r1 r2 ...``)."""

import json

import numpy as np
import pytest

import jaxprivmdp as jp
from jaxprivmdp.cli import main
from jaxprivmdp.privacy import Accountant, Adjacency, Release

LABELS = {"goal": np.array([False, True, False])}


@pytest.mark.integration
@pytest.mark.parametrize("suffix", [".drn", ".tra", ".npz"])
@pytest.mark.parametrize("layout", ["dense", "sparse"])
def test_save_mdp_writes_the_metadata_beside_the_model(tmp_path, suffix, layout):
    mdp = jp.examples.investment()
    if layout == "sparse":
        mdp = jp.to_sparse(mdp)
    key = jp.secure_key()
    release = jp.privatize(key, mdp, jp.Dirichlet(10.0), support="nonzero")
    meta = {"mechanism": "dirichlet", "k": np.float32(10.0), "sizes": np.array([[2, 4]])}
    labels = LABELS if suffix != ".npz" else None
    path = jp.save_mdp(tmp_path / f"r{suffix}", release, labels=labels, metadata=meta)
    side = json.loads((tmp_path / f"r{suffix}.json").read_text())
    assert side["metadata"] == {"mechanism": "dirichlet", "k": 10.0, "sizes": [[2, 4]]}
    assert side["model"]["num_states"] == 3 and side["model"]["num_actions"] == 4
    assert side["file"] == f"r{suffix}" and side["jaxprivmdp"] == jp.__version__
    back = jp.load_mdp(path, horizon=1)
    want = jp.to_dense(release) if layout == "sparse" else release
    got = back if suffix == ".npz" and layout == "dense" else jp.to_dense(back)
    np.testing.assert_array_equal(np.asarray(got.transitions), np.asarray(want.transitions))


def test_save_mdp_refuses_bad_metadata(tmp_path):
    mdp = jp.examples.investment()
    with pytest.raises(TypeError, match="metadata must be a dict"):
        jp.save_mdp(tmp_path / "m.drn", mdp, metadata=[1, 2])
    with pytest.raises(TypeError, match="JSON values"):
        jp.save_mdp(tmp_path / "m.drn", mdp, metadata={"key": object()})
    with pytest.raises(ValueError, match="finite"):
        jp.save_mdp(tmp_path / "m.drn", mdp, metadata={"eps": float("inf")})
    assert not list(tmp_path.iterdir())  # nothing written


def _privatize(src, out, *flags):
    return main(["privatize", "--mdp", str(src), *flags, "--seed", "7", "--out", str(out)])


@pytest.mark.cli
def test_privatize_to_drn_and_tra_then_privacy_over_them(tmp_path, capsys):
    true = jp.examples.investment()
    src = jp.save_mdp(tmp_path / "true.drn", true, labels=LABELS, reward_name="gain")
    dirichlet = ["--k", "10", "--eta", "0.1"]
    assert _privatize(src, tmp_path / "r1.drn", *dirichlet) == 0
    assert _privatize(src, tmp_path / "r1.npz", *dirichlet) == 0
    assert _privatize(src, tmp_path / "r2.tra", "--sigma", "0.05") == 0
    # One source of metadata: the sidecar holds the .npz's record; the same noise.
    side = json.loads((tmp_path / "r1.drn.json").read_text())["metadata"]
    with np.load(tmp_path / "r1.npz") as z:
        for name, value in side.items():
            assert np.asarray(z[name]).tolist() == value, name
        npz_probs = np.asarray(jp.to_dense(jp.load_mdp(tmp_path / "r1.npz")).transitions)
    assert side["randomness"] == "seed" and side["private_row_sizes"] == [[2, 4]]
    drn = jp.load_mdp(tmp_path / "r1.drn", horizon=1)
    np.testing.assert_array_equal(np.asarray(jp.to_dense(drn).transitions), npz_probs)
    assert jp.load_labels(tmp_path / "r2.tra")["goal"].tolist() == [False, True, False]
    assert "gain" in (tmp_path / "r1.drn").read_text()
    capsys.readouterr()

    out = tmp_path / "ledger"
    files = [str(tmp_path / n) for n in ("r1.drn", "r2.tra", "r1.npz")]
    assert main(["privacy", *files, "--delta", "1e-5", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "3 release(s), row adjacency, b = 0.1, eta = 0.1" in printed
    report = json.loads((out / "privacy.json").read_text())
    # The oracle: the Python ledger over the true model.
    acc = Accountant(Adjacency(0.1, 0.1))
    acc.compose(Release(jp.Dirichlet(10.0), true, support="nonzero"))
    acc.compose(Release(jp.Gaussian(0.05), true, support="nonzero"))
    acc.compose(Release(jp.Dirichlet(10.0), true, support="nonzero"))
    assert report["epsilon"] == pytest.approx(acc.get_epsilon(1e-5), rel=1e-12)
    assert report["num_releases"] == 3 and report["delta"] == 1e-5
    first = report["releases"][0]
    assert first["mechanism"] == "dirichlet" and first["k"] == 10.0
    assert first["recorded_epsilon"] == side["epsilon"]
    eps = [r["composed_epsilon"] for r in report["releases"]]
    assert eps[0] < eps[1] < eps[2]
    # One file: its own RDP guarantee at --delta.
    one = tmp_path / "one"
    assert main(["privacy", files[0], "--delta", "1e-5", "--out", str(one)]) == 0
    alone = json.loads((one / "privacy.json").read_text())["epsilon"]
    assert alone == pytest.approx(report["releases"][0]["epsilon"])


@pytest.mark.cli
def test_privacy_over_releases_refuses(tmp_path, capsys):
    mdp = jp.examples.investment()
    src = jp.save_mdp(tmp_path / "true.npz", mdp)
    base = ["--k", "10", "--eta", "0.1", "--support", "nonzero"]
    assert _privatize(src, tmp_path / "a.npz", *base) == 0
    assert _privatize(src, tmp_path / "b.npz", *base, "--b", "0.2") == 0
    two = jp.save_mdp(tmp_path / "two.npz", jp.make_mdp(np.full((2, 1, 2), 0.5), np.zeros((2, 1))))
    assert _privatize(two, tmp_path / "c.drn", "--k", "3", "--eta", "0.1") == 0
    (tmp_path / "bare.drn").write_text((tmp_path / "c.drn").read_text())
    capsys.readouterr()

    def error(*argv):
        assert main(["privacy", *argv, "--out", str(tmp_path / "out")]) == 2
        return capsys.readouterr().err

    a, b, c = (str(tmp_path / n) for n in ("a.npz", "b.npz", "c.drn"))
    assert "records b 0.1 but" in error(a, b) and "pass --b" in error(a, b)
    assert "(S, A) = (3, 4)" in error(a, c)
    assert "records no mechanism" in error(a, str(src))
    assert "has no" in error(str(tmp_path / "bare.drn")) and ".json" in error(
        str(tmp_path / "bare.drn")
    )
    assert "--k: not with release files" in error(a, "--k", "1")
    assert "no such file" in error(str(tmp_path / "none.npz"))
    assert main(["privacy", a, b, "--b", "0.2", "--out", str(tmp_path / "ok")]) == 0
    # An explicit release's companions and sidecar are not overwritten without --force.
    (tmp_path / "d.tra.json").write_text("{}")
    assert _privatize(src, tmp_path / "d.tra", *base) == 2
    assert "d.tra.json" in capsys.readouterr().err


@pytest.mark.prism
def test_storm_checks_a_release_privatize_writes(tmp_path):
    stormpy = pytest.importorskip("stormpy")
    src = jp.save_mdp(tmp_path / "true.drn", jp.examples.investment(), labels=LABELS)
    out = tmp_path / "release.drn"
    assert _privatize(src, out, "--k", "10", "--eta", "0.1") == 0
    model = stormpy.build_model_from_drn(str(out))
    assert set(model.labeling.get_labels()) == {"init", "goal"}
    formula = 'Pmax=? [F<=3 "goal"]'
    result = stormpy.model_checking(model, stormpy.parse_properties(formula)[0])
    storm = float(result.get_value_vector()[next(iter(model.initial_states))])
    ours = jp.check(jp.load_mdp(out), formula, labels=jp.load_labels(out))
    np.testing.assert_allclose(float(ours.value_at_initial), storm, rtol=1e-6)
    assert json.loads((tmp_path / "release.drn.json").read_text())["metadata"]["k"] == 10.0


@pytest.mark.cli
def test_privacy_refuses_an_eta_above_the_one_a_release_records(tmp_path, capsys):
    true = jp.examples.investment()
    src = jp.save_mdp(tmp_path / "true.npz", true)
    flags = ["--k", "10", "--eta", "0.1", "--support", "nonzero"]
    assert _privatize(src, tmp_path / "r.drn", *flags) == 0
    r = str(tmp_path / "r.drn")
    capsys.readouterr()
    # The rows were verified against eta = 0.1 only: a larger eta is a guarantee nobody checked.
    assert main(["privacy", r, "--eta", "0.24", "--out", str(tmp_path / "no")]) == 2
    err = capsys.readouterr().err
    assert "--eta 0.24 is above the eta 0.1" in err and "verified" in err
    assert not (tmp_path / "no").exists()
    eps = {}
    for eta in ("0.1", "0.05"):  # at or below the recorded eta: accounted
        out = tmp_path / eta
        assert main(["privacy", r, "--eta", eta, "--delta", "1e-5", "--out", str(out)]) == 0
        eps[eta] = json.loads((out / "privacy.json").read_text())["epsilon"]
    assert eps["0.05"] > eps["0.1"]  # a larger domain, a weaker guarantee
    acc = Accountant(Adjacency(0.1, 0.05))
    acc.compose(Release(jp.Dirichlet(10.0), true, support="nonzero"))
    assert eps["0.05"] == pytest.approx(acc.get_epsilon(1e-5), rel=1e-12)
    # A release that records no eta cannot be accounted at any.
    side = tmp_path / "r.drn.json"
    body = json.loads(side.read_text())
    del body["metadata"]["eta"]
    side.write_text(json.dumps(body))
    for extra in ([], ["--eta", "0.05"]):
        assert main(["privacy", r, *extra, "--out", str(tmp_path / "none")]) == 2
        assert "records no eta" in capsys.readouterr().err


@pytest.mark.cli
def test_privacy_composes_gaussian_releases_as_the_rdp_formula(tmp_path):
    # An oracle independent of the library: the Gaussian mechanism's RDP α·Δ²/(2σ²) at the
    # ℓ2 sensitivity b/√2 of b-adjacent rows, added up over two releases and converted by
    # Balle et al.'s formula, in NumPy.
    src = jp.save_mdp(tmp_path / "true.npz", jp.examples.investment())
    for name in ("g1.npz", "g2.drn"):
        assert _privatize(src, tmp_path / name, "--sigma", "0.05", "--b", "0.2") == 0
    files = [str(tmp_path / n) for n in ("g1.npz", "g2.drn")]
    assert main(["privacy", *files, "--delta", "1e-6", "--out", str(tmp_path / "o")]) == 0
    got = json.loads((tmp_path / "o" / "privacy.json").read_text())["epsilon"]
    orders = np.asarray(Accountant(Adjacency(0.2)).orders)
    rdp = 2 * orders * (0.2 / np.sqrt(2)) ** 2 / (2 * 0.05**2)
    delta = 1e-6
    eps = rdp - (np.log(delta) + np.log(orders)) / (orders - 1) + np.log((orders - 1) / orders)
    assert got == pytest.approx(float(eps.min()), rel=1e-9)


@pytest.mark.cli
def test_a_drn_release_carries_its_mechanism_horizon_and_discount(tmp_path, capsys):
    src = jp.save_mdp(tmp_path / "true.npz", jp.examples.investment())
    flags = ["--k", "10", "--eta", "0.1", "--support", "nonzero", "--horizon", "3"]
    for name in ("r.drn", "r.npz"):
        assert _privatize(src, tmp_path / name, *flags) == 0
    # One reader of release records: the sidecar's is the .npz's, plus T and γ.
    from jaxprivmdp.io.core import release_record

    drn, npz = release_record(tmp_path / "r.drn"), release_record(tmp_path / "r.npz")
    assert {k: v for k, v in drn.items() if k not in ("horizon", "discount")} == npz
    assert drn["horizon"] == 3 and drn["discount"] == 1.0
    assert release_record(src) == {}
    meta = {}
    for name in ("r.drn", "r.npz"):
        out = tmp_path / f"s_{name}"
        argv = ["synthesize", "--robust", "--mdp", str(tmp_path / name), "--out", str(out)]
        assert main(argv) == 0
        meta[name] = json.loads((out / "synthesize.json").read_text())
    assert meta["r.drn"]["model"] == meta["r.npz"]["model"]  # T = 3 and γ = 1 from the sidecar
    assert meta["r.drn"]["model"]["horizon"] == 3 and meta["r.drn"]["release"]["k"] == 10.0
    assert meta["r.drn"]["robust"]["bound"] == meta["r.npz"]["robust"]["bound"]
    out = tmp_path / "t2"  # a flag still wins over the sidecar
    argv = ["synthesize", "--mdp", str(tmp_path / "r.drn"), "--horizon", "2", "--out", str(out)]
    assert main(argv) == 0
    assert json.loads((out / "synthesize.json").read_text())["model"]["horizon"] == 2
    capsys.readouterr()
