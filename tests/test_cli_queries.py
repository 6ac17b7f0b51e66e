"""``jaxprivmdp check`` with boolean queries, filters, state variables (a .sta beside the
.tra) and several properties (``;`` and ``--props``), against ``jp.check_all``; and, where
stormpy is installed, the verdicts against Storm's."""

import json

import jax
import numpy as np
import pytest

import jaxprivmdp as jp
from jaxprivmdp.cli import main

pytestmark = pytest.mark.cli

TRA = (
    "4 6 9\n0 0 2 0.8 safe\n0 0 3 0.2 safe\n0 1 1 0.5 risky\n0 1 2 0.5 risky\n1 0 0 1 back\n"
    "1 1 2 0.3 gamble\n1 1 3 0.7 gamble\n2 0 2 1 stay\n3 0 3 1 stay\n"
)
LAB = '0="init" 1="deadlock" 2="goal" 3="fail"\n0: 0\n2: 2\n3: 3\n'
STA = "(s,done)\n0:(0,false)\n1:(1,false)\n2:(2,true)\n3:(3,true)\n"
PROPS = (
    "const int K = 3;  // PRISM's constants\n"
    '"reach": P>=0.9 [F "goal"];  Pmax>=0.5 [F<=K "goal"]\n'
    "filter(max, Pmax=? [F s=2], s<2)\n"
    "filter(forall, done => s>=2)\n"
    'filter(print, Pmin=? [F "goal"])\n'
)


