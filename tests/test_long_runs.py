"""Long single runs: ``solve``/``evaluate`` keeping only one stage (`[S]` memory) and
progress reports from inside the compiled loops. Oracle: a NumPy backward induction."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import T, build_mdp, random_stochastic_policy, to_numpy

import jaxprivmdp as jp
from jaxprivmdp.planning._bellman import Progress, solve_core


def numpy_backward_induction(m):
    """Optimal `[T + 1, S]` values and `[T, S]` policy (ties: lowest action), float64."""
    P, R, mask = m["P"], m["R"], m["mask"]
    values, policy = [m["RT"]], []
    for _ in range(m["horizon"]):
        q = np.where(mask, R + m["gamma"] * P @ values[0], -np.inf)
        policy.insert(0, np.argmax(q, axis=1))
        values.insert(0, q.max(axis=1))
    return np.stack(values), np.stack(policy)


def numpy_evaluate(m, policy):
    """`[T + 1, S]` values of a stochastic `[T, S, A]` policy, float64."""
    values = [m["RT"]]
    for t in reversed(range(m["horizon"])):
        q = np.where(m["mask"], m["R"] + m["gamma"] * m["P"] @ values[0], 0.0)
        values.insert(0, np.sum(policy[t] * q, axis=1))
    return np.stack(values)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("masked", [False, True])
def test_solve_one_stage_matches_the_oracle_and_the_full_result(sparse, masked):
    mdp = build_mdp(4, masked=masked)
    v_np, pi_np = numpy_backward_induction(to_numpy(mdp))
    model = jp.to_sparse(mdp) if sparse else mdp
    full = jp.solve(model)
    for t in range(T):
        one = jp.solve(model, stage=t)
        assert one.values.shape == one.policy.shape == (mdp.num_states,)
        np.testing.assert_array_equal(one.values, full.values[t])
        np.testing.assert_array_equal(one.policy, full.policy[t])
        np.testing.assert_allclose(one.values, v_np[t], rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(one.policy, pi_np[t])
        assert int(one.iterations) == T - t and one.error_bound <= full.error_bound
    assert jp.solve(model, stage=0).error_bound == full.error_bound


def test_one_stage_under_jit_and_vmap_without_recompiling(finite_mdp):
    full = jp.solve(finite_mdp)
    f = jax.jit(lambda m, t: jp.solve(m, stage=t).values)
    for t in range(T):
        np.testing.assert_array_equal(f(finite_mdp, t), full.values[t])
    assert f._cache_size() == 1
    batched = jax.vmap(lambda t: solve_core(finite_mdp, None, 10, t).policy)(jnp.arange(T))
    np.testing.assert_array_equal(batched, full.policy)


def test_evaluate_one_stage(masked_finite_mdp):
    mdp = masked_finite_mdp
    m = to_numpy(mdp)
    policy = random_stochastic_policy(7, m["mask"], lead=(T,))
    oracle = numpy_evaluate(m, policy.astype(np.float64))
    full = jp.evaluate(mdp, policy)
    det = jp.solve(mdp).policy
    for t in range(T):
        one = jp.evaluate(mdp, policy, stage=t)
        np.testing.assert_array_equal(one, full[t])
        np.testing.assert_allclose(one, oracle[t], rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(jp.evaluate(mdp, det, stage=t), jp.evaluate(mdp, det)[t])
    jitted = jax.jit(lambda p, t: jp.evaluate(mdp, p, stage=t))(policy, 1)
    np.testing.assert_array_equal(jitted, full[1])


def test_stage_is_checked(finite_mdp, infinite_mdp):
    for bad in (-1, T, 1.5, True):
        with pytest.raises(ValueError, match="stage"):
            jp.solve(finite_mdp, stage=bad)
    with pytest.raises(ValueError, match="stage"):
        jp.evaluate(finite_mdp, jp.solve(finite_mdp).policy, stage=T)
    with pytest.raises(ValueError, match="infinite"):
        jp.solve(infinite_mdp, stage=1)
    sol = jp.solve(infinite_mdp, stage=0)  # a no-op: the values are `[S]` anyway
    np.testing.assert_array_equal(sol.values, jp.solve(infinite_mdp).values)
    np.testing.assert_array_equal(
        jp.evaluate(infinite_mdp, sol.policy, stage=0), jp.evaluate(infinite_mdp, sol.policy)
    )
    with pytest.raises(ValueError, match="progress"):
        jp.solve(finite_mdp, progress="yes")


def test_progress_reports_and_leaves_results_alone(finite_mdp, infinite_mdp):
    calls = []
    sol = jp.solve(finite_mdp, progress=lambda done, total: calls.append((done, total)))
    jax.effects_barrier()
    assert calls and calls[-1] == (T, T)  # throttled: at least the last stage
    np.testing.assert_array_equal(sol.values, jp.solve(finite_mdp).values)
    calls.clear()
    sol = jp.solve(finite_mdp, stage=2, progress=lambda d, t: calls.append((d, t)))
    jax.effects_barrier()
    assert calls[-1] == (T - 2, T - 2)
    calls.clear()
    sol = jp.solve(infinite_mdp, progress=lambda d, t: calls.append((d, t)))
    jax.effects_barrier()
    assert calls[-1] == (int(sol.iterations), 10_000)
    np.testing.assert_array_equal(sol.values, jp.solve(infinite_mdp).values)


def test_progress_prints_under_jit(finite_mdp, infinite_mdp, capfd):
    jax.jit(lambda m: jp.solve(m, progress=True).values)(finite_mdp).block_until_ready()
    jp.solve(infinite_mdp, progress=True)
    jax.effects_barrier()
    err = capfd.readouterr().err
    assert f"backward induction: stage {T}/{T}" in err
    assert "value iteration: sweep" in err and "error bound" in err


def test_no_callback_in_the_program_when_progress_is_off(finite_mdp, infinite_mdp):
    for mdp in (finite_mdp, infinite_mdp):
        off = str(jax.make_jaxpr(lambda m: solve_core(m, None, 10))(mdp))
        on = str(jax.make_jaxpr(lambda m: solve_core(m, None, 10, None, REPORT))(mdp))
        assert "callback" not in off and "callback" in on


REPORT = Progress(None, "test", 5.0)


def test_progress_throttles_on_the_host():
    seen = []
    report = Progress(lambda d, t: seen.append(d), "value iteration", 3600.0)
    for step in range(1, 50):
        report(np.int32(step), np.int32(100), np.float32(0.1))
    report(np.int32(50), np.int32(100), np.float32(0.1), True)
    assert seen == [50]  # nothing for an hour but the last
    assert report == Progress(report.fn, "value iteration", 3600.0)
    assert hash(report) == hash(Progress(report.fn, "value iteration", 3600.0))
