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
