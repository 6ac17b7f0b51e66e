"""``Synthesis.true_values``: the private policy's value on the true model, also on the
`[S]`-memory path ``synthesize(..., stage=t)``, where ``evaluate`` cannot take the `[S]`
policy (it says where the value is).

Oracles: a NumPy backward induction of the policy on the true model's float64 arrays (and a
NumPy bounded-until recursion for a property), independent of the library; the stage path
must equal the full path's row ``t`` bit for bit (same arithmetic, one `[S]` carry).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import T, build_mdp, equations, np_evaluate, to_numpy

import jaxprivmdp as jp

MID = T // 2


def models(dtype=None):
    dense = build_mdp(3, masked=True, dtype=dtype)
    sparse = jp.to_sparse(dense)
    return dense, {"dense": dense, "sparse": sparse, "ragged": jp.to_ragged(sparse)}


def synth(mdp, **kw):
    return jp.synthesize(
        jax.random.key(5), mdp, jp.Dirichlet(30.0), jp.PaperSet(0.1), support="nonzero", **kw
    )


def oracle(dense, policy):
    """`[T + 1, S]` the policy's values on the true model (NumPy, float64)."""
    a = to_numpy(dense)
    return np_evaluate(a["P"], a["R"], a["RT"], a["gamma"], np.asarray(policy), a["horizon"])


def check_policy(dense, mdp, full, stages, got, tol):
    """``full.true_values`` is the oracle's and ``evaluate``'s; each stage's is its row."""
    np.testing.assert_allclose(full.true_values, oracle(dense, full.policy), rtol=tol, atol=tol)
    np.testing.assert_array_equal(full.true_values, jp.evaluate(mdp, full.policy))
    for t, one in zip(stages, got, strict=True):
        assert one.true_values.shape == (mdp.num_states,)
        assert one.true_values.dtype == full.private_values.dtype
        np.testing.assert_array_equal(one.true_values, full.true_values[t], err_msg=f"t={t}")


# The dense case stays in the unit tier; the other layouts (3-3.5 s each) run with the
# integration tier.
@pytest.mark.parametrize(
    "kind",
    ["dense", *(pytest.param(k, marks=pytest.mark.integration) for k in ("sparse", "ragged"))],
)
@pytest.mark.integration
def test_stage_true_values_are_rows_of_the_true_evaluation(kind):
    dense, all_kinds = models()
    mdp = all_kinds[kind]
    full = synth(mdp, robust=True)
    got = [synth(mdp, robust=True, stage=t) for t in (0, MID)]
    check_policy(dense, mdp, full, (0, MID), got, 1e-5)
    check_policy(dense, mdp, full.robust, (0, MID), [g.robust for g in got], 1e-5)


# 3-3.5 s each (synthesize compiled twice in float64): with the integration tier; the unit
# tier keeps the same comparisons in float32 (the test above).
@pytest.mark.integration
@pytest.mark.parametrize("kind", ["dense", "sparse"])
def test_float64(kind):
    with jax.enable_x64(True):
        dense, all_kinds = models(jnp.float64)
        mdp = all_kinds[kind]
        full = synth(mdp)
        got = [synth(mdp, stage=t) for t in (0, MID)]
        assert full.true_values.dtype == jnp.float64
        check_policy(dense, mdp, full, (0, MID), got, 1e-12)


