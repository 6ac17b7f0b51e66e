"""The objective's direction: ``lower <= upper`` always, ``worst_case``/``best_case`` relative to
the direction, ``jp.minimizing`` (a model's rewards as a cost), and the command line's
``--minimize``/``--maximize`` with the objective printed and recorded.

Oracles: finite-horizon backward induction by hand in NumPy (min and max).
"""

import dataclasses
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxprivmdp as jp
from jaxprivmdp.cli import main

S, A, T = 4, 2, 6
KEY = jax.random.key(3)
X64 = pytest.mark.parametrize("x64", [False, True], ids=["float32", "float64"])
KINDS = pytest.mark.parametrize("kind", ["dense", "sparse"])


def _arrays(seed=0):
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(S), size=(S, A))
    R = rng.uniform(0.5, 2.0, size=(S, A))  # costs
    RT = rng.uniform(0.0, 1.0, size=S)
    return P, R, RT


def _model(kind, horizon=T):
    P, R, RT = _arrays()
    mdp = jp.make_mdp(P, R, terminal_reward=RT, horizon=horizon, discount=1.0)
    return mdp if kind == "dense" else jp.to_sparse(mdp)


def _dense_rows(mdp, probs=None) -> np.ndarray:
    """`[S, A, S]` float64 rows of ``mdp`` (with ``probs`` in place of its own)."""
    if isinstance(mdp, jp.SparseMDP):
        probs = np.asarray(mdp.probs if probs is None else probs, np.float64)
        nxt = np.asarray(mdp.next_states)
        rows = np.zeros((S, A, S))
        for s in range(S):
            for a in range(A):
                for k in range(nxt.shape[-1]):
                    if nxt[s, a, k] >= 0:
                        rows[s, a, nxt[s, a, k]] += probs[s, a, k]
        return rows
    return np.asarray(mdp.transitions if probs is None else probs, np.float64)


def _backward(P, R, RT, horizon, best):
    """Optimal values `[T + 1, S]` and policy `[T, S]` by hand (``best``: np.min or np.max)."""
    v = np.zeros((horizon + 1, P.shape[0]))
    pi = np.zeros((horizon, P.shape[0]), int)
    v[horizon] = RT
    arg = np.argmin if best is np.min else np.argmax
    for t in reversed(range(horizon)):
        q = R + P @ v[t + 1]
        v[t], pi[t] = best(q, axis=1), arg(q, axis=1)
    return v, pi


def _policy_value(P, R, RT, pi):
    v = RT.copy()
    for t in reversed(range(pi.shape[0])):
        v = R[np.arange(S), pi[t]] + (P[np.arange(S), pi[t]] * v).sum(-1)
    return v


def _tol(x64):
    return dict(rtol=1e-10, atol=1e-10) if x64 else dict(rtol=2e-5, atol=2e-5)


@X64
@KINDS
def test_minimizing_is_the_negated_maximization_by_hand(kind, x64):
    with jax.enable_x64(x64):
        mdp = _model(kind)
        pm = jp.minimizing(mdp)
        assert pm.minimize and pm.text == "reward" and not np.any(pm.absorbing)
        P, R, RT = _arrays()
        want, _ = _backward(P, R, RT, T, np.min)
        # The transformed model maximizes the negated costs: -max(-cost) = min(cost).
        neg, _ = _backward(P, -R, -RT, T, np.max)
        np.testing.assert_allclose(-neg, want, rtol=1e-12)
        got = pm.values(jp.solve(pm.model).values)
        np.testing.assert_allclose(np.asarray(got, np.float64), want, **_tol(x64))
        assert jp.minimizing(mdp, reward_name="steps").text == 'reward "steps"'


@pytest.mark.integration  # 2-5 s each: compiling the bounds, robust and sweep paths
@X64
@KINDS
def test_synthesize_minimizing_reports_costs_and_the_upper_worst_case(kind, x64):
    with jax.enable_x64(x64):
        mdp = _model(kind)
        out = jp.synthesize(KEY, jp.minimizing(mdp), jp.Dirichlet(200.0), jp.CertifiedSet(0.1))
        P, R, RT = _arrays()
        released = _dense_rows(mdp, out.private_transitions)
        want, pi = _backward(released, R, RT, T, np.min)
        np.testing.assert_allclose(np.asarray(out.private_values, np.float64), want, **_tol(x64))
        np.testing.assert_array_equal(np.asarray(out.policy), pi)
        assert out.lower.dtype == out.private_values.dtype == jnp.dtype(mdp.rewards.dtype)
        assert np.all(out.lower <= out.private_values) and np.all(out.private_values <= out.upper)
        assert bool(out.minimize) and out.minimize.shape == ()
        np.testing.assert_array_equal(out.worst_case, out.upper)
        np.testing.assert_array_equal(out.best_case, out.lower)
        # Certified (w.p. >= 0.9; this key is one of those): the true cost lies inside.
        true = _policy_value(P, R, RT, np.asarray(out.policy))
        assert out.lower[0, 0] <= true[0] <= out.upper[0, 0]
        np.testing.assert_allclose(out.true_values[0], true, **_tol(x64))


