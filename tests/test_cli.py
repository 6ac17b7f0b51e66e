"""The command line: every command end to end at small size, and clean errors."""

import argparse
import csv
import json
import math
import os
from pathlib import Path

import numpy as np
import pytest

import jaxprivmdp as jp
from jaxprivmdp import examples
from jaxprivmdp.cli import _args, _privacy_commands, _sweep_commands, _terminal, main

pytestmark = pytest.mark.cli


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
    rc = main(["reproduce", "--out", str(out), "--trials", "3", "--ks", "40", "1"])
    assert rc == 0
    for name in ("figure1.png", "figure1.pdf", "figure1.csv", "figure1.json"):
        assert (out / name).stat().st_size > 0
    meta = json.loads((out / "figure1.json").read_text())
    # --ks is sorted: the figure's x axis and the table read increasing k.
    assert meta["seed"] == 0 and meta["trials"] == 3 and meta["ks"] == [1.0, 40.0]
    assert meta["wall_time_s"] > 0 and meta["environment"]["jax"]
    # What the numbers are about, resolved.
    assert meta["models"]["Example 1 (investment)"]["horizon"] == 1
    assert meta["models"]["Example 2 (random, S=20, A=5, T=10)"] == {
        "num_states": 20,
        "num_actions": 5,
        "horizon": 10,
        "discount": 1.0,
        "initial_state": 0,
    }
    ex1 = meta["results"]["Example 1 (investment)"]
    assert [r["k"] for r in ex1] == [1.0, 40.0]
    assert all(r["optimal_value"] == pytest.approx(0.9) for r in ex1)
    for r in ex1:
        assert r["lower_mean"] <= r["private_value_mean"] <= r["upper_mean"]
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
    # --support-aware: the set over each row's support is tighter (Example 1's rows have
    # two entries, so the paper's set puts mass on the unreachable start state).
    aware = tmp_path / "aware"
    rc = main(args + ["--out", str(aware), "--trials", "2", "--ks", "1", "40", "--support-aware"])
    assert rc == 0
    meta = json.loads((aware / "sweep.json").read_text())
    tight = meta["results"]["investment"]
    assert meta["support_aware"] is True
    for r, t in zip(rows, tight, strict=True):
        assert t["cost_mean"] <= r["cost_mean"] + 1e-6
    # --bound certified --robust: the statement about the true value, the robust policy.
    cert = tmp_path / "cert"
    extra = ["--bound", "certified", "--robust"]
    rc = main(args + ["--out", str(cert), "--trials", "2", "--ks", "40", *extra])
    assert rc == 0
    meta = json.loads((cert / "sweep.json").read_text())
    assert meta["bound"] == "certified" and meta["robust"] is True
    (row,) = meta["results"]["investment"]
    assert row["robust_lower_mean"] >= row["lower_mean"] - 1e-6
    assert 0 <= row["covered_fraction"] <= 1
    assert "robust_true_value" in (cert / "sweep.csv").read_text().splitlines()[0]
    with pytest.raises(SystemExit) as exc:
        main(args + ["--out", str(cert), "--bound", "lemma1"])
    assert exc.value.code == 2


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


def test_privatize_seed_is_reproducible_and_recorded(tmp_path, investment_npz, capsys):
    base = ["privatize", "--mdp", str(investment_npz), "--horizon", "1", "--support", "nonzero"]
    base += ["--k", "10", "--eta", "0.1"]
    a, b, c = (tmp_path / f"{x}.npz" for x in "abc")
    assert main([*base, "--seed", "3", "--out", str(a)]) == 0
    assert "--seed 3: reproducible noise, for tests only; not private" in capsys.readouterr().err
    assert main([*base, "--seed", "3", "--out", str(b)]) == 0
    assert main([*base, "--out", str(c)]) == 0  # the default: OS entropy, no seed
    first, again, secure = np.load(a), np.load(b), np.load(c)
    np.testing.assert_array_equal(first["transitions"], again["transitions"])
    assert int(first["seed"]) == 3 and "seed" not in secure.files
    assert not np.array_equal(first["transitions"], secure["transitions"])
    assert isinstance(jp.load_mdp(a), jp.TabularMDP)  # the seed is metadata, not a model field
    assert main(["synthesize", "--mdp", str(a), "--out", str(tmp_path / "s")]) == 0
    assert json.loads((tmp_path / "s" / "synthesize.json").read_text())["release"]["seed"] == 3


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