@pytest.fixture
def game(tmp_path):
    for suffix, text in ((".tra", TRA), (".lab", LAB), (".sta", STA), (".props", PROPS)):
        (tmp_path / f"game{suffix}").write_text(text)
    (tmp_path / "game.srew").write_text('# Reward structure "steps"\n4 2\n0 1\n1 1\n')
    return tmp_path / "game.tra"


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_check_several_properties_from_props_and_property(game, tmp_path, capsys, dtype):
    out = tmp_path / "out"
    argv = ["check", "--mdp", str(game), "--props", str(game.with_suffix(".props"))]
    argv += ["--property", 'Pmax=? [F "goal"]; R<=2 [F done]', "--dtype", dtype]
    assert main([*argv, "--out", str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()
    meta = json.loads((out / "check.json").read_text())
    entries = meta["properties"]
    assert [e["kind"] for e in entries] == ["boolean"] * 2 + ["filter"] * 3 + [
        "numerical",
        "boolean",
    ]
    assert entries[0]["name"] == "reach" and printed[0].startswith('"reach": P>=0.9')
    assert "(value 0.6" in printed[0] and "true in 1 of 4 states" in printed[0]
    assert ": false (" in printed[0] and ": true (" in printed[1]
    assert entries[0]["satisfied"] == [False, False, True, False]
    assert entries[0]["result_at_initial_state"] is False
    assert entries[1]["property"] == 'Pmax>=0.5 [F<=3 "goal"]'
    assert entries[2]["value"] == 1.0 and entries[2]["states"] == [0, 1]
    assert entries[3]["value"] is True and printed[3].endswith(": true")
    np.testing.assert_allclose(entries[4]["value"], [0.65, 0.3, 1, 0], rtol=1e-5, atol=1e-7)
    assert printed[4].startswith('filter(print, Pmin=? [F "goal"]): 0: 0.6')
    # Rmax [F done] = 3 steps (risky, back, ...): R<=2 fails in s0
    assert entries[6]["result_at_initial_state"] is False
    np.testing.assert_allclose(entries[6]["values"], [3, 4, 0, 0], rtol=1e-5)
    # the same answers as the library's
    with jax.enable_x64(dtype == "float64"):
        want = jp.check_all(
            jp.load_mdp(game, dtype=dtype),
            jp.load_properties(game.with_suffix(".props")),
            labels=jp.load_labels(game),
            variables=jp.load_variables(game),
        )
    np.testing.assert_array_equal(entries[1]["satisfied"], want[1].satisfied)
    np.testing.assert_allclose(entries[4]["value"], want[4].value, rtol=1e-6)


def test_one_property_is_in_the_list_and_copied_at_the_top(game, tmp_path, capsys):
    out = tmp_path / "out"
    prop = 'P<0.5 [F "goal"]'
    assert main(["check", "--mdp", str(game), "--property", prop, "--out", str(out)]) == 0
    meta = json.loads((out / "check.json").read_text())
    [entry] = meta["properties"]  # always a list: one code path for a reader
    assert {k: meta[k] for k in entry} == entry and meta["property"] == prop
    assert meta["kind"] == "boolean" and meta["satisfied"] == [False, False, False, True]
    assert meta["values"] == [1.0, 1.0, 1.0, 0.0]  # Pmax: "for all schedulers" with <
    assert f"{prop} at s0 = 0: false" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, message",
    [
        ([], "check needs a property: give --property or --props"),
        (["--property", "P>=2 [F s=2]"], "--property: property 'P>=2 [F s=2]': a probability"),
        (["--property", "Pmax=? [F z=2]"], "no state variable 'z' (variables: s, done)"),
        (["--property", "filter(state, Pmax=? [F s>0])"], "exactly one state"),
        (["--props", "missing.props"], "--props: cannot read"),
        (["--property", 'P>=0.5 [F<=T "goal"]'], "uses T: give --horizon T"),
        (["--property", 'P=? [F "goal"]', "--const", "K=2"], "--const gives values"),
        (["--props", "game.props", "--const", "K"], "--const 'K': expected NAME=VALUE"),
        (["--props", "game.props", "--const", "M=2"], "declares no constant 'M'"),
        (["--props", "game.props", "--const", "K=2,K=3"], "constant 'K' given twice"),
    ],
)
def test_check_errors_are_one_line(game, tmp_path, capsys, argv, message):
    argv = [str(game.with_suffix(".props")) if a == "game.props" else a for a in argv]
    status = main(["check", "--mdp", str(game), "--out", str(tmp_path / "o"), *argv])
    err = capsys.readouterr().err
    assert status == 2 and message in err and err.count("\n") == 1, err


@pytest.mark.parametrize("const", [["--const", "N=2"], ["--const", "K=1,N=2"]])
def test_const_gives_and_overrides_the_props_constants(game, tmp_path, capsys, const):
    props = tmp_path / "n.props"
    props.write_text('const int K = 3;\nconst int N;\nPmax=? [F<=K "goal"]; Pmax=? [F<=N "goal"]\n')
    out = tmp_path / "out"
    argv = ["check", "--mdp", str(game), "--props", str(props), *const, "--out", str(out)]
    assert main(argv) == 0
    entries = json.loads((out / "check.json").read_text())["properties"]
    k = 1 if "K=1,N=2" in const else 3
    assert [e["property"] for e in entries] == [f'Pmax=? [F<={k} "goal"]', 'Pmax=? [F<=2 "goal"]']
    # Pmax to reach the goal from s0 within 1 or 2 steps: 0.8 (safe); within 3: 0.9 (risky,
    # back, safe: .5 + .5 · .8)
    values = [e["value_at_initial_state"] for e in entries]
    assert values == pytest.approx([0.8 if k == 1 else 0.9, 0.8])
    capsys.readouterr()


def test_a_bad_sta_beside_the_model_names_its_line(game, tmp_path, capsys):
    game.with_suffix(".sta").write_text("(s,done)\n0:(0,false)\n0:(1,false)\n")
    status = main(["check", "--mdp", str(game), "--property", "Pmax=? [F s=2]"])
    err = capsys.readouterr().err
    assert status == 2 and "--variables" in err and "line 3: state 0 is listed twice" in err


STORM_GAME = """mdp
module game
  s : [0..3] init 0;
  [safe]   s=0 -> 0.8:(s'=2) + 0.2:(s'=3);
  [risky]  s=0 -> 0.5:(s'=1) + 0.5:(s'=2);
  [back]   s=1 -> (s'=0);
  [gamble] s=1 -> 0.3:(s'=2) + 0.7:(s'=3);
  [stay]   s>=2 -> true;
endmodule
label "goal" = s=2;
label "fail" = s=3;
rewards "steps" s<2 : 1; endrewards
"""


@pytest.mark.prism
def test_verdicts_and_filters_against_storm(tmp_path):
    """Storm's boolean answers per state, and filters of its values, for the same model."""
    stormpy = pytest.importorskip("stormpy")
    path = tmp_path / "game.prism"
    path.write_text(STORM_GAME)
    program = stormpy.parse_prism_program(str(path))
    options = stormpy.BuilderOptions()
    options.set_build_all_reward_models()
    options.set_build_all_labels()
    model = stormpy.build_model(program, options=options)
    drn = tmp_path / "game.drn"
    pytest.importorskip("stormpy.io").export_to_drn(model, str(drn))
    mdp = jp.load_mdp(drn)
    labels = jp.load_labels(drn)
    S = mdp.num_states
    # s from the labels (Storm numbers the states its own way): init 0, goal 2, fail 3
    s_var = 2 * labels["goal"] + 3 * labels["fail"]
    s_var = s_var + (~labels["init"] & (s_var == 0))
    queries = [
        'P>=0.5 [F "goal"]',  # Storm too: for every scheduler (Pmin)
        'P<0.5 [F "goal"]',  # (Pmax)
        'R<=2 [F "goal" | "fail"]',  # (Rmax)
        'Pmax>=0.9 [F "goal"]',
        'Pmin<0.5 [F "goal"]',
        'Pmin>=0.6 [F<=2 "goal"]',
        'Rmax<=3.5 [F "goal" | "fail"]',
        'Rmin>0.5 [F "goal" | "fail"]',
    ]
    ours = jp.check_all(mdp, queries, labels=labels, variables={"s": s_var})
    for q, res in zip(queries, ours, strict=True):
        storm = stormpy.model_checking(model, stormpy.parse_properties(q)[0])
        want = np.zeros(S, bool)
        want[[int(i) for i in storm.get_truth_values_vector()]] = True  # the true states
        np.testing.assert_array_equal(np.asarray(res.satisfied), want, err_msg=q)
    storm_min = stormpy.model_checking(model, stormpy.parse_properties('Pmin=? [F "goal"]')[0])
    values = np.array(storm_min.get_value_vector())
    (mx, sm, cnt) = jp.check_all(
        mdp,
        'filter(max, Pmin=? [F "goal"], s<2); filter(sum, Pmin=? [F "goal"]); '
        'filter(count, Pmin>=0.5 [F "goal"], s<=2)',
        labels=labels,
        variables={"s": s_var},
    )
    np.testing.assert_allclose(mx.value, values[s_var < 2].max(), rtol=1e-6)
    np.testing.assert_allclose(sm.value, values.sum(), rtol=1e-6)
    assert int(cnt.value) == int(((values >= 0.5) & (s_var <= 2)).sum())
