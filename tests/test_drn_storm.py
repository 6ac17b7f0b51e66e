"""Storm's DRN files, as stormpy writes them, read by ``jp.load_mdp``: the same values.

Each model is built by stormpy from a small PRISM source written here (made-up models and
Knuth and Yao's die), exported with ``stormpy.export_to_drn``, read back with
:func:`jaxprivmdp.load_mdp` / :func:`jaxprivmdp.load_labels`, and a few properties are
checked with both tools. And the other way: the DRN files ``jp.save_mdp`` writes are read by
Storm, with the same values. Skipped without stormpy (``pip install stormpy``).
"""

import jax
import numpy as np
import prism_fixtures as pf
import pytest

import jaxprivmdp as jp

pytestmark = pytest.mark.prism

stormpy = pytest.importorskip("stormpy")
stormpy_io = pytest.importorskip("stormpy.io")

RTOL = 1e-6  # PRISM's and Storm's default relative precision

DIE = """dtmc
module die
  s : [0..7] init 0;
  d : [0..6] init 0;
  [] s=0 -> 0.5 : (s'=1) + 0.5 : (s'=2);
  [] s=1 -> 0.5 : (s'=3) + 0.5 : (s'=4);
  [] s=2 -> 0.5 : (s'=5) + 0.5 : (s'=6);
  [] s=3 -> 0.5 : (s'=1) + 0.5 : (s'=7) & (d'=1);
  [] s=4 -> 0.5 : (s'=7) & (d'=2) + 0.5 : (s'=7) & (d'=3);
  [] s=5 -> 0.5 : (s'=7) & (d'=4) + 0.5 : (s'=7) & (d'=5);
  [] s=6 -> 0.5 : (s'=2) + 0.5 : (s'=7) & (d'=6);
  [] s=7 -> (s'=7);
endmodule
rewards "flips"
  s<7 : 1;
endrewards
label "done" = s=7;
label "six" = s=7 & d=6;
"""

# An unnamed reward structure, and a chain that reaches "goal" only with probability 2/3.
WALK = """dtmc
module walk
  x : [0..4] init 2;
  [] x=0 -> (x'=0);
  [] x>0 & x<4 -> 1/3 : (x'=x-1) + 2/3 : (x'=x+1);
  [] x=4 -> (x'=4);
endmodule
rewards
  x>0 & x<4 : 1;
endrewards
label "goal" = x=4;
label "lost" = x=0;
"""

# States without a command (Storm gives them a self-loop and the label "deadlock").
STUCK = """mdp
module stuck
  s : [0..3] init 0;
  [go] s=0 -> 0.9 : (s'=1) + 0.1 : (s'=2);
  [try] s=0 -> 0.5 : (s'=3) + 0.5 : (s'=0);
  [on] s=1 -> (s'=3);
endmodule
rewards "steps"
  [go] true : 1;
  [try] true : 2;
  [on] true : 1;
endrewards
label "goal" = s=3;
"""

# A DRN written by hand, read by Storm and exported again: state 3 is unreachable, and the
# values are rationals (Storm keeps them exact).
UNREACHABLE_DRN = """@type: MDP
@parameters

@reward_models
time
@nr_states
4
@nr_choices
5
@model
state 0 [1] init
\taction 0 [0]
\t\t1 : 1/3
\t\t2 : 2/3
\taction 1 [1/2]
\t\t0 : 1/10
\t\t2 : 9/10
state 1 [0] goal
\taction 0 [0]
\t\t1 : 1
state 2 [1]
\taction 0 [0]
\t\t0 : 1/2
\t\t1 : 1/2
state 3 [7] goal
\taction 0 [0]
\t\t0 : 1
"""

