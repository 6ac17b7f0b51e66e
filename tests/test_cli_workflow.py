"""The command line's release workflow: releases that round-trip, outputs that
are checked before computing and never overwritten silently, mechanisms, synthesis and
evaluation of released models, interrupts, help, figures and progress."""

import argparse
import json
import os
import re

import jax
import numpy as np
import pytest

import jaxprivmdp as jp
from jaxprivmdp.cli import main

pytestmark = pytest.mark.cli

# `prism_model` (tests/conftest.py): a 3-state PRISM explicit model whose .lab's init is
# state 1, which earns 10 per step.


def _dense_npz(tmp_path, name="dense.npz", **extra):
    """A 3-state, 2-action dense model whose rows are all positive (no --support needed)."""
    P = np.array(
        [
            [[0.2, 0.5, 0.3], [0.6, 0.2, 0.2]],
            [[0.3, 0.3, 0.4], [0.25, 0.25, 0.5]],
            [[0.4, 0.4, 0.2], [0.1, 0.1, 0.8]],
        ]
    )
    R = np.array([[1.0, 0.0], [0.0, 2.0], [0.5, 0.5]])
    path = tmp_path / name
    np.savez(path, transitions=P, rewards=R, **extra)
    return path


def _one_line_error(capsys, command: str) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.endswith("\n")
    last = err.splitlines()[-1]
    assert last.startswith(f"jaxprivmdp {command}: error: "), err
    return last


# --------------------------------------------------------------------------- item 2


def test_a_release_carries_every_public_field_and_round_trips(tmp_path, prism_model):
    path = prism_model
    rel = tmp_path / "rel.npz"
    rc = main(
        ["privatize", "--mdp", str(path), "--k", "5", "--eta", "0.2", "--horizon", "2"]
        + ["--out", str(rel)]
    )
    assert rc == 0
    src, got = jp.load_mdp(path, horizon=2), jp.load_mdp(rel)  # no arguments: from the file
    assert (got.initial_state, got.horizon, float(got.discount)) == (1, 2, 1.0)
    for name in ("next_states", "rewards", "terminal_reward", "action_mask"):
        np.testing.assert_array_equal(getattr(got, name), getattr(src, name), err_msg=name)
    with np.load(rel) as f:
        np.testing.assert_array_equal(f["support"], np.asarray(src.next_states) >= 0)
    # `sweep --mdp rel.npz` plans from the release's own s0 (state 1: 10 per step) and T.
    out = tmp_path / "s"
    assert main(["sweep", "--mdp", str(rel), "--ks", "40", "--trials", "2", "--out", str(out)]) == 0
    meta = json.loads((out / "sweep.json").read_text())
    assert meta["models"]["rel"] == {
        "num_states": 3,
        "num_actions": 2,
        "horizon": 2,
        "discount": 1.0,
        "initial_state": 1,
    }
    assert meta["results"]["rel"][0]["optimal_value"] == 20.0


def test_a_dense_release_round_trips_an_infinite_horizon(tmp_path):
    src = _dense_npz(tmp_path)
    rel = tmp_path / "rel.npz"
    rc = main(
        ["privatize", "--mdp", str(src), "--k", "50", "--eta", "0.1", "--discount", "0.9"]
        + ["--initial-state", "2", "--out", str(rel)]
    )
    assert rc == 0
    got = jp.load_mdp(rel)
    assert (got.initial_state, got.horizon) == (2, None)
    assert float(got.discount) == pytest.approx(0.9)
    with np.load(src) as f:
        np.testing.assert_array_equal(got.rewards, f["rewards"])
    np.testing.assert_array_equal(got.support, np.ones((3, 2, 3), bool))
    # Arguments override what the file stores.
    assert jp.load_mdp(rel, horizon=3, initial_state=0).initial_state == 0
    # The reader takes the release's metadata but still refuses what it does not know.
    with np.load(rel) as f:
        arrays = dict(f)
    assert {"k", "epsilon", "delta", "b", "adjacency", "eta", "mechanism"} <= set(arrays)
    np.savez(tmp_path / "extra.npz", **arrays, policy=np.zeros(3))
    with pytest.raises(ValueError, match=r"unknown array\(s\) \['policy.npy'\]"):
        jp.load_mdp(tmp_path / "extra.npz")
    np.savez(tmp_path / "bad.npz", **{**arrays, "horizon": np.float64(2.5)})
    with pytest.raises(ValueError, match="'horizon' must be an integer"):
        jp.load_mdp(tmp_path / "bad.npz")


