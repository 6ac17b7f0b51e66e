"""Interval models through the property layer's other doors: the two-quantifier grammar,
``check_all`` (boolean queries, filters), ``nature_choice`` and the CLI's ``check``."""

import json

import jax
import numpy as np
import pytest
from scipy.optimize import linprog

import jaxprivmdp as jp
from jaxprivmdp.properties.core import parse_property


def idle_or_go(dtype=np.float32):
    """s0: "idle" (a self-loop) or "go": the goal in [0.3, 0.7], a sink the rest."""
    lo, up = np.zeros((3, 2, 3)), np.zeros((3, 2, 3))
    lo[0, 0, 0] = up[0, 0, 0] = 1.0
    lo[0, 1, 1:], up[0, 1, 1:] = 0.3, 0.7
    for s in (1, 2):
        lo[s, :, s] = up[s, :, s] = 1.0
    labels = {"goal": np.array([False, True, False])}
    return jp.make_interval_mdp(lo, up, np.zeros((3, 2)), dtype=dtype), labels


@pytest.mark.parametrize(
    "text, opt, nature",
    [
        ('Pmaxmin=? [F "a"]', "max", "min"),
        ('Pminmax=? [F "a"]', "min", "max"),
        ('R{"t"}maxmax=? [F "a"]', "max", "max"),
        ("Rminmin=? [C<=3]", "min", "min"),
        ('Pmax=? [F "a"]', "max", None),
        ('P=? [F "a"]', None, None),
    ],
)
def test_two_quantifiers_parse(text, opt, nature):
    p = parse_property(text)
    assert (p.opt, p.nature) == (opt, nature)


def test_one_quantifier_on_an_interval_mdp_shows_both_forms():
    m, labels = idle_or_go()
    with pytest.raises(ValueError, match=r"Pmaxmin=\? .*Pmaxmax=\?"):
        jp.check(m, 'Pmax=? [F "goal"]', labels=labels)
    with pytest.raises(ValueError, match="nature's optimum must be given"):
        jp.check(m, 'P=? [F "goal"]', labels=labels)


def test_interval_dtmc_takes_natures_quantifier():
    lo, up = np.zeros((3, 1, 3)), np.zeros((3, 1, 3))
    lo[0, 0, :] = [0.0, 0.2, 0.3]
    up[0, 0, :] = [0.5, 0.6, 0.8]
    for s in (1, 2):
        lo[s, 0, s] = up[s, 0, s] = 1.0
    labels = {"goal": np.array([False, True, False])}
    with jax.enable_x64(True):
        m = jp.make_interval_mdp(lo, up, np.zeros((3, 1)), dtype=np.float64)
        pmin = jp.check(m, 'Pmin=? [F "goal"]', labels=labels)
        pmax = jp.check(m, 'Pmax=? [F "goal"]', labels=labels)
    # s0 loops on itself up to 0.5; the value is the goal's share of what leaves: min 0.2 of
    # (0.2 + 0.8), nothing kept; max 0.6 of (0.6 + 0.3), 0.1 kept (keeping 0.5 would leave
    # the goal 0.2 of 0.5)
    assert float(pmin.value_at_initial) == pytest.approx(0.2, rel=1e-6)
    assert float(pmax.value_at_initial) == pytest.approx(2 / 3, rel=1e-6)
    assert bool(pmin.converged) and bool(pmax.converged)


@pytest.mark.integration
def test_check_all_boolean_and_filter_queries():
    m, labels = idle_or_go()
    out = jp.check_all(
        m, 'Pmaxmin>=0.25 [F "goal"]; Pmaxmin>0.5 [F "goal"]; filter(max, Pmaxmax=? [F "goal"])',
        labels=labels,
    )  # fmt: skip
    assert bool(out[0].verdict_at_initial) and bool(out[0].decided[0])
    assert not bool(out[1].verdict_at_initial)
    assert float(out[2].value) == pytest.approx(1.0)


