"""Published PRISM and Storm results, reproduced from files in each tool's format.

The models are built here from their definitions (``prism_fixtures``: Knuth and Yao's die,
two such dice under a scheduler, Itai and Rodeh's asynchronous leader election with 4
processes), written as PRISM's and Storm's explicit files, read with ``load_mdp`` and
``load_labels`` and checked with ``check``. The published values:

- one die (PRISM's ``die.pm`` case study; Storm's DTMC tests): P[F one] = 1/6, expected
  coin flips 11/3;
- two dice (Storm's MDP tests, ``two_dice``): Pmin = Pmax [F sum 2] = 1/36, expected flips
  22/3 under every scheduler (and each sum k with probability (6 − |k − 7|)/36);
- asynchronous leader election, 4 processes (PRISM's case study; Storm's ``AsynchronousLeader``
  test): 3,172 states and 7,144 transitions, Pmin = Pmax [F<=25 elected] = 1/16, Pmin [F
  elected] = 1, Rmin = Rmax [F elected] = 30/7 (rounds).

With stormpy installed, the same models are also built by Storm from PRISM programs written
here (``jp.load_prism``), Storm's own model checker confirms the published values on them, and
Storm reads the explicit files this project writes in its format.
"""

import json
from fractions import Fraction

import jax
import numpy as np
import prism_fixtures as fx
import pytest

import jaxprivmdp as jp

pytestmark = pytest.mark.prism

TOL = 1e-10  # relative precision asked of unbounded properties (float64)

FORMATS = {
    "prism": lambda m, d: fx.write_prism(m, d),
    "prism-4.8-dev-headers": lambda m, d: fx.write_prism(m, d, dev_headers=True),
    "prism-rows-exact": lambda m, d: fx.write_prism(m, d, rows=True, exact=True),
    "storm": lambda m, d: fx.write_storm(m, d),
}


@pytest.fixture(scope="module", autouse=True)
def _x64():
    with jax.enable_x64(True):
        yield


@pytest.fixture(scope="module")
def leader():
    return fx.leader_election(4)


def _load(model, folder, fmt, structure):
    tra = FORMATS[fmt](model, folder)
    kw = {"reward_structure": structure} if len(model.rewards) > 1 else {}
    return jp.load_mdp(tra, dtype=np.float64, **kw), jp.load_labels(tra)


def _assert_value(mdp, prop, labels, exact, *, name=None):
    """The value at the initial state is ``exact`` within the reported error bound."""
    res = jp.check(mdp, prop, labels=labels, tol=TOL, reward_name=name)
    value, bound = float(res.value_at_initial), float(np.asarray(res.error_bound).max())
    assert res.converged, prop
    assert abs(value - float(exact)) <= bound + 1e-12 * abs(float(exact)) + 1e-15, (prop, value)
    return res


@pytest.mark.parametrize("fmt", FORMATS)
def test_knuth_yao_die(tmp_path, fmt):
    mdp, labels = _load(fx.knuth_yao_die(), tmp_path, fmt, "flips")
    _assert_value(mdp, 'P=? [F "one"]', labels, Fraction(1, 6))
    _assert_value(mdp, 'R{"flips"}=? [F "done"]', labels, Fraction(11, 3), name="flips")
    # Bounded: the probability of a face within 3 flips (3/4: two flips, then 1/2 of the rest).
    _assert_value(mdp, 'P=? [F<=3 "done"]', labels, Fraction(3, 4))


@pytest.mark.parametrize("fmt", FORMATS)
def test_two_dice(tmp_path, fmt):
    mdp, labels = _load(fx.two_dice(), tmp_path, fmt, "flips")
    for opt in ("min", "max"):
        _assert_value(mdp, f'P{opt}=? [F "sum2"]', labels, Fraction(1, 36))
        _assert_value(mdp, f'R{{"flips"}}{opt}=? [F "done"]', labels, Fraction(22, 3), name="flips")
    for k in range(3, 13):
        _assert_value(mdp, f'Pmax=? [F "sum{k}"]', labels, Fraction(6 - abs(k - 7), 36))


@pytest.mark.parametrize("fmt", ["prism", "storm"])
def test_asynchronous_leader_election(tmp_path, fmt, leader):
    assert leader.num_states == 3172
    assert sum(len(ch.dist) for row in leader.choices for ch in row) == 7144
    mdp, labels = _load(leader, tmp_path, fmt, "rounds")
    for opt in ("min", "max"):
        res = _assert_value(mdp, f'P{opt}=? [F<=25 "elected"]', labels, Fraction(1, 16))
        assert res.policy.shape == (leader.num_states,)  # the first step's rule
        _assert_value(
            mdp, f'R{{"rounds"}}{opt}=? [F "elected"]', labels, Fraction(30, 7), name="rounds"
        )
    _assert_value(mdp, 'Pmin=? [F "elected"]', labels, 1)


# --------------------------------------------------------------------------- with Storm

