"""The command line's ``check`` and ``--property``/``--labels`` (sweep, frontier, synthesize),
against the library's ``jp.check`` and ``jp.property_model`` on the same files."""

import json

import jax
import numpy as np
import pytest

import jaxprivmdp as jp
from jaxprivmdp.cli import main

pytestmark = pytest.mark.cli

# The README's game, as PRISM 4.8 exports it: 0 "safe"/"risky", 1 "back"/"gamble",
# 2 (goal) and 3 (fail) stay.
TRA = (
    "4 6 9\n0 0 2 0.8 safe\n0 0 3 0.2 safe\n0 1 1 0.5 risky\n0 1 2 0.5 risky\n1 0 0 1 back\n"
    "1 1 2 0.3 gamble\n1 1 3 0.7 gamble\n2 0 2 1 stay\n3 0 3 1 stay\n"
)
LAB = '0="init" 1="deadlock" 2="goal" 3="fail"\n0: 0\n2: 2\n3: 3\n'


@pytest.fixture
def game(tmp_path):
    (tmp_path / "game.tra").write_text(TRA)
    (tmp_path / "game.lab").write_text(LAB)
    srew = '# Reward structure "steps"\n# State rewards\n4 2\n0 1\n1 1\n'
    (tmp_path / "game.srew").write_text(srew)
    return tmp_path / "game.tra"


@pytest.mark.parametrize(
    "prop, horizon",
    [('Pmax=? [F "goal"]', None), ('Pmin=? [!"fail" U<=T "goal"]', 3), ("Rmin=? [C<=T]", 4)],
)
def test_check_writes_values_policy_and_error(game, tmp_path, capsys, prop, horizon):
    out = tmp_path / "out"
    argv = ["check", "--mdp", str(game), "--property", prop, "--out", str(out)]
    argv += [] if horizon is None else ["--horizon", str(horizon)]
    assert main(argv) == 0
    meta = json.loads((out / "check.json").read_text())
    with jax.enable_x64(True):
        mdp = jp.load_mdp(game, dtype="float64")
        want = jp.check(mdp, prop, labels=jp.load_labels(game), horizon=horizon)
    np.testing.assert_allclose(meta["values"], want.values, atol=1e-12)
    np.testing.assert_array_equal(meta["policy"], want.policy)
    assert len(meta["error_bound"]) == 4 and meta["converged"]
    assert f"{meta['value_at_initial_state']:.10g}" in capsys.readouterr().out


def test_check_reads_a_drn_with_its_own_labels(game, tmp_path, capsys):
    """Storm's DRN: ``--mdp model.drn`` is read with its own labels (no ``--labels``)."""
    mdp = jp.load_mdp(game, reward_structure="steps")
    drn = jp.save_mdp(tmp_path / "game.drn", mdp, labels=jp.load_labels(game), reward_name="steps")
    out = tmp_path / "out"
    prop = 'Pmax=? [F "goal"]'
    assert main(["check", "--mdp", str(drn), "--property", prop, "--out", str(out)]) == 0
    meta = json.loads((out / "check.json").read_text())
    with jax.enable_x64(True):
        want = jp.check(jp.load_mdp(game, dtype="float64"), prop, labels=jp.load_labels(game))
    np.testing.assert_allclose(meta["values"], want.values, atol=1e-9)
    assert f"{meta['value_at_initial_state']:.10g}" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--property", 'Pmax=? [F "nowhere"]'], "no label 'nowhere'"),
        (["--property", "Pmax=? [F <="], "--property"),
        (["--property", 'Pmax=? [F<=T "goal"]'], "uses T: give --horizon"),
        # R{"name"} is matched against the structure --reward-structure names
        (["--property", 'R{"time"}min=? [C<=2]', "--reward-structure", "steps"], "time"),
    ],
)
def test_check_errors_are_one_line(game, tmp_path, capsys, argv, message):
    status = main(["check", "--mdp", str(game), "--out", str(tmp_path / "o"), *argv])
    err = capsys.readouterr().err
    assert status == 2 and message in err and err.count("\n") == 1


@pytest.mark.slow  # 6 s; the other tests here check a property through the CLI by default
def test_sweep_with_a_property(game, tmp_path, capsys):
    out = tmp_path / "out"
    prop = 'Pmax=? [F<=5 "goal"]'
    argv = ["sweep", "--mdp", str(game), "--property", prop, "--ks", "50", "--trials", "2"]
    assert main([*argv, "--out", str(out), "--dtype", "float64"]) == 0
    meta = json.loads((out / "sweep.json").read_text())
    assert meta["property"] == prop
    with jax.enable_x64(True):
        mdp = jp.load_mdp(game, dtype="float64")
        optimal = float(jp.check(mdp, prop, labels=jp.load_labels(game)).value_at_initial)
    assert f"{optimal:.4f}"[:4] in (out / "sweep.csv").read_text()
    # An unbounded property is refused, on one line, saying why.
    capsys.readouterr()
    status = main([*argv[:4], 'Pmax=? [F "goal"]', "--out", str(tmp_path / "o2")])
    err = capsys.readouterr().err
    assert status == 2 and "step-bounded" in err and err.count("\n") == 1


