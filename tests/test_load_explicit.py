"""PRISM's and Storm's explicit files, in every variant the tools write, load with the tools'
numbers: exact oracles (tests/prism_fixtures.py) and, where stormpy is installed, Storm."""

import dataclasses

import jax
import numpy as np
import prism_fixtures as pf
import pytest

import jaxprivmdp as jp
from jaxprivmdp.io._load import load_labels


def dense(m):
    """`[S, A, S]` probabilities of a loaded model, float64."""
    d = np.zeros((m.num_states, m.num_actions, m.num_states))
    ns, p = np.asarray(m.next_states), np.asarray(m.probs, np.float64)
    for s, a, j in zip(*np.nonzero(ns >= 0), strict=True):
        d[s, a, ns[s, a, j]] += p[s, a, j]
    return d


def expected(model):
    """The exact model as float64 arrays: `P [S, A, S]`, mask, `r [structure, S, A]`."""
    S = model.num_states
    A = max(len(c) for c in model.choices)
    P, mask = np.zeros((S, A, S)), np.zeros((S, A), bool)
    for s, choices in enumerate(model.choices):
        for c, ch in enumerate(choices):
            mask[s, c] = True
            for t, p in ch.dist:
                P[s, c, t] = float(p)
    r = np.zeros((len(model.rewards), S, A))
    for i in range(len(model.rewards)):
        for s, row in enumerate(pf.expected_rewards(model, i)):
            r[i, s, : len(row)] = [float(x) for x in row]
    return P, mask, r


def load64(path, **kw):
    with jax.enable_x64(True):
        return jp.load_mdp(path, dtype=np.float64, **kw)


PRISM_VARIANTS = {
    "4.7 (no headers)": dict(reward_headers=False),
    "4.8 (reward headers)": {},
    "dev (# Transitions, # Labels)": dict(dev_headers=True),
    "rows": dict(rows=True),
    "exact": dict(exact=True),
    "rows and exact": dict(rows=True, exact=True, dev_headers=True),
    "no actions": dict(actions=False),
}


@pytest.mark.parametrize("variant", PRISM_VARIANTS)
@pytest.mark.parametrize("make", [pf.gamble, pf.knuth_yao_die])
def test_prism_exports_load_with_exact_numbers(tmp_path, variant, make):
    model = make()
    path = pf.write_prism(model, tmp_path, **PRISM_VARIANTS[variant])
    P, mask, r = expected(model)
    named = PRISM_VARIANTS[variant].get("reward_headers", True)
    for i, rew in enumerate(model.rewards):
        m = load64(path, reward_structure=rew.name if named else i, horizon=2)
        np.testing.assert_array_equal(np.asarray(m.rewards), r[i])
    # Decimal files round-trip float64; rationals are parsed exactly, then rounded once.
    np.testing.assert_array_equal(dense(m), P)
    np.testing.assert_array_equal(np.asarray(m.action_mask), mask)
    assert m.initial_state == 0
    labels = load_labels(path)
    assert list(labels) == list(model.labels)
    for name, states in model.labels.items():
        np.testing.assert_array_equal(np.flatnonzero(labels[name]), sorted(states))


def test_dtmc_is_an_mdp_with_one_action_and_gives_knuth_yao(tmp_path):
    path = pf.write_prism(pf.knuth_yao_die(), tmp_path, exact=True)
    T = 200  # the remaining mass after T flips is below 1e-30
    with jax.enable_x64(True):
        flips = jp.load_mdp(path, reward_structure="flips", horizon=T, dtype=np.float64)
        six = jp.load_mdp(path, reward_structure="six", horizon=T, dtype=np.float64)
        assert flips.num_actions == 1 and flips.max_successors == 2
        # Expected coin flips 11/3; P[reach six] = 1/6 (a transition reward on 6 -> six).
        np.testing.assert_allclose(float(jp.solve(flips).values[0, 0]), 11 / 3, rtol=1e-14)
        np.testing.assert_allclose(float(jp.solve(six).values[0, 0]), 1 / 6, rtol=1e-14)
    # DTMC transition rewards are Σ_t P(s, t) r(s, t): state 6 goes to six w.p. 1/2.
    assert float(six.rewards[6, 0]) == 0.5