# --------------------------------------------------------------------------- files


def _one_line_error(capsys, command: str) -> str:
    """The error line of stderr, after checking it is one line (progress lines may precede)."""
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.endswith("\n")
    *progress, last = err.splitlines()
    assert last.startswith(f"jaxprivmdp {command}: error: "), err
    assert not any("error" in line for line in progress), err
    return last


@pytest.mark.parametrize("kind", ["npy", "folder", "missing", "not a zip"])
def test_mdp_must_be_an_npz_file(tmp_path, capsys, kind):
    path = tmp_path / "model.npz"
    if kind == "npy":
        path = tmp_path / "model.npy"
        np.save(path, np.ones(3))
    elif kind == "folder":
        path.mkdir()
    elif kind == "not a zip":
        path.write_bytes(b"\x00" * 50)
    args = ["privacy", "--k", "1", "--eta", "0.05", "--mdp", str(path)]
    assert main([*args, "--out", str(tmp_path / "o")]) == 2
    err = _one_line_error(capsys, "privacy")
    assert "--mdp" in err and str(path) in err


def test_pickled_arrays_are_refused_by_name(tmp_path, capsys):
    path = tmp_path / "model.npz"
    np.savez(path, transitions=np.array([None, 1], dtype=object), rewards=np.zeros((1, 1)))
    assert main(["sweep", "--mdp", str(path), "--horizon", "2", "--out", str(tmp_path)]) == 2
    err = _one_line_error(capsys, "sweep")
    assert "'transitions'" in err and "only numeric arrays are read" in err
    assert "allow_pickle" not in err


def test_out_equal_to_mdp_is_refused_even_with_force(tmp_path, investment_npz, capsys):
    before = investment_npz.read_bytes()
    base = ["privatize", "--mdp", str(investment_npz), "--support", "nonzero", "--k", "10"]
    same = tmp_path / "." / investment_npz.name  # another spelling of the same path
    assert main(base + ["--eta", "0.1", "--out", str(same), "--force"]) == 2
    assert "is the input file" in _one_line_error(capsys, "privatize")
    assert investment_npz.read_bytes() == before
    assert main(base + ["--eta", "0.1", "--out", str(tmp_path), "--force"]) == 2
    assert "is a folder" in _one_line_error(capsys, "privatize")


def test_out_is_checked_before_any_computation(tmp_path, investment_npz, capsys, monkeypatch):
    def no_sweep(*args, **kwargs):
        raise AssertionError("the command computed before checking --out")

    monkeypatch.setattr(_sweep_commands, "_run_sweeps", no_sweep)
    monkeypatch.setattr(_sweep_commands, "sweep_guarantees", no_sweep)
    a_file = tmp_path / "taken"
    a_file.write_text("")
    assert main(["reproduce", "--out", str(a_file)]) == 2
    assert "--out" in _one_line_error(capsys, "reproduce")
    assert main(["privacy", "--k", "1", "--n", "2", "--eta", "0.1", "--out", str(a_file)]) == 2
    assert "is a file; give a folder" in _one_line_error(capsys, "privacy")
    # A sweep must not overwrite its own input, whatever the input is named.
    inp = tmp_path / "sweep.csv"
    inp.write_bytes(investment_npz.read_bytes())
    assert main(["sweep", "--mdp", str(inp), "--horizon", "1", "--out", str(tmp_path)]) == 2
    assert "would overwrite the input file" in _one_line_error(capsys, "sweep")
    monkeypatch.setattr(os, "access", lambda *a, **k: False)  # the tests may run as root
    assert main(["reproduce", "--out", str(tmp_path / "new")]) == 2
    assert "is not writable" in _one_line_error(capsys, "reproduce")


