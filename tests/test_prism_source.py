"""``jp.load_prism``: models from PRISM/JANI sources through stormpy (the optional extra).

The values are checked against the published results in ``test_prism_acceptance.py``; here:
its arguments, its errors, and the message that names the extra when stormpy is missing.
"""

import warnings

import numpy as np
import prism_fixtures as fx
import pytest

import jaxprivmdp as jp
from jaxprivmdp.io import _prism_source

pytestmark = pytest.mark.prism

WALK = """
mdp
const int N;
const double p = 0.5;
module walk
  x : [0..N] init 1;
  [left]  x>0 & x<N -> p:(x'=x-1) + 1-p:(x'=x+1);
  [right] x>0 & x<N -> (x'=x+1);
  [stop]  x=0 | x=N -> true;
endmodule
rewards "steps"
  [left] true : 1;
  [right] true : 2;
endrewards
rewards "at_two"
  x=2 : 1;
endrewards
label "goal" = x=N;
"""


def test_missing_stormpy_names_the_extra(monkeypatch):
    def missing(name):
        raise ModuleNotFoundError(f"No module named {name!r}")

    load_prism = jp.load_prism  # before the patch: the package imports it lazily, by importlib
    monkeypatch.setattr(_prism_source.importlib, "import_module", missing)
    with pytest.raises(ImportError, match=r"stormpy.*pip install 'jaxprivmdp\[storm\]'"):
        load_prism("model.prism")


@pytest.fixture
def walk(tmp_path):
    pytest.importorskip("stormpy")
    path = tmp_path / "walk.prism"
    path.write_text(WALK)
    return path


def test_constants_reward_structures_and_dense(walk):
    with pytest.raises(ValueError, match="undefined constants N: pass constants="):
        jp.load_prism(walk, reward_structure="steps")
    with pytest.raises(ValueError, match="2 reward structures.*0: 'steps'; 1: 'at_two'"):
        jp.load_prism(walk, constants="N=3")
    a = jp.load_prism(walk, constants="N=3", reward_structure="steps")
    b = jp.load_prism(walk, constants={"N": 3}, reward_structure=0)
    assert list(a.rewards) == ["steps", "at_two"]
    np.testing.assert_array_equal(np.asarray(a.model.rewards), np.asarray(b.model.rewards))
    np.testing.assert_array_equal(np.asarray(a.model.rewards), a.rewards["steps"])
    assert a.model.next_states.shape == (4, 2, 2)  # x = 0..3; two actions inside
    # "left" earns 1 and "right" 2 from the inner states; the ends' "stop" nothing.
    inner = np.flatnonzero(~a.labels["goal"] & (a.rewards["steps"].sum(1) > 0))
    assert sorted(a.rewards["steps"][inner].ravel()) == [1, 1, 2, 2]
    assert int(a.model.initial_state) == int(np.flatnonzero(a.labels["init"])[0])
    c = jp.load_prism(walk, constants="N=3", reward_structure="at_two", dense=True, horizon=5)
    assert isinstance(c.model, jp.TabularMDP) and c.model.horizon == 5
    with pytest.raises(ValueError, match="Storm refuses it: .*already defined constant 'p'"):
        jp.load_prism(walk, constants="N=3,p=0.25")
    with pytest.raises(ValueError, match="no reward structure 'time'; available: 0: 'steps'"):
        jp.load_prism(walk, constants="N=3", reward_structure="time")
    res = jp.check(a.model, 'Pmax=? [F "goal"]', labels=a.labels)
    assert float(res.value_at_initial) == pytest.approx(1.0)


@pytest.mark.parametrize(
    "source, match",
    [
        ("dtmc\nmodule m x:[0..1] init 0; [] x=0 -> (x'=1) endmodule", "Storm refuses it"),
        ("ctmc\nmodule m x:[0..1] init 0; [] x=0 -> 2:(x'=1); endmodule", "is a CTMC: jaxprivmdp"),
        (
            "dtmc\nmodule m x:[0..2] init 0; [] x<2 -> (x'=x+1); endmodule",
            "state 2 has no transition",
        ),
    ],
    ids=["syntax", "ctmc", "deadlock"],
)
def test_errors_are_one_line_and_name_the_file(tmp_path, source, match):
    pytest.importorskip("stormpy")
    path = tmp_path / "m.prism"
    path.write_text(source)
    with pytest.raises(ValueError, match=match) as info:
        jp.load_prism(path)
    assert "\n" not in str(info.value) and "m.prism" in str(info.value)


def test_deadlocks_become_self_loops_on_request(tmp_path):
    pytest.importorskip("stormpy")
    path = tmp_path / "m.prism"
    path.write_text("dtmc\nmodule m x:[0..2] init 0; [] x<2 -> (x'=x+1); endmodule\n")
    built = jp.load_prism(path, deadlocks="self-loop")
    dead = np.flatnonzero(built.labels["deadlock"])
    assert dead.size == 1
    assert np.asarray(built.model.next_states)[dead[0], 0, 0] == dead[0]
    with pytest.raises(ValueError, match="deadlocks must be one of"):
        jp.load_prism(path, deadlocks="ignore")
    with pytest.raises(ValueError, match="no such file"):
        jp.load_prism(tmp_path / "absent.prism")