MODELS = {
    "die": (
        DIE,
        "flips",
        ['P=? [F "six"]', 'P=? [F<=4 "done"]', 'R{"flips"}=? [F "done"]', "R=? [C<=5]"],
    ),
    "gamble": (
        pf.GAMBLE_PRISM,
        "cost",
        [
            'Pmax=? [F "won"]',
            'Pmax=? [F<=4 "won"]',
            'R{"cost"}min=? [F "end"]',
            'R{"cost"}max=? [C<=6]',
        ],
    ),
    "gamble-gain": (
        pf.GAMBLE_PRISM,
        "gain",
        ['R{"gain"}max=? [C<=8]', 'R{"gain"}min=? [F "end"]', 'R{"gain"}max=? [F "end"]'],
    ),
    "walk": (WALK, None, ['P=? [F "goal"]', 'P=? [!"lost" U<=6 "goal"]', "R=? [C<=12]"]),
    "stuck": (STUCK, "steps", ['Pmax=? [F "goal"]', 'Rmin=? [F "goal"]', 'Pmin=? [F "deadlock"]']),
}


def storm_model(source: str, tmp_path):
    path = tmp_path / "model.prism"
    path.write_text(source)
    program = stormpy.parse_prism_program(str(path))
    options = stormpy.BuilderOptions()
    options.set_build_all_reward_models()
    options.set_build_all_labels()
    options.set_build_choice_labels(True)
    return stormpy.build_model(program, options=options)


def storm_value(model, formula: str) -> float:
    result = stormpy.model_checking(model, stormpy.parse_properties(formula)[0])
    (init,) = model.initial_states
    return float(result.get_value_vector()[init])


def our_value(path, formula: str, structure) -> float:
    """The default mode (float32, x64 off) and the default precision (1e-6 relative); the
    interval reached is checked too."""
    mdp = jp.load_mdp(path, reward_structure=structure)
    assert mdp.rewards.dtype == np.float32
    result = jp.check(mdp, formula, labels=jp.load_labels(path))
    assert bool(result.converged) and float(result.precision) <= RTOL, formula
    s = mdp.initial_state
    assert float(result.lower[s]) <= float(result.value_at_initial) <= float(result.upper[s])
    return float(result.value_at_initial)


def assert_same(storm, ours, formula):
    if np.isinf(storm):
        assert np.isinf(ours), formula
    else:
        np.testing.assert_allclose(ours, storm, rtol=RTOL, atol=1e-12, err_msg=formula)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_values_on_the_drn_stormpy_writes(tmp_path, name):
    source, structure, formulas = MODELS[name]
    model = storm_model(source, tmp_path)
    path = tmp_path / "model.drn"
    stormpy_io.export_to_drn(model, str(path))
    assert "@model" in path.read_text()
    for formula in formulas:
        assert_same(storm_value(model, formula), our_value(path, formula, structure), formula)
    labels = jp.load_labels(path)
    for label in model.labeling.get_labels():
        states = sorted(model.labeling.get_states(label))
        np.testing.assert_array_equal(np.flatnonzero(labels[label]), states, err_msg=label)


def test_storm_reads_the_drn_save_mdp_writes(tmp_path):
    model = storm_model(pf.GAMBLE_PRISM, tmp_path)
    drn = tmp_path / "storm.drn"
    stormpy_io.export_to_drn(model, str(drn))
    with jax.enable_x64(True):
        mdp = jp.load_mdp(drn, reward_structure="cost", dtype=np.float64)
    out = jp.save_mdp(tmp_path / "ours.drn", mdp, labels=jp.load_labels(drn), reward_name="cost")
    again = stormpy.build_model_from_drn(str(out))
    for formula in MODELS["gamble"][2]:
        assert_same(storm_value(model, formula), storm_value(again, formula), formula)