def test_synthesize_a_release_with_a_property(game, tmp_path):
    out = tmp_path / "out"
    release = tmp_path / "release.npz"
    assert (
        main(
            ["privatize", "--mdp", str(game), "--k", "50"] + ["--eta", "0.2", "--out", str(release)]
        )
        == 0
    )
    prop = 'Pmin=? [!"fail" U<=3 "goal"]'
    argv = ["synthesize", "--mdp", str(release), "--labels", str(game.with_suffix(".lab"))]
    argv += ["--property", prop, "--robust", "--out", str(out), "--dtype", "float64"]
    assert main(argv) == 0
    meta = json.loads((out / "synthesize.json").read_text())
    with jax.enable_x64(True):
        on_release = jp.load_mdp(release, horizon=3, dtype="float64")
        pm = jp.property_model(on_release, prop, labels=jp.load_labels(game))
        want = float(pm.values(jp.solve(pm.model).values[0, 0]))
    assert meta["private_value"] == pytest.approx(want, abs=1e-6)
    r = meta["robust"]
    assert meta["objective"] == {"direction": "minimize", "of": prop}
    assert r["worst_case_is"] == "upper"  # a min property: the worst case is the larger value
    for policy in (r["private_policy"], r["robust_policy"]):
        assert policy["lower"] <= policy["upper"] == policy["worst_case"]
    assert r["robust_policy"]["worst_case"] <= r["private_policy"]["worst_case"] + 1e-9


@pytest.fixture
def sink(tmp_path):
    """State 0 reaches the goal 1 or the sink 2 (never the goal) with 1/2 each: the expected
    steps to the goal are infinite in 0 and 2 (PRISM's rule), 0 in 1."""
    (tmp_path / "sink.tra").write_text("3 3 4\n0 0 1 0.5\n0 0 2 0.5\n1 0 1 1\n2 0 2 1\n")
    (tmp_path / "sink.lab").write_text('0="init" 1="goal"\n0: 0\n1: 1\n')
    (tmp_path / "sink.srew").write_text("3 2\n0 1\n2 1\n")
    return tmp_path / "sink.tra"


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_check_an_infinite_value_prints_inf_and_writes_null(sink, tmp_path, capsys, dtype):
    out = tmp_path / "out"
    prop = 'Rmin=? [F "goal"]'
    argv = ["check", "--mdp", str(sink), "--property", prop, "--out", str(out)]
    assert main([*argv, "--dtype", dtype]) == 0
    assert f"{prop} at s0 = 0: inf (± 0)" in capsys.readouterr().out
    meta = json.loads((out / "check.json").read_text())  # plain JSON: no "inf", no Infinity
    assert meta["value_at_initial_state"] is None and meta["value_at_initial_state_infinite"]
    assert meta["values"] == [None, 0.0, None]
    assert meta["values_infinite"] == [True, False, True]
    assert meta["error_bound_at_initial_state"] == 0.0
    assert meta["error_bound_at_initial_state_infinite"] is False
    assert meta["error_bound_infinite"] == [False] * 3
    assert all(isinstance(v, float) for v in meta["error_bound"])
    # the interval fields follow the same rule; the one entry is also in "properties"
    assert meta["upper"] == [None, 0.0, None] and meta["upper_infinite"] == [True, False, True]
    assert meta["lower"] == [None, 0.0, None] and meta["precision"] == 0.0
    assert meta["properties"][0]["values"] == meta["values"]


def test_json_numbers_one_rule():
    """JSON has neither infinity nor NaN: every file writes null (check.json adds a flag)."""
    from jaxprivmdp.cli._check_output import numbers
    from jaxprivmdp.io.core import json_number

    assert json_number(np.float32(1.5)) == 1.5 and isinstance(json_number(np.float32(1)), float)
    assert json_number(np.inf) is None and json_number(float("nan")) is None
    got = numbers("v", np.array([1.0, np.inf]))
    assert got == {"v": [1.0, None], "v_infinite": [False, True]}
    assert numbers("v", np.inf) == {"v": None, "v_infinite": True}


def test_a_failed_check_leaves_no_out_folder(game, tmp_path, capsys, monkeypatch):
    import pathlib

    def disk_full(self, *args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pathlib.Path, "write_text", disk_full)
    out = tmp_path / "new" / "out"
    assert (
        main(["check", "--mdp", str(game), "--property", 'Pmax=? [F "goal"]', "--out", str(out)])
        == 2
    )
    assert "No space left" in capsys.readouterr().err
    assert not (tmp_path / "new").exists()
