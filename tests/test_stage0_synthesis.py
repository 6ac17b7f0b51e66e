"""``synthesize(..., stage=t)`` and the sweep's stage-0 runs: one backward pass per policy in
`[S]` memory. Oracles: a NumPy backward induction and evaluation on the release; and, for
the bit-for-bit promise, the full `[T + 1, S]` path's rows (itself checked against LP and
NumPy oracles in test_bounds / test_planning)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import T, build_mdp, np_backward_induction

import jaxprivmdp as jp
from jaxprivmdp.experiments._chunks import run_one
from jaxprivmdp.experiments._synthesis import _synthesize_jit, private_model, synthesize_core
from jaxprivmdp.mechanisms._registry import as_mechanism
from jaxprivmdp.models._rows import with_probs
from jaxprivmdp.models._support import model_mechanism_input
from jaxprivmdp.planning import _bellman
from jaxprivmdp.planning._bellman import q_values
from jaxprivmdp.planning._bounds import set_up
from jaxprivmdp.planning._evaluation import evaluate_core
from jaxprivmdp.planning._stage_pass import SetArgs, stage_pass
from jaxprivmdp.planning._width import CheckedWidth

pytestmark = pytest.mark.integration

FIELDS = ("policy", "private_values", "lower", "upper", "true_values")
SETS = [("paper", False), ("exact", True), ("certified", False), ("certified", True)]
DEFAULT = [("dense", SETS[0]), ("sparse", SETS[3])]  # the rest: -m slow


def model(kind: str, dtype=None):
    dense = build_mdp(3, masked=True, dtype=dtype)
    return {"dense": dense, "sparse": jp.to_sparse(dense)}[kind]


def assert_rows(full, one, t):
    """``one`` (stage ``t``) is row ``t`` of ``full``, bit for bit, robust policy included;
    the cost (stage 0 at ``s0``) is the same."""
    for f in FIELDS:
        np.testing.assert_array_equal(getattr(one, f), getattr(full, f)[t], err_msg=f)
    np.testing.assert_array_equal(one.cost, full.cost)
    np.testing.assert_array_equal(one.private_transitions, full.private_transitions)
    if full.robust is not None:
        for f in FIELDS:
            np.testing.assert_array_equal(getattr(one.robust, f), getattr(full.robust, f)[t])
        np.testing.assert_array_equal(one.robust.cost, full.robust.cost)


def synth(key, mdp, bound, aware, **kw):
    sets = {"paper": jp.PaperSet, "exact": jp.ExactSet, "certified": jp.CertifiedSet}
    uset = sets[bound](0.1, support_aware=aware)
    return jp.synthesize(key, mdp, jp.Dirichlet(30.0), uset, support="nonzero", **kw)


@pytest.mark.parametrize(
    ("kind", "bound", "aware"),
    [
        pytest.param(kind, *case, marks=[] if (kind, case) in DEFAULT else pytest.mark.slow)
        for kind in ("dense", "sparse")
        for case in SETS
    ],
)
def test_stage_rows_are_the_full_rows(kind, bound, aware):
    mdp, key, robust = model(kind), jax.random.key(4), kind == "dense"
    full = synth(key, mdp, bound, aware, robust=robust)
    compiled = _synthesize_jit._cache_size()
    for t in (0, T - 1):
        one = synth(key, mdp, bound, aware, robust=robust, stage=t)
        assert one.policy.shape == one.lower.shape == (mdp.num_states,)
        assert_rows(full, one, t)
    assert _synthesize_jit._cache_size() <= compiled + 1  # the stage is a leaf, not static


@pytest.mark.parametrize("kind", ["dense", pytest.param("sparse", marks=pytest.mark.slow)])
@pytest.mark.parametrize(
    ("bound", "aware"), [SETS[0], pytest.param(*SETS[3], marks=pytest.mark.slow)]
)
def test_float64(kind, bound, aware):
    with jax.enable_x64(True):
        mdp, key = model(kind, jnp.float64), jax.random.key(2)
        full = synth(key, mdp, bound, aware)
        one = synth(key, mdp, bound, aware, stage=0)
        assert one.lower.dtype == jnp.float64
        assert_rows(full, one, 0)


def test_stage_zero_matches_a_numpy_backward_induction():
    mdp = build_mdp(5)
    out = jp.synthesize(jax.random.key(1), mdp, jp.Dirichlet(20.0), stage=0)
    P_bar = np.asarray(out.private_transitions, np.float64)
    R, RT = np.asarray(mdp.rewards, np.float64), np.asarray(mdp.terminal_reward, np.float64)
    mask = np.asarray(mdp.action_mask)
    policy, values, _ = np_backward_induction(P_bar, R, RT, float(mdp.discount), mask, T)
    np.testing.assert_array_equal(out.policy, policy[0])
    np.testing.assert_allclose(out.private_values, values[0], rtol=1e-5, atol=1e-5)
    assert np.all(out.lower <= out.private_values + 1e-6)
    assert np.all(out.private_values <= out.upper + 1e-6)


@pytest.mark.parametrize("robust", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_under_jit_and_vmap_over_keys(robust):
    mdp = model("sparse")
    keys = jax.random.split(jax.random.key(7), 3)

    def run(stage):
        return lambda key: synth(key, mdp, "exact", True, robust=robust, stage=stage)

    full = jax.jit(jax.vmap(run(None)))(keys)
    batched = jax.jit(jax.vmap(run(0)))(keys)
    for i in range(len(keys)):  # batched against batched: vmap may round otherwise
        row = jax.tree.map(lambda x, i=i: x[i], full)
        assert_rows(row, jax.tree.map(lambda x, i=i: x[i], batched), 0)


def _stage0_pieces(mdp, k):
    mech = as_mechanism(jp.Dirichlet(k), "test", dtype=mdp.rewards.dtype)
    _, private = private_model(jax.random.key(3), mdp, *_rows(mdp), mech)
    params, _ = set_up(private, mech, jp.PaperSet(0.1))
    return private, params


def _rows(mdp):
    inp = model_mechanism_input(mdp, None, None, interior=True)
    return inp.rows, inp.support


def test_checked_width_recomputes_the_whole_pass():
    """A fill width of 2 is too small for k = 2 (α large): the checked pass must fall back
    to all S entries (it equals that), where the unchecked width-2 pass is wrong."""
    mdp = build_mdp(6)
    private, params = _stage0_pieces(mdp, 2.0)

    @jax.jit
    def passes():
        def bounds(width):
            args = SetArgs(params, width, False)
            return stage_pass(private, lambda v: q_values(private, v), args)

        return bounds(CheckedWidth(2)), bounds(mdp.num_states), bounds(2)

    checked, everything, cut = passes()
    for f in ("lower", "upper", "cost", "policy", "values"):
        np.testing.assert_array_equal(getattr(checked, f), getattr(everything, f))
    assert not np.array_equal(cut.lower, everything.lower)


@pytest.mark.slow
def test_checked_width_through_synthesize():
    """The public path with a traced k and a small fill_width agrees with the full path."""
    mdp = build_mdp(6)
    f = jax.jit(
        lambda k, t: jp.synthesize(
            jax.random.key(3), mdp, jp.Dirichlet(k), stage=t, options=jp.SolverOptions(fill_width=2)
        )
    )
    g = jax.jit(
        lambda k: jp.synthesize(
            jax.random.key(3), mdp, jp.Dirichlet(k), options=jp.SolverOptions(fill_width=2)
        )
    )
    assert_rows(g(2.0), f(2.0, 0), 0)


def test_the_sweep_run_equals_the_full_path():
    """A finite-horizon sweep run (stage-0 passes, the true MDP evaluated in the same pass)
    against ``synthesize_core`` with full arrays and ``evaluate_core``, bit for bit."""
    mdp = model("sparse")
    mech = as_mechanism(jp.Dirichlet(40.0), "test", dtype=jnp.float32)
    rows, support = _rows(mdp)
    params, width = set_up(with_probs(mdp, rows, support), mech, jp.CertifiedSet(0.1))
    static = dict(width=width, support_aware=False, robust=True)
    key = jax.random.key(9)
    args = (key, mech, params, mdp, rows, support, 10_000)
    got = jax.jit(lambda: run_one(*args, **static))()

    @jax.jit
    def full():
        out = synthesize_core(key, mdp, rows, support, mech, params, 10_000, **static)
        s0 = mdp.initial_state
        true, rob_true = (evaluate_core(mdp, p)[0, s0] for p in (out.policy, out.robust.policy))
        return out, true, rob_true

    out, true, rob_true = full()
    s0 = mdp.initial_state
    np.testing.assert_array_equal(got.private_value, out.private_values[0, s0])
    np.testing.assert_array_equal(got.true_value, true)
    np.testing.assert_array_equal(got.lower, out.lower[0, s0])
    np.testing.assert_array_equal(got.cost, out.cost)
    np.testing.assert_array_equal(got.robust.true_value, rob_true)
    np.testing.assert_array_equal(got.robust.upper, out.robust.upper[0, s0])


def test_progress_reports_the_stages(monkeypatch):
    monkeypatch.setattr(_bellman, "PROGRESS_SECONDS", 0.0)
    mdp, calls = build_mdp(1), []
    jp.synthesize(
        jax.random.key(0),
        mdp,
        jp.Dirichlet(20.0),
        stage=0,
        progress=lambda done, total: calls.append((done, total)),
    )
    jax.effects_barrier()
    assert calls == [(t, T) for t in range(1, T + 1)]  # every stage (throttle 0 s)


@pytest.mark.slow
def test_progress_prints_and_follows_value_iteration(capfd):
    mdp, calls = build_mdp(1), []
    infinite = build_mdp(1, horizon=None)
    jp.synthesize(
        jax.random.key(0), infinite, jp.Dirichlet(20.0), progress=lambda d, t: calls.append(d)
    )
    jax.effects_barrier()
    assert calls and calls == sorted(calls)  # value iteration's sweeps
    jax.jit(lambda key: jp.synthesize(key, mdp, jp.Dirichlet(20.0), stage=0, progress=True).cost)(
        jax.random.key(0)
    ).block_until_ready()
    jax.effects_barrier()
    assert f"backward induction: stage {T}/{T}" in capfd.readouterr().err


def test_no_callback_when_progress_is_off():
    mdp = build_mdp(1)
    off = str(
        jax.make_jaxpr(lambda key: jp.synthesize(key, mdp, jp.Dirichlet(20.0), stage=0))(
            jax.random.key(0)
        )
    )
    assert "callback" not in off


def test_bad_arguments_name_themselves():
    mdp = build_mdp(1)
    for bad in (-1, T, 1.5, True, "0"):
        with pytest.raises(ValueError, match="stage"):
            jp.synthesize(jax.random.key(0), mdp, jp.Dirichlet(20.0), stage=bad)
    with pytest.raises(ValueError, match="progress"):
        jp.synthesize(jax.random.key(0), mdp, jp.Dirichlet(20.0), progress="yes")
    infinite = build_mdp(1, horizon=None)
    with pytest.raises(ValueError, match="stage"):
        jp.synthesize(jax.random.key(0), infinite, jp.Dirichlet(20.0), stage=1)
    # stage=0 is a no-op for an infinite horizon (the results are [S] anyway)
    a = jp.synthesize(jax.random.key(0), infinite, jp.Dirichlet(20.0), stage=0)
    b = jp.synthesize(jax.random.key(0), infinite, jp.Dirichlet(20.0))
    for f in FIELDS + ("cost",):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))


def test_memory_does_not_grow_with_the_horizon():
    """No `[T + 1, S]` output with ``stage=0``, and the compiled program's outputs and
    temporaries at T = 10 and 40 differ by a few bytes per stage (the stage indices), not
    the full path's three `[S]` float rows per stage (values, v̲, v̄)."""
    key = jax.random.key(0)

    def program(horizon, stage):
        mdp = jp.examples.gridworld(4, 4, horizon=horizon)
        return jax.jit(lambda key: jp.synthesize(key, mdp, jp.Dirichlet(50.0), stage=stage))

    shapes = [s.shape for s in jax.tree.leaves(jax.eval_shape(program(10, 0), key))]
    full = [s.shape for s in jax.tree.leaves(jax.eval_shape(program(10, None), key))]
    assert (11, 16) in full and not any(s[:1] in ((10,), (11,)) for s in shapes)
    sizes = []
    for horizon in (10, 40):
        stats = program(horizon, 0).lower(key).compile().memory_analysis()
        if stats is None:  # not available on this backend
            return
        sizes.append(stats.output_size_in_bytes + stats.temp_size_in_bytes)
    assert abs(sizes[1] - sizes[0]) < 30 * 16 * 4 / 2


def test_the_cli_reports_only_long_solves(capfd):
    from jaxprivmdp.cli._policy_commands import _long_run_progress

    _long_run_progress(True, every=3600.0)(4, 4)
    assert capfd.readouterr().err == ""  # a short run stays quiet
    _long_run_progress(True, every=0.0)(3, 4)
    _long_run_progress(False, every=0.0)(7, 10_000)
    err = capfd.readouterr().err
    assert "[solve] stage 3/4" in err and "sweep 7 (of at most 10,000)" in err