def test_same_model_as_the_explicit_files(tmp_path):
    """A model from its source and from the explicit files PRISM would write: the same."""
    pytest.importorskip("stormpy")
    (tmp_path / "die.pm").write_text(fx.die_program())
    built = jp.load_prism(tmp_path / "die.pm")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        files = jp.load_mdp(fx.write_prism(fx.knuth_yao_die(), tmp_path), reward_structure="flips")
    # The generator numbers the states as the program's variable does (s = 0..12); Storm
    # explores them in its own order: compare through the state each label marks.
    for name in ("one", "six", "done"):
        assert built.labels[name].sum() == {"one": 1, "six": 1, "done": 6}[name]
    assert np.asarray(built.model.rewards).sum() == np.asarray(files.rewards).sum() == 7


# ----------------------------------------------------------------- bulk conversion, exactly


def _entry_by_entry(built):
    """The conversion one stormpy entry at a time (slow, obviously right): the oracle for the
    arrays read back from Storm's binary export."""
    matrix = built.transition_matrix
    src, choice, tgt, prob, of_row = [], [], [], [], []
    for s in range(built.nr_states):
        rows = range(matrix.get_row_group_start(s), matrix.get_row_group_end(s))
        for c, row in enumerate(rows):
            of_row.append((s, c))
            for entry in matrix.get_row(row):
                src.append(s), choice.append(c), tgt.append(entry.column)
                prob.append(entry.value)
    rewards = {}
    for name in built.reward_models:
        reward = built.reward_models[name]
        per_choice = [0.0] * len(of_row)
        if reward.has_state_rewards:
            states = list(reward.state_rewards)
            per_choice = [states[s] for s, _ in of_row]
        if reward.has_state_action_rewards:
            actions = list(reward.state_action_rewards)
            per_choice = [a + b for a, b in zip(per_choice, actions, strict=True)]
        rewards[name] = (of_row, per_choice)
    ints = [np.asarray(x, np.int64) for x in (src, choice, tgt)]
    return (*ints, np.asarray(prob, np.float64)), rewards


def _stripes_program(n: int) -> str:
    """A DTMC and MDP mix of odd probabilities (thirds, sevenths, 0.1) and rewards of
    every kind, so that a rounding anywhere in the conversion would show."""
    return f"""mdp
const int N = {n};
module stripes
  x : [0..N] init 0;
  y : [0..2] init 0;
  [a] x<N -> 1/3:(x'=x+1) + 2/7:(y'=mod(y+1,3)) + 8/21:(x'=max(0,x-1));
  [b] x<N & y>0 -> 0.1:(x'=N) + 0.9:(y'=0);
  [c] x<N & y=2 -> (x'=x+1)&(y'=0);
  [] x=N -> true;
endmodule
rewards "time"
  x<N : 0.1;
  [a] true : 1/3;
  [b] y=1 : 2.5;
endrewards
rewards
  [c] true : 7;
endrewards
label "top" = x=N;
"""


@pytest.mark.parametrize(
    "source",
    [
        "die",
        "two_dice",
        "leader",
        "gamble",
        "walk",
        "stripes",
    ],
)
def test_bulk_conversion_is_the_entry_by_entry_one_bit_for_bit(tmp_path, source):
    stormpy = pytest.importorskip("stormpy")
    text = {
        "die": fx.die_program,
        "two_dice": fx.two_dice_program,
        "leader": lambda: fx.leader_program(4),
        "gamble": lambda: fx.GAMBLE_PRISM,
        "walk": lambda: WALK.replace("const int N;", "const int N = 6;"),
        "stripes": lambda: _stripes_program(40),
    }[source]()
    path = tmp_path / "m.prism"
    path.write_text(text)
    built, order = _prism_source._build(stormpy, path, None)
    kind = _prism_source._kind(path, built)
    csr = _prism_source._csr(stormpy, path, built)
    ex = _prism_source._explicit(path, built, kind, csr)
    (src, choice, tgt, prob), rewards = _entry_by_entry(built)
    for got, want in zip(
        (ex.src, ex.choice, ex.tgt, ex.prob), (src, choice, tgt, prob), strict=True
    ):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)  # bit for bit: no tolerance
    assert list(ex.line) == list(range(src.size))
    loaded = jp.load_prism(path, reward_structure=0 if order else None)
    for name in order:
        (of_row, per_choice) = rewards[name]
        want = np.zeros_like(loaded.rewards[name])
        for (s, c), value in zip(of_row, per_choice, strict=True):
            want[s, c] = value
        np.testing.assert_array_equal(loaded.rewards[name], want)
