"""Storm's DRN format: ``jp.load_mdp("model.drn")``, ``jp.load_labels``, ``jp.save_mdp``.

Every DRN text here is written by hand for these tests (the format as Storm's documentation
describes it); the comparison with files stormpy writes is in ``test_drn_storm.py``.
"""

from fractions import Fraction as F

import jax
import numpy as np
import pytest

import jaxprivmdp as jp
from jaxprivmdp.io._drn import read_drn
from jaxprivmdp.models import to_dense as sparse_to_dense

# A DTMC: Storm's layout (tabs, comments, the unnamed reward model written as " ").
DTMC = """// a DTMC written by hand
@type: DTMC
@value_type: double
@parameters

@reward_models
\x20
@nr_states
4
@nr_choices
4
@model
state 0 [1] init
//[x=0]
\taction __NOLABEL__ [0.5]
\t\t1 : 0.1
\t\t2 : 0.9
state 1 [2]
\taction 0 [0]
\t\t0 : 1/3
\t\t3 : 2/3
state 2 [0] goal
\taction 0 [0]
\t\t2 : 1
state 3 [0] goal done
\taction 0 [0]
\t\t3 : 1
"""

# An MDP with two reward models, choice labels, an unreachable state (4) and a label "far".
MDP = """@type: MDP
@parameters

@reward_models
cost gain
@nr_states
5
@nr_choices
7
@model
state 0 [1, 0] init
\taction north [0, 2]
\t\t1 : 0.25
\t\t2 : 0.75
\taction south [3, 0]
\t\t2 : 1
state 1 [0, 0.5] far
\taction north|south [0, 0]
\t\t1 : 0.5
\t\t3 : 0.5
\taction 1 [1, 1]
\t\t0 : 1
state 2 [0, 0]
\taction stay [0, 0]
\t\t2 : 1
state 3 [0, 0] goal
\taction stay [0, 0]
\t\t3 : 1
state 4 [5, 5] goal far
\taction __NOLABEL__ [0, 0]
\t\t0 : 1
"""

# State 1 has no action (a deadlock).
DEADLOCK = """@type: MDP
@parameters

@reward_models
r
@nr_states
3
@nr_choices
2
@model
state 0 [0] init
\taction 0 [1]
\t\t1 : 0.5
\t\t2 : 0.5
state 1 [4] stuck
state 2 [0]
\taction 0 [0]
\t\t2 : 1
"""


def to_dense(m):
    return m if isinstance(m, jp.TabularMDP) else sparse_to_dense(m)