@pytest.mark.parametrize("fmt", ["prism", "prism rows exact", "storm"])
def test_finite_horizon_values_match_the_exact_oracle(tmp_path, fmt):
    model = pf.gamble()
    if fmt == "storm":
        path = pf.write_storm(model, tmp_path)
    else:
        path = pf.write_prism(model, tmp_path, rows="rows" in fmt, exact="exact" in fmt)
    with jax.enable_x64(True):
        m = jp.load_mdp(path, reward_structure="gain", horizon=10, dtype=np.float64)
        values = np.asarray(jp.solve(m).values[0])
    oracle = [float(v) for v in pf.exact_values(model, 0, 10)]
    np.testing.assert_allclose(values, oracle, rtol=1e-14, atol=1e-15)


def test_state_and_transition_rewards_of_one_structure_are_summed(tmp_path):
    model = pf.gamble()
    model.rewards = model.rewards[:1]  # one structure: model.srew and model.trew
    path = pf.write_prism(model, tmp_path)
    assert {p.name for p in tmp_path.iterdir()} >= {"model.srew", "model.trew"}
    m = load64(path, horizon=2)
    # gain: state reward 1/2 in 0 plus the choice rewards 1 (safe), 4 (collect), 1/5 (retry).
    np.testing.assert_array_equal(
        np.asarray(m.rewards), [[1.5, 0.5], [4, 0], [0.2, 0], [0, 0], [0, 0]]
    )
    # rewards= takes the files of one structure (or one file).
    both = load64(path, rewards=[tmp_path / "model.srew", tmp_path / "model.trew"], horizon=2)
    np.testing.assert_array_equal(np.asarray(both.rewards), np.asarray(m.rewards))
    only_state = load64(path, rewards=tmp_path / "model.srew", horizon=2)
    np.testing.assert_array_equal(np.asarray(only_state.rewards)[:, 0], [0.5, 0, 0, 0, 0])
    with pytest.raises(ValueError, match="2 state reward files"):
        jp.load_mdp(path, rewards=[tmp_path / "model.srew"] * 2, horizon=2)
    with pytest.raises(ValueError, match="not both"):
        jp.load_mdp(path, rewards=tmp_path / "model.srew", reward_structure=0, horizon=2)


def test_reward_structures_are_chosen_by_name_or_index(tmp_path):
    path = pf.write_prism(pf.gamble(), tmp_path)
    with pytest.raises(ValueError, match=r"2 reward structures.*0: 'gain' \(model1.srew, model1"):
        jp.load_mdp(path, horizon=2)
    with pytest.raises(ValueError, match=r"no reward structure 'time'.*1: 'cost'"):
        jp.load_mdp(path, reward_structure="time", horizon=2)
    with pytest.raises(ValueError, match="no reward structure 2"):
        jp.load_mdp(path, reward_structure=2, horizon=2)
    cost = jp.load_mdp(path, reward_structure="cost", horizon=2)
    np.testing.assert_array_equal(np.asarray(cost.rewards)[2:4], [[1, 1], [1, 0]])
    # Without headers (PRISM 4.7), the structures have no names: pick them by index.
    pf.write_prism(pf.gamble(), tmp_path / "old", reward_headers=False)
    with pytest.raises(ValueError, match="0: unnamed"):
        jp.load_mdp(tmp_path / "old" / "model.tra", reward_structure="gain", horizon=2)
    old = jp.load_mdp(tmp_path / "old" / "model.tra", reward_structure=1, horizon=2)
    np.testing.assert_array_equal(np.asarray(old.rewards), np.asarray(cost.rewards))


def test_no_rewards_loads_zeros_with_a_warning(tmp_path):
    path = pf.write_prism(pf.gamble(), tmp_path, parts=("tra", "lab"))
    with pytest.warns(UserWarning, match="every reward is 0"):
        m = jp.load_mdp(path, horizon=2)
    assert not np.asarray(m.rewards).any()


