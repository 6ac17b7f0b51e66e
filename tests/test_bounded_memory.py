"""Step-bounded properties in memory ``O(S)``: ``check`` keeps only the first step's decision
rule unless ``step_policy=True`` asks for every step's.

Oracles share no code with the library: a NumPy backward induction in float64 (the rule of the
first step is greedy for the values with ``k − 1`` steps to go), and a jaxpr walk that looks
for a `[k, S]` array anywhere in the traced program (scan bodies included).
"""

import json

import jax
import numpy as np
import pytest
from conftest import equations

import jaxprivmdp as jp
from jaxprivmdp.cli import main

S, A, K = 6, 3, 23  # distinct sizes, and K·S beyond the model's `[S, A, S]`: a `[K, S]`
# array is recognized by its shape
MODES = [pytest.param(False, id="float32"), pytest.param(True, id="float64")]
SPARSE = [pytest.param(False, id="dense"), pytest.param(True, id="sparse")]
# (property, fixed states' label or None, reward problem, minimize)
PROPERTIES = [
    (f'Pmax=? [F<={K} "goal"]', False, False),
    (f'Pmin=? [!"fail" U<={K} "goal"]', False, True),
    (f'Pmax=? [G<={K} !"fail"]', False, False),
    (f"Rmin=? [C<={K}]", True, True),
    ('Pmax=? [X "goal"]', False, False),
]


def _arrays(seed=0):
    """A random model with masked actions, ``goal`` and ``fail`` absorbing."""
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(S), size=(S, A)) * (rng.uniform(size=(S, A, S)) < 0.7)
    P[..., 0] += 1e-3  # no empty row
    P /= P.sum(-1, keepdims=True)
    R = rng.uniform(0.0, 1.0, size=(S, A))
    mask = rng.uniform(size=(S, A)) < 0.7
    mask[:, 2] = True
    mask[0, 0] = False  # the first allowed action of state 0 is not action 0
    P[~mask] = 0.0
    P[~mask, 0] = 1.0
    labels = {"goal": np.arange(S) == S - 1, "fail": np.arange(S) == S - 2}
    for s in (S - 2, S - 1):
        P[s] = np.eye(S)[s]
    return P, R, mask, labels


def _model(x64, sparse):
    P, R, mask, labels = _arrays()
    dtype = np.float64 if x64 else np.float32
    mdp = jp.make_mdp(P, R, action_mask=mask, discount=0.5, dtype=dtype)
    return (jp.to_sparse(mdp) if sparse else mdp), labels


def _in_mode(x64):
    return jax.enable_x64(True) if x64 else jax.enable_x64(False)


def _first_rule_q(prop):
    """NumPy: the `[S, A]` Q-values of the first step (``k`` to go) and the fixed states."""
    P, R, mask, labels = _arrays()
    goal, fail = labels["goal"], labels["fail"]
    kind = prop[0]
    steps = 1 if "X" in prop else K
    minimize = "min" in prop
    if kind == "R":
        r, fixed, v = R, np.zeros(S, bool), np.zeros(S)
    elif "G" in prop:  # G !fail = 1 − F fail, the optimum swapped
        r, fixed, v, minimize = 0 * R, fail.copy(), fail * 1.0, not minimize
    else:
        avoid = fail if "U" in prop else np.zeros(S, bool)
        r, fixed, v = 0 * R, goal | avoid, goal * 1.0
    fixed = fixed if "X" not in prop else np.zeros(S, bool)
    bad = np.inf if minimize else -np.inf
    for _ in range(steps):
        q = np.where(mask, r + P @ v, bad)
        v = np.where(fixed, v, q.min(1) if minimize else q.max(1))
    return q, fixed, minimize


@pytest.mark.parametrize("sparse", SPARSE)
@pytest.mark.parametrize("x64", MODES)
def test_default_policy_is_the_first_rule_of_the_step_policy(x64, sparse):
    with _in_mode(x64):
        mdp, labels = _model(x64, sparse)
        mask = np.asarray(mdp.action_mask)
        for prop, *_ in PROPERTIES:
            first = jp.check(mdp, prop, labels=labels)
            every = jp.check(mdp, prop, labels=labels, step_policy=True)
            k = 1 if "X" in prop else K
            assert first.policy.shape == (S,) and first.policy.dtype == np.int32, prop
            assert every.policy.shape == (k, S), prop
            np.testing.assert_array_equal(first.policy, every.policy[0], err_msg=prop)
            for field in ("values", "lower", "upper", "error_bound", "value_at_initial"):
                np.testing.assert_array_equal(getattr(first, field), getattr(every, field))
            assert int(first.iterations) == int(every.iterations) == k
            # Allowed, and greedy for the values with k − 1 steps to go (NumPy, float64).
            pol = np.asarray(first.policy)
            assert np.all(mask[np.arange(S), pol]), prop
            q, fixed, minimize = _first_rule_q(prop)
            best = q.min(1) if minimize else q.max(1)
            chosen = q[np.arange(S), pol]
            np.testing.assert_allclose(chosen[~fixed], best[~fixed], rtol=1e-5, err_msg=prop)


