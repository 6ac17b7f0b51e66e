"""Reading models: .npz (dense and sparse) and PRISM's explicit files as PRISM writes them.

Every variant PRISM and Storm write or read: tests/test_load_explicit.py."""

import numpy as np
import pytest

import jaxprivmdp as jp

# A 3-state PRISM MDP as `prism model.prism -exportmodel model.tra,srew,lab` writes it:
# header "states choices transitions", then "source choice target probability [action]".
TRA = """3 5 7
0 0 1 0.5 go
0 0 2 0.5 go
0 1 0 1 wait
1 0 2 0.8
1 0 1 0.2
1 1 0 1
2 0 2 1
"""
SREW = """3 2
0 1.5
1 -2
"""
# PRISM's MDP transition rewards are one per choice, written on each of its transitions.
TREW = """3 5 4
0 0 1 4
0 0 2 4
1 0 1 10
1 0 2 10
"""
LAB = """0="init" 1="deadlock" 2="goal"
1: 0
2: 2
"""


def write(tmp_path, **files):
    for name, text in files.items():
        (tmp_path / name.replace("_", ".")).write_text(text)
    return tmp_path / "model.tra"


@pytest.mark.integration
def test_prism_with_state_rewards_and_labels(tmp_path):
    path = write(tmp_path, model_tra=TRA, model_srew=SREW, model_lab=LAB)
    m = jp.load_mdp(path, horizon=3)
    assert isinstance(m, jp.SparseMDP)
    assert (m.num_states, m.num_actions, m.max_successors) == (3, 2, 2)
    assert m.initial_state == 1 and m.horizon == 3 and float(m.discount) == 1.0
    np.testing.assert_array_equal(m.action_mask, [[True, True], [True, True], [True, False]])
    P = np.asarray(jp.to_dense(m).transitions)
    np.testing.assert_allclose(P[0, 0], [0, 0.5, 0.5])
    np.testing.assert_allclose(P[1, 0], [0, 0.2, 0.8])
    np.testing.assert_allclose(np.asarray(m.rewards)[:, 0], [1.5, -2, 0])
    jp.solve(m)


def test_prism_with_transition_rewards(tmp_path):
    path = write(tmp_path, model_tra=TRA, model_trew=TREW)
    m = jp.load_mdp(path, discount=0.9)
    assert m.horizon is None and m.initial_state == 0
    # r(s, a) = the choice's reward (PRISM's MDP transition rewards are action rewards)
    np.testing.assert_allclose(np.asarray(m.rewards), [[4.0, 0.0], [10.0, 0.0], [0.0, 0.0]])


@pytest.mark.parametrize(
    ("tra", "match"),
    [
        ("3 5 8\n" + TRA.split("\n", 1)[1], "declares 8 transitions, the body has 7"),
        ("3 4 7\n" + TRA.split("\n", 1)[1], "declares 4 choices, the body has 5"),
        (TRA.replace("1 0 2 0.8", "1 0 2 zero"), "line 5: 'zero' is not a number"),
        (TRA.replace("1 0 2 0.8", "1 0 5 0.8"), "line 5: a state or choice is out of range"),
        (TRA.replace("1 0 2 0.8", "1 0 2"), "line 5: expected 'source choice target"),
        (TRA.replace("1 0 2 0.8", "1 0 2 0.7"), r"row \(state 1, action 0\) sums to 0.9"),
        ("3 5 7 1 2\n", "line 1: the header must have 2 numbers .DTMC.* or 3 .MDP"),
        ("", "is empty"),
    ],
)
def test_prism_errors_name_file_and_line(tmp_path, tra, match):
    path = write(tmp_path, model_tra=tra, model_srew=SREW)
    with pytest.raises(ValueError, match=match):
        jp.load_mdp(path, horizon=2)


def test_prism_reward_file_for_another_model(tmp_path):
    path = write(tmp_path, model_tra=TRA)
    other = tmp_path / "other.srew"
    other.write_text("4 1\n0 1\n")
    with pytest.raises(ValueError, match="for a model of 4 states, not 3"):
        jp.load_mdp(path, rewards=other, horizon=2)
    with pytest.warns(UserWarning, match="no reward file beside it.*every reward is 0"):
        jp.load_mdp(path, horizon=2)
    bad = tmp_path / "bad.trew"
    bad.write_text("3 5 1\n2 0 1 5\n")
    with pytest.raises(ValueError, match=r"line 2: \(2, 0, 1\) is not a transition"):
        jp.load_mdp(path, rewards=bad, horizon=2)


@pytest.mark.integration
def test_npz_dense_and_sparse(tmp_path):
    g = jp.examples.gridworld(3, 4, horizon=5, discount=1.0)
    sparse = tmp_path / "grid.npz"
    np.savez(sparse, next_states=g.next_states, probs=g.probs, rewards=g.rewards)
    m = jp.load_mdp(sparse, horizon=5)
    assert isinstance(m, jp.SparseMDP)
    np.testing.assert_array_equal(m.probs, g.probs)
    dense = tmp_path / "grid_dense.npz"
    d = jp.to_dense(g)
    np.savez(dense, transitions=d.transitions, rewards=d.rewards)
    md = jp.load_mdp(dense, horizon=5)
    assert isinstance(md, jp.TabularMDP)
    np.testing.assert_allclose(jp.solve(md).values, jp.solve(m).values, atol=1e-5)
    both = tmp_path / "both.npz"
    np.savez(
        both, transitions=d.transitions, next_states=g.next_states, probs=g.probs, rewards=d.rewards
    )
    with pytest.raises(ValueError, match="either 'transitions'"):
        jp.load_mdp(both, horizon=5)
    bad = tmp_path / "bad.npz"
    np.savez(bad, next_states=g.next_states + 20, probs=g.probs, rewards=g.rewards)
    with pytest.raises(ValueError, match="bad.npz.*outside"):
        jp.load_mdp(bad, horizon=5)


@pytest.mark.slow  # 8 s; test_cli.py::test_sweep_on_a_user_file sweeps a file by default
def test_cli_sweeps_a_prism_model_and_a_sparse_npz(tmp_path):
    from jaxprivmdp.cli import main

    path = write(tmp_path, model_tra=TRA, model_srew=SREW, model_lab=LAB)
    common = ["--trials", "2", "--ks", "5", "--horizon", "3"]
    assert main(["sweep", "--mdp", str(path), "--out", str(tmp_path / "a")] + common) == 0
    assert (tmp_path / "a" / "sweep.json").is_file()
    g = jp.examples.gridworld(3, 3, horizon=4, discount=1.0)
    npz = tmp_path / "grid.npz"
    np.savez(npz, next_states=g.next_states, probs=g.probs, rewards=g.rewards)
    out = tmp_path / "b"
    assert main(["sweep", "--mdp", str(npz), "--out", str(out), "--support-aware"] + common) == 0
    assert (out / "sweep.png").is_file()
    # privacy and privatize take sparse models too; the release keeps the successor lists.
    rc = main(["privacy", "--mdp", str(npz), "--k", "5", "--eta", "0.05", "--out", str(out)])
    assert rc == 0
    release = tmp_path / "private.npz"
    rc = main(["privatize", "--mdp", str(path), "--k", "5", "--eta", "0.2", "--out", str(release)])
    assert rc == 0
    with np.load(release) as f:
        assert {"next_states", "probs", "rewards", "epsilon"} <= set(f.files)
        assert "transitions" not in f.files
    private = jp.load_mdp(release, horizon=3)
    assert isinstance(private, jp.SparseMDP)
    np.testing.assert_array_equal(private.next_states, jp.load_mdp(path, horizon=3).next_states)
