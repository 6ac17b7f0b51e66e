"""Algorithm 1 end to end: synthesize, sweep, and the paper's Example 1 (Figure 1a).

Compilation dominates here (each chunk size or MDP shape compiles the whole pipeline), so the
tests share one random MDP, one grid width (ks in [1.5, 5] give the same fill width at β =
0.1) and ``batch_size=3`` wherever the chunk size is not the point.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import (
    GAMMA,
    A,
    S,
    T,
    build_mdp,
    np_backward_induction,
    np_value_iteration,
    to_numpy,
)

import jaxprivmdp as jp
from jaxprivmdp import sweep, synthesize
from jaxprivmdp.experiments._chunks import sweep_chunk
from jaxprivmdp.planning._rounding import default_tolerance

pytestmark = pytest.mark.integration

KS = [2.0, 4.0]
GRID = jp.Dirichlet.grid(KS, sampler="fast")
N = 3
FIELDS = ("private_value", "true_value", "lower", "upper", "cost")


@pytest.fixture(scope="module")
def mdp():
    return build_mdp(0, horizon=T, initial_state=1)


def as_arrays(result):
    return {f: np.asarray(getattr(result, f)) for f in FIELDS}


# ----------------------------------------------------------------------------- synthesize


def test_synthesize_random_mdp(mdp):
    key = jax.random.key(0)
    out = synthesize(key, mdp, jp.Dirichlet(KS[0]))
    assert out.private_transitions.shape == (S, A, S)
    assert out.policy.shape == (T, S) and jnp.issubdtype(out.policy.dtype, jnp.integer)
    for x in (out.private_values, out.lower, out.upper):
        assert x.shape == (T + 1, S)
    assert out.cost.shape == ()
    s0 = mdp.initial_state
    assert float(out.cost) == pytest.approx(float(out.upper[0, s0] - out.lower[0, s0]), abs=1e-6)
    assert np.all(np.asarray(out.lower) <= np.asarray(out.private_values) + 1e-5)
    assert np.all(np.asarray(out.private_values) <= np.asarray(out.upper) + 1e-5)
    # Each step is the public building block applied to the same noise.
    p_bar = jp.dirichlet_mechanism(key, mdp.transitions, jp.Dirichlet(KS[0]))
    np.testing.assert_allclose(out.private_transitions, p_bar, rtol=1e-5, atol=1e-7)
    private = jp.make_mdp(
        out.private_transitions,
        mdp.rewards,
        terminal_reward=mdp.terminal_reward,
        horizon=T,
        discount=float(mdp.discount),
        initial_state=s0,
    )
    sol = jp.solve(private)
    np.testing.assert_array_equal(out.policy, sol.policy)
    np.testing.assert_allclose(out.private_values, jp.evaluate(private, out.policy), atol=1e-5)
    b = jp.cost_of_privacy(private, out.policy, jp.Dirichlet(KS[0]), jp.PaperSet(0.1))
    np.testing.assert_allclose(out.lower, b.lower, atol=1e-5)
    np.testing.assert_allclose(out.upper, b.upper, atol=1e-5)


def test_synthesize_investment():
    inv = jp.examples.investment()
    out = synthesize(jax.random.key(1), inv, jp.Dirichlet(5.0), support="nonzero")
    P = np.asarray(inv.transitions)
    mask = np.asarray(inv.action_mask)
    p_bar = np.asarray(out.private_transitions)
    assert p_bar.shape == (3, 4, 3) and out.policy.shape == (1, 3)
    allowed_zero = (P == 0) & mask[..., None]
    np.testing.assert_array_equal(p_bar[allowed_zero], 0.0)  # structural zeros stay
    np.testing.assert_array_equal(p_bar[~mask], 0.0)  # masked rows: zeros
    np.testing.assert_allclose(p_bar[mask].sum(-1), 1.0, atol=1e-6)
    # Hit and Miss are absorbing with one action: privatizing a point mass keeps it.
    np.testing.assert_array_equal(p_bar[1, 0], [0, 1, 0])
    np.testing.assert_array_equal(p_bar[2, 0], [0, 0, 1])
    assert np.all(mask[np.arange(3), np.asarray(out.policy[0])])
    assert float(out.cost) == pytest.approx(float(out.upper[0, 0] - out.lower[0, 0]), abs=1e-6)
    assert out.lower[0, 0] <= out.private_values[0, 0] <= out.upper[0, 0]
    # Chosen startup's private hit probability is the private value (T = 1, R_T = Hit).
    a = int(out.policy[0, 0])
    assert float(out.private_values[0, 0]) == pytest.approx(float(p_bar[0, a, 1]), abs=1e-6)


def test_synthesize_validation(mdp):
    key = jax.random.key(0)
    inv = jp.examples.investment()
    with pytest.raises(ValueError, match="support='nonzero'"):
        synthesize(key, inv, jp.Dirichlet(1.0))
    with pytest.raises(ValueError, match="^k must"):
        synthesize(key, mdp, jp.Dirichlet(0.0))
    with pytest.raises(ValueError, match="^beta must"):
        synthesize(key, mdp, jp.Dirichlet(1.0), jp.PaperSet(1.0))


def test_synthesize_strict_rank_promotion(mdp):
    with jax.numpy_rank_promotion("raise"):
        out = jp.synthesize(jax.random.key(0), mdp, jp.Dirichlet(KS[0]))
    assert np.isfinite(float(out.cost))


# ----------------------------------------------------------------------------- sweep


def test_sweep_equals_synthesize_per_key(mdp):
    key = jax.random.key(42)
    res = sweep(
        key,
        mdp,
        jp.Dirichlet.grid(KS, sampler="fast"),
        num_trials=N,
        chunking=jp.Chunking(batch_size=3),
    )
    for f in FIELDS:
        assert getattr(res, f).shape == (len(KS), N)
    np.testing.assert_array_equal(res.ks, np.asarray(KS, np.float32))
    s0 = mdp.initial_state
    for i, k in enumerate(KS):
        for j in range(N):
            one = synthesize(jp.sweep_key(key, i, j), mdp, jp.Dirichlet(k, sampler="fast"))
            want = dict(
                private_value=one.private_values[0, s0],
                true_value=jp.evaluate(mdp, one.policy)[0, s0],
                lower=one.lower[0, s0],
                upper=one.upper[0, s0],
                cost=one.cost,
            )
            for f in FIELDS:  # vmapped vs single: equal up to float32 rounding
                assert float(getattr(res, f)[i, j]) == pytest.approx(float(want[f]), abs=2e-6)
    # The trials are independent draws: no two private values coincide.
    assert len(np.unique(np.asarray(res.private_value))) == len(KS) * N


def test_sweep_invariants(mdp):
    res = as_arrays(
        sweep(
            jax.random.key(7),
            mdp,
            jp.Dirichlet.grid(KS, sampler="fast"),
            num_trials=N,
            chunking=jp.Chunking(batch_size=3),
        )
    )
    assert np.all(res["lower"] <= res["private_value"] + 1e-5)
    assert np.all(res["private_value"] <= res["upper"] + 1e-5)
    np.testing.assert_allclose(res["cost"], res["upper"] - res["lower"], atol=1e-6)


def test_chunking_does_not_change_results(mdp):
    # Groups of 2 runs are vectorized together; chunks of 2, 4 and 256 runs are different
    # compiled programs whose results must agree bit for bit.
    key = jax.random.key(3)
    one_chunk = as_arrays(
        sweep(
            key,
            mdp,
            jp.Dirichlet.grid(KS, sampler="fast"),
            num_trials=N,
            chunking=jp.Chunking(batch_size=256, vector_width=2),
        )
    )
    for batch_size in (2, 4):
        chunked = as_arrays(
            sweep(
                key,
                mdp,
                jp.Dirichlet.grid(KS, sampler="fast"),
                num_trials=N,
                chunking=jp.Chunking(batch_size=batch_size, vector_width=2),
            )
        )
        for f in FIELDS:
            np.testing.assert_array_equal(chunked[f], one_chunk[f], err_msg=f)


def test_default_batch_size_bitwise(mdp):
    key = jax.random.key(3)
    default = as_arrays(sweep(key, mdp, jp.Dirichlet.grid(KS, sampler="fast"), num_trials=N))
    larger = as_arrays(
        sweep(
            key,
            mdp,
            jp.Dirichlet.grid(KS, sampler="fast"),
            num_trials=N,
            chunking=jp.Chunking(batch_size=48),
        )
    )
    for f in FIELDS:
        np.testing.assert_array_equal(default[f], larger[f], err_msg=f)


def test_no_retracing_across_k_grids_and_trial_counts(mdp):
    key = jax.random.key(5)
    sweep(
        key,
        mdp,
        jp.Dirichlet.grid(KS, sampler="fast"),
        num_trials=N,
        chunking=jp.Chunking(batch_size=3),
    )
    size = sweep_chunk._cache_size()
    res = sweep(
        key,
        mdp,
        jp.Dirichlet.grid([1.5, 3.0, 5.0], sampler="fast"),
        num_trials=5,
        chunking=jp.Chunking(batch_size=3),
    )
    assert res.cost.shape == (3, 5)
    sweep(
        key,
        mdp,
        jp.Dirichlet.grid([2.5], sampler="fast"),
        jp.PaperSet(0.2),
        num_trials=1,
        chunking=jp.Chunking(batch_size=3),
    )
    sweep(
        key,
        mdp,
        jp.Dirichlet.grid(np.array([3.5, 4.5]), sampler="fast"),
        num_trials=4,
        chunking=jp.Chunking(batch_size=3, devices=jax.devices()),
    )
    assert sweep_chunk._cache_size() == size


def test_progress_callback(mdp):
    # The chunks of test_chunking_does_not_change_results (compiled there): 4 runs, then the
    # last 2 padded to 4.
    calls = []
    sweep(
        jax.random.key(0),
        mdp,
        jp.Dirichlet.grid(KS, sampler="fast"),
        num_trials=N,
        chunking=jp.Chunking(
            batch_size=4, vector_width=2, progress=lambda done, total: calls.append((done, total))
        ),
    )
    assert calls == [(4, 6), (6, 6)]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (lambda: dict(mechanisms=jp.Dirichlet.grid([])), "a grid must be a non-empty 1-D"),
        (lambda: dict(mechanisms=jp.Dirichlet.grid([[1.0, 2.0]])), "a grid must be a non-empty"),
        (lambda: dict(mechanisms=jp.Dirichlet.grid([1.0, 0.0])), "^k must"),
        (lambda: dict(mechanisms=jp.Dirichlet.grid([-1.0])), "^k must"),
        (lambda: dict(mechanisms=jp.Dirichlet([[1.0, 2.0]])), "^k must be a non-empty 1-D"),
        (lambda: dict(mechanisms=GRID, num_trials=0), "num_trials must be an int >= 1"),
        (lambda: dict(mechanisms=GRID, num_trials=2.0), "num_trials must be an int"),
        (lambda: dict(mechanisms=GRID, chunking=jp.Chunking(batch_size=0)), "batch_size must"),
        (lambda: dict(mechanisms=GRID, chunking=jp.Chunking(batch_size=2.5)), "batch_size must"),
        (lambda: dict(mechanisms=GRID, chunking=jp.Chunking(vector_width=0)), "vector_width"),
        (lambda: dict(mechanisms=GRID, bound=jp.PaperSet(0.0)), "^beta must"),
        (lambda: dict(mechanisms=GRID, bound=jp.PaperSet(1.0)), "^beta must"),
    ],
)
def test_sweep_validation(mdp, kwargs, match):
    with pytest.raises(ValueError, match=match):
        sweep(jax.random.key(0), mdp, **kwargs())


def test_sweep_zeros_need_support():
    with pytest.raises(ValueError, match=r"\(state 0, action 0\).*support='nonzero'.*smoothing"):
        sweep(
            jax.random.key(0),
            jp.examples.investment(),
            jp.Dirichlet.grid(KS, sampler="fast"),
            num_trials=2,
        )


# ----------------------------------------------------------------------------- Example 1


def test_investment_non_private_optimum():
    inv = jp.examples.investment()
    o = to_numpy(inv)
    pol, V, _ = np_backward_induction(o["P"], o["R"], o["RT"], o["gamma"], o["mask"], 1)
    assert V[0, 0] == pytest.approx(0.9) and pol[0, 0] == 0
    sol = jp.solve(inv)
    np.testing.assert_allclose(sol.values, V, atol=1e-6)
    np.testing.assert_array_equal(sol.policy, pol)


def test_example1_figure_1a():
    """50 trials at k = 1 and k = 40, β = 0.1, against the paper's Figure 1a.

    The paper's numbers are one realisation of 50 trials, so each mean gets 4 standard errors
    (from this run's sample std) plus a model tolerance of 0.03.
    """
    inv = jp.examples.investment()
    res = sweep(
        jax.random.key(0),
        inv,
        jp.Dirichlet.grid([1.0, 40.0], sampler="fast"),
        jp.PaperSet(0.1),
        num_trials=50,
        support="nonzero",
    )
    assert float(res.optimal_value) == pytest.approx(0.9, abs=1e-6)
    r = as_arrays(res)
    paper = dict(lower=(0.17, 0.66), private_value=(0.96, 0.905))
    for f, targets in paper.items():
        for i, target in enumerate(targets):
            x = r[f][i]
            se = x.std(ddof=1) / np.sqrt(x.size)
            assert abs(x.mean() - target) <= 4 * se + 0.03, (f, i, x.mean(), se)
    # Per trial: the bounds bracket the private value, and no policy beats the optimum.
    assert np.all(r["lower"] <= r["private_value"] + 1e-6)
    assert np.all(r["private_value"] <= r["upper"] + 1e-6)
    assert np.all(r["true_value"] <= float(res.optimal_value) + 1e-6)
    # The true value of any policy is one of the four hit probabilities.
    hits = np.array(jp.examples.HIT_PROBABILITIES)
    assert np.all(np.min(np.abs(r["true_value"][..., None] - hits), -1) < 1e-6)
    # More k, less noise: a smaller cost of privacy in every trial's mean.
    assert r["cost"][1].mean() < r["cost"][0].mean()
    assert r["true_value"][1].mean() >= r["true_value"][0].mean()


# ----------------------------------------------------------------------------- infinite


def test_infinite_horizon_sweep():
    mdp = build_mdp(1, horizon=None)
    res = sweep(
        jax.random.key(9),
        mdp,
        jp.Dirichlet.grid(KS, sampler="fast"),
        num_trials=N,
        chunking=jp.Chunking(batch_size=3),
    )
    r = as_arrays(res)
    for f in FIELDS:
        assert r[f].shape == (len(KS), N) and np.all(np.isfinite(r[f]))
    slack = 1e-5 / (1 - GAMMA)
    assert np.all(r["lower"] <= r["private_value"] + slack)
    assert np.all(r["private_value"] <= r["upper"] + slack)
    o = to_numpy(mdp)
    V_star, _ = np_value_iteration(o["P"], o["R"], o["gamma"], o["mask"])
    tol = float(default_tolerance(mdp))
    assert float(res.optimal_value) == pytest.approx(V_star[0], abs=tol)
    assert np.all(r["true_value"] <= V_star[0] + slack)


def test_keys_scalars_and_devices_are_checked(mdp):
    legacy = sweep(jax.random.PRNGKey(0), mdp, jp.Dirichlet.grid(KS, sampler="fast"), num_trials=N)
    typed = sweep(
        jax.random.wrap_key_data(jax.random.PRNGKey(0)),
        mdp,
        jp.Dirichlet.grid(KS, sampler="fast"),
        num_trials=N,
    )
    np.testing.assert_array_equal(legacy.cost, typed.cost)
    assert legacy.converged.shape == (len(KS), N) and bool(legacy.converged.all())
    with pytest.raises(ValueError, match="key must be a JAX PRNG key"):
        sweep(0, mdp, jp.Dirichlet.grid(KS, sampler="fast"), num_trials=N)
    with pytest.raises(ValueError, match="devices must list at least one"):
        sweep(
            jax.random.key(0),
            mdp,
            jp.Dirichlet.grid(KS, sampler="fast"),
            num_trials=N,
            chunking=jp.Chunking(devices=[]),
        )
    with pytest.raises(ValueError, match="k must be a scalar"):
        synthesize(jax.random.key(0), mdp, jp.Dirichlet([1.0, 1000.0]))
    with pytest.raises(ValueError, match="beta must be a scalar"):
        sweep(
            jax.random.key(0),
            mdp,
            jp.Dirichlet.grid(KS, sampler="fast"),
            jp.PaperSet([0.1, 0.9]),
            num_trials=N,
        )
    with pytest.raises(ValueError, match="max_iterations must be an int >= 1"):
        synthesize(
            jax.random.key(0), mdp, jp.Dirichlet(1.0), options=jp.SolverOptions(max_iterations=0)
        )
    with pytest.raises(ValueError, match="mdp must be a TabularMDP"):
        synthesize(jax.random.key(0), np.asarray(mdp.transitions), jp.Dirichlet(1.0))