@pytest.mark.integration  # 2-5 s each: compiling the bounds, robust and sweep paths
@X64
@KINDS
def test_an_rmin_property_has_lower_below_upper_and_worst_case_upper(kind, x64):
    with jax.enable_x64(x64):
        pm = jp.property_model(_model(kind), "Rmin=? [C<=20]")
        out = jp.synthesize(KEY, pm, jp.Dirichlet(50.0), robust=True)
        lower, private, upper = (float(x[0, 0]) for x in (out.lower, out.private_values, out.upper))
        assert lower <= private <= upper
        assert float(out.worst_case[0, 0]) == upper and float(out.best_case[0, 0]) == lower
        assert bool(out.robust.minimize)
        np.testing.assert_array_equal(out.robust.worst_case, out.robust.upper)
        # The robust policy minimizes the worst case: never above the private policy's.
        assert out.robust.worst_case[0, 0] <= out.worst_case[0, 0] + 1e-5
        b = jp.cost_of_privacy(_on_release(pm, out), out.policy, jp.Dirichlet(50.0))
        np.testing.assert_allclose(b.worst_case, out.upper, rtol=1e-6, atol=1e-6)
        assert bool(b.minimize) and np.all(b.lower <= b.upper)


def _on_release(pm, out):
    """The property's problem on the release of ``out``."""
    field = "probs" if isinstance(pm.model, jp.SparseMDP) else "transitions"
    released = dataclasses.replace(pm.model, **{field: out.private_transitions})
    return dataclasses.replace(pm, model=released)


@pytest.mark.integration  # 3 s: the unit tier keeps the 2-minute budget
def test_maximization_worst_case_is_lower_and_vmap_batches_the_direction():
    mdp = _model("dense")
    out = jp.synthesize(KEY, mdp, jp.Dirichlet(50.0))
    assert not bool(out.minimize)
    np.testing.assert_array_equal(out.worst_case, out.lower)
    keys = jax.random.split(KEY, 3)
    batched = jax.vmap(lambda k: jp.synthesize(k, jp.minimizing(mdp), jp.Dirichlet(50.0)))(keys)
    assert batched.minimize.shape == (3,) and bool(np.all(batched.minimize))
    assert batched.worst_case.shape == batched.upper.shape == (3, T + 1, S)
    np.testing.assert_array_equal(batched.worst_case, batched.upper)


@pytest.mark.integration  # 2-5 s each: compiling the bounds, robust and sweep paths
def test_robust_solve_and_sweep_take_a_minimization():
    mdp = _model("sparse")
    pm = jp.minimizing(mdp)
    sol = jp.robust_solve(pm, jp.Dirichlet(50.0))
    P, R, RT = _arrays()
    want, _ = _backward(P, R, RT, T, np.min)
    assert np.all(np.asarray(sol.values) >= want - 1e-4)  # a robust cost is never below
    res = jp.sweep(KEY, pm, jp.Dirichlet.grid([20.0, 80.0], sampler="fast"), num_trials=2)
    assert res.minimize.shape == (2, 2) and bool(np.all(res.minimize))
    assert np.all(res.lower <= res.private_value) and np.all(res.private_value <= res.upper)
    np.testing.assert_array_equal(res.worst_case, res.upper)
    assert float(res.optimal_value) == pytest.approx(want[0, 0], rel=1e-5)
    from jaxprivmdp.experiments import _report

    rows = _report.summarize(res)
    assert all(r["objective"] == "minimize" for r in rows)
    assert all(r["worst_case_mean"] == r["upper_mean"] for r in rows)


@pytest.mark.integration  # 2-5 s each: compiling the bounds, robust and sweep paths
def test_frontier_of_a_minimization():
    pm = jp.minimizing(_model("dense"))
    res = jp.frontier(KEY, pm, (jp.Laplace,), epsilons=[5.0], num_trials=2)
    assert res.minimize
    np.testing.assert_array_equal(res.worst_case["laplace"], res.upper["laplace"])
    rows = res.rows()
    assert rows[0]["objective"] == "minimize"
    assert rows[0]["worst_case_mean"] == rows[0]["upper_mean"] >= rows[0]["lower_mean"]