@pytest.mark.parametrize("nature", ["min", "max"])
@pytest.mark.parametrize("sparse", [False, True])
def test_nature_choice_is_the_lp_optimum(nature, sparse):
    rng = np.random.default_rng(3)
    S, A = 5, 2
    p = rng.dirichlet(np.ones(S), size=(S, A))
    lo, up = np.clip(p - 0.15, 0, 1), np.clip(p + 0.15, 0, 1)
    v = rng.uniform(size=S)
    with jax.enable_x64(True):
        m = jp.make_interval_mdp(lo, up, np.zeros((S, A)), dtype=np.float64)
        m = jp.to_sparse(m) if sparse else m
        x = np.asarray(jax.jit(lambda m, v: jp.nature_choice(m, v, nature=nature))(m, v))
    sign = 1 if nature == "max" else -1
    for s in range(S):
        for a in range(A):
            row = x[s, a]
            w = v if not sparse else v[np.maximum(np.asarray(m.next_states)[s, a], 0)]
            ref = linprog(-sign * v, A_eq=np.ones((1, S)), b_eq=[1],
                          bounds=list(zip(lo[s, a], up[s, a], strict=True)))  # fmt: skip
            assert row.sum() == pytest.approx(1.0, abs=1e-12)
            assert float(row @ w) == pytest.approx(-sign * ref.fun, abs=1e-12)


def test_nature_choice_refuses_bad_arguments():
    m, _ = idle_or_go()
    with pytest.raises(ValueError, match="nature must be"):
        jp.nature_choice(m, np.zeros(3), nature="worst")
    with pytest.raises(ValueError, match="shape"):
        jp.nature_choice(m, np.zeros(4), nature="min")
    with pytest.raises(TypeError, match="IntervalMDP"):
        jp.nature_choice(jp.examples.paper_gridworld() if hasattr(jp.examples, "paper_gridworld")
                         else object(), np.zeros(3), nature="min")  # fmt: skip


@pytest.mark.integration
def test_cli_checks_an_interval_file(tmp_path):
    from jaxprivmdp.cli import main

    m, labels = idle_or_go()
    jp.save_mdp(tmp_path / "m.tra", m, labels=labels)
    out = tmp_path / "out"
    args = ["check", "--mdp", str(tmp_path / "m.tra"), "--labels", str(tmp_path / "m.lab")]
    props = 'Pmaxmin=? [F "goal"]; Pmaxmax=? [F "goal"]'
    code = main([*args, "--property", props, "--out", str(out)])
    assert code in (0, None)
    record = json.loads((out / "check.json").read_text())
    text = json.dumps(record)
    assert "Pmaxmin" in text and "Pmaxmax" in text


def _chain(row, rewards=(1.0, 0.0, 0.0)):
    """s0's one row over (s0, goal, sink); goal and sink absorbing; float64."""
    lo, up = np.zeros((3, 1, 3)), np.zeros((3, 1, 3))
    lo[0, 0], up[0, 0] = row
    lo[1, 0, 1] = up[1, 0, 1] = lo[2, 0, 2] = up[2, 0, 2] = 1.0
    r = np.asarray(rewards).reshape(3, 1)
    return jp.make_interval_mdp(lo, up, r, dtype=np.float64)


LABELS = {"goal": np.array([False, True, False])}


def test_tiny_genuine_masses_are_not_read_as_zero():
    """A mass of 1e-13 to the goal, or of 1e-12 to a sink, decides a value over many steps:
    the graph analysis must not round it away (it read masses below 1e-12 as 0)."""
    with jax.enable_x64(True):
        one = jp.check(_chain(([1 - 1e-13, 1e-13, 0], [1 - 1e-13, 1e-13, 0])), 'Pmin=? [F "goal"]',
                       labels=LABELS)  # fmt: skip
        half = jp.check(
            _chain(([1 - 2.1e-12, 1.1e-12, 1e-12], [1 - 2.1e-12, 1.1e-12, 1e-12])),
            'Pmin=? [F "goal"]', labels=LABELS,
        )  # fmt: skip
        cost = jp.check(_chain(([0, 1 - 1e-13, 1e-13], [0, 1 - 1e-13, 1e-13])), 'Rmin=? [F "goal"]',
                        labels=LABELS)  # fmt: skip
    assert float(one.lower[0]) == 1.0 and bool(one.converged)
    assert float(half.lower[0]) <= 1.1 / 2.1 <= float(half.upper[0])
    assert float(half.upper[0]) < 1.0  # not decided as 1
    assert float(cost.value_at_initial) == np.inf