# --------------------------------------------------------------------------- item 8


def _sys_is_read_only() -> bool:
    import tempfile

    try:
        os.rmdir(tempfile.mkdtemp(dir="/sys"))
    except OSError:
        return True
    return False


@pytest.mark.parametrize("where", ["read-only mount", "refused creation"])
def test_an_unwritable_out_is_found_before_computing(tmp_path, capsys, monkeypatch, where):
    from jaxprivmdp.cli import _sweep_commands
    from jaxprivmdp.io import _files

    def no_sweep(*args, **kwargs):
        raise AssertionError("the command computed before checking --out")

    monkeypatch.setattr(_sweep_commands, "_run_sweeps", no_sweep)
    monkeypatch.setattr(_sweep_commands, "sweep_guarantees", no_sweep)
    if where == "read-only mount":  # /sys: root's os.access says yes, creating a file fails
        if not _sys_is_read_only():
            pytest.skip("no read-only /sys here")
        out = "/sys/jaxprivmdp-results"
    else:

        def refuse(*args, **kwargs):
            raise PermissionError(13, "Permission denied")

        monkeypatch.setattr(_files.tempfile, "mkdtemp", refuse)
        monkeypatch.setattr(_files.tempfile, "mkstemp", refuse)
        out = str(tmp_path / "new" / "results")
    assert main(["reproduce", "--out", out]) == 2
    err = _one_line_error(capsys, "reproduce")
    assert "--out" in err and "is not writable" in err
    src = _dense_npz(tmp_path)
    assert main(["privatize", "--mdp", str(src), "--k", "5", "--eta", "0.1", "--out", out]) == 2
    assert "--out" in _one_line_error(capsys, "privatize")


# --------------------------------------------------------------------------- item 12


def test_earlier_results_are_not_overwritten_without_force(tmp_path, capsys):
    out = tmp_path / "res"
    run = ["privacy", "--k", "1", "--n", "2", "--eta", "0.1", "--out", str(out)]
    assert main(run) == 0
    before = (out / "privacy.json").read_bytes()
    capsys.readouterr()
    for command in (
        run,
        ["reproduce", "--out", str(out)],
        ["sweep", "--mdp", "m.npz", "--horizon", "2", "--out", str(out)],
        ["frontier", "--example", "1", "--epsilons", "1", "--out", str(out)],
    ):
        (out / f"{command[0]}.json").touch()  # an earlier run's table
        (out / "figure1.json").touch()
        assert main(command) == 2
        err = _one_line_error(capsys, command[0])
        assert "already holds" in err and "--force" in err and str(out) in err
    assert (out / "privacy.json").read_bytes() == before
    assert main([*run[:-2], "--k", "2", "--out", str(out), "--force"]) == 0
    assert (out / "privacy.json").read_bytes() != before


# --------------------------------------------------------------------------- item 18


def _release(path):
    with np.load(path) as f:
        return {name: f[name] for name in f.files}