def test_minimizing_refuses_what_is_not_a_model():
    pm = jp.minimizing(_model("dense"))
    with pytest.raises(TypeError, match="states its own direction"):
        jp.minimizing(pm)
    with pytest.raises(TypeError, match="reward_name"):
        jp.minimizing(_model("dense"), reward_name=3)


# --------------------------------------------------------------------------- command line

# A Storm-like MDP whose reward structure "steps" is a cost: "wait" wanders for the whole
# horizon (worth 20 maximized), "go" reaches the goal in 1/0.9 + 1/0.8 expected steps.
WALK = """@type: MDP
@parameters

@reward_models
steps
@nr_states
3
@nr_choices
5
@model
state 0 [1] init
\taction go [0]
\t\t1 : 0.9
\t\t0 : 0.1
\taction wait [0]
\t\t0 : 1
state 1 [1]
\taction go [0]
\t\t2 : 0.8
\t\t1 : 0.2
\taction wait [0]
\t\t1 : 1
state 2 [0] goal
\taction stay [0]
\t\t2 : 1
"""
MIN_STEPS = 1 / 0.9 + 1 / 0.8


@pytest.fixture
def walk(tmp_path):
    path = tmp_path / "walk.drn"
    path.write_text(WALK)
    return path


@pytest.mark.cli
@pytest.mark.parametrize("flag", [[], ["--maximize"], ["--minimize"]])
def test_cli_synthesize_says_and_records_the_direction(walk, tmp_path, capsys, flag):
    out = tmp_path / "out"
    argv = ["synthesize", "--mdp", str(walk), "--horizon", "20", "--out", str(out)]
    assert main([*argv, *flag]) == 0
    printed = capsys.readouterr().out
    meta = json.loads((out / "synthesize.json").read_text())
    assert meta["reward_structure"] == "steps"
    assert 'reward structure: "steps"' in printed
    if flag == ["--minimize"]:
        assert 'objective: minimizing reward "steps"' in printed
        assert meta["objective"] == {"direction": "minimize", "of": 'reward "steps"'}
        assert meta["private_value"] == pytest.approx(MIN_STEPS, rel=1e-5)
        # The chain's rewards are the costs: R=? [F "done"] on it is the policy's cost.
        assert "-" not in (out / "policy.srew").read_text().split("\n", 1)[1]
    else:
        assert 'objective: maximizing reward "steps"' in printed
        assert meta["objective"] == {"direction": "maximize", "of": 'reward "steps"'}
        assert meta["private_value"] == pytest.approx(20.0)