PROGRAMS = {
    "die.pm": (
        fx.die_program,
        fx.knuth_yao_die,
        [('P=? [F "one"]', Fraction(1, 6)), ('R{"flips"}=? [F "done"]', Fraction(11, 3))],
    ),
    "two_dice.nm": (
        fx.two_dice_program,
        fx.two_dice,
        [('Pmin=? [F "sum2"]', Fraction(1, 36)), ('Rmax=? [F "done"]', Fraction(22, 3))],
    ),
    "leader4.nm": (
        fx.leader_program,
        fx.leader_election,
        [('Pmax=? [F<=25 "elected"]', Fraction(1, 16)), ('Rmin=? [F "elected"]', Fraction(30, 7))],
    ),
}


@pytest.mark.parametrize("name", PROGRAMS)
def test_load_prism_builds_the_same_models(tmp_path, name):
    """Storm builds the PRISM program into the generator's model (sizes, values), and its own
    model checker gives the published values."""
    stormpy = pytest.importorskip("stormpy")
    program, generator, props = PROGRAMS[name]
    (tmp_path / name).write_text(program())
    built = jp.load_prism(tmp_path / name, dtype=np.float64)
    model = generator()
    S = model.num_states
    assert built.model.next_states.shape[0] == S
    assert int((np.asarray(built.model.next_states) >= 0).sum()) == sum(
        len(ch.dist) for row in model.choices for ch in row
    )
    assert list(built.labels)[:2] == ["init", "deadlock"]
    assert set(model.labels) <= set(built.labels)
    storm_program = stormpy.parse_prism_program(str(tmp_path / name))
    storm_model = stormpy.build_model(storm_program)
    for prop, exact in props:
        _assert_value(built.model, prop, built.labels, exact)
        (formula,) = stormpy.parse_properties(prop, storm_program)
        result = stormpy.model_checking(storm_model, formula)
        assert result.get_value(storm_model.initial_states[0]) == pytest.approx(
            float(exact), rel=1e-6
        )


@pytest.mark.parametrize(
    "maker", [fx.two_dice, lambda: fx.leader_election(4)], ids=["dice", "leader"]
)
def test_storm_reads_the_files_written_in_its_format(tmp_path, maker):
    """Storm's explicit parser reads what ``write_storm`` writes, with the published values:
    the fixtures are Storm's format, not only what our reader accepts."""
    stormpy = pytest.importorskip("stormpy")
    model = maker()
    tra = fx.write_storm(model, tmp_path)
    rew = next(tmp_path.glob("*.trans.rew"))
    built = stormpy.build_model_from_explicit(tra, tra.with_suffix(".lab"), transition_rewards=rew)
    assert built.nr_states == model.num_states
    label = "sum2" if "sum2" in model.labels else "elected"
    for prop, exact in {
        "sum2": [('Pmin=? [F "sum2"]', 1 / 36), ('Rmax=? [F "done"]', 22 / 3)],
        "elected": [('Pmin=? [F<=25 "elected"]', 1 / 16), ('Rmax=? [F "elected"]', 30 / 7)],
    }[label]:
        (formula,) = stormpy.parse_properties(prop)
        value = stormpy.model_checking(built, formula).get_value(built.initial_states[0])
        assert value == pytest.approx(exact, rel=1e-6), prop


JANI_DIE = {
    "jani-version": 1,
    "name": "die",
    "type": "dtmc",
    "variables": [
        {
            "name": "s",
            "type": {"kind": "bounded", "base": "int", "lower-bound": 0, "upper-bound": 12},
            "initial-value": 0,
        },
        {"name": "one", "type": "bool", "transient": True, "initial-value": False},
    ],
    "automata": [
        {
            "name": "die",
            "locations": [
                {
                    "name": "l",
                    "transient-values": [
                        {"ref": "one", "value": {"op": "=", "left": "s", "right": 7}}
                    ],
                }
            ],
            "initial-locations": ["l"],
            "edges": [
                {
                    "location": "l",
                    "guard": {"exp": {"op": "=", "left": "s", "right": s}},
                    "destinations": [
                        {
                            "location": "l",
                            "probability": {"exp": 0.5},
                            "assignments": [{"ref": "s", "value": t}],
                        }
                        for t in pair
                    ],
                }
                for s, pair in fx._KY.items()
            ]
            + [
                {
                    "location": "l",
                    "guard": {"exp": {"op": "≥", "left": "s", "right": 7}},
                    "destinations": [{"location": "l"}],
                }
            ],
        }
    ],
    "system": {"elements": [{"automaton": "die"}]},
    "properties": [],
}


def test_load_prism_reads_jani(tmp_path):
    pytest.importorskip("stormpy")
    path = tmp_path / "die.jani"
    path.write_text(json.dumps(JANI_DIE))
    built = jp.load_prism(path, dtype=np.float64)
    assert built.model.next_states.shape[0] == 13
    # A transient Boolean variable is a label for Storm.
    np.testing.assert_array_equal(np.flatnonzero(built.labels["one"]), [7])
    _assert_value(built.model, 'P=? [F "one"]', built.labels, Fraction(1, 6))