def test_privatize_with_any_mechanism_given_or_calibrated(tmp_path, capsys):
    src = _dense_npz(tmp_path)
    out = tmp_path / "rel.npz"
    base = ["privatize", "--mdp", str(src), "--out", str(out), "--force"]
    # Calibrated to a target as `frontier` calibrates (per row, b-adjacency).
    assert main([*base, "--mechanism", "gaussian", "--epsilon", "1", "--delta", "1e-3"]) == 0
    rel = _release(out)
    assert str(rel["mechanism"]) == "gaussian" and float(rel["target_epsilon"]) == 1.0
    want = jp.Gaussian.calibrate(1.0, 0.001, jp.privacy.Adjacency(0.1))
    assert float(rel["sigma"]) == pytest.approx(float(want.sigma), rel=1e-12)
    assert float(rel["epsilon"]) == pytest.approx(1.0, rel=1e-6)
    np.testing.assert_allclose(rel["transitions"].sum(-1), 1, rtol=1e-5)
    assert "eta" not in rel and "k" not in rel  # the additive ones need no η
    # A parameter flag names its mechanism; Laplace is pure ε = b/λ, composed over rows.
    assert main([*base, "--scale", "0.5", "--adjacency", "all"]) == 0
    rel = _release(out)
    assert str(rel["mechanism"]) == "laplace" and float(rel["scale"]) == 0.5
    assert float(rel["epsilon"]) == pytest.approx(6 * 0.1 / 0.5) and float(rel["delta"]) == 0
    # The Dirichlet mechanism calibrated: the largest k meeting ε (needs the public η).
    assert main([*base, "--epsilon", "5", "--eta", "0.1"]) == 0
    rel = _release(out)
    k = float(rel["k"])
    assert k == pytest.approx(
        float(jp.Dirichlet.calibrate(5, 0.001, jp.privacy.Adjacency(0.1, 0.1), n=3).k)
    )
    assert float(rel["epsilon"]) <= 5 * (1 + 1e-9)
    capsys.readouterr()
    # Refused, on one line: another mechanism's flag, an unreachable target, no η.
    assert main([*base, "--mechanism", "gaussian", "--k", "3"]) == 2
    assert "--k is the dirichlet mechanism's parameter" in _one_line_error(capsys, "privatize")
    assert main([*base, "--epsilon", "0.01", "--eta", "0.1"]) == 2
    assert "cannot be reached by the dirichlet" in _one_line_error(capsys, "privatize")
    assert main([*base, "--epsilon", "1"]) == 2
    assert "--eta" in _one_line_error(capsys, "privatize")
    with pytest.raises(SystemExit) as exc:
        main([*base, "--sigma", "0.1", "--epsilon", "1"])  # one parameter or a target
    assert exc.value.code == 2


def test_sweep_takes_a_mechanism(tmp_path):
    src = _dense_npz(tmp_path)
    out = tmp_path / "s"
    rc = main(
        ["sweep", "--mdp", str(src), "--horizon", "2", "--mechanism", "laplace"]
        + ["--ks", "0.05", "0.5", "--trials", "2", "--out", str(out)]
    )
    assert rc == 0
    meta = json.loads((out / "sweep.json").read_text())
    assert meta["mechanism"] == "laplace" and meta["ks"] == [0.05, 0.5]
    rows = meta["results"]["dense"]
    # More Laplace noise, a wider set: the cost of privacy grows with λ.
    assert rows[0]["cost_mean"] < rows[1]["cost_mean"]


# --------------------------------------------------------------------------- item 19


def test_synthesize_writes_policies_and_chains_that_model_check(tmp_path, capsys):
    """A release's private and robust policies as tables and PRISM chains: the chain read
    back (as PRISM or Storm would) gives the policy's value; `evaluate` scores the table on
    the true model."""
    src = _dense_npz(tmp_path)
    rel = tmp_path / "rel.npz"
    args = ["--mdp", str(src), "--k", "20", "--eta", "0.1", "--horizon", "2", "--out", str(rel)]
    assert main(["privatize", *args]) == 0
    out = tmp_path / "pol"
    assert main(["synthesize", "--mdp", str(rel), "--robust", "--out", str(out)]) == 0
    meta = json.loads((out / "synthesize.json").read_text())
    assert meta["model"]["horizon"] == 2 and meta["release"]["mechanism"] == "dirichlet"
    assert meta["release"]["k"] == 20.0
    robust = meta["robust"]
    assert meta["objective"] == {"direction": "maximize", "of": "reward"}
    assert robust["worst_case_is"] == "lower"
    private, robust_policy = robust["private_policy"], robust["robust_policy"]
    assert private["worst_case"] == private["lower"] <= private["upper"] == private["best_case"]
    assert robust_policy["worst_case"] >= private["worst_case"] - 1e-6
    release = jp.load_mdp(rel)
    policy = np.asarray(jp.solve(release).policy)
    for name in ("policy", "robust_policy"):
        table = (out / f"{name}.csv").read_text().splitlines()
        assert table[0] == "stage,state,action" and len(table) == 1 + 2 * 3
    first = (out / "policy.csv").read_text().splitlines()[1:]
    assert [tuple(map(int, r.split(","))) for r in first] == [
        (t, s, int(policy[t, s])) for t in range(2) for s in range(3)
    ]
    # The chain, unrolled over the 2 stages plus a "done" state: R=? [F "done"] is the value.
    chain = jp.load_mdp(out / "policy.tra", horizon=3)
    assert chain.num_states == 3 * 3 + 1 and chain.initial_state == 0
    labels = jp.load_labels(out / "policy.tra")
    res = jp.check(chain, 'R=? [F "done"]', labels=labels)
    assert res.value_at_initial == pytest.approx(meta["private_value"], rel=1e-5)
    # `evaluate`: the private policy on the true model, as jp.evaluate scores it.
    ev = tmp_path / "ev"
    assert (
        main(
            ["evaluate", "--mdp", str(src), "--policy", str(out / "policy.csv")]
            + ["--out", str(ev)]
        )
        == 0
    )
    got = json.loads((ev / "evaluate.json").read_text())
    true = jp.load_mdp(src, horizon=2)
    want = float(jp.evaluate(true, policy)[0, 0])
    assert got["value_at_initial_state"] == pytest.approx(want, rel=1e-6)
    assert got["model"] == {**meta["model"], "horizon": 2}