def test_a_numbered_model_beside_is_not_a_reward_structure(tmp_path):
    model = pf.gamble()
    model.rewards = model.rewards[:1]
    path = pf.write_prism(model, tmp_path, parts=("tra", "lab"))
    pf.write_prism(model, tmp_path, stem="model1")  # another model, with its own rewards
    with pytest.warns(UserWarning, match="every reward is 0"):
        jp.load_mdp(path, horizon=2)


def test_prism_mdp_transition_rewards_are_one_per_choice(tmp_path):
    (tmp_path / "m.tra").write_text("2 2 3\n0 0 0 0.5\n0 0 1 0.5\n1 0 1 1\n")
    # PRISM writes a choice's reward on each of its transitions; a line per transition.
    (tmp_path / "m.trew").write_text("2 2 2\n0 0 0 -3\n0 0 1 -3\n")
    m = load64(tmp_path / "m.tra", horizon=1)
    np.testing.assert_array_equal(np.asarray(m.rewards)[:, 0], [-3, 0])
    (tmp_path / "m.trew").write_text("2 2 2\n0 0 0 -3\n0 0 1 5\n")
    with pytest.raises(ValueError, match="m.trew' line 3: choice 0 of state 0 has transition re"):
        jp.load_mdp(tmp_path / "m.tra", horizon=1)
    # Storm: rewards per transition, weighted by their probabilities.
    (tmp_path / "s.tra").write_text("mdp\n0 0 0 0.5\n0 0 1 0.5\n1 0 1 1\n")
    (tmp_path / "s.trans.rew").write_text("0 0 0 -3\n0 0 1 5\n")
    np.testing.assert_array_equal(np.asarray(load64(tmp_path / "s.tra", horizon=1).rewards)[0], 1)


def test_comment_headers_are_checked_and_the_init_message_is_right(tmp_path):
    path = pf.write_prism(pf.gamble(), tmp_path, dev_headers=True)
    lab = tmp_path / "model.lab"
    lab.write_text('# Labels\n0="deadlock" 1="goal"\n4: 1\n')
    with pytest.raises(ValueError, match=r"declares no label 'init' \(its labels: 'deadlock', 'g"):
        jp.load_mdp(path, reward_structure=0, horizon=2)
    assert jp.load_mdp(path, reward_structure=0, horizon=2, initial_state=3).initial_state == 3
    lab.write_text('# Labels\n0="init" 1="goal"\n1: 0\n4: 0 1\n')
    with pytest.raises(ValueError, match=r"2 states are labelled 'init' \(1, 4\); pass initial_s"):
        jp.load_mdp(path, reward_structure=0, horizon=2)
    lab.write_text('# Labels\n0="init" 1="goal"\n2: 0\n')
    assert jp.load_mdp(path, reward_structure=0, horizon=2).initial_state == 2
    srew = tmp_path / "model1.srew"
    srew.write_text(srew.read_text().replace("State rewards", "Transition rewards"))
    with pytest.raises(ValueError, match="line 2: '# Transition rewards', but it is read as the"):
        jp.load_mdp(path, reward_structure=0, horizon=2)