@pytest.mark.parametrize("sparse", SPARSE)
@pytest.mark.parametrize("x64", MODES)
def test_under_jit(x64, sparse):
    prop = 'Pmin=? [!"fail" U<=T "goal"]'
    with _in_mode(x64):
        mdp, labels = _model(x64, sparse)

        def run(step_policy):
            fn = lambda m: jp.check(m, prop, labels=labels, horizon=K, step_policy=step_policy)  # noqa: E731
            return jax.jit(fn)(mdp)

        first, every = run(False), run(True)
        eager = jp.check(mdp, prop, labels=labels, horizon=K)
    assert first.policy.shape == (S,) and every.policy.shape == (K, S)
    np.testing.assert_array_equal(first.policy, every.policy[0])
    np.testing.assert_array_equal(first.values, every.values)
    np.testing.assert_array_equal(first.policy, eager.policy)
    np.testing.assert_allclose(first.values, eager.values, atol=1e-5)
    assert first.values.dtype == (np.float64 if x64 else np.float32)


def _shapes(mdp, labels, step_policy):
    """Every array shape in the jaxpr of a traced check (sub-jaxprs included)."""
    prop = f'Pmax=? [!"fail" U<={K} "goal"]'
    fn = lambda m: jp.check(m, prop, labels=labels, step_policy=step_policy)  # noqa: E731
    jaxpr = jax.make_jaxpr(fn)(mdp).jaxpr
    shapes = {v.aval.shape for e in equations(jaxpr) for v in e.outvars if hasattr(v, "aval")}
    return shapes | {v.aval.shape for v in jaxpr.outvars}


@pytest.mark.parametrize("sparse", SPARSE)
def test_no_step_by_state_array_by_default(sparse):
    """The walk sees the `[K, S]` policy with ``step_policy=True``, and nothing of `K·S`
    entries (nor any axis of length `K`) without it."""
    mdp, labels = _model(False, sparse)
    assert (K, S) in _shapes(mdp, labels, True)
    shapes = _shapes(mdp, labels, False)
    assert not [s for s in shapes if K in s or np.prod(s, dtype=int) >= K * S], shapes


def test_no_step_gives_each_states_first_allowed_action():
    mdp, labels = _model(False, False)
    res = jp.check(mdp, 'Pmax=? [F<=0 "goal"]', labels=labels)
    np.testing.assert_array_equal(res.policy, np.asarray(mdp.action_mask).argmax(1))
    assert int(res.policy[0]) != 0  # state 0's action 0 is masked
    every = jp.check(mdp, 'Pmax=? [F<=0 "goal"]', labels=labels, step_policy=True)
    assert every.policy.shape == (0, S)
    np.testing.assert_array_equal(res.values, every.values)


def test_check_all_forwards_step_policy():
    mdp, labels = _model(False, False)
    props = [
        f'Pmax=? [F<={K} "goal"]',
        f'P>=0.5 [F<={K} "goal"]',
        f'filter(max, Pmax=? [F<={K} "goal"])',
    ]
    first = jp.check_all(mdp, props, labels=labels)
    every = jp.check_all(mdp, props, labels=labels, step_policy=True)
    for one, all_steps in zip(
        [first[0], first[1].result, first[2].result],
        [every[0], every[1].result, every[2].result],
        strict=True,
    ):
        assert one.policy.shape == (S,) and all_steps.policy.shape == (K, S)
        np.testing.assert_array_equal(one.policy, all_steps.policy[0])


@pytest.mark.parametrize("bad", ["yes", 1, None])
def test_step_policy_must_be_a_bool(bad):
    mdp, labels = _model(False, False)
    with pytest.raises(TypeError, match="step_policy must be True or False"):
        jp.check(mdp, f'Pmax=? [F<={K} "goal"]', labels=labels, step_policy=bad)


@pytest.mark.cli
def test_cli_writes_the_first_rule_or_every_steps(tmp_path):
    (tmp_path / "game.tra").write_text(
        "4 6 9\n0 0 2 0.8 safe\n0 0 3 0.2 safe\n0 1 1 0.5 risky\n0 1 2 0.5 risky\n1 0 0 1 back\n"
        "1 1 2 0.3 gamble\n1 1 3 0.7 gamble\n2 0 2 1 stay\n3 0 3 1 stay\n"
    )
    (tmp_path / "game.lab").write_text(
        '0="init" 1="deadlock" 2="goal" 3="fail"\n0: 0\n2: 2\n3: 3\n'
    )
    prop = 'Pmin=? [!"fail" U<=3 "goal"]'
    policies = []
    for extra in ([], ["--step-policy"]):
        out = tmp_path / f"out{len(extra)}"
        argv = ["check", "--mdp", str(tmp_path / "game.tra"), "--property", prop, "--out", str(out)]
        assert main(argv + extra) == 0
        meta = json.loads((out / "check.json").read_text())
        policies.append(meta["properties"][0]["policy"])
    assert policies[0] == [1, 1, 0, 0]
    assert np.shape(policies[1]) == (3, 4) and policies[1][0] == policies[0]
