"""Interval models: construction, validation, conversions and pytree behaviour.

The oracle is the arrays themselves: every stored bound is compared with what was given
(exactly, or within one outward ulp where the dtype narrows it), and the conversions with a
plain NumPy scatter of the successor lists.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import random_arrays

import jaxprivmdp as jp
from jaxprivmdp.models.core import check_model, interval_of_point

S, A = 4, 2
DTYPES = [np.float32, np.float64]


def bounds(seed=0, *, masked=False, width=0.1):
    """``(lower, upper, R, mask)``: a box of half-width ``width`` around random rows, with
    structural zeros (l = u = 0) in state 3 of every row."""
    P, R, _, mask = random_arrays(seed, num_states=S, num_actions=A, masked=masked)
    P[..., 3] = 0.0
    P[mask] /= P[mask].sum(-1, keepdims=True)
    lo = np.where(P > 0, np.clip(P - width, 0, 1), 0.0)
    hi = np.where(P > 0, np.clip(P + width, 0, 1), 0.0)
    return lo, hi, R, mask


def dense_to_lists(lo, hi):
    """NumPy oracle of successor lists: every entry with upper > 0, in state order."""
    K = int((hi > 0).sum(-1).max())
    idx = np.full((S, A, K), -1, np.int32)
    lists_lo, lists_hi = np.zeros((S, A, K)), np.zeros((S, A, K))
    for s in range(S):
        for a in range(A):
            listed = np.flatnonzero(hi[s, a] > 0)
            idx[s, a, : listed.size] = listed
            lists_lo[s, a, : listed.size] = lo[s, a, listed]
            lists_hi[s, a, : listed.size] = hi[s, a, listed]
    return idx, lists_lo, lists_hi


def scatter(idx, values):
    """NumPy oracle of the dense bounds of successor lists."""
    out = np.zeros((S, A, S))
    for s, a, j in np.ndindex(idx.shape):
        if idx[s, a, j] >= 0:
            out[s, a, idx[s, a, j]] += values[s, a, j]
    return out


# ----------------------------------------------------------------------------- construction


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_construction_keeps_the_bounds_and_fields(dtype, sparse):
    lo, hi, R, mask = bounds(0, masked=True)
    kw = {}
    if sparse:
        idx, lo, hi = dense_to_lists(lo, hi)
        kw["next_states"] = idx
    lo, hi = lo.astype(dtype), hi.astype(dtype)  # exact in dtype: stored as given
    with jax.enable_x64(dtype == np.float64):
        m = jp.make_interval_mdp(
            lo, hi, R, action_mask=mask, horizon=3, terminal_reward=np.ones(S), dtype=dtype, **kw
        )
        assert isinstance(m, jp.IntervalMDP) and m.is_sparse == sparse
        assert m.lower.dtype == dtype and m.upper.dtype == dtype and m.rewards.dtype == dtype
        np.testing.assert_array_equal(np.asarray(m.lower), lo)
        np.testing.assert_array_equal(np.asarray(m.upper), hi)
        np.testing.assert_array_equal(np.asarray(m.action_mask), mask)
        np.testing.assert_array_equal(np.asarray(m.terminal_reward), np.ones(S))
        assert (m.num_states, m.num_actions, m.horizon, float(m.discount)) == (S, A, 3, 1.0)
        assert m.row_length == (lo.shape[2])
        if sparse:
            assert m.next_states.dtype == jnp.int32
            np.testing.assert_array_equal(np.asarray(m.next_states), kw["next_states"])
        else:
            assert m.next_states is None


def test_default_dtype_and_discount():
    lo, hi, R, _ = bounds(1)
    m = jp.make_interval_mdp(lo, hi, R)
    assert m.lower.dtype == jnp.zeros(()).dtype  # JAX's default float
    assert m.horizon is None and float(m.discount) == pytest.approx(0.95)
    assert m.initial_state == 0 and bool(np.asarray(m.action_mask).all())
    m = jp.make_interval_mdp(lo, hi, R, discount=0.5, initial_state=2)
    assert float(m.discount) == 0.5 and m.initial_state == 2


def test_narrowing_to_float32_rounds_outward():
    """Bounds float32 cannot hold are stored so that the stored box contains the given one."""
    rng = np.random.default_rng(3)
    P = rng.dirichlet(np.ones(S), (S, A))
    lo, hi = np.clip(P - 1 / 3, 0, 1), np.clip(P + 1 / 7, 0, 1)
    lo[0, 0], hi[0, 0] = P[0, 0], P[0, 0]  # a point row
    m = jp.make_interval_mdp(lo, hi, np.zeros((S, A)), dtype=np.float32)
    l32, u32 = np.asarray(m.lower, np.float64), np.asarray(m.upper, np.float64)
    assert np.all(l32 <= lo) and np.all(u32 >= hi)
    assert np.all(l32 >= 0) and np.all(u32 <= 1)
    spacing = np.spacing(np.float32(1.0))
    assert np.all(lo - l32 <= spacing) and np.all(u32 - hi <= spacing)
    assert np.array_equal(l32 == lo, lo == lo.astype(np.float32))  # exact ones are kept
    assert np.all(l32[0, 0] < u32[0, 0])


def test_row_sums_within_tolerance_and_point_rows_are_accepted():
    P = np.random.default_rng(4).dirichlet(np.ones(S), (S, A))
    jp.make_interval_mdp(P, P, np.zeros((S, A)))  # a point model
    lo, hi = P * (1 + 5e-6), P * (1 - 5e-6)
    jp.make_interval_mdp(np.minimum(lo, 1), np.maximum(lo, hi), np.zeros((S, A)))
    jp.make_interval_mdp(np.minimum(lo, hi), hi, np.zeros((S, A)))


def test_masked_rows_are_not_checked():
    lo, hi, R, mask = bounds(2, masked=True)
    lo[~mask], hi[~mask] = 0.75, 0.125  # l > u, sums off: ignored
    m = jp.make_interval_mdp(lo, hi, R, action_mask=mask)
    np.testing.assert_array_equal(np.asarray(m.lower, np.float64)[~mask], 0.75)
    idx = np.zeros((S, A, 2), np.int32)
    idx[..., 1] = 7  # out of range and listed twice, in masked rows only
    idx[mask] = [0, 1]
    sl = np.where(mask[..., None], [0.2, 0.3], 5.0)
    su = np.where(mask[..., None], [0.7, 0.8], -1.0)
    jp.make_interval_mdp(sl, su, R, next_states=idx, action_mask=mask)


def test_public_names():
    assert jp.IntervalMDP is jp.models.IntervalMDP
    assert jp.make_interval_mdp is jp.models.make_interval_mdp
    assert "IntervalMDP" in jp.__all__ and "make_interval_mdp" in jp.__all__


# ----------------------------------------------------------------------------- validation


def _bad(case):
    """``(lower, upper, kwargs, message)`` of an invalid dense or sparse interval model."""
    lo, hi, R, _ = bounds(5)
    kw = {}
    if case == "negative":
        lo[2, 1, 0], msg = -0.25, r"row \(state 2, action 1\), next state 0: lower bound -0.25 is"
    elif case == "crossed":
        lo[1, 0, 1], hi[1, 0, 1] = 0.5, 0.25
        msg = r"row \(state 1, action 0\), next state 1: lower bound 0.5 exceeds its upper"
    elif case == "above_one":
        hi[3, 1, 2], msg = 1.5, r"row \(state 3, action 1\), next state 2: upper bound 1.5 exc"
    elif case == "lower_sum":
        lo[2, 0], hi[2, 0] = [0.5, 0.25, 0.375, 0], [0.5, 0.5, 0.5, 0]
        msg = r"row \(state 2, action 0\): its lower bounds sum to 1.125 > 1 .*no distribution"
    elif case == "upper_sum":
        lo[0, 1], hi[0, 1] = [0, 0, 0, 0], [0.25, 0.25, 0.25, 0.125]
        msg = r"row \(state 0, action 1\): its upper bounds sum to 0.875 < 1 .*no distribution"
    elif case == "nan":
        hi[1, 1, 2], msg = np.nan, r"upper has a non-finite entry nan at index \(1, 1, 2\)"
    elif case == "inf":
        lo[0, 0, 0], msg = -np.inf, r"lower has a non-finite entry -inf at index \(0, 0, 0\)"
    elif case == "shape":
        lo, hi, msg = lo[:, :, :3], hi[:, :, :3], r"lower must have shape \[S, A, S\]"
    elif case == "upper_shape":
        hi, msg = hi[:3], r"upper must have the shape of lower \(4, 2, 4\), got \(3, 2, 4\)"
    elif case == "rewards":
        kw["rewards"], msg = np.zeros((S, A + 1)), r"rewards must have shape \[S, A\]"
    elif case == "no_action":
        mask = np.ones((S, A), bool)
        mask[2] = False
        kw["action_mask"], msg = mask, r"state\(s\) \[2\] have no allowed action"
    elif case == "discount":
        kw["discount"], msg = 1.0, "discount"
    elif case == "horizon":
        kw["horizon"], msg = 0, "horizon"
    else:
        idx, lo, hi = dense_to_lists(lo, hi)  # K = 3: states 0, 1, 2
        kw["next_states"] = idx
        if case == "list_range":
            idx[1, 1, 2], msg = 4, r"next_states row \(state 1, action 1\) lists state 4 in slot 2"
        elif case == "list_twice":
            idx[3, 0, 2], msg = 0, r"next_states row \(state 3, action 0\) lists state 0 twice"
        elif case == "padding":
            idx[2, 1, 2] = -1
            msg = r"row \(state 2, action 1\) has bounds \[.*\] on padding \(slot 2\)"
        elif case == "list_entry":
            lo[0, 1, 1], hi[0, 1, 1] = 0.75, 0.5
            msg = r"row \(state 0, action 1\), slot 1 \(next state 1\): lower bound 0.75 exceeds"
        elif case == "list_shape":
            lo, msg = lo[..., :2], r"lower must have the shape of next_states \(4, 2, 3\)"
        elif case == "list_dtype":
            kw["next_states"], msg = idx.astype(float), "next_states must be integers"
        else:
            raise AssertionError(case)
    kw.setdefault("rewards", R)
    return lo, hi, kw, msg


CASES = [
    "negative", "crossed", "above_one", "lower_sum", "upper_sum", "nan", "inf", "shape",
    "upper_shape", "rewards", "no_action", "discount", "horizon", "list_range", "list_twice",
    "padding", "list_entry", "list_shape", "list_dtype",
]  # fmt: skip


@pytest.mark.parametrize("case", CASES)
def test_invalid_bounds_are_refused_naming_the_row(case):
    lo, hi, kw, msg = _bad(case)
    with pytest.raises(ValueError, match=msg):
        jp.make_interval_mdp(lo, hi, kw.pop("rewards"), **kw)


def test_float64_without_x64_is_refused():
    if jax.config.jax_enable_x64:
        pytest.skip("x64 is on")
    lo, hi, R, _ = bounds(0)
    with pytest.raises(ValueError, match="jax_enable_x64"):
        jp.make_interval_mdp(lo, hi, R, dtype=np.float64)


def test_nothing_given_is_changed_or_shared():
    lo, hi, R, mask = bounds(6, masked=True)
    idx, sl, su = dense_to_lists(lo, hi)
    given = [x.copy() for x in (lo, hi, R, mask, idx, sl, su)]
    with jax.enable_x64(True):
        dense = jp.make_interval_mdp(lo, hi, R, action_mask=mask, dtype=np.float64)
        sparse = jp.make_interval_mdp(
            sl, su, R, next_states=idx, action_mask=mask, dtype=np.float64
        )
    for x, y in zip((lo, hi, R, mask, idx, sl, su), given, strict=True):
        np.testing.assert_array_equal(x, y)
    for x in (lo, hi, R, idx, sl, su):
        x[...] = 0  # the models own their arrays
    mask[...] = True
    np.testing.assert_array_equal(np.asarray(dense.lower), given[0])
    np.testing.assert_array_equal(np.asarray(dense.action_mask), given[3])
    np.testing.assert_array_equal(np.asarray(sparse.next_states), given[4])
    np.testing.assert_array_equal(np.asarray(sparse.upper), given[6])


def test_point_model_functions_refuse_an_interval_model():
    lo, hi, R, _ = bounds(0)
    m = jp.make_interval_mdp(lo, hi, R, horizon=2)
    with pytest.raises(ValueError, match="is an IntervalMDP .*jp.check .*two-quantifier"):
        check_model(m)
    with pytest.raises(ValueError, match="mdp is an IntervalMDP"):
        jp.solve(m)
    check_model(jp.make_mdp(hi / hi.sum(-1, keepdims=True), R))  # point models still pass


# ----------------------------------------------------------------------------- conversions


@pytest.mark.integration
@pytest.mark.parametrize("dtype", DTYPES)
def test_dense_sparse_round_trips(dtype):
    lo, hi, R, _ = bounds(7)
    with jax.enable_x64(dtype == np.float64):
        dense = jp.make_interval_mdp(lo, hi, R, horizon=2, dtype=dtype)
        assert jp.to_dense(dense) is dense
        sparse = jp.to_sparse(dense)
        idx, sl, su = dense_to_lists(np.asarray(dense.lower), np.asarray(dense.upper))
        np.testing.assert_array_equal(np.asarray(sparse.next_states), idx)
        np.testing.assert_array_equal(np.asarray(sparse.lower), sl.astype(dtype))
        np.testing.assert_array_equal(np.asarray(sparse.upper), su.astype(dtype))
        assert sparse.lower.dtype == dtype and sparse.horizon == 2
        back = jp.to_dense(sparse)
        assert not back.is_sparse and back.lower.dtype == dtype
        np.testing.assert_array_equal(np.asarray(back.lower), np.asarray(dense.lower))
        np.testing.assert_array_equal(np.asarray(back.upper), np.asarray(dense.upper))
        np.testing.assert_array_equal(np.asarray(back.rewards), np.asarray(dense.rewards))
        wide = jp.to_sparse(sparse, max_successors=5)  # sparse to sparse, more padding
        assert wide.next_states.shape == (S, A, 5)
        np.testing.assert_array_equal(np.asarray(wide.next_states)[..., :3], idx)
        np.testing.assert_array_equal(np.asarray(wide.next_states)[..., 3:], -1)
        np.testing.assert_array_equal(np.asarray(jp.to_dense(wide).upper), dense.upper)


@pytest.mark.integration
def test_sparse_to_dense_against_a_numpy_scatter():
    """Lists in any slot order, with listed entries of upper 0 (dropped by to_sparse)."""
    lo, hi, R, _ = bounds(8)
    idx, sl, su = dense_to_lists(lo, hi)
    idx, sl, su = idx[..., ::-1].copy(), sl[..., ::-1].copy(), su[..., ::-1].copy()
    idx, sl, su = (np.concatenate([x, np.zeros_like(x[..., :1])], -1) for x in (idx, sl, su))
    idx[..., 3] = -1
    idx[0, 0, 3] = 3  # state 3 listed with l = u = 0
    with jax.enable_x64(True):
        m = jp.make_interval_mdp(sl, su, R, next_states=idx, dtype=np.float64)
        dense = jp.to_dense(m)
        np.testing.assert_array_equal(np.asarray(dense.lower), scatter(idx, sl))
        np.testing.assert_array_equal(np.asarray(dense.upper), scatter(idx, su))
        relisted = jp.to_sparse(m)  # slot order is kept, the u = 0 entry dropped
        assert relisted.next_states.shape == (S, A, 3)
        np.testing.assert_array_equal(np.asarray(relisted.next_states)[0, 0], [2, 1, 0])
        np.testing.assert_array_equal(np.asarray(relisted.next_states), idx[..., :3])


def test_to_sparse_empties_masked_rows_and_checks_max_successors():
    lo, hi, R, mask = bounds(9, masked=True)
    m = jp.make_interval_mdp(lo, hi, R, action_mask=mask)
    sparse = jp.to_sparse(m)
    assert np.all(np.asarray(sparse.next_states)[~mask] == -1)
    assert np.all(np.asarray(sparse.upper)[~mask] == 0)
    with pytest.raises(ValueError, match="more than max_successors = 2"):
        jp.to_sparse(m, max_successors=2)
    with pytest.raises(ValueError, match="max_successors must be an int >= 1"):
        jp.to_sparse(m, max_successors=0)


@pytest.mark.integration
def test_interval_of_point_for_each_point_layout():
    P, R, RT, mask = random_arrays(10, num_states=S, num_actions=A, masked=True)
    dense = jp.make_mdp(P, R, terminal_reward=RT, horizon=3, action_mask=mask, initial_state=1)
    sparse = jp.to_sparse(dense)
    ragged = jp.to_ragged(sparse)
    for point, lists in ((dense, None), (sparse, sparse), (ragged, jp.to_padded(ragged))):
        m = interval_of_point(point)
        if point is ragged:  # its buckets kept
            assert isinstance(m, jp.RaggedIntervalMDP)
            m = jp.to_padded(m)
        assert isinstance(m, jp.IntervalMDP) and m.is_sparse == (lists is not None)
        rows = point.transitions if lists is None else lists.probs
        np.testing.assert_array_equal(np.asarray(m.lower), np.asarray(rows))
        np.testing.assert_array_equal(np.asarray(m.upper), np.asarray(rows))
        if lists is not None:
            np.testing.assert_array_equal(np.asarray(m.next_states), np.asarray(lists.next_states))
        for name in ("rewards", "terminal_reward", "discount", "action_mask"):
            np.testing.assert_array_equal(np.asarray(getattr(m, name)), getattr(point, name))
        assert (m.horizon, m.initial_state) == (3, 1)
        allowed = np.asarray(jp.to_dense(m).upper)[mask]
        np.testing.assert_allclose(allowed, P[mask], rtol=1e-6)
    with pytest.raises(ValueError, match="a point model"):
        interval_of_point(interval_of_point(dense))


# ----------------------------------------------------------------------------- pytree, jit


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_interval_model_is_a_pytree_under_jit(sparse):
    lo, hi, R, _ = bounds(11)
    m = jp.make_interval_mdp(lo, hi, R, horizon=2, initial_state=1)
    if sparse:
        m = jp.to_sparse(m)
    leaves, treedef = jax.tree_util.tree_flatten(m)
    assert len(leaves) == 6 + sparse  # lower, upper, (next_states), 4 model fields
    rebuilt = jax.tree_util.tree_unflatten(treedef, leaves)
    assert rebuilt.upper is m.upper and rebuilt.horizon == 2 and rebuilt.initial_state == 1

    @jax.jit
    def width(model):
        return jnp.sum(model.upper - model.lower) + model.horizon + model.initial_state

    want = float(np.sum(np.asarray(m.upper, np.float64) - np.asarray(m.lower, np.float64))) + 3
    assert float(width(m)) == pytest.approx(want, rel=1e-5)
    doubled = jax.jit(lambda model: jax.tree_util.tree_map(lambda x: x, model))(m)
    assert isinstance(doubled, jp.IntervalMDP) and doubled.horizon == 2
    assert doubled.is_sparse == sparse
    np.testing.assert_array_equal(np.asarray(doubled.upper), np.asarray(m.upper))


def test_interval_of_point_and_to_dense_trace_under_jit():
    P, R, _, _ = random_arrays(12, num_states=S, num_actions=A)
    sparse = jp.to_sparse(jp.make_mdp(P, R, horizon=2))

    @jax.jit
    def dense_upper(point):
        return jp.to_dense(interval_of_point(point)).upper

    np.testing.assert_allclose(np.asarray(dense_upper(sparse)), P, rtol=1e-6)