def test_synthesize_an_infinite_horizon_sparse_release(tmp_path, prism_model, capsys):
    path = prism_model
    rel = tmp_path / "rel.npz"
    rc = main(
        ["privatize", "--mdp", str(path), "--k", "5", "--eta", "0.2", "--discount", "0.9"]
        + ["--initial-state", "0", "--out", str(rel)]
    )
    assert rc == 0
    out = tmp_path / "pol"
    assert main(["synthesize", "--mdp", str(rel), "--out", str(out)]) == 0
    meta = json.loads((out / "synthesize.json").read_text())
    assert meta["model"]["horizon"] is None and meta["model"]["discount"] == pytest.approx(0.9)
    assert (out / "policy.csv").read_text().splitlines()[0] == "state,action"
    chain = jp.load_mdp(out / "policy.tra", discount=0.9)  # the chain itself: S states
    assert chain.num_states == 3 and chain.initial_state == 0
    v = jp.evaluate(chain, np.zeros(3, np.int32))
    assert float(v[0]) == pytest.approx(meta["private_value"], rel=1e-4)
    capsys.readouterr()
    # Bad tables are one-line errors that name --policy and the line.
    bad = tmp_path / "bad.csv"
    bad.write_text("state,action\n0,1\n1,0\n1,0\n2,0\n")
    ev = tmp_path / "e"
    ev_args = ["evaluate", "--mdp", str(path), "--discount", "0.9", "--out", str(ev)]
    assert main([*ev_args, "--policy", str(bad)]) == 2
    err = _one_line_error(capsys, "evaluate")
    assert "--policy" in err and "line 4" in err and "twice" in err
    bad.write_text("state,action\n0,1\n1,1\n2,0\n")  # state 1 has one action
    assert main([*ev_args, "--policy", str(bad)]) == 2
    assert "--policy" in _one_line_error(capsys, "evaluate")
    # --robust needs the mechanism a release records.
    plain = tmp_path / "plain.npz"
    np.savez(plain, transitions=np.full((2, 1, 2), 0.5), rewards=np.ones((2, 1)))
    rc = main(["synthesize", "--mdp", str(plain), "--horizon", "2", "--robust", "--out", str(ev)])
    assert rc == 2
    assert "--robust needs the mechanism" in _one_line_error(capsys, "synthesize")


# --------------------------------------------------------------------------- item 10


def test_no_silent_horizon_and_every_json_records_the_model(tmp_path, capsys):
    src = _dense_npz(tmp_path)
    base = ["sweep", "--mdp", str(src), "--ks", "40", "--trials", "2"]
    # One rule: a command that plans needs --horizon (γ = 1) or --discount γ < 1.
    assert main([*base, "--out", str(tmp_path / "a")]) == 2
    err = _one_line_error(capsys, "sweep")
    assert "give --horizon T" in err and "--discount" in err
    assert not (tmp_path / "a").exists()
    assert main([*base, "--discount", "0.8", "--out", str(tmp_path / "b")]) == 0
    meta = json.loads((tmp_path / "b" / "sweep.json").read_text())
    assert meta["models"]["dense"]["horizon"] is None
    assert meta["models"]["dense"]["discount"] == pytest.approx(0.8)
    assert meta["models"]["dense"]["initial_state"] == 0
    rc = main(
        ["frontier", "--mdp", str(src), "--horizon", "3", "--initial-state", "2"]
        + ["--epsilons", "5", "--mechanisms", "laplace", "--trials", "2"]
        + ["--out", str(tmp_path / "f")]
    )
    assert rc == 0
    meta = json.loads((tmp_path / "f" / "frontier.json").read_text())
    assert meta["models"]["dense"] == {
        "num_states": 3,
        "num_actions": 2,
        "horizon": 3,
        "discount": 1.0,
        "initial_state": 2,
    }