def write(tmp_path, text, name="model.drn"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_dtmc(tmp_path):
    path = write(tmp_path, DTMC)
    m = jp.load_mdp(path)
    assert isinstance(m, jp.SparseMDP) and (m.num_states, m.num_actions) == (4, 1)
    with jax.enable_x64(True):
        m64 = jp.load_mdp(path, dtype=np.float64)
        P = np.asarray(to_dense(m64).transitions)[:, 0]
    assert P[0, 1] == 0.1 and P[0, 2] == 0.9  # decimals correctly rounded
    assert P[1, 0] == float(F(1, 3)) and P[1, 3] == float(F(2, 3))  # rationals exactly
    np.testing.assert_array_equal(np.asarray(m64.rewards)[:, 0], [1.5, 2, 0, 0])
    assert m.initial_state == 0
    labels = jp.load_labels(path)
    assert list(labels) == ["init", "goal", "done", "deadlock"]
    np.testing.assert_array_equal(np.flatnonzero(labels["goal"]), [2, 3])
    assert not labels["deadlock"].any()
    drn = read_drn(path)
    assert drn.reward_names == [None] and drn.choice_labels == [None, "0", "0", "0"]


def test_an_mdp_with_two_reward_models_and_choice_labels(tmp_path):
    path = write(tmp_path, MDP)
    with pytest.raises(ValueError, match=r"2 reward models \(0: 'cost'; 1: 'gain'\)"):
        jp.load_mdp(path)
    with jax.enable_x64(True):
        cost = jp.load_mdp(path, reward_structure="cost", dtype=np.float64)
        gain = jp.load_mdp(path, reward_structure=1, dtype=np.float64)
        P = np.asarray(to_dense(cost).transitions)
    np.testing.assert_array_equal(cost.rewards, [[1, 4], [0, 1], [0, 0], [0, 0], [5, 0]])
    np.testing.assert_array_equal(gain.rewards, [[2, 0], [0.5, 1.5], [0, 0], [0, 0], [5, 0]])
    np.testing.assert_array_equal(cost.action_mask, [[1, 1], [1, 1], [1, 0], [1, 0], [1, 0]])
    assert P[1, 0, 3] == 0.5 and P[1, 1, 0] == 1 and P[4, 0, 0] == 1
    assert read_drn(path).choice_labels == [
        "north",
        "south",
        "north|south",
        "1",
        "stay",
        "stay",
        None,
    ]
    labels = jp.load_labels(path)
    np.testing.assert_array_equal(np.flatnonzero(labels["far"]), [1, 4])
    # The unreachable state 4 changes nothing from the initial state.
    with jax.enable_x64(True):
        res = jp.check(cost, 'Pmax=? [F "goal"]', labels=labels)
    np.testing.assert_allclose(res.value_at_initial, 0.25, rtol=1e-4)
    with pytest.raises(ValueError, match="no reward model 'time'; available: 0: 'cost'; 1: 'gain'"):
        jp.load_mdp(path, reward_structure="time")
    with pytest.raises(ValueError, match="rewards= is for .tra"):
        jp.load_mdp(path, rewards=tmp_path / "x.srew")


def test_deadlocks(tmp_path):
    path = write(tmp_path, DEADLOCK)
    with pytest.raises(ValueError, match=r"model.drn': state 1 has no transition \(deadlock\)"):
        jp.load_mdp(path)
    m = jp.load_mdp(path, deadlocks="self-loop")
    P = np.asarray(to_dense(m).transitions)
    assert P[1, 0, 1] == 1 and np.asarray(m.rewards)[1, 0] == 4  # the state's reward
    labels = jp.load_labels(path)
    np.testing.assert_array_equal(np.flatnonzero(labels["deadlock"]), [1])
    # Storm counts the deadlock as a choice, and writes it as an action without transitions.
    counted = write(tmp_path, DEADLOCK.replace("@nr_choices\n2", "@nr_choices\n3"), "c.drn")
    empty = DEADLOCK.replace("stuck\n", "stuck\n\taction 0 [0]\n").replace("s\n2", "s\n3")
    for other in (counted, write(tmp_path, empty, "e.drn")):
        with pytest.raises(ValueError, match="state 1 has no transition"):
            jp.load_mdp(other)
        again = jp.load_mdp(other, deadlocks="self-loop")
        np.testing.assert_array_equal(to_dense(again).transitions, to_dense(m).transitions)
        np.testing.assert_array_equal(again.rewards, m.rewards)


def test_no_rewards_warns_and_initial_state(tmp_path):
    text = DTMC.replace("\x20\n@nr_states", "\n@nr_states").replace(" [1] init", " init")
    for r in ("[2]", "[0.5]", "[0]"):
        text = text.replace(f" {r}", "")
    path = write(tmp_path, text)
    with pytest.warns(UserWarning, match="no reward model"):
        m = jp.load_mdp(path)
    assert not np.asarray(m.rewards).any()
    two = write(tmp_path, DTMC.replace("state 2 [0] goal", "state 2 [0] goal init"), "two.drn")
    with pytest.raises(ValueError, match=r"2 states are labelled 'init' \(0, 2\); pass initial"):
        jp.load_mdp(two)
    assert jp.load_mdp(two, initial_state=2).initial_state == 2


def test_layouts(tmp_path):
    path = write(tmp_path, MDP)
    padded = jp.load_mdp(path, reward_structure=0, layout="padded")
    ragged = jp.load_mdp(path, reward_structure=0, layout="ragged")
    assert isinstance(padded, jp.SparseMDP) and isinstance(ragged, jp.RaggedMDP)
    np.testing.assert_array_equal(to_dense(padded).transitions, to_dense(ragged).transitions)


# Each malformed file: a replacement in MDP (or a whole text) and what the message says.
BAD = {
    "row sum": (
        ("\t\t2 : 0.75", "\t\t2 : 0.7"),
        r"line 12: the choice's probabilities sum to 0.95",
    ),
    "ctmc": (("@type: MDP", "@type: CTMC"), r"line 1: @type: CTMC: a CTMC"),
    "ma": (("@type: MDP", "@type: MA"), r"line 1: @type: MA: a Markov automaton"),
    "pomdp": (("@type: MDP", "@type: POMDP"), r"line 1: @type: POMDP: a POMDP"),
    "game": (("@type: MDP", "@type: SMG"), r"line 1: @type: SMG: a stochastic game"),
    "parametric": (
        ("@parameters\n", "@parameters\np q"),
        r"line 3: parameters 'p q': a parametric",
    ),
    "value type": (("@type: MDP", "@type: MDP\n@value_type: parametric"), r"line 2: .*parametric"),
    "interval": (
        ("@type: MDP", "@type: MDP\n@value_type: interval"),
        r"line 2: @value_type: interval",
    ),
    "no @model": (
        ("@model\n", ""),
        r"line 10: expected a section \(@type, @nr_states, ..., @model\), got 'state 0",
    ),
    "no @type": (("@type: MDP\n", ""), r"no section @type before @model"),
    "no @nr_states": (("@nr_states\n5\n", ""), r"no section @nr_states"),
    "unknown section": (
        ("@parameters", "@colour: red\n@parameters"),
        r"line 2: unknown section @colour",
    ),
    "nr_states": (
        ("@nr_states\n5", "@nr_states\n6"),
        r"@nr_states declares 6 states, the model lists 5",
    ),
    "nr_choices": (
        ("@nr_choices\n7", "@nr_choices\n8"),
        r"@nr_choices declares 8 choices, the model lists 7",
    ),
    "order": (("state 2 [0, 0]", "state 3 [0, 0]"), r"line 23: state 3 where state 2 is expected"),
    "target": (("\t\t2 : 0.75", "\t\t9 : 0.75"), r"line 14: target 9 is out of range"),
    "twice": (("\t\t2 : 0.75", "\t\t1 : 0.75"), r"line 14: target 1 is listed twice"),
    "negative": (
        ("\t\t2 : 1\nstate 1", "\t\t2 : -1\nstate 1"),
        r"line 16: probability -1 is not in \[0, 1\]",
    ),
    "empty choice": (
        ("\taction south [3, 0]\n\t\t2 : 1\n", "\taction south [3, 0]\n"),
        r"line 15: a choice without transitions",
    ),
    "before action": (
        ("\taction stay [0, 0]\n\t\t2 : 1", "\t\t2 : 1"),
        r"line 24: a transition before its state's first action",
    ),
    "before state": (("state 0 [1, 0] init\n", ""), r"line 11: an action before the first state"),
    "bracket": (("state 2 [0, 0]", "state 2 [0]"), r"line 23: 1 rewards, but earlier lines have 2"),
    "names": (
        ("cost gain", "cost"),
        r"@reward_models names 1 reward models \(cost\), but the reward brackets have 2",
    ),
    "number": (("\t\t2 : 0.75", "\t\t2 : 3/4x"), r"line 14: '3/4x' is not a number"),
    "state id": (("state 2 [0, 0]", "state two [0, 0]"), r"line 23: 'two' is not an integer"),
    "garbage": (("\t\t2 : 0.75", "\t\t2 0.75"), r"line 14: expected 'target : probability'"),
    "word": (("state 2 [0, 0]", "node 2"), r"line 23: expected 'state', 'action' or"),
    "rate": (("state 2 [0, 0]", "state 2 !3 [0, 0]"), r"line 23: '!3': an exit rate"),
    "dtmc": (("@type: MDP", "@type: DTMC"), r"line 15: a second action of state 0: a DTMC has one"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_malformed_files_are_refused_naming_file_and_line(tmp_path, case):
    (old, new), message = BAD[case]
    assert old in MDP
    path = write(tmp_path, MDP.replace(old, new, 1), "bad.drn")
    with pytest.raises(ValueError, match=r"^'[^']*bad\.drn'.*" + message):
        jp.load_mdp(path, reward_structure=0)


def test_empty_and_header_only_files(tmp_path):
    with pytest.raises(
        ValueError, match=r"'[^']*empty\.drn': no section @type, @nr_states, @model"
    ):
        jp.load_mdp(write(tmp_path, "", "empty.drn"))
    with pytest.raises(ValueError, match=r"line 1: expected a section"):
        jp.load_labels(write(tmp_path, "1 0 0.5\n", "tra.drn"))


# --------------------------------------------------------------------------- writing


def models(dtype):
    """A dense and a sparse MDP, and a DTMC, with thirds, zeros listed and a masked action."""
    P = np.zeros((4, 2, 4))
    P[0, 0, [1, 2]] = [1 / 3, 2 / 3]
    P[0, 1, 3] = 1
    P[1, 0, [0, 3]] = [0.1, 0.9]
    P[2, 0, 2] = P[3, 0, 3] = 1
    mask = np.array([[1, 1], [1, 0], [1, 0], [1, 1]], bool)
    P[3, 1, [0, 3]] = [0.25, 0.75]
    R = np.array([[1.5, -2], [0.1, 0], [0, 0], [7, 1 / 3]])
    dense = jp.make_mdp(P, R, action_mask=mask, initial_state=1, dtype=dtype)
    ns = np.array([[[1, 2], [3, -1]], [[0, 3], [-1, -1]], [[2, -1], [-1, -1]], [[3, -1], [0, 3]]])
    pr = np.where(ns >= 0, np.take_along_axis(P, np.maximum(ns, 0), axis=2), 0)
    sparse = jp.make_sparse_mdp(ns, pr, R, action_mask=mask, dtype=dtype)
    chain = jp.make_mdp(P[:, :1], R[:, :1], dtype=dtype)
    return {"dense": dense, "sparse": sparse, "dtmc": chain}


def assert_same_model(a, b):
    np.testing.assert_array_equal(np.asarray(to_dense(a).transitions), to_dense(b).transitions)
    np.testing.assert_array_equal(np.asarray(a.rewards), np.asarray(b.rewards))
    np.testing.assert_array_equal(np.asarray(a.action_mask), np.asarray(b.action_mask))
    assert a.initial_state == b.initial_state
    assert np.asarray(a.rewards).dtype == np.asarray(b.rewards).dtype


@pytest.mark.parametrize("x64", [False, True], ids=["float32", "float64"])
@pytest.mark.parametrize("suffix", [".drn", ".tra"])
@pytest.mark.parametrize("kind", ["dense", "sparse", "dtmc"])
def test_round_trips_are_exact(tmp_path, kind, suffix, x64):
    with jax.enable_x64(x64):
        dtype = np.float64 if x64 else np.float32
        mdp = models(dtype)[kind]
        labels = {"goal": np.arange(4) >= 2, "odd": np.arange(4) % 2 == 1}
        path = jp.save_mdp(tmp_path / f"model{suffix}", mdp, labels=labels, reward_name="cost")
        back = jp.load_mdp(path, dtype=dtype)
        assert_same_model(mdp, back)
        again = jp.load_mdp(path, dtype=dtype, layout="ragged")
        np.testing.assert_array_equal(to_dense(again).transitions, to_dense(back).transitions)
        read = jp.load_labels(path)
        for name, states in labels.items():
            np.testing.assert_array_equal(read[name], states)
        np.testing.assert_array_equal(np.flatnonzero(read["init"]), [mdp.initial_state])
        assert jp.load_mdp(path, reward_structure="cost").num_states == 4


def test_the_files_written(tmp_path):
    mdp = models(np.float32)["dense"]
    jp.save_mdp(tmp_path / "m.tra", mdp, labels={"goal": np.arange(4) == 2})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.lab", "m.srew", "m.tra", "m.trew"]
    assert (tmp_path / "m.tra").read_text().startswith("4 6 9\n0 0 1 0.3333333")
    assert (tmp_path / "m.lab").read_text() == '0="init" 1="deadlock" 2="goal"\n1: 0\n2: 2\n'
    text = jp.save_mdp(tmp_path / "m.drn", mdp).read_text()
    assert "@type: MDP\n" in text and "state 1 [0.0] init\n\taction 0 [0.10000000149011612]" in text


def test_a_privatized_release_can_be_written(tmp_path):
    """A release (``jp.privatize``) as DRN and PRISM files: the same model read back."""
    for kind in ("dense", "sparse"):
        mdp = models(np.float32)[kind]
        release = jp.privatize(jax.random.key(0), mdp, jp.Dirichlet(50.0), support="nonzero")
        labels = {"goal": np.arange(4) == 2}
        for suffix in (".drn", ".tra"):
            path = jp.save_mdp(tmp_path / f"{kind}{suffix}", release, labels=labels)
            back = jp.load_mdp(path, dtype=np.float32)
            assert_same_model(release, back)
            res = jp.check(back, 'Pmax=? [F "goal"]', labels=jp.load_labels(path))
            expected = jp.check(release, 'Pmax=? [F "goal"]', labels=labels)
            np.testing.assert_allclose(res.value_at_initial, expected.value_at_initial, rtol=1e-6)


def test_writing_refuses(tmp_path):
    mdp = models(np.float32)["dense"]
    with pytest.raises(ValueError, match="label 'a b' cannot be written"):
        jp.save_mdp(tmp_path / "m.drn", mdp, labels={"a b": np.ones(4, bool)})
    with pytest.raises(ValueError, match=r"label 'x' must be a bool array of shape \[S\] = \(4,\)"):
        jp.save_mdp(tmp_path / "m.tra", mdp, labels={"x": np.ones(3, bool)})
    with pytest.raises(ValueError, match="reward_name 'my cost' cannot be written"):
        jp.save_mdp(tmp_path / "m.drn", mdp, reward_name="my cost")
    with pytest.raises(ValueError, match="labels= and reward_name= are for .drn and .tra"):
        jp.save_mdp(tmp_path / "m.npz", mdp, labels={})
    assert not list(tmp_path.iterdir())  # nothing written


def test_a_mask_with_gaps_is_renumbered_with_a_warning(tmp_path):
    P = np.zeros((2, 2, 2))
    P[:, :, 1] = 1
    mdp = jp.make_mdp(P, np.array([[0, 1.0], [2, 0]]), action_mask=np.array([[0, 1], [1, 0]], bool))
    with pytest.warns(UserWarning, match="allowed actions of state 0"):
        path = jp.save_mdp(tmp_path / "m.drn", mdp)
    np.testing.assert_array_equal(jp.load_mdp(path).rewards, [[1], [2]])