def test_rounding_never_sends_mass_to_an_infinite_state():
    """Nature can avoid the sink exactly (0.89 + 0.11 = 1): the expected reward is finite
    (1 / 0.11 with the goal's most mass), though the fill may round 1e-16 onto the sink."""
    with jax.enable_x64(True):
        m = _chain(([0.5518, 0.0341, 0.0], [0.89, 1 - 0.89, 1.0]))
        rmin = jp.check(m, 'Rmin=? [F "goal"]', labels=LABELS)
        rmax = jp.check(m, 'Rmax=? [F "goal"]', labels=LABELS)
    assert float(rmin.lower[0]) <= 1 / 0.11 <= float(rmin.upper[0])
    assert bool(rmin.converged)
    assert float(rmax.value_at_initial) == np.inf


@pytest.mark.parametrize(
    "seed", [0, 1, *(pytest.param(s, marks=pytest.mark.integration) for s in (2, 3))]
)
def test_one_entry_per_state_graph_analysis(seed):
    """A deterministic interval DTMC (as many entries as states: a per-state mask and a
    per-entry one have the same shape): probabilities 0/1 and infinite rewards decided by
    following each state's one successor."""
    rng = np.random.default_rng(seed)
    S = 9
    succ = rng.integers(0, S, S)
    goal = np.zeros(S, bool)
    goal[rng.choice(S, 2, replace=False)] = True
    P = np.zeros((S, 1, S))
    P[np.arange(S), 0, succ] = 1.0
    reach = goal.copy()
    for _ in range(S):
        reach |= reach[succ]
    m = jp.make_interval_mdp(P, P, np.ones((S, 1)))
    for q in ("Pmin", "Pmax"):
        res = jp.check(m, f'{q}=? [F "goal"]', labels={"goal": goal})
        np.testing.assert_array_equal(np.asarray(res.values), reach.astype(np.float32))
    res = jp.check(m, 'Rmax=? [F "goal"]', labels={"goal": goal})
    assert np.all(np.isinf(np.asarray(res.values)[~reach]))
    assert np.all(np.isfinite(np.asarray(res.values)[reach]))


@pytest.mark.parametrize("sparse", [False, True])
def test_tiny_mass_on_an_infinite_state_read_alike_by_graph_and_kernel(sparse):
    """s0's action 0 pays 1 and may put up to 1e-14 on s1, which pays forever (inf); action 1
    pays 2 and stops. Nature maximizing makes action 0 worth inf, so Rminmax = 2: the kernel
    must read the 1e-14 as the graph does (a threshold from the row's own entries, not from
    a dense row's 60), else it verifies the upper bound 1."""
    S, d = 60, 1e-14
    lo, up = np.zeros((S, 2, S)), np.zeros((S, 2, S))
    lo[0, 0, 2], up[0, 0, 2] = 1 - d, 1.0
    up[0, 0, 1] = d
    lo[0, 1, 2] = up[0, 1, 2] = 1.0
    for s in range(1, S):
        lo[s, :, s] = up[s, :, s] = 1.0
    rewards = np.zeros((S, 2))
    rewards[0], rewards[1] = [1.0, 2.0], [1.0, 1.0]
    with jax.enable_x64(True):
        m = jp.make_interval_mdp(lo, up, rewards, dtype=np.float64)
        m = jp.to_sparse(m) if sparse else m
        goal = {"goal": np.eye(S, dtype=bool)[2]}
        for prop in ("Rminmax=? [C]", 'Rminmax=? [F "goal"]'):
            res = jp.check(m, prop, labels=goal)
            assert float(res.lower[0]) <= 2.0 <= float(res.upper[0]), prop
            assert float(res.values[1]) == np.inf, prop