# --------------------------------------------------------------------------- item 6


def _interrupt_reproduce(tmp_path, delay: float):
    """Runs `python -m jaxprivmdp reproduce` as a user does and presses Ctrl-C ``delay`` s
    after it starts computing; returns (exit status, stderr, output folder)."""
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    out = tmp_path / f"res{delay}"
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "jaxprivmdp", "reproduce", "--out", str(out)],
        cwd=root,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines = []
    for line in proc.stderr:  # wait until it computes (the first model's line)
        lines.append(line)
        if line.startswith("Example 1"):
            break
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    _, rest = proc.communicate(timeout=300)
    return proc.returncode, "".join(lines) + rest, out


# 4 s in (a chunk running) with the tests marked slow; the default run presses Ctrl-C while XLA
# compiles, and test_a_ctrl_c_while_computing_is_raised_at_a_safe_point covers a Ctrl-C that
# arrives inside a running computation.
@pytest.mark.parametrize("delay", [0.5, pytest.param(4.0, marks=pytest.mark.slow)])
def test_ctrl_c_during_reproduce_exits_130_on_one_line(tmp_path, delay):
    """Ctrl-C while XLA compiles or runs a chunk: exit 130 and one line, never a crash (it
    used to segfault: the interpreter shut down under running computations)."""
    status, err, out = _interrupt_reproduce(tmp_path, delay)
    assert status == 130, err
    assert err.endswith("jaxprivmdp reproduce: interrupted\n"), err
    assert "Traceback" not in err and "Fatal" not in err
    assert not out.exists() or list(out.iterdir()) == []  # no output, no temporary


