"""The command line: every command end to end at small size, and clean errors."""

import json

import numpy as np
import pytest

from jaxprivmdp import examples
from jaxprivmdp.cli import main


@pytest.fixture
def investment_npz(tmp_path):
    m = examples.investment()
    path = tmp_path / "investment.npz"
    np.savez(
        path,
        transitions=np.asarray(m.transitions),
        rewards=np.asarray(m.rewards),
        terminal_reward=np.asarray(m.terminal_reward),
        action_mask=np.asarray(m.action_mask),
    )
    return path


def test_reproduce_small(tmp_path, capsys):
    out = tmp_path / "res"
    rc = main(["reproduce", "--out", str(out), "--trials", "3", "--ks", "1", "40"])
    assert rc == 0
    for name in ("figure1.png", "figure1.pdf", "figure1.csv", "figure1.json"):
        assert (out / name).stat().st_size > 0
    meta = json.loads((out / "figure1.json").read_text())
    assert meta["seed"] == 0 and meta["trials"] == 3 and meta["ks"] == [1.0, 40.0]
    assert meta["wall_time_s"] > 0 and meta["environment"]["jax"]
    ex1 = meta["results"]["Example 1 (investment)"]
    assert [r["k"] for r in ex1] == [1.0, 40.0]
    assert all(r["optimal_value"] == pytest.approx(0.9) for r in ex1)
    for r in ex1:
        assert r["pessimistic_mean"] <= r["private_value_mean"] <= r["optimistic_mean"]
    guarantees = meta["privacy"]["Example 1 (investment)"]["per_k"]
    assert guarantees[0]["epsilon"] < guarantees[1]["epsilon"]  # larger k, weaker privacy
    assert "Example 1" in capsys.readouterr().out


def test_sweep_on_a_user_file(tmp_path, investment_npz):
    out = tmp_path / "res"
    args = ["sweep", "--mdp", str(investment_npz), "--horizon", "1", "--support", "nonzero"]
    rc = main(args + ["--out", str(out), "--trials", "2", "--ks", "1", "40"])
    assert rc == 0
    rows = json.loads((out / "sweep.json").read_text())["results"]["investment"]
    assert len(rows) == 2 and (out / "sweep.png").exists()


@pytest.mark.parametrize(
    ("arrays", "message"),
    [
        (dict(rewards=np.zeros((3, 2))), "lacks array"),
        (dict(transitions=np.ones((3, 2, 3)), rewards=np.zeros((3, 2))), "sums to 3"),
        (dict(transitions=np.full((3, 2, 3), 1 / 3), rewards=np.zeros((3, 2)), x=1), "unknown"),
    ],
)
def test_bad_files_get_one_line_errors(tmp_path, capsys, arrays, message):
    path = tmp_path / "bad.npz"
    np.savez(path, **arrays)
    assert main(["sweep", "--mdp", str(path), "--horizon", "2", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_missing_and_unreadable_files(tmp_path, capsys):
    assert main(["sweep", "--mdp", str(tmp_path / "none.npz"), "--horizon", "2"]) == 2
    assert "no such file" in capsys.readouterr().err
    junk = tmp_path / "junk.npz"
    junk.write_text("not a zip")
    assert main(["sweep", "--mdp", str(junk), "--horizon", "2"]) == 2
    assert "not a readable .npz" in capsys.readouterr().err


def test_privacy_table_and_plot(tmp_path, capsys):
    rc = main(
        ["privacy", "--k", "1", "10", "--b", "0.1", "--eta", "0.1", "--n", "2"]
        + ["--out", str(tmp_path)]
    )
    assert rc == 0
    data = json.loads((tmp_path / "privacy.json").read_text())
    eps = [g["epsilon"] for g in data["guarantees"]]
    assert eps[0] == pytest.approx(3.83031, abs=1e-4) and eps[1] > eps[0]
    assert (tmp_path / "privacy_epsilon.png").stat().st_size > 0
    assert main(["privacy", "--k", "1", "--b", "0.1", "--out", str(tmp_path)]) == 2
    assert "give --n and --eta" in capsys.readouterr().err


def test_privatize_writes_only_private_data(tmp_path, investment_npz, capsys):
    out = tmp_path / "private.npz"
    base = ["privatize", "--mdp", str(investment_npz), "--horizon", "1", "--support", "nonzero"]
    assert main(base + ["--k", "10", "--eta", "0.1", "--out", str(out)]) == 0
    assert "5.72833" in capsys.readouterr().out
    first = np.load(out)
    P = np.asarray(examples.investment().transitions)
    private = first["transitions"]
    assert private.shape == P.shape and not np.allclose(private[0], P[0])
    np.testing.assert_allclose(private[0].sum(-1), 1, rtol=1e-6)
    assert float(first["epsilon"]) == pytest.approx(5.72833, abs=1e-4)
    # A release needs a public eta: one derived from the data would leak it.
    assert main(base + ["--k", "10", "--out", str(tmp_path / "x.npz")]) == 2
    assert "public lower bound" in capsys.readouterr().err
    # Refuses to overwrite; with --force, fresh OS entropy gives different noise.
    assert main(base + ["--k", "10", "--eta", "0.1", "--out", str(out)]) == 2
    assert main(base + ["--k", "10", "--eta", "0.1", "--out", str(out), "--force"]) == 0
    assert not np.array_equal(np.load(out)["transitions"], private)
    # The released file can be read back as an MDP.
    assert (
        main(
            [
                "sweep",
                "--mdp",
                str(out),
                "--horizon",
                "1",
                "--support",
                "nonzero",
                "--trials",
                "2",
                "--ks",
                "5",
                "--out",
                str(tmp_path / "r"),
            ]
        )
        == 0
    )