@pytest.mark.parametrize(
    ("tra", "match"),
    [
        ("# Transitions (CTMC)\n2 2\n0 1 3\n1 0 2\n", "line 1: a CTMC .* reads DTMCs and MDPs"),
        ("2 2\n0 1 3\n1 0 2\n", r"line 2: probability 3 > 1: a CTMC's rates\?"),
        ("ctmc\n0 1 3\n1 0 2\n", "line 1: a CTMC"),
        ("ma\n0 ! 1 1\n", "line 1: a Markov automaton"),
        ("2 2 2 2\n- - 0 - 0\n", "a POMDP"),
        ("# Transitions (IMDP)\n1 1 1\n0 0 0 [0.5,0.4]\n", "line 3: .* lower bound exceeds"),
        ("# Transitions (MDP)\n2 2\n0 1 1\n1 0 1\n", "is not that of the MDP"),
        ('# Labels\n0="init"\n', "this is no transitions file"),
        ("2 2 2\n0 0 1 1\n1 0 0 [0.5,1]\n", "line 3: '.0.5,1.' is not a number .an interval"),
        ("2 1 3\n0 0.5:1 0.5:0\n1 1:1\n", "declares 1 choices, the body has 2"),
        ("2 3 3\n0 1:1 x\n1 1:1\n1 1/0:0\n", r"line 4: '1/0' is not a number"),
        ("2 3\n0 1 1\n1 0 2\n", "line 3: probability 2 > 1"),
        ("1 2 3 4 5\n", "the header must have 2 numbers .DTMC"),
    ],
)
def test_what_is_no_dtmc_or_mdp_is_refused_clearly(tmp_path, tra, match):
    (tmp_path / "m.tra").write_text(tra)
    with pytest.raises(ValueError, match=match):
        jp.load_mdp(tmp_path / "m.tra", horizon=1)


def test_deadlocks_are_named_or_get_self_loops(tmp_path):
    (tmp_path / "m.tra").write_text("4 2 2\n0 0 1 1\n2 0 0 1\n")
    (tmp_path / "m.srew").write_text("4 1\n3 7\n")
    with pytest.raises(ValueError, match=r"m.tra': states 1, 3 have no transition .deadlock.; pa"):
        jp.load_mdp(tmp_path / "m.tra", horizon=1)
    with pytest.raises(ValueError, match="deadlocks must be one of"):
        jp.load_mdp(tmp_path / "m.tra", horizon=1, deadlocks="ignore")
    m = load64(tmp_path / "m.tra", horizon=1, deadlocks="self-loop")
    np.testing.assert_array_equal(
        dense(m)[:, 0], [[0, 1, 0, 0], [0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 1]]
    )
    np.testing.assert_array_equal(np.asarray(m.rewards)[:, 0], [0, 0, 0, 7])  # the state's reward
    # Storm: the states are those the file mentions; the deadlocks get self-loops too.
    (tmp_path / "s.tra").write_text("dtmc\n1 0 1\n")
    (tmp_path / "s.state.rew").write_text("0 2\n")
    with pytest.raises(ValueError, match="state 0 has no transition"):
        jp.load_mdp(tmp_path / "s.tra", horizon=1)
    s = load64(tmp_path / "s.tra", horizon=1, deadlocks="self-loop")
    np.testing.assert_array_equal(dense(s)[:, 0], np.eye(2)[[0, 0]])
    np.testing.assert_array_equal(np.asarray(s.rewards)[:, 0], [2, 0])
    labels = load_labels(tmp_path / "m.tra", num_states=4)
    np.testing.assert_array_equal(labels["deadlock"], [False, True, False, True])
    np.testing.assert_array_equal(labels["init"], [True, False, False, False])


def test_storm_files_load_like_the_prism_files(tmp_path):
    model = pf.gamble()
    prism = pf.write_prism(model, tmp_path / "prism")
    storm = pf.write_storm(model, tmp_path / "storm")
    for name in ("gain", "cost"):
        a, b = (
            load64(prism, reward_structure=name, horizon=2),
            load64(storm, reward_structure=name, horizon=2),
        )
        np.testing.assert_array_equal(np.asarray(a.rewards), np.asarray(b.rewards))
    np.testing.assert_array_equal(dense(a), dense(b))
    labels = load_labels(storm)
    assert list(labels) == ["init", "deadlock", "won", "end"]
    np.testing.assert_array_equal(labels["won"], [False, True, False, False, False])
    # One unnamed structure: model.state.rew and model.trans.rew.
    one = dataclasses.replace(model, rewards=[dataclasses.replace(model.rewards[0], name=None)])
    path = pf.write_storm(one, tmp_path / "one")
    assert {p.name for p in path.parent.iterdir()} >= {"model.state.rew", "model.trans.rew"}
    gain = load64(prism, reward_structure="gain", horizon=2)
    np.testing.assert_array_equal(
        np.asarray(load64(path, horizon=2).rewards), np.asarray(gain.rewards)
    )


