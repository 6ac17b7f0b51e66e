"""Storm itself (stormpy) reads the files the loader reads and gets the same numbers.

Skipped without stormpy (``pip install stormpy``: a prebuilt wheel, about 50 MB to download).
"""

import jax
import numpy as np
import prism_fixtures as pf
import pytest

import jaxprivmdp as jp
from jaxprivmdp.io._load import load_labels

pytestmark = pytest.mark.prism

stormpy = pytest.importorskip("stormpy")

T = 10


def storm_arrays(model):
    """Storm's model as `P [S, A, S]`, mask and the total one-step reward `[S, A]`."""
    M = model.transition_matrix
    S = model.nr_states
    A = max(M.get_row_group_end(s) - M.get_row_group_start(s) for s in range(S))
    P, mask, r = np.zeros((S, A, S)), np.zeros((S, A), bool), np.zeros((S, A))
    rewards = list(model.reward_models.values())
    if rewards:
        rewards[0].reduce_to_state_based_rewards(M, False)
    for s in range(S):
        start = M.get_row_group_start(s)
        for row in range(start, M.get_row_group_end(s)):
            mask[s, row - start] = True
            for entry in M.get_row(row):
                P[s, row - start, entry.column] = entry.value
            if rewards:
                rm = rewards[0]
                state = rm.state_rewards[s] if rm.has_state_rewards else 0.0
                action = rm.state_action_rewards[row] if rm.has_state_action_rewards else 0.0
                r[s, row - start] = state + action
    return P, mask, r


def dense(m):
    d = np.zeros((m.num_states, m.num_actions, m.num_states))
    ns, p = np.asarray(m.next_states), np.asarray(m.probs)
    for s, a, j in zip(*np.nonzero(ns >= 0), strict=True):
        d[s, a, ns[s, a, j]] += p[s, a, j]
    return d


def storm_value(model, formula):
    result = stormpy.model_checking(model, stormpy.parse_properties(formula)[0])
    return np.asarray(result.get_value_vector())


@pytest.mark.parametrize("make", [pf.gamble, pf.knuth_yao_die])
def test_storm_reads_the_files_as_the_loader_does(tmp_path, make):
    model = make()
    path = pf.write_storm(model, tmp_path)
    labels = load_labels(path)
    for rew in model.rewards:
        files = {
            "state_rewards": tmp_path / f"model.{rew.name}.state.rew",
            "transition_rewards": tmp_path / f"model.{rew.name}.trans.rew",
        }
        files = {k: str(v) for k, v in files.items() if v.is_file()}
        storm = stormpy.build_model_from_explicit(str(path), str(tmp_path / "model.lab"), **files)
        with jax.enable_x64(True):
            m = jp.load_mdp(path, reward_structure=rew.name, horizon=T, dtype=np.float64)
            values = np.asarray(jp.solve(m).values[0])
        P, mask, r = storm_arrays(storm)
        np.testing.assert_array_equal(dense(m), P)
        np.testing.assert_array_equal(np.asarray(m.action_mask), mask)
        np.testing.assert_allclose(np.asarray(m.rewards), r, rtol=1e-15)
        kind = "Rmax" if model.kind == "mdp" else "R"
        np.testing.assert_allclose(values, storm_value(storm, f"{kind}=? [C<={T}]"), rtol=1e-12)
        assert list(storm.initial_states) == [m.initial_state]
    for name in storm.labeling.get_labels():
        states = list(storm.labeling.get_states(name))
        np.testing.assert_array_equal(np.flatnonzero(labels[name]), states)


def test_prism_files_match_storm_on_the_prism_language_model(tmp_path):
    """The fixture's PRISM export of `gamble` has the semantics of its PRISM-language source
    (as Storm builds it): the same optimal values for every reward structure."""
    source = tmp_path / "gamble.nm"
    source.write_text(pf.GAMBLE_PRISM)
    program = stormpy.parse_prism_program(str(source))
    storm = stormpy.build_model(program, options=stormpy.BuilderOptions(build_full=True))
    path = pf.write_prism(pf.gamble(), tmp_path / "export", exact=True)
    for name in ("gain", "cost"):
        with jax.enable_x64(True):
            m = jp.load_mdp(path, reward_structure=name, horizon=T, dtype=np.float64)
            value = float(jp.solve(m).values[0, m.initial_state])
        expected = storm_value(storm, f"Rmax=? [C<={T}]".replace("Rmax", f'R{{"{name}"}}max'))
        (init,) = storm.initial_states
        np.testing.assert_allclose(value, expected[init], rtol=1e-12)