def test_infinite_horizon():
    mdp = build_mdp(3, masked=True, horizon=None)
    out = synth(mdp)
    a = to_numpy(mdp)
    want = np_evaluate(a["P"], a["R"], None, a["gamma"], np.asarray(out.policy), None)
    np.testing.assert_allclose(out.true_values, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(out.true_values, jp.evaluate(mdp, out.policy))


@pytest.mark.integration  # 2.4 s: the unit tier keeps the 2-minute budget
def test_under_jit_with_a_traced_stage():
    dense, all_kinds = models()
    mdp = all_kinds["sparse"]
    f = jax.jit(lambda key, t: jp.synthesize(key, mdp, jp.Dirichlet(30.0), stage=t).true_values)
    full = jp.synthesize(jax.random.key(2), mdp, jp.Dirichlet(30.0))
    for t in (0, MID):
        np.testing.assert_array_equal(f(jax.random.key(2), t), full.true_values[t])
    assert f._cache_size() == 1  # the stage is a leaf, not static


def test_the_stage_path_forms_no_stage_by_state_array():
    """A jaxpr walk: with ``stage=0`` no value in the program (scans' bodies included) has
    a `[T]`/`[T + 1]` axis beside a state axis; without ``stage`` the evaluation's
    `[T + 1, S]` is there (the walk sees it)."""
    mdp = jp.examples.gridworld(3, 4, horizon=7)  # T = 7, S = 12, A = 4: distinct sizes
    S, horizons = mdp.num_states, (mdp.horizon, mdp.horizon + 1)

    def shapes(stage):
        run = lambda key: jp.synthesize(key, mdp, jp.Dirichlet(50.0), robust=True, stage=stage)  # noqa: E731
        jaxpr = jax.make_jaxpr(run)(jax.random.key(0)).jaxpr
        return {v.aval.shape for e in equations(jaxpr) for v in e.outvars if hasattr(v, "aval")}

    def stacked(shape):
        return len(shape) >= 2 and shape[0] in horizons and S in shape[1:]

    assert any(stacked(s) for s in shapes(None))
    assert not [s for s in shapes(0) if stacked(s)]


def _until(P, policy, target, fail):
    """`[S]` Pr[¬fail U<=T target] under a `[T, S]` policy (NumPy backward induction)."""
    v = target.astype(np.float64)
    for t in reversed(range(policy.shape[0])):
        step = P[np.arange(P.shape[0]), policy[t]] @ v
        v = np.where(target, 1.0, np.where(fail, 0.0, step))
    return v


@pytest.mark.integration
def test_a_min_property_in_its_own_scale():
    """``Pmin=? [F<=T "goal"]``: the true values are probabilities (negated back), in both
    paths, the robust policy's too."""
    mdp = build_mdp(3, masked=True)
    goal = np.array([0, 0, 1, 0, 1], bool)
    pm = jp.property_model(mdp, 'Pmin=? [F<=T "goal"]', labels={"goal": goal})
    full = synth(pm, robust=True)
    one = synth(pm, robust=True, stage=0)
    P = np.asarray(mdp.transitions, np.float64)
    for res in (full, full.robust):
        want = _until(P, np.asarray(res.policy), goal, np.zeros_like(goal))
        np.testing.assert_allclose(res.true_values[0], want, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(one.true_values, full.true_values[0])
    np.testing.assert_array_equal(one.robust.true_values, full.robust.true_values[0])
    assert np.all(np.asarray(full.true_values) >= 0)


@pytest.mark.integration  # 2.4 s: the unit tier keeps the 2-minute budget
def test_a_minimized_cost_in_its_own_scale():
    """``jp.minimizing``: the true values are the costs on the model itself."""
    mdp = build_mdp(3, masked=True)
    full = synth(jp.minimizing(mdp))
    one = synth(jp.minimizing(mdp), stage=MID)
    np.testing.assert_allclose(full.true_values, oracle(mdp, full.policy), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(full.true_values, jp.evaluate(mdp, full.policy))
    np.testing.assert_array_equal(one.true_values, full.true_values[MID])


def test_evaluate_says_where_a_stage_policys_value_is():
    mdp = build_mdp(3, masked=True)
    one = synth(mdp, robust=True, stage=0)  # robust: the program of the first test above
    with pytest.raises(ValueError, match=r"one decision rule.*true_values"):
        jp.evaluate(mdp, one.policy)
    probs = np.full((mdp.num_states, mdp.num_actions), 1.0 / mdp.num_actions)
    with pytest.raises(ValueError, match="synthesize.*stage=t"):
        jp.evaluate(mdp, probs * np.asarray(mdp.action_mask))
    with pytest.raises(ValueError, match="one decision rule"):
        jp.evaluate(mdp, one.policy, stage=0)
    with pytest.raises(ValueError, match="true_values"):  # traced: the same message
        jax.jit(lambda p: jp.evaluate(mdp, p))(one.policy)
