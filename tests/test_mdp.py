"""make_mdp's eager validation and the TabularMDP pytree."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import A, S, T, random_arrays

import jaxprivmdp as jp


@pytest.fixture
def arrays():
    P, R, RT, _ = random_arrays(0)
    return P, R, RT


def test_valid_mdp_fields(arrays):
    P, R, RT = arrays
    mdp = jp.make_mdp(P, R, terminal_reward=RT, horizon=T, discount=0.5, initial_state=2)
    assert mdp.transitions.shape == (S, A, S)
    assert mdp.rewards.shape == (S, A)
    assert mdp.terminal_reward.shape == (S,)
    assert mdp.discount.shape == ()
    assert mdp.action_mask.shape == (S, A) and mdp.action_mask.dtype == jnp.bool_
    assert bool(mdp.action_mask.all())
    assert mdp.transitions.dtype == jnp.float32  # JAX's default float
    assert (mdp.horizon, mdp.initial_state, mdp.num_states, mdp.num_actions) == (T, 2, S, A)
    assert mdp.is_finite_horizon
    np.testing.assert_allclose(mdp.rewards, R, rtol=1e-6)
    np.testing.assert_allclose(mdp.terminal_reward, RT, rtol=1e-6)
    inf = jp.make_mdp(P, R, discount=0.9)
    assert inf.horizon is None and not inf.is_finite_horizon
    np.testing.assert_array_equal(inf.terminal_reward, np.zeros(S))


# ----------------------------------------------------------------------------- shapes


@pytest.mark.parametrize(
    "shape",
    [(S, A), (S, A, S - 1), (S, A, S, 1), (0, A, 0), (S, 0, S)],
    ids=["2d", "last-dim", "4d", "no-states", "no-actions"],
)
def test_bad_transition_shape(shape):
    with pytest.raises(ValueError, match=r"transitions must have shape \[S, A, S\]"):
        jp.make_mdp(np.full(shape, 1.0 / max(shape[-1], 1)), np.zeros((S, A)), horizon=T)


@pytest.mark.parametrize("shape", [(S,), (A, S), (S, A + 1), (S, A, 1)])
def test_bad_reward_shape(arrays, shape):
    P, _, _ = arrays
    with pytest.raises(ValueError, match=r"rewards must have shape \[S, A\]"):
        jp.make_mdp(P, np.zeros(shape), horizon=T)


@pytest.mark.parametrize("shape", [(S + 1,), (S, 1), ()])
def test_bad_terminal_reward_shape(arrays, shape):
    P, R, _ = arrays
    with pytest.raises(ValueError, match=r"terminal_reward must have shape \[S\]"):
        jp.make_mdp(P, R, terminal_reward=np.zeros(shape), horizon=T)


@pytest.mark.parametrize("shape", [(S,), (A, S), (S, A, 1)])
def test_bad_mask_shape(arrays, shape):
    P, R, _ = arrays
    with pytest.raises(ValueError, match=r"action_mask must have shape \[S, A\]"):
        jp.make_mdp(P, R, horizon=T, action_mask=np.ones(shape, bool))


def test_mask_must_be_boolean(arrays):
    P, R, _ = arrays
    with pytest.raises(ValueError, match="action_mask must be boolean"):
        jp.make_mdp(P, R, horizon=T, action_mask=np.full((S, A), 2))
    with pytest.raises(ValueError, match="action_mask must be boolean"):
        jp.make_mdp(P, R, horizon=T, action_mask=np.full((S, A), np.nan))
    # 0/1 integers are read as booleans.
    mdp = jp.make_mdp(P, R, horizon=T, action_mask=np.ones((S, A), int))
    assert mdp.action_mask.dtype == jnp.bool_


def test_not_numeric(arrays):
    P, R, _ = arrays
    with pytest.raises(ValueError, match="rewards must be numeric"):
        jp.make_mdp(P, np.full((S, A), "x"), horizon=T)
    with pytest.raises(ValueError, match="rewards could not be converted"):
        jp.make_mdp(P, [[1.0, 2.0], [1.0]], horizon=T)


def test_ragged_transitions_named():
    with pytest.raises(ValueError, match="transitions could not be converted"):
        jp.make_mdp([[[1.0], [1.0, 0.0]]], np.zeros((1, 2)), horizon=T)


# ----------------------------------------------------------------------------- values


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("field", ["transitions", "rewards", "terminal_reward"])
def test_non_finite_entries(arrays, field, bad):
    P, R, RT = (x.copy() for x in arrays)
    target = dict(transitions=P, rewards=R, terminal_reward=RT)[field]
    target.flat[3] = bad
    idx = np.unravel_index(3, target.shape)
    with pytest.raises(ValueError, match=rf"{field} has a non-finite entry .* at index \({idx[0]}"):
        jp.make_mdp(P, R, terminal_reward=RT, horizon=T)


def test_non_finite_in_masked_row_is_rejected(arrays):
    # Masked rows are ignored, but NaN anywhere would poison the dense matrix products.
    P, R, _ = (x.copy() for x in arrays)
    mask = np.ones((S, A), bool)
    mask[1, 2] = False
    P[1, 2, 0] = np.nan
    with pytest.raises(ValueError, match="transitions has a non-finite entry"):
        jp.make_mdp(P, R, horizon=T, action_mask=mask)


def test_negative_entry(arrays):
    P, R, _ = (x.copy() for x in arrays)
    P[2, 1, 3] = -0.1
    P[2, 1, 0] += 0.1
    with pytest.raises(ValueError, match=r"negative entry .* \(state 2, action 1, next state 3\)"):
        jp.make_mdp(P, R, horizon=T)


def test_rows_must_sum_to_one(arrays):
    P, R, _ = (x.copy() for x in arrays)
    P[3, 2] *= 0.93
    with pytest.raises(ValueError, match=r"row \(state 3, action 2\) sums to \S*0\.9\d*\)?, not 1"):
        jp.make_mdp(P, R, horizon=T)
    # The message also says nothing is renormalized.
    with pytest.raises(ValueError, match="never renormalized"):
        jp.make_mdp(P, R, horizon=T)


def test_float32_rounding_accepted_and_nothing_renormalized(arrays):
    P, R, _ = arrays
    P32 = P.astype(np.float32)
    sums = P32.astype(np.float64).sum(-1)
    assert np.any(sums != 1.0)  # the rows really are off by float32 rounding
    mdp = jp.make_mdp(P32, R, horizon=T)
    np.testing.assert_array_equal(np.asarray(mdp.transitions), P32)
    # A float32 row off by a few ulps more than rounding is still accepted and kept as is.
    P_off = P32.copy()
    P_off[0, 0, 0] += np.float32(4e-7)
    mdp = jp.make_mdp(P_off, R, horizon=T)
    np.testing.assert_array_equal(np.asarray(mdp.transitions), P_off)
    # Far beyond float32 rounding: refused.
    P_off[0, 0, 0] += np.float32(1e-3)
    with pytest.raises(ValueError, match=r"row \(state 0, action 0\) sums to"):
        jp.make_mdp(P_off, R, horizon=T)


def test_one_row_sum_tolerance_in_every_dtype(arrays):
    """float32 rounding passes in float64 too (a float32 file used in float64 mode), a real
    error fails in both, and nothing is renormalized."""
    P, R, _ = (x.copy() for x in arrays)
    P[1, 1, 0] += 1e-6  # float32-level rounding: accepted in every dtype
    with jax.enable_x64(True):
        mdp = jp.make_mdp(P, R, horizon=T, dtype=np.float64)
        np.testing.assert_array_equal(np.asarray(mdp.transitions), P)
    P[1, 1, 0] += 1e-3  # a real error: refused in every dtype
    for dtype in (np.float32, np.float64):
        with jax.enable_x64(True):
            with pytest.raises(ValueError, match=r"row \(state 1, action 1\) sums to"):
                jp.make_mdp(P, R, horizon=T, dtype=dtype)
    with jax.enable_x64(True):
        mdp = jp.make_mdp(arrays[0].astype(np.float32), R, horizon=T, dtype=np.float64)
        assert mdp.transitions.dtype == jnp.float64
        np.testing.assert_array_equal(
            np.asarray(mdp.transitions), arrays[0].astype(np.float32).astype(np.float64)
        )


def test_float64_input_kept_exactly_under_x64(arrays):
    P, R, _ = arrays
    with jax.enable_x64(True):
        mdp = jp.make_mdp(P, R, horizon=T, dtype=np.float64)
        np.testing.assert_array_equal(np.asarray(mdp.transitions), P)


def test_masked_rows_may_hold_anything(arrays):
    P, R, _ = (x.copy() for x in arrays)
    mask = np.ones((S, A), bool)
    mask[0, 1] = mask[4, 0] = False
    P[0, 1] = -3.0  # negative and not summing to 1: ignored because masked
    P[4, 0] = 0.0
    mdp = jp.make_mdp(P, R, horizon=T, action_mask=mask)
    np.testing.assert_array_equal(np.asarray(mdp.transitions), P.astype(np.float32))
    np.testing.assert_array_equal(np.asarray(mdp.action_mask), mask)


def test_state_without_action(arrays):
    P, R, _ = arrays
    mask = np.ones((S, A), bool)
    mask[1] = mask[3] = False
    with pytest.raises(ValueError, match=r"state\(s\) \[1, 3\] have no allowed action"):
        jp.make_mdp(P, R, horizon=T, action_mask=mask)


# ----------------------------------------------------------------------------- scalars


@pytest.mark.parametrize("discount", [-0.1, 1.5, np.nan, np.inf])
def test_discount_out_of_range(arrays, discount):
    P, R, _ = arrays
    with pytest.raises(ValueError, match="discount"):
        jp.make_mdp(P, R, horizon=T, discount=discount)
    with pytest.raises(ValueError, match="discount"):
        jp.make_mdp(P, R, discount=discount)


def test_discount_one_needs_finite_horizon(arrays):
    P, R, _ = arrays
    with pytest.raises(ValueError, match=r"discount \(infinite horizon\) must lie in \[0, 1\)"):
        jp.make_mdp(P, R, discount=1.0)
    assert jp.make_mdp(P, R, horizon=T, discount=1.0).discount == 1.0
    assert jp.make_mdp(P, R, horizon=T, discount=0.0).discount == 0.0
    assert jp.make_mdp(P, R, discount=0.0).discount == 0.0


@pytest.mark.parametrize("horizon", [0, -2])
def test_horizon_below_one(arrays, horizon):
    P, R, _ = arrays
    with pytest.raises(ValueError, match="horizon must be >= 1"):
        jp.make_mdp(P, R, horizon=horizon)


@pytest.mark.parametrize("horizon", [2.0, 2.5, "3", True, np.array([2])])
def test_horizon_not_int(arrays, horizon):
    P, R, _ = arrays
    with pytest.raises(ValueError, match="horizon must be an int"):
        jp.make_mdp(P, R, horizon=horizon)


def test_horizon_numpy_int_accepted(arrays):
    P, R, _ = arrays
    mdp = jp.make_mdp(P, R, horizon=np.int64(3))
    assert mdp.horizon == 3 and type(mdp.horizon) is int


def test_terminal_reward_needs_finite_horizon(arrays):
    P, R, RT = arrays
    with pytest.raises(ValueError, match="terminal_reward is only meaningful"):
        jp.make_mdp(P, R, terminal_reward=RT, discount=0.9)


@pytest.mark.parametrize("s0", [-1, S, S + 3])
def test_initial_state_out_of_range(arrays, s0):
    P, R, _ = arrays
    with pytest.raises(ValueError, match=rf"initial_state must lie in \[0, {S}\)"):
        jp.make_mdp(P, R, horizon=T, initial_state=s0)


@pytest.mark.parametrize("s0", [1.0, True, None])
def test_initial_state_not_int(arrays, s0):
    P, R, _ = arrays
    with pytest.raises(ValueError, match="initial_state must be an int"):
        jp.make_mdp(P, R, horizon=T, initial_state=s0)


def test_inputs_not_modified(arrays):
    P, R, RT = arrays
    copies = [x.copy() for x in arrays]
    jp.make_mdp(P, R, terminal_reward=RT, horizon=T)
    for x, c in zip(arrays, copies, strict=True):
        np.testing.assert_array_equal(x, c)


# ----------------------------------------------------------------------------- pytree


def test_pytree_round_trip(arrays):
    P, R, RT = arrays
    mdp = jp.make_mdp(P, R, terminal_reward=RT, horizon=T, discount=0.7, initial_state=1)
    leaves, treedef = jax.tree_util.tree_flatten(mdp)
    assert len(leaves) == 5  # transitions, rewards, terminal_reward, discount, action_mask
    back = jax.tree_util.tree_unflatten(treedef, leaves)
    assert isinstance(back, jp.TabularMDP)
    assert (back.horizon, back.initial_state) == (T, 1)
    for a, b in zip(leaves, jax.tree_util.tree_leaves(back), strict=True):
        np.testing.assert_array_equal(a, b)
    doubled = jax.tree_util.tree_map(lambda x: x * 2, mdp)
    np.testing.assert_allclose(doubled.rewards, 2 * mdp.rewards)
    assert doubled.horizon == T


def test_horizon_and_initial_state_are_static(arrays):
    P, R, RT = arrays
    a = jp.make_mdp(P, R, terminal_reward=RT, horizon=T)
    b = jp.make_mdp(P, R, terminal_reward=RT, horizon=T + 1)
    c = jp.make_mdp(P, R, terminal_reward=RT, horizon=T, initial_state=1)
    ta, tb, tc = (jax.tree_util.tree_structure(m) for m in (a, b, c))
    assert ta != tb and ta != tc
    # Inside jit the horizon is a Python int that can set shapes; the discount is traced.
    out = jax.jit(lambda m: jnp.zeros(m.horizon) + m.discount)(a)
    assert out.shape == (T,)


def test_frozen(arrays):
    P, R, _ = arrays
    mdp = jp.make_mdp(P, R, horizon=T)
    with pytest.raises(AttributeError):
        mdp.horizon = 3


def test_only_float32_and_float64_and_no_float16_slack():
    P, R, RT, _ = random_arrays(0)
    with pytest.raises(ValueError, match="dtype must be float32 or float64"):
        jp.make_mdp(P, R, terminal_reward=RT, horizon=T, dtype=np.int32)
    with pytest.raises(ValueError, match="dtype must be float32 or float64"):
        jp.make_mdp(P, R, terminal_reward=RT, horizon=T, dtype=np.float16)
    bad = P.astype(np.float16)
    bad[0, 0] *= np.float16(0.8)  # a float16 row summing to 0.8 is not "1 within rounding"
    with pytest.raises(ValueError, match=r"row \(state 0, action 0\) sums to"):
        jp.make_mdp(bad, R, terminal_reward=RT, horizon=T)
    with pytest.raises(ValueError, match="discount must be a scalar"):
        jp.make_mdp(P, R, terminal_reward=RT, horizon=T, discount=[0.5, 1.0])