def test_ctrl_c_while_jax_loads_exits_130_on_one_line(tmp_path):
    """Ctrl-C in the first seconds, while the commands import JAX: one line and 130, not the
    interpreter's traceback. The Ctrl-C is sent from inside the import of ``jax`` (the moment a
    user's lands), so the test does not depend on timing."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    program = (
        "import builtins, os, signal, sys\n"
        "import jaxprivmdp.cli as cli\n"
        "assert 'jax' not in sys.modules, 'importing the CLI loaded JAX'\n"
        "real = builtins.__import__\n"
        "def hook(name, *args, **kwargs):\n"
        "    if name == 'jax':\n"
        "        os.kill(os.getpid(), signal.SIGINT)\n"
        "    return real(name, *args, **kwargs)\n"
        "builtins.__import__ = hook\n"
        f"sys.argv = ['jaxprivmdp', 'reproduce', '--out', {str(tmp_path / 'r')!r}]\n"
        "sys.exit(cli.main())\n"
    )
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run(
        [sys.executable, "-c", program], cwd=root, env=env, capture_output=True, text=True
    )
    assert done.returncode == 130, done.stderr
    # The interrupt is raised inside the first `import jax` (from `_checks`, while the commands
    # load: "jaxprivmdp: ..."); one full test run on a loaded machine saw it raised only once
    # the command had started ("jaxprivmdp reproduce: ..."). Either is the one line promised.
    assert re.fullmatch(r"jaxprivmdp( reproduce)?: interrupted\n", done.stderr), done.stderr
    assert not (tmp_path / "r").exists()


def test_a_ctrl_c_while_computing_is_raised_at_a_safe_point():
    import signal

    from jaxprivmdp.cli import _interrupts

    before = signal.getsignal(signal.SIGINT)  # SIG_IGN in a job started in the background
    calls = []

    def compute():
        os.kill(os.getpid(), signal.SIGINT)  # arrives "inside XLA": only recorded
        calls.append("finished")
        return jp.solve(jp.examples.investment()).values

    with _interrupts.deferred_interrupts():
        with pytest.raises(KeyboardInterrupt):
            _interrupts.guarded(compute)
        assert calls == ["finished"]  # raised after the call, its results ready

        def twice():
            os.kill(os.getpid(), signal.SIGINT)
            os.kill(os.getpid(), signal.SIGINT)  # a second Ctrl-C stops at once
            calls.append("not reached")

        with pytest.raises(KeyboardInterrupt):
            _interrupts.guarded(twice)
        assert calls == ["finished"]
    assert signal.getsignal(signal.SIGINT) is before  # restored as it was


# --------------------------------------------------------------------------- item 17


def test_the_version_agrees_with_the_changelog():
    import re
    from pathlib import Path

    from packaging.version import Version

    changelog = (Path(__file__).resolve().parents[1] / "CHANGELOG.md").read_text()
    top = re.search(r"^## (\S+) \(([^)]*)\)", changelog, re.M)
    version = Version(jp.__version__)
    assert version.base_version == top.group(1)
    assert version.is_devrelease == (top.group(2) == "unreleased")


def test_help_shows_a_default_for_every_option(capsys):
    from jaxprivmdp.cli import _args

    parser = _args.build_parser()
    commands = next(a for a in parser._actions if a.choices and "sweep" in a.choices).choices
    assert {"synthesize", "evaluate"} <= set(commands)
    for name, sub in commands.items():
        fmt = sub.formatter_class(prog=name)
        for action in sub._actions:
            if action.option_strings and action.dest != "help":
                text = fmt._get_help_string(action)
                assert "default" in text or "(required)" in text, (name, action.option_strings)
    with pytest.raises(SystemExit):
        main(["sweep", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--batch-size BATCH_SIZE runs per compiled chunk (memory) (default: one" in text
    assert "--robust also synthesize the robust private policy" in text and "(default: off)" in text


# --------------------------------------------------------------------------- item 16


def _sweep_rows(ks, robust: bool):
    from jaxprivmdp.experiments import _report
    from jaxprivmdp.experiments._chunks import RobustSummary
    from jaxprivmdp.experiments._sweep import SweepResult

    ks = np.asarray(ks, float)
    cost = np.array([[0.9, 0.1], [0.5, 0.45], [0.2, 0.3]])[: ks.size]  # a large spread
    r = dict(true_value=0.5 - cost / 4, lower=-cost, upper=cost, cost=2 * cost)
    return _report.summarize(
        SweepResult(
            private_value=0.5 - cost / 5,
            **r,
            optimal_value=np.float64(0.6),
            ks=ks,
            converged=np.ones(cost.shape, bool),
            robust=RobustSummary(**r) if robust else None,
        )
    )


def test_sweep_figures_say_what_they_show(tmp_path):
    import matplotlib.pyplot as plt

    from jaxprivmdp.cli._parser import build_parser
    from jaxprivmdp.cli._sweep_commands import set_settings
    from jaxprivmdp.experiments import _report

    args = argparse.Namespace(
        mechanism="dirichlet", bound="certified", beta=0.1, support_aware=True, robust=True
    )
    settings = set_settings(args)
    assert settings == "--mechanism dirichlet --bound certified --beta 0.1 --support-aware --robust"
    wide = {"ex": _sweep_rows([10, 40, 200], robust=True)}
    fig = _report.sweep_figure(wide, beta=0.1, trials=2, settings=settings)
    value, cost = fig.axes[:2]
    assert settings in fig._suptitle.get_text()
    labels = value.get_legend().get_texts()
    assert {"Robust policy: true value"} <= {t.get_text() for t in labels}
    assert value.get_xscale() == "linear" and cost.get_xscale() == "linear"  # the paper's
    # The upper and lower bounds' curves: each its own colour and line style.
    lines = {bars.get_label(): bars.lines[0] for bars in value.containers}  # errorbar's
    opt, pess = lines[_report.LABELS["upper"]], lines[_report.LABELS["lower"]]
    assert opt.get_color() != pess.get_color()
    assert opt.get_linestyle() != pess.get_linestyle()
    lo, hi = cost.get_ylim()
    for r in wide["ex"]:  # every error bar inside the panel
        assert lo <= r["cost_mean"] - r["cost_std"] and r["cost_mean"] + r["cost_std"] <= hi
    plt.close(fig)
    narrow = {"ex": _sweep_rows([1, 5], robust=False)}
    parse = build_parser().parse_args
    assert parse(["reproduce"]).k_axis == "linear"
    assert parse(["reproduce", "--k-axis", "log"]).k_axis == "log"  # passed to sweep_figure
    fig = _report.sweep_figure(narrow, beta=0.1, trials=2, k_axis="log")
    assert fig.axes[0].get_xscale() == "log" and fig.axes[1].get_xscale() == "log"
    assert "Robust" not in " ".join(t.get_text() for t in fig.axes[0].get_legend().get_texts())
    plt.close(fig)


def test_frontier_legend_names_the_dashed_bound_and_tables_have_headers(capsys):
    import matplotlib.pyplot as plt

    from jaxprivmdp.cli import _terminal
    from jaxprivmdp.experiments import _report

    result = jp.frontier(
        jax.random.key(0),
        jp.examples.investment(),
        epsilons=[8.0],
        num_trials=2,
        support="nonzero",
        mechanisms=(jp.Laplace,),
    )
    fig, ax = plt.subplots()
    _report.frontier_panel(ax, result, "t")
    assert "mean worst-case bound" in [t.get_text() for t in ax.get_legend().get_texts()]
    dashed = [line for line in ax.get_lines() if line.get_linestyle() == "--"]
    assert any(line.get_label() == "mean worst-case bound" for line in dashed)
    plt.close(fig)
    _terminal.print_sweep_tables({"ex": _sweep_rows([1, 5], robust=True)})
    header, first = capsys.readouterr().out.splitlines()[2:4]
    assert header.split()[-1] == "covered_fraction"
    assert len(header) == len(first)  # every column under its name


# --------------------------------------------------------------------------- item 14


def test_progress_shows_rate_and_eta_every_few_seconds(monkeypatch, capsys):
    from jaxprivmdp.cli import _terminal

    clock = iter([100.0, 110.0, 110.5, 111.0, 113.0, 114.0])  # start, then one per chunk
    monkeypatch.setattr(_terminal.time, "perf_counter", lambda: next(clock))
    report = _terminal.progress("ex", every=2.0)
    for done in (16, 32, 48, 80, 96):  # the first chunk compiled for 10 s
        report(done, 96)
    lines = capsys.readouterr().err.splitlines()
    # First chunk, then >= 2 s later, then the last: 32 and 48 came too soon.
    assert [line.split()[1] for line in lines] == ["16/96", "80/96", "96/96"]
    # The first chunk's time is mostly compiling: no rate, no ETA from it.
    assert lines[0].endswith("10.0 s  (first chunk, with compilation: no ETA yet)")
    assert "runs/s" not in lines[0]
    # The rate leaves out the compiling chunk: 64 runs in 3 s after it.
    assert "21.3 runs/s" in lines[1] and "ETA 0.8 s" in lines[1]
    assert lines[2].endswith("ETA 0.0 s")


def test_frontier_progress_times_each_mechanism_from_its_start(monkeypatch, capsys):
    from jaxprivmdp.cli import _terminal

    clock = iter([0.0, 5.0, 6.0, 9.0])
    monkeypatch.setattr(_terminal.time, "perf_counter", lambda: next(clock))
    report = _terminal.frontier_progress()
    report("gaussian", 16, 32)  # its reporter starts at 0.0, reports at 5.0
    report("gaussian", 32, 32)  # at 6.0
    first, last = capsys.readouterr().err.splitlines()
    assert "5.0 s" in first and "6.0 s" in last  # never "0.0 s"


@pytest.mark.slow  # 6 s: a whole CLI sweep
def test_cli_sweeps_in_small_chunks_without_batch_size(tmp_path, monkeypatch):
    from jaxprivmdp import experiments

    seen, real = [], experiments.sweep

    def spy(*args, **kwargs):
        seen.append(kwargs["chunking"].batch_size)
        return real(*args, **kwargs)

    monkeypatch.setattr(experiments, "sweep", spy)
    src = _dense_npz(tmp_path)
    base = ["sweep", "--mdp", str(src), "--horizon", "2", "--ks", "5", "--trials", "2"]
    assert main([*base, "--out", str(tmp_path / "a")]) == 0
    assert main([*base, "--batch-size", "64", "--out", str(tmp_path / "b")]) == 0
    assert seen == [1, 64]  # 1: the library's smallest chunk (one vectorized group)
    a, b = (json.loads((tmp_path / d / "sweep.json").read_text())["results"] for d in "ab")
    assert a == b  # the chunking never changes a result


def test_device_memory_exhaustion_is_a_one_line_error(tmp_path, capsys, monkeypatch):
    from jaxprivmdp.cli import _sweep_commands

    def exhausted(*args, **kwargs):
        raise jax.errors.JaxRuntimeError("RESOURCE_EXHAUSTED: Out of memory allocating 129.6G")

    monkeypatch.setattr(_sweep_commands, "_run_sweeps", exhausted)
    assert main(["reproduce", "--out", str(tmp_path / "r")]) == 2
    assert "out of device memory" in _one_line_error(capsys, "reproduce")
