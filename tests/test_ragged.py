"""Ragged successor lists (RaggedMDP): layout, validation, loaders, solve/evaluate/check.

Oracles: NumPy value iteration and linear solves on the flat transition lists (float64),
and the padded layout of the same model.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxprivmdp as jp
from jaxprivmdp.models._ragged import transition_lists
from jaxprivmdp.models._rows import with_probs


@pytest.fixture(autouse=True)
def _x64():
    with jax.enable_x64(True):
        yield


def _model(**kw):
    return jp.examples.leader_like(600, 256, actions=2, restart=0.5, **kw)


def _oracle_q(mdp, v):
    """`[S, A]` r + γ Σ p v from the flat lists, in float64 NumPy."""
    rid, nxt, p = transition_lists(mdp)
    S, A = mdp.num_states, mdp.num_actions
    ev = np.bincount(rid, weights=p.astype(np.float64) * v[nxt], minlength=S * A)
    return np.asarray(mdp.rewards, np.float64) + float(mdp.discount) * ev.reshape(S, A)


def _oracle_values(mdp, sweeps=2000):
    mask = np.asarray(mdp.action_mask)
    v = np.zeros(mdp.num_states)
    for _ in range(sweeps):
        v = np.where(mask, _oracle_q(mdp, v), -np.inf).max(1)
    return v


def test_buckets_hold_fewer_than_twice_the_transitions():
    mdp = jp.examples.leader_like(3000, 1024, actions=3, restart=0.4)
    rid, _, _ = transition_lists(mdp)
    n = rid.size
    assert mdp.num_slots < 2 * n
    assert [b.next_states.shape[1] for b in mdp.buckets] == [1, 2, 1024]
    for b in mdp.buckets:  # each row in the smallest power of two that holds it
        counts = (np.asarray(b.next_states) >= 0).sum(1)
        K = b.next_states.shape[1]
        assert counts.max() <= K and (K == 1 or counts.min() > K // 2)
        assert np.all(np.diff(np.asarray(b.rows)) > 0)
    default = jp.examples.leader_like()  # the full size: 16,495 transitions, 16,495 slots
    assert transition_lists(default)[0].size == 16_495 and default.num_slots == 16_495


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(next_states=[0, 5]), "outside"),
        (dict(row_ids=[0, 7]), "outside"),
        (dict(probs=[1.5, -0.5]), "negative"),
        (dict(probs=[0.5, 0.4]), "sums to"),
        (dict(next_states=[1, 1]), "twice"),
        (dict(row_ids=[[0], [0]]), "1-D"),
    ],
)
def test_validation_names_the_problem(change, message):
    args = dict(row_ids=[0, 0], next_states=[0, 1], probs=[0.5, 0.5])
    args.update(change)
    rewards = np.zeros((2, 1))
    lists = [args["row_ids"], args["next_states"], args["probs"]]
    with pytest.raises(ValueError, match=message):
        jp.make_ragged_mdp(*lists, rewards, discount=0.9)


def test_solve_and_evaluate_match_numpy_oracle_float64():
    mdp = _model(discount=0.95)
    sol = jp.solve(mdp, options=jp.SolverOptions(tol=1e-11))
    oracle = _oracle_values(mdp)
    np.testing.assert_allclose(sol.values, oracle, atol=1e-10)
    np.testing.assert_allclose(jp.evaluate(mdp, sol.policy), oracle, atol=1e-10)


@pytest.mark.slow
def test_solve_and_evaluate_match_padded_float64():
    mdp = _model(discount=0.95)
    sol, padded = (
        jp.solve(mdp, options=jp.SolverOptions(tol=1e-11)),
        jp.solve(jp.to_padded(mdp), options=jp.SolverOptions(tol=1e-11)),
    )
    np.testing.assert_allclose(sol.values, padded.values, atol=1e-12)
    np.testing.assert_array_equal(sol.policy, padded.policy)
    v = jp.evaluate(mdp, sol.policy)
    np.testing.assert_allclose(v, jp.evaluate(jp.to_padded(mdp), sol.policy), atol=1e-12)
    pi = np.full((mdp.num_states, 2), 0.5)
    expected = jp.evaluate(jp.to_padded(mdp), pi)
    np.testing.assert_allclose(jp.evaluate(mdp, pi), expected, atol=1e-12)
    np.testing.assert_allclose(jp.evaluate(jp.to_dense(mdp), pi), expected, atol=1e-10)


@pytest.mark.integration
def test_float32_solve_and_finite_horizon():
    mdp = _model(discount=0.95, dtype=jnp.float32)
    assert mdp.buckets[0].probs.dtype == jnp.float32
    sol = jp.solve(mdp)
    assert sol.converged and float(sol.error_bound) < 5e-3  # the default tol: 1e-4 of 20
    np.testing.assert_allclose(sol.values, _oracle_values(mdp), atol=float(sol.error_bound))
    # The policy's exact value (the model as stored, float64 linear solve): to ~1e-6.
    rid, nxt, p = transition_lists(mdp)
    S, A = mdp.num_states, mdp.num_actions
    chosen = rid % A == np.asarray(sol.policy)[rid // A]
    P = np.zeros((S, S))
    np.add.at(P, (rid[chosen] // A, nxt[chosen]), p[chosen].astype(np.float64))
    r = np.asarray(mdp.rewards, np.float64)[np.arange(S), np.asarray(sol.policy)]
    exact = np.linalg.solve(np.eye(S) - 0.95 * P, r)
    np.testing.assert_allclose(jp.evaluate(mdp, sol.policy), exact, rtol=1e-5)
    fin = _model(horizon=6)
    a, b = jp.solve(fin), jp.solve(jp.to_padded(fin))
    np.testing.assert_allclose(a.values, b.values, atol=1e-12)
    v = np.zeros(fin.num_states)
    for _ in range(6):
        v = np.where(np.asarray(fin.action_mask), _oracle_q(fin, v), -np.inf).max(1)
    np.testing.assert_allclose(a.values[0], v, atol=1e-12)
    np.testing.assert_allclose(jp.evaluate(fin, a.policy), a.values, atol=1e-12)


def _goal(mdp):
    goal = np.zeros(mdp.num_states, bool)
    goal[-1] = True
    return {"goal": goal}


def test_check_matches_oracle():
    mdp = jp.examples.leader_like(600, 256)  # a DTMC
    # A chain to the goal: the expected reward is the sum of the rewards on the way, and from
    # state 0 their mean over the fan-out.
    r = np.asarray(mdp.rewards)[:, 0]
    res = jp.check(mdp, 'Rmin=? [F "goal"]', labels=_goal(mdp))
    chain = np.cumsum(r[1:-1][::-1])[::-1]  # from state s in 1..S-2
    np.testing.assert_allclose(res.values[1:-1], chain, rtol=1e-9)
    np.testing.assert_allclose(res.values[0], r[0] + chain[:256].mean(), rtol=1e-9)
    np.testing.assert_array_equal(jp.check(mdp, 'Pmin=? [F "goal"]', labels=_goal(mdp)).values, 1)


@pytest.mark.slow
def test_check_matches_padded():
    mdp = _model(discount=0.95)
    for prop in ('Pmin=? [F "goal"]', 'Pmax=? [F<=300 "goal"]', 'Rmin=? [F "goal"]'):
        r = jp.check(mdp, prop, labels=_goal(mdp))
        p = jp.check(jp.to_padded(mdp), prop, labels=_goal(mdp))
        np.testing.assert_allclose(r.values, p.values, rtol=1e-12, atol=1e-12)


def _write_storm(path, mdp):
    rid, nxt, p = transition_lists(mdp)
    s, a = np.divmod(rid, mdp.num_actions)
    lines = [f"{i} {j} {t} {q!r}" for i, j, t, q in zip(s, a, nxt, p.tolist(), strict=True)]
    path.write_text("mdp\n" + "\n".join(lines) + "\n")
    rew = np.asarray(mdp.rewards)[:, 0]
    (path.with_suffix(".state.rew")).write_text(
        "".join(f"{i} {x!r}\n" for i, x in enumerate(rew.tolist()) if x)
    )


@pytest.mark.integration
def test_loader_chooses_ragged_for_skewed_rows(tmp_path):
    mdp = jp.examples.leader_like(400, 128)
    tra = tmp_path / "leader.tra"
    _write_storm(tra, mdp)
    auto = jp.load_mdp(tra, discount=0.9)
    padded = jp.load_mdp(tra, discount=0.9, layout="padded")
    assert isinstance(auto, jp.RaggedMDP) and isinstance(padded, jp.SparseMDP)
    assert padded.max_successors == 128 and auto.num_slots == 400 + 128 - 1
    np.testing.assert_allclose(jp.solve(auto).values, jp.solve(padded).values, atol=1e-12)
    np.testing.assert_allclose(jp.solve(auto).values, _oracle_values(auto), atol=1e-10)
    assert isinstance(jp.load_mdp(tra, discount=0.9, layout="ragged"), jp.RaggedMDP)
    with pytest.raises(ValueError, match="layout must be one of"):
        jp.load_mdp(tra, layout="csr")
    grid = tmp_path / "grid.tra"  # regular rows stay padded
    _write_storm(grid, jp.to_ragged(jp.examples.gridworld(4, 4)))
    assert isinstance(jp.load_mdp(grid, discount=0.9), jp.SparseMDP)


def test_npz_round_trip(tmp_path):
    mdp = _model(horizon=5)
    path = jp.save_mdp(tmp_path / "m.npz", mdp)
    back = jp.load_mdp(path)
    assert isinstance(back, jp.RaggedMDP) and back.horizon == 5
    for x, y in zip(mdp.buckets, back.buckets, strict=True):
        for u, w in zip(x, y, strict=True):
            np.testing.assert_array_equal(u, w)
    np.testing.assert_array_equal(back.rewards, mdp.rewards)
    padded = jp.load_mdp(jp.save_mdp(tmp_path / "p.npz", jp.to_padded(mdp)))
    np.testing.assert_array_equal(padded.next_states, jp.to_padded(mdp).next_states)


def test_conversions_round_trip():
    grid = jp.examples.gridworld(5, 5)
    again = jp.to_padded(jp.to_ragged(grid))
    np.testing.assert_array_equal(
        np.sort(np.asarray(again.next_states), -1)[..., ::-1][..., :1],
        np.sort(np.asarray(grid.next_states), -1)[..., ::-1][..., :1],
    )
    np.testing.assert_allclose(jp.solve(jp.to_ragged(grid)).values, jp.solve(grid).values)


def test_smoothing_is_refused_with_what_to_do():
    """Smoothing needs all S entries of every row; the privacy accounting, frontier and
    dirichlet_mechanism take a RaggedMDP (tests/test_ragged_privacy.py)."""
    mdp = jp.examples.leader_like(40, 8, actions=2, restart=0.5, discount=0.9)
    key = jax.random.key(0)
    calls = [
        lambda: jp.privatize(key, mdp, jp.Dirichlet(100.0), smoothing=0.01),
        lambda: jp.dirichlet_mechanism(key, mdp, jp.Dirichlet(100.0), smoothing=0.01),
        lambda: jp.privacy.mdp_guarantee(
            100.0, mdp, jp.privacy.Adjacency(0.1), target_delta=0.001, smoothing=0.01
        ),
    ]
    for call in calls:
        with pytest.raises(ValueError, match="smoothing"):
            call()


SETS = [
    ("dirichlet", 200.0, "paper", False),
    ("dirichlet", 200.0, "paper", True),
    ("gaussian", 0.02, "paper", False),
    ("laplace", 0.02, "paper", True),
    ("dirichlet", 200.0, "exact", True),
    ("dirichlet", 200.0, "certified", False),
]


def _check_costs_agree(mdp):
    """cost_of_privacy of one release, ragged and padded: the same bounds to rounding."""
    release = jp.privatize(jax.random.key(4), mdp, jp.Dirichlet(100.0))
    policy = jp.solve(release).policy
    a = jp.cost_of_privacy(release, policy, jp.Dirichlet(100.0), jp.PaperSet(0.1))
    b = jp.cost_of_privacy(jp.to_padded(release), policy, jp.Dirichlet(100.0), jp.PaperSet(0.1))
    np.testing.assert_allclose(a.lower, b.lower, atol=1e-12)
    np.testing.assert_allclose(a.upper, b.upper, atol=1e-12)


@pytest.mark.integration
def test_cost_of_privacy_equals_the_padded_layouts():
    _check_costs_agree(jp.examples.leader_like(40, 8, actions=2, restart=0.5, discount=0.9))


@pytest.mark.slow
@pytest.mark.parametrize("mechanism, k, bound, aware", SETS)
def test_synthesize_and_bounds_equal_the_padded_layouts(mechanism, k, bound, aware):
    """The same release, ragged and padded: synthesize's policy and bounds, cost_of_privacy
    and robust_solve agree to rounding (the sets and kernels are deterministic)."""
    mdp = jp.examples.leader_like(40, 8, actions=2, restart=0.5, discount=0.9)
    mechanism = {"dirichlet": jp.Dirichlet, "gaussian": jp.Gaussian, "laplace": jp.Laplace}[
        mechanism
    ](k)
    bound = {"paper": jp.PaperSet, "exact": jp.ExactSet, "certified": jp.CertifiedSet}[bound](
        0.1, support_aware=aware
    )
    out = jp.synthesize(jax.random.key(3), mdp, mechanism, bound, robust=True)
    release = with_probs(mdp, out.private_transitions)
    padded = jp.to_padded(release)
    cost = jp.cost_of_privacy(padded, out.policy, mechanism, bound)
    np.testing.assert_allclose(out.lower, cost.lower, atol=1e-12)
    np.testing.assert_allclose(out.upper, cost.upper, atol=1e-12)
    np.testing.assert_array_equal(out.policy, jp.solve(padded).policy)
    robust = jp.robust_solve(padded, mechanism, bound)
    np.testing.assert_array_equal(out.robust.policy, robust.policy)
    mine = jp.robust_solve(release, mechanism, bound)
    np.testing.assert_allclose(mine.values, robust.values, atol=1e-12)


@pytest.mark.slow
def test_finite_horizon_bounds_and_sweep():
    mdp = jp.examples.leader_like(40, 8, actions=2, restart=0.5, horizon=5)
    _check_costs_agree(mdp)
    res = jp.sweep(
        jax.random.key(5),
        mdp,
        jp.Dirichlet.grid([30.0, 300.0], sampler="fast"),
        jp.PaperSet(0.1),
        num_trials=3,
    )
    assert res.cost.shape == (2, 3) and bool(jnp.all(res.converged))
    assert np.all(np.asarray(res.true_value) <= float(res.optimal_value) + 1e-9)
    assert np.all(np.asarray(res.lower) <= np.asarray(res.private_value) + 1e-9)


MECHANISMS = [(jp.Dirichlet, 30.0), (jp.Gaussian, 0.05), (jp.Laplace, 0.05)]


@pytest.mark.integration
@pytest.mark.parametrize("mechanism, parameter", MECHANISMS)
def test_privatize_keeps_the_lists(mechanism, parameter):
    mdp = jp.examples.leader_like(40, 8, actions=2, restart=0.5, discount=0.9)
    release = jp.privatize(jax.random.key(2), mdp, mechanism(parameter))
    assert isinstance(release, jp.RaggedMDP)
    for b, c in zip(release.buckets, mdp.buckets, strict=True):  # the lists are kept
        np.testing.assert_array_equal(b.next_states, c.next_states)
        np.testing.assert_allclose(np.asarray(b.probs).sum(-1), 1, atol=1e-12)
        assert np.all(np.asarray(b.probs)[np.asarray(c.next_states) < 0] == 0)
        assert np.all(np.asarray(b.probs) >= 0)
    assert not np.allclose(release.buckets[-1].probs, mdp.buckets[-1].probs)
    assert jp.solve(release).converged


@pytest.mark.slow
@pytest.mark.parametrize("mechanism, parameter", MECHANISMS)
def test_privatize_has_the_padded_distribution(mechanism, parameter):
    from scipy.stats import ks_2samp

    mdp = jp.examples.leader_like(40, 8, actions=2, restart=0.5, discount=0.9)
    padded = jp.to_padded(mdp)
    keys = jax.random.split(jax.random.key(1), 600)
    draw = jax.jit(jax.vmap(lambda k, m: jp.privatize(k, m, mechanism(parameter)), (0, None)))
    ragged_out = draw(keys, mdp)
    padded_out = draw(keys, padded).probs
    big = ragged_out.buckets[-1]  # state 0's fan-out row
    two = ragged_out.buckets[1]
    s, a = divmod(int(two.rows[0, 0]), 2)
    pairs = (
        (big.probs[:, 0, 0], padded_out[:, 0, 0, 0]),
        (two.probs[:, 0, 1], padded_out[:, s, a, 1]),
    )
    for got, want in pairs:
        assert ks_2samp(np.asarray(got), np.asarray(want)).pvalue > 1e-4


@pytest.mark.cli
def test_command_line_on_a_ragged_file(tmp_path):
    from jaxprivmdp.cli import main

    tra = tmp_path / "leader.tra"
    _write_storm(tra, jp.examples.leader_like(40, 8))
    policy = tmp_path / "pol.csv"
    policy.write_text("state,action\n" + "".join(f"{s},0\n" for s in range(40)))
    out = tmp_path / "ev"
    args = ["--mdp", str(tra), "--discount", "0.9"]
    assert main(["evaluate", *args, "--policy", str(policy), "--out", str(out)]) == 0
    privacy = ["privacy", "--mdp", str(tra), "--k", "10", "--eta", "0.05"]
    assert main([*privacy, "--out", str(tmp_path / "p")]) == 0  # tests/test_ragged_privacy.py


@pytest.mark.integration
def test_property_model_of_a_ragged_model():
    mdp = jp.examples.leader_like(40, 8, actions=2, restart=0.5)
    prop = 'Pmax=? [F<=30 "goal"]'
    ragged = jp.property_model(mdp, prop, labels=_goal(mdp))
    padded = jp.property_model(jp.to_padded(mdp), prop, labels=_goal(mdp))
    assert isinstance(ragged.model, jp.RaggedMDP)
    again = jp.to_padded(ragged.model, padded.model.max_successors)
    np.testing.assert_array_equal(again.next_states, padded.model.next_states)
    np.testing.assert_array_equal(again.probs, padded.model.probs)


@pytest.mark.slow
def test_synthesize_a_property_of_a_ragged_model():
    mdp = jp.examples.leader_like(40, 8, actions=2, restart=0.5)
    ragged = jp.property_model(mdp, 'Pmax=? [F<=30 "goal"]', labels=_goal(mdp))
    out = jp.synthesize(jax.random.key(0), ragged, jp.Dirichlet(100.0), jp.PaperSet(0.1))
    assert 0 <= float(out.cost) <= 1 + 1e-9 and bool(out.converged)