def test_storm_reads_a_privatized_release(tmp_path):
    """A release (``jp.privatize``) written as DRN is checked by Storm as we check it."""
    model = storm_model(pf.GAMBLE_PRISM, tmp_path)
    drn = tmp_path / "storm.drn"
    stormpy_io.export_to_drn(model, str(drn))
    with jax.enable_x64(True):
        mdp = jp.load_mdp(drn, reward_structure="cost", dtype=np.float64)
        release = jp.privatize(jax.random.key(3), mdp, jp.Dirichlet(50.0))
    labels = jp.load_labels(drn)
    out = jp.save_mdp(tmp_path / "release.drn", release, labels=labels, reward_name="cost")
    storm_release = stormpy.build_model_from_drn(str(out))
    for formula in ('Pmax=? [F "won"]', 'R{"cost"}min=? [F "end"]', 'R{"cost"}max=? [C<=6]'):
        assert_same(storm_value(storm_release, formula), our_value(out, formula, None), formula)


def test_unreachable_states_and_exact_values(tmp_path):
    hand = tmp_path / "hand.drn"
    hand.write_text(UNREACHABLE_DRN)
    model = stormpy.build_model_from_drn(str(hand))
    assert model.nr_states == 4  # Storm keeps the unreachable state
    path = tmp_path / "model.drn"
    stormpy_io.export_to_drn(model, str(path))
    for formula in ('Pmax=? [F "goal"]', 'Rmin=? [F "goal"]', 'Rmax=? [F "goal"]', "Rmax=? [C<=7]"):
        storm = storm_value(model, formula)
        assert_same(storm, our_value(path, formula, "time"), formula)
        assert_same(storm, our_value(hand, formula, "time"), formula)


def test_a_deadlock_as_storm_writes_it(tmp_path):
    """Storm reads a state without actions as one empty choice and writes it so; we read it
    as a deadlock (``deadlocks="self-loop"``): the same probability of reaching it."""
    hand = tmp_path / "hand.drn"
    text = UNREACHABLE_DRN.replace(
        "state 2 [1]\n\taction 0 [0]\n\t\t0 : 1/2\n\t\t1 : 1/2\n", "state 2 [1]\n"
    )
    hand.write_text(text)  # @nr_choices 5 counts the deadlock, as Storm does
    model = stormpy.build_model_from_drn(str(hand))
    path = tmp_path / "model.drn"
    stormpy_io.export_to_drn(model, str(path))
    with pytest.raises(ValueError, match="state 2 has no transition"):
        jp.load_mdp(path, reward_structure=0)
    with jax.enable_x64(True):
        mdp = jp.load_mdp(path, reward_structure=0, deadlocks="self-loop", dtype=np.float64)
        labels = jp.load_labels(path)
        for formula in ('Pmax=? [F "goal"]', 'Pmin=? [F "goal"]'):
            ours = jp.check(mdp, formula, labels=labels, tol=1e-9).value_at_initial
            assert_same(storm_value(model, formula), float(ours), formula)


# A symmetric walk on 0..600 absorbed at both ends: 300 · 300 = 90000 expected steps from the
# middle, a chain that mixes slowly (interval iteration alone needs millions of steps).
SLOW_WALK = """dtmc
module walk
  x : [0..600] init 300;
  [] x>0 & x<600 -> 0.5 : (x'=x-1) + 0.5 : (x'=x+1);
  [] x=0 | x=600 -> (x'=x);
endmodule
rewards "steps"
  x>0 & x<600 : 1;
endrewards
label "ends" = x=0 | x=600;
"""


def test_a_slowly_mixing_chain_in_the_default_mode(tmp_path):
    model = storm_model(SLOW_WALK, tmp_path)
    path = tmp_path / "walk.drn"
    stormpy_io.export_to_drn(model, str(path))
    formula = 'R{"steps"}=? [F "ends"]'
    storm, ours = storm_value(model, formula), our_value(path, formula, "steps")
    np.testing.assert_allclose(storm, 90_000, rtol=RTOL)
    assert_same(storm, ours, formula)
    mdp = jp.load_mdp(path, reward_structure="steps")
    res = jp.check(mdp, formula, labels=jp.load_labels(path))
    assert float(res.lower[mdp.initial_state]) <= 90_000 <= float(res.upper[mdp.initial_state])