def test_an_out_folder_in_proc_is_refused_with_the_reason(capsys):
    try:
        proc = " /proc proc " in Path("/proc/self/mounts").read_text()
    except OSError:
        proc = False
    if not proc:
        pytest.skip("no /proc file system here")
    out = "/proc/jaxprivmdp-results"
    assert main(["privacy", "--k", "1", "--n", "2", "--eta", "0.1", "--out", out]) == 2
    err = _one_line_error(capsys, "privacy")
    assert f"so {out!r} cannot be made" in err  # the path given, not only /proc
    assert "kernel's proc file system" in err and "No such file" not in err


def test_version(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == f"jaxprivmdp {jp.__version__}\n"


def _privacy_args(out):
    return ["privacy", "--k", "1", "10", "--n", "2", "--eta", "0.1", "--out", str(out)]


def test_ctrl_c_exits_130_and_leaves_the_old_outputs(tmp_path, capsys, monkeypatch):
    assert main(_privacy_args(tmp_path)) == 0
    old = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    capsys.readouterr()

    def interrupted_plot(x, y, path, *, labels):
        path.write_bytes(b"\x89PNG half")  # a partial image, then Ctrl-C
        raise KeyboardInterrupt

    monkeypatch.setattr(_privacy_commands, "plot_epsilon", interrupted_plot)
    assert main([*_privacy_args(tmp_path), "--force"]) == 130
    assert capsys.readouterr().err == "jaxprivmdp privacy: interrupted\n"
    # privacy.json was complete, but it is not renamed without its plot; no temporaries.
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == old


def test_a_failed_figure_leaves_no_partial_sweep_files(tmp_path, investment_npz, capsys):
    import matplotlib.figure

    out = tmp_path / "res"
    args = ["sweep", "--mdp", str(investment_npz), "--horizon", "1", "--support", "nonzero"]
    original = matplotlib.figure.Figure.savefig

    def disk_full(self, fname, **kwargs):
        if str(fname).endswith(".pdf"):
            Path(fname).write_bytes(b"%PDF-1.4 trunc")
            raise OSError(28, "No space left on device")
        return original(self, fname, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(matplotlib.figure.Figure, "savefig", disk_full)
        rc = main(args + ["--out", str(out), "--trials", "2", "--ks", "5"])
    assert rc == 2 and "No space left" in _one_line_error(capsys, "sweep")
    # The PNG was complete, but not without the rest; nor is the --out folder left empty.
    assert not out.exists()


# --------------------------------------------------------------------------- arguments


@pytest.mark.parametrize(
    ("command", "message"),
    [
        (["reproduce", "--seed", "-1"], "--seed must lie in [0, 9223372036854775808)"),
        (["reproduce", "--seed", str(2**63)], "--seed must lie in"),
        (["reproduce", "--trials", "1"], "--trials must lie in [2,"),
        (["reproduce", "--batch-size", "0"], "--batch-size must lie in [1,"),
        (["reproduce", "--beta", "1"], "--beta must lie in (0, 1), got 1.0"),
        (["reproduce", "--beta", "nan"], "--beta must be finite, got nan"),
        (["reproduce", "--ks", "5", "inf"], "--ks must be finite, got inf"),
        (["reproduce", "--ks", "0"], "--ks must lie in (0, "),
        (["reproduce", "--ks", "1e39"], "--ks must lie in (0, 3.40282e+38], got 1e+39"),
        (["reproduce", "--ks", "10", "1", "10"], "--ks lists 10 twice"),
        (["sweep", "--mdp", "x.npz", "--horizon", "0"], "--horizon must lie in [1,"),
        (["sweep", "--mdp", "x.npz", "--discount", "1"], "--discount 1 needs --horizon"),
        (["sweep", "--mdp", "x.npz", "--discount=-inf"], "--discount must be finite"),
        (["sweep", "--mdp", "x.npz", "--initial-state", "-1"], "--initial-state must lie in"),
        (["privacy", "--k", "0", "--n", "2", "--eta", "0.1"], "--k must lie in (0, "),
        (["privacy", "--k", "nan", "--n", "2", "--eta", "0.1"], "--k must be finite"),
        (["privacy", "--k", "1", "--n", "1", "--eta", "0.1"], "--n must lie in [2,"),
        (["privacy", "--k", "1", "--n", "2", "--eta", "0"], "--eta must lie in (0, 0.5]"),
        (["privacy", "--k", "1", "--n", "4", "--eta", "0.3"], "--eta 0.3 exceeds 1/n = 0.25"),
        (["privacy", "--k", "1", "--n", "2", "--eta", ".1", "--b", "0"], "--b must lie in (0, 1]"),
        (["privacy", "--k", "1", "--n", "2", "--eta", ".1", "--delta", "1"], "--delta must lie in"),
        (["privacy", "--k", "1", "--n", "2", "--smoothing", "-0.1"], "--smoothing must lie in"),
        (["privacy", "--k", "1", "--n", "4", "--smoothing", "0.5"], "--smoothing 0.5 exceeds"),
        (["privacy", "--k", "1", "--n", "2", "--mdp", "x.npz"], "--n is for one row"),
        (["privatize", "--mdp", "x.npz", "--k", "inf", "--eta", ".1", "--out", "o.npz"], "--k"),
        (
            ["privatize", "--mdp", "x.npz", "--k", "1", "--smoothing", "0.1"]
            + ["--support", "nonzero", "--out", "o.npz"],
            "--smoothing and --support nonzero exclude each other",
        ),
    ],
)
def test_arguments_are_checked_up_front(tmp_path, capsys, monkeypatch, command, message):
    monkeypatch.chdir(tmp_path)  # x.npz does not exist: the flags are checked first
    assert main(command) == 2
    err = _one_line_error(capsys, command[0])
    assert message in err


def test_file_dependent_ranges_name_the_flag(tmp_path, investment_npz, capsys):
    base = ["privacy", "--k", "1", "--eta", "0.05", "--mdp", str(investment_npz)]
    base += ["--out", str(tmp_path)]
    assert main(base + ["--initial-state", "3"]) == 2
    assert "--initial-state 3 is not a state of --mdp" in _one_line_error(capsys, "privacy")
    assert main(base + ["--smoothing", "0.4"]) == 2
    assert "--smoothing 0.4 exceeds 1/S" in _one_line_error(capsys, "privacy")


def test_huge_k_is_a_one_line_error(tmp_path, capsys, monkeypatch):
    from jaxprivmdp import privacy

    def diverges(k, adjacency, **kwargs):
        # What privacy.guarantee raised at k = 1e16 (after ~10 s of series terms).
        raise RuntimeError("incomplete beta series did not converge: a=1e15, b=9e15, x=0.1")

    monkeypatch.setattr(privacy, "guarantee", diverges)
    assert main(["privacy", "--k", "1e16", "--n", "2", "--eta", "0.1", "--out", str(tmp_path)]) == 2
    err = _one_line_error(capsys, "privacy")
    assert "at --k 1e+16 failed" in err and "smaller k" in err
    assert not (tmp_path / "privacy.json").exists()
    # The library's own ValueErrors (bad k or rows) say at which k they arose, too.

    def refuses(k, adjacency, **kwargs):
        raise ValueError("k is too large for the accounting")

    monkeypatch.setattr(privacy, "guarantee", refuses)
    assert main(["privacy", "--k", "1e16", "--n", "2", "--eta", "0.1", "--out", str(tmp_path)]) == 2
    assert "at --k 1e+16: k is too large" in _one_line_error(capsys, "privacy")


def test_rows_with_zeros_name_the_flags(tmp_path, investment_npz, capsys):
    args = ["privacy", "--k", "1", "--eta", "0.05", "--mdp", str(investment_npz)]
    assert main([*args, "--out", str(tmp_path)]) == 2
    err = _one_line_error(capsys, "privacy")
    assert "(state 0, action 0)" in err
    assert "--support nonzero" in err and "--smoothing ETA" in err and "support=" not in err


def test_privacy_of_a_file_needs_a_public_eta(tmp_path, investment_npz, capsys):
    """An ε from a data-derived η is no guarantee: refused, as for a release."""
    args = ["privacy", "--k", "1", "--support", "nonzero", "--mdp", str(investment_npz)]
    assert main([*args, "--out", str(tmp_path)]) == 2
    assert "public lower bound" in _one_line_error(capsys, "privacy")
    assert main([*args, "--eta", "0.05", "--out", str(tmp_path)]) == 0


def test_help_shows_every_default(capsys):
    parser = _args.build_parser()
    subparsers = next(a for a in parser._actions if a.choices and "sweep" in a.choices)
    for name, sub in subparsers.choices.items():
        assert issubclass(sub.formatter_class, argparse.ArgumentDefaultsHelpFormatter), name
        for action in sub._actions:
            assert action.help, f"{name} {action.option_strings} has no help"
        with pytest.raises(SystemExit):
            main([name, "--help"])
        out = " ".join(capsys.readouterr().out.split())
        assert "(default: " in out, name
    with pytest.raises(SystemExit):
        main(["privatize", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "--horizon HORIZON T to record in the release" in help_text
    assert "--dtype {float32,float64} floats (default: float32)" in help_text
    with pytest.raises(SystemExit):
        main(["privacy", "--help"])
    assert "--horizon HORIZON only checked; not needed" in " ".join(capsys.readouterr().out.split())


# --------------------------------------------------------------------------- privacy


@pytest.fixture
def investment64_npz(tmp_path):
    """Example 1 in float64, without action mask (rows of masked actions are valid here)."""
    P = np.zeros((3, 4, 3))
    P[0, :, 1:] = [[0.9, 0.1], [0.2, 0.8], [0.8, 0.2], [0.3, 0.7]]
    P[1, :, 1] = P[2, :, 2] = 1.0
    path = tmp_path / "investment64.npz"
    np.savez(path, transitions=P, rewards=np.zeros((3, 4)), terminal_reward=[0.0, 1.0, 0.0])
    return path


def test_privacy_and_privatize_need_no_horizon(tmp_path, investment64_npz, capsys):
    # Example 1 has a nonzero terminal reward, which an MDP without horizon refuses.
    args = ["--mdp", str(investment64_npz), "--support", "nonzero"]
    assert main(["privacy", "--k", "10", "--eta", "0.1", "--out", str(tmp_path)] + args) == 0
    eps = json.loads((tmp_path / "privacy.json").read_text())["guarantees"][0]["epsilon"]
    assert eps == pytest.approx(5.72833, abs=1e-4)
    out = tmp_path / "private.npz"
    assert main(["privatize", "--k", "10", "--eta", "0.1", "--out", str(out)] + args) == 0
    with np.load(out) as f:
        np.testing.assert_array_equal(f["terminal_reward"], [0.0, 1.0, 0.0])
        assert f["terminal_reward"].dtype == np.float64  # as given, not cast to --dtype
        assert f["transitions"].dtype == np.float32


def test_privatize_float64(tmp_path, investment64_npz):
    import jax

    out = tmp_path / "private.npz"
    base = ["privatize", "--mdp", str(investment64_npz), "--support", "nonzero", "--k", "10"]
    assert main(base + ["--eta", "0.1", "--dtype", "float64", "--out", str(out)]) == 0
    with np.load(out) as f:
        assert f["transitions"].dtype == np.float64
        np.testing.assert_allclose(f["transitions"][0].sum(-1), 1, rtol=1e-12)
    assert not jax.config.jax_enable_x64  # main restores the caller's setting


def test_privacy_one_row_with_smoothing(tmp_path, capsys):
    from jaxprivmdp import privacy

    args = ["privacy", "--k", "10", "--n", "2", "--smoothing", "0.1", "--out", str(tmp_path)]
    assert main(args) == 0
    data = json.loads((tmp_path / "privacy.json").read_text())
    # As mdp_guarantee: eta = smoothing, b = b·(1 − n·smoothing) = 0.1·0.8.
    assert data["effective_eta"] == 0.1 and data["effective_b"] == pytest.approx(0.08)
    g = privacy.guarantee(10, privacy.Adjacency(0.08, 0.1), n=2, target_delta=1e-3)
    assert data["guarantees"][0]["epsilon"] == pytest.approx(g.epsilon, rel=1e-12)
    assert g.epsilon < 5.72833  # smoothing helps (without it: the test above)
    # The same as mdp_guarantee gives for an MDP of one such row.
    row = jp.make_mdp(np.array([[[0.3, 0.7]], [[0.5, 0.5]]]), np.zeros((2, 1)), horizon=1)
    mdp_g = privacy.mdp_guarantee(
        10, row, privacy.Adjacency(0.1), smoothing=0.1, target_delta=0.001
    )
    assert data["guarantees"][0]["epsilon"] == pytest.approx(mdp_g.epsilon, rel=1e-12)
    capsys.readouterr()
    args = ["privacy", "--k", "1", "10", "--n", "4", "--smoothing", "0.25", "--out", str(tmp_path)]
    assert main([*args, "--force"]) == 0
    assert "does not depend on the data" in capsys.readouterr().err
    data = json.loads((tmp_path / "privacy.json").read_text())
    assert [g["epsilon"] for g in data["guarantees"]] == [0.0, 0.0]
    assert data["effective_b"] == 0.0


def test_eta_one_over_n_is_vacuous(tmp_path, capsys):
    assert (
        main(
            ["privacy", "--k", "1", "10", "--n", "3", "--eta", "0.333333333333333"]
            + ["--out", str(tmp_path)]
        )
        == 0
    )
    captured = capsys.readouterr()
    assert "note: --eta 0.333333 = 1/n leaves only the uniform row" in captured.err
    assert "vacuous" in captured.err
    eps = [g["epsilon"] for g in json.loads((tmp_path / "privacy.json").read_text())["guarantees"]]
    assert eps == [0.0, 0.0]


def test_format_table():
    rows = [
        {"k": 10.0, "epsilon": 5.728331, "delta": 1e-3, "log_gamma": -2000.0},
        {"k": 1.0, "epsilon": 0.0, "delta": 0.0, "log_gamma": None},
    ]
    lines = _terminal.format_table(rows).splitlines()
    assert lines[0].split() == ["k", "epsilon", "delta", "gamma"]
    assert lines[1].split() == ["10", "5.72833", "1.00e-3", "2.58e-869"]
    assert lines[2].split() == ["1", "0", "0", "nan"]
    assert _terminal._format_log10(math.log(9.999)) == "1.00e+1"  # rounds up to the next decade


# --------------------------------------------------------------------------- report


def test_report_sorts_an_unsorted_sweep_by_k(tmp_path):
    from jaxprivmdp.experiments import _report
    from jaxprivmdp.experiments._sweep import SweepResult

    ks = np.array([40.0, 1.0, 10.0])
    cost = np.array([[0.1, 0.2], [0.9, 0.8], [0.4, 0.5]])  # cost falls with k
    result = SweepResult(
        private_value=1 - cost,
        true_value=1 - cost,
        lower=1 - 2 * cost,
        upper=np.ones_like(cost),
        cost=cost,
        optimal_value=np.float64(1.0),
        ks=ks,
        converged=np.array([[True, True], [True, False], [True, True]]),
    )
    rows = _report.summarize(result)
    assert [r["k"] for r in rows] == [1.0, 10.0, 40.0]
    assert [r["cost_mean"] for r in rows] == pytest.approx([0.85, 0.45, 0.15])
    assert [r["converged_fraction"] for r in rows] == [0.5, 1.0, 1.0]
    shuffled = {"ex": [rows[2], rows[0], rows[1]]}
    files = _report.write_tables(tmp_path / "t", shuffled, {"m": 1})
    files += _report.plot_sweeps(shuffled, tmp_path / "t", beta=0.1, trials=2)
    with (tmp_path / "t.csv").open() as f:
        assert [float(r["k"]) for r in csv.DictReader(f)] == [1.0, 10.0, 40.0]
    assert [r["k"] for r in json.loads((tmp_path / "t.json").read_text())["results"]["ex"]] == [
        1.0,
        10.0,
        40.0,
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in files)