def test_labels_errors_name_file_and_line(tmp_path):
    lab = tmp_path / "m.lab"
    lab.write_text('0="init" 1="goal"\n0: 0\n5: 1\n')
    with pytest.raises(ValueError, match="pass num_states="):
        load_labels(lab)
    with pytest.raises(ValueError, match=r"m.lab' line 3: state 5 is out of range"):
        load_labels(lab, num_states=3)
    lab.write_text('0="init" 1="goal"\n0: 0\n2: 3\n')
    with pytest.raises(ValueError, match="line 3: no label has index 3"):
        load_labels(lab, num_states=3)
    lab.write_text("init goal\n0: 0\n")
    with pytest.raises(ValueError, match="line 1: expected the label declarations"):
        load_labels(lab, num_states=3)
    lab.write_text("#DECLARATION\ninit goal\n#END\n0 init\n2 goal done\n")
    with pytest.raises(ValueError, match="line 5: label 'done' is not declared"):
        load_labels(lab, num_states=3)
    lab.write_text("#DECLARATION\ninit goal\n#END\n0 init\n2 goal\n")
    labels = load_labels(lab, num_states=3)
    np.testing.assert_array_equal(labels["goal"], [False, False, True])
    np.testing.assert_array_equal(labels["deadlock"], [False, False, False])  # no .tra beside


def test_exact_rationals_are_rounded_once(tmp_path):
    (tmp_path / "m.tra").write_text("3 5\n0 0 1/3\n0 1 1/3\n0 2 1/3\n1 1 1\n2 2 1\n")
    (tmp_path / "m.srew").write_text("3 1\n0 1/10\n")
    m = load64(tmp_path / "m.tra", horizon=1)
    assert np.asarray(m.probs)[0, 0].tolist() == [1 / 3] * 3
    assert float(m.rewards[0, 0]) == 0.1


def test_reward_files_are_recognised_and_errors_name_file_and_line(tmp_path):
    (tmp_path / "m.tra").write_text("2 3\n0 0 1/2 go\n0 1 1/2 go\n1 1 1 stay\n")  # DTMC, actions
    odd = tmp_path / "rewards.txt"
    odd.write_text("# Reward structure\n# State rewards\n2 1\n1 3\n")  # unnamed, with headers
    m = load64(tmp_path / "m.tra", rewards=odd, horizon=1)
    np.testing.assert_array_equal(np.asarray(m.rewards)[:, 0], [0, 3])
    odd.write_text("2 1\n1 3\n")
    with pytest.raises(ValueError, match="rewards must be a .srew or .trew file"):
        jp.load_mdp(tmp_path / "m.tra", rewards=odd, horizon=1)
    srew = tmp_path / "m.srew"
    for text, match in [
        ("2 1\n1 x\n", r"m.srew' line 2: 'x' is not a number"),
        ("2 2\n1 3\n", "the header declares 2 rewards, the body has 1"),
        ("2 1\n2 3\n", "line 2: state 2 is out of range"),
        ("2 1 1\n1 3\n", "line 1: the header must have 2 numbers"),
    ]:
        srew.write_text(text)
        with pytest.raises(ValueError, match=match):
            jp.load_mdp(tmp_path / "m.tra", horizon=1)
    srew.unlink()
    trew = tmp_path / "m.trew"
    for text, match in [
        ("2 1\n1 0 5\n", r"line 2: \(1, 0\) is not a transition of the model"),
        ("2 2\n0 1 5\n0 1 5\n", "line 3: this transition's reward is listed twice"),
        ("2 1\n0 1 5 7\n", "line 2: expected 'source target reward'"),
    ]:
        trew.write_text(text)
        with pytest.raises(ValueError, match=match):
            jp.load_mdp(tmp_path / "m.tra", horizon=1)
    trew.write_text("2 2\n0 0 4\n0 1 2\n")
    np.testing.assert_array_equal(
        np.asarray(load64(tmp_path / "m.tra", horizon=1).rewards), [[3], [0]]
    )