@pytest.mark.cli
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cli_rmin_property_robust_worst_case_is_upper(walk, tmp_path, capsys, dtype):
    release = tmp_path / "release.npz"
    argv = ["privatize", "--mdp", str(walk), "--k", "50", "--eta", "0.1", "--seed", "1"]
    assert main([*argv, "--horizon", "20", "--out", str(release)]) == 0
    out = tmp_path / "out"
    prop = "Rmin=? [C<=20]"
    argv = ["synthesize", "--mdp", str(release), "--property", prop, "--robust"]
    assert main([*argv, "--dtype", dtype, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    meta = json.loads((out / "synthesize.json").read_text())
    assert meta["objective"] == {"direction": "minimize", "of": prop}
    assert f"objective: minimizing {prop}" in printed
    r = meta["robust"]
    assert r["worst_case_is"] == "upper"
    private = r["private_policy"]
    assert private["lower"] <= meta["private_value"] <= private["upper"]
    assert private["worst_case"] == private["upper"] and private["best_case"] == private["lower"]
    assert r["robust_policy"]["worst_case"] <= private["worst_case"] + 1e-6
    assert "worst case at s0 (the upper bound" in printed
    assert f"private policy {private['worst_case']:.6g}" in printed


@pytest.mark.cli
def test_cli_direction_flags_refuse_a_property(walk, tmp_path, capsys):
    argv = ["synthesize", "--mdp", str(walk), "--property", "Rmin=? [C<=5]", "--minimize"]
    assert main([*argv, "--out", str(tmp_path / "o")]) != 0
    assert "states its own direction" in capsys.readouterr().err
    argv = ["synthesize", "--mdp", str(walk), "--minimize", "--maximize"]
    with pytest.raises(SystemExit):
        main([*argv, "--horizon", "5", "--out", str(tmp_path / "o")])


@pytest.mark.cli
def test_cli_sweep_and_frontier_record_the_direction(walk, tmp_path, capsys):
    out = tmp_path / "s"
    argv = ["sweep", "--mdp", str(walk), "--horizon", "20", "--minimize", "--ks", "5", "50"]
    assert main([*argv, "--trials", "2", "--out", str(out)]) == 0
    printed = capsys.readouterr()
    assert 'objective: minimizing reward "steps"' in printed.out
    assert "worst_case = upper" in printed.out
    meta = json.loads((out / "sweep.json").read_text())
    assert meta["objective"] == {"direction": "minimize", "of": 'reward "steps"'}
    assert meta["reward_structure"] == "steps"
    for row in meta["results"]["walk"]:
        assert row["objective"] == "minimize"
        assert row["lower_mean"] <= row["true_value_mean"] <= row["upper_mean"]
        assert row["worst_case_mean"] == row["upper_mean"]
    header = (out / "sweep.csv").read_text().splitlines()[0].split(",")
    assert {"lower_mean", "upper_mean", "worst_case_mean", "best_case_mean"} <= set(header)
    out = tmp_path / "f"
    argv = ["frontier", "--mdp", str(walk), "--horizon", "20", "--epsilons", "5"]
    assert main([*argv, "--trials", "2", "--mechanisms", "laplace", "--out", str(out)]) == 0
    assert 'objective: maximizing reward "steps"' in capsys.readouterr().out
    meta = json.loads((out / "frontier.json").read_text())
    assert meta["objective"] == {"direction": "maximize", "of": 'reward "steps"'}
    assert meta["results"][0]["worst_case_mean"] == meta["results"][0]["lower_mean"]


def test_the_reward_structure_name_of_a_file(tmp_path, walk):
    from jaxprivmdp.io.core import reward_structure_name

    assert reward_structure_name(walk) == "steps" and reward_structure_name(walk, 0) == "steps"
    two = tmp_path / "two.drn"
    two.write_text(WALK.replace("steps\n", "cost gain\n").replace("[1]", "[1, 0]"))
    assert reward_structure_name(two, 1) == "gain" and reward_structure_name(two) is None
    tra = tmp_path / "m.tra"
    tra.write_text("2 2 2\n0 0 1 1\n1 0 1 1\n")
    (tmp_path / "m.srew").write_text('# Reward structure "time"\n# State rewards\n2 1\n0 1\n')
    assert reward_structure_name(tra) == "time"
    assert reward_structure_name(tmp_path / "m.npz") is None


# Storm writes an unnamed reward model as "" in @reward_models, the names separated by one
# space: here an unnamed structure (index 0, a gain) before "steps" (index 1, the cost).
UNNAMED_THEN_STEPS = (
    WALK.replace("@reward_models\nsteps\n", "@reward_models\n steps\n")
    .replace("[1]", "[0, 1]")
    .replace("[0]", "[0, 0]")
)


def test_the_reward_structure_name_with_an_unnamed_structure_first(tmp_path):
    from jaxprivmdp.io.core import reward_structure_name

    path = tmp_path / "two.drn"
    path.write_text(UNNAMED_THEN_STEPS)
    by_name = jp.load_mdp(path, reward_structure="steps", horizon=5)
    by_index = jp.load_mdp(path, reward_structure=1, horizon=5)
    np.testing.assert_array_equal(by_name.rewards, by_index.rewards)
    assert np.asarray(by_index.rewards)[0, 0] == 1.0  # "steps", not the unnamed one
    assert reward_structure_name(path, 1) == "steps"
    assert reward_structure_name(path, 0) is None  # unnamed: not "steps"
    assert reward_structure_name(path) is None  # two structures: ambiguous


@pytest.mark.cli
@pytest.mark.parametrize("structure", ["0", "1", "steps"])
def test_cli_names_the_structure_it_used_after_an_unnamed_one(tmp_path, capsys, structure):
    path = tmp_path / "two.drn"
    path.write_text(UNNAMED_THEN_STEPS)
    out = tmp_path / "out"
    argv = ["synthesize", "--mdp", str(path), "--reward-structure", structure, "--horizon", "5"]
    assert main([*argv, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    meta = json.loads((out / "synthesize.json").read_text())
    if structure == "0":
        assert meta["reward_structure"] is None and "reward structure:" not in printed
        assert meta["objective"]["of"] == "reward"
    else:
        assert meta["reward_structure"] == "steps"
        assert 'reward structure: "steps"' in printed


def test_worst_end_name_is_the_one_rule():
    from jaxprivmdp.properties.core import worst_end_name

    assert worst_end_name(True) == "upper" and worst_end_name(False) == "lower"
    lower, upper = np.array([1.0]), np.array([2.0])
    for minimize in (False, True):
        res = jp.Synthesis(*([None] * 3), lower, upper, *([None] * 2), minimize=minimize)
        assert res.worst_case == {"lower": lower, "upper": upper}[worst_end_name(minimize)]
        assert res.best_case == {"lower": lower, "upper": upper}[worst_end_name(not minimize)]
