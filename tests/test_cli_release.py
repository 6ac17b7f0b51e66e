"""The command line on a user's own files: the initial state, and releases that keep the
public support the support-aware sets need."""

import json

import numpy as np
import pytest

import jaxprivmdp as jp
from jaxprivmdp.cli import main

pytestmark = pytest.mark.cli

# `prism_model` (tests/conftest.py): a 3-state PRISM explicit model whose .lab's init is
# state 1, which earns 10 per step.


def _optimum(out_dir):
    (table,) = json.loads((out_dir / "sweep.json").read_text())["results"].values()
    return table[0]["optimal_value"]


def test_initial_state_of_a_prism_model_is_honoured_and_checked(tmp_path, prism_model):
    path = prism_model
    base = ["sweep", "--mdp", str(path), "--horizon", "2", "--ks", "40", "--trials", "2"]
    assert main([*base, "--initial-state", "2", "--out", str(tmp_path / "s2")]) == 0
    assert main([*base, "--out", str(tmp_path / "init")]) == 0
    assert jp.load_mdp(path, horizon=2).initial_state == 1  # the .lab's init
    assert _optimum(tmp_path / "s2") == 2.0  # state 2 earns 1 per step
    assert _optimum(tmp_path / "init") == 20.0  # state 1 earns 10 per step
    assert main([*base, "--initial-state", "99", "--out", str(tmp_path / "bad")]) == 2


def test_a_dense_release_keeps_its_support(tmp_path):
    P = np.zeros((3, 1, 3))
    P[0, 0] = [0.0, 0.4, 0.6]
    P[1, 0, 1] = P[2, 0, 2] = 1.0
    src = tmp_path / "true.npz"
    np.savez(src, transitions=P, rewards=np.zeros((3, 1)))
    out = tmp_path / "release.npz"
    rc = main(
        ["privatize", "--mdp", str(src), "--k", "5", "--eta", "0.4", "--support", "nonzero"]
        + ["--out", str(out)]
    )
    assert rc == 0
    rel = jp.load_mdp(out, horizon=2)
    np.testing.assert_array_equal(rel.support, P > 0)
    b = jp.cost_of_privacy(
        rel, np.zeros((2, 3), np.int32), jp.Dirichlet(5.0), jp.PaperSet(0.1, support_aware=True)
    )
    assert np.all(np.isfinite(b.lower))


def test_reward_structure_and_deadlocks_flags(tmp_path, prism_model):
    path = prism_model
    (tmp_path / "m.srew").unlink()
    (tmp_path / "m1.srew").write_text('# Reward structure "gain"\n# State rewards\n3 1\n1 10\n')
    (tmp_path / "m2.srew").write_text('# Reward structure "cost"\n# State rewards\n3 1\n2 3\n')
    base = ["sweep", "--mdp", str(path), "--horizon", "2", "--ks", "40", "--trials", "2"]
    assert main([*base, "--out", str(tmp_path / "none")]) == 2  # two structures: pick one
    assert main([*base, "--reward-structure", "gain", "--out", str(tmp_path / "g")]) == 0
    assert _optimum(tmp_path / "g") == 20.0
    assert main([*base, "--reward-structure", "1", "--out", str(tmp_path / "c")]) == 0
    assert _optimum(tmp_path / "c") == 0.0  # from state 1, which never reaches state 2
