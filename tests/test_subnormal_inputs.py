"""Model inputs below the smallest normal number ``tiny`` of the model's dtype.

XLA flushes subnormal numbers to zero on CPU (and float32 on GPU), so a nonzero probability
or reward below ``tiny`` (or one the cast to the model's dtype turns into 0) is not what the device
computes with: every constructor refuses it, naming the argument, the index and the value.
Interval bounds are rounded outward instead (``lower`` to 0, ``upper`` to ``tiny``).
"""

import contextlib

import jax
import numpy as np
import pytest

import jaxprivmdp as jp
from jaxprivmdp.models.core import ragged_interval_from_lists, validate_model_fields

TINY32 = float(np.finfo(np.float32).tiny)
TINY64 = float(np.finfo(np.float64).tiny)

# (model dtype, an offending value, the array dtype it is given in)
SUBNORMAL = [
    pytest.param(np.float32, 1e-40, np.float32, id="float32-subnormal"),
    pytest.param(np.float32, 1e-40, np.float64, id="float64-1e-40-into-float32"),
    pytest.param(np.float32, 1e-50, np.float64, id="float64-1e-50-into-float32"),
    pytest.param(np.float64, 1e-320, np.float64, id="float64-subnormal"),
]
# (model dtype, an accepted value, the array dtype it is given in)
NORMAL = [
    pytest.param(np.float32, 0.0, np.float32, id="float32-zero"),
    pytest.param(np.float32, TINY32, np.float32, id="float32-tiny"),
    pytest.param(np.float32, TINY32, np.float64, id="float64-tiny32-into-float32"),
    pytest.param(np.float64, 0.0, np.float64, id="float64-zero"),
    pytest.param(np.float64, TINY64, np.float64, id="float64-tiny"),
    pytest.param(np.float64, 1e-40, np.float64, id="float64-1e-40"),
]


def x64(dtype):
    return jax.enable_x64(True) if dtype == np.float64 else contextlib.nullcontext()


def rows(p, given):
    """A 3-state, 2-action model: row (1, 0) puts ``p`` on state 2, the rest on state 0."""
    P = np.zeros((3, 2, 3), given)
    P[:, :, 0] = 1
    P[1, 0, 0], P[1, 0, 2] = 1 - given(p), p
    return P


def sparse_of(P):
    S, A, _ = P.shape
    nxt = np.broadcast_to(np.arange(S), P.shape).astype(np.int32)
    return nxt, P


def ragged_of(P):
    S, A, _ = P.shape
    s, a, t = np.nonzero(P)
    return s * A + a, t, P[s, a, t]


def build(kind, P, R, dtype, **kw):
    if kind == "dense":
        return jp.make_mdp(P, R, dtype=dtype, **kw)
    if kind == "sparse":
        return jp.make_sparse_mdp(*sparse_of(P), R, dtype=dtype, **kw)
    return jp.make_ragged_mdp(*ragged_of(P), R, dtype=dtype, **kw)


def where(kind):
    """The index the message names for row (1, 0)'s entry on state 2."""
    return {"dense": r"\(1, 0, 2\)", "sparse": r"\(1, 0, 2\)", "ragged": r"\(3,\)"}[kind]


KINDS = ["dense", "sparse", "ragged"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("dtype", "value", "given"), SUBNORMAL)
def test_a_subnormal_probability_is_refused(kind, dtype, value, given):
    name = "transitions" if kind == "dense" else "probs"
    with x64(dtype):
        with pytest.raises(
            ValueError, match=rf"{name} has an entry .* at index {where(kind)}"
        ) as e:
            build(kind, rows(value, given), np.zeros((3, 2)), dtype)
    message = str(e.value)
    assert "XLA flushes subnormal numbers to zero" in message
    assert f"{np.finfo(dtype).tiny:.9g}" in message
    assert repr(value) in message or str(given(value)) in message
    # A float64 model helps only where float64 holds the value as a normal number.
    assert ("float64 model" in message) == (dtype == np.float32 and value >= TINY64)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("dtype", "value", "given"), SUBNORMAL)
@pytest.mark.parametrize("field", ["rewards", "terminal_reward"])
def test_a_subnormal_reward_is_refused(kind, dtype, value, given, field):
    R, RT = np.zeros((3, 2), given), np.zeros(3, given)
    if field == "rewards":
        R[2, 1], index = -value, r"\(2, 1\)"  # the magnitude counts
    else:
        RT[2], index = value, r"\(2,\)"
    with x64(dtype):
        with pytest.raises(ValueError, match=rf"{field} has an entry .* at index {index}"):
            build(kind, rows(0.5, np.float64), R, dtype, terminal_reward=RT, horizon=3)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("dtype", "value", "given"), NORMAL)
def test_zero_and_tiny_are_accepted(kind, dtype, value, given):
    R = np.full((3, 2), value, given)
    with x64(dtype):
        mdp = build(kind, rows(value, given), R, dtype, terminal_reward=R[:, 0], horizon=3)
        assert float(mdp.rewards[0, 0]) == float(np.asarray(value, dtype))
        assert float(mdp.terminal_reward[0]) == float(np.asarray(value, dtype))


def test_masked_rows_are_not_checked():
    """Rows of masked actions are never read (their entries may be anything)."""
    P = rows(1e-40, np.float64)
    mask = np.ones((3, 2), bool)
    mask[1, 0] = False
    jp.make_mdp(P, np.zeros((3, 2)), action_mask=mask, dtype=np.float32)
    jp.make_sparse_mdp(*sparse_of(P), np.zeros((3, 2)), action_mask=mask, dtype=np.float32)
    jp.make_ragged_mdp(*ragged_of(P), np.zeros((3, 2)), action_mask=mask, dtype=np.float32)


def test_the_shared_field_check_refuses_with_the_model_dtype():
    """The loaders' path (``validate_model_fields``): the check uses the model's dtype."""
    R = np.zeros((2, 1))
    R[1, 0] = 1e-40
    with pytest.raises(ValueError, match=r"rewards has an entry 1e-40 at index \(1, 0\)"):
        validate_model_fields(2, 1, R, None, None, 0.9, 0, np.dtype(np.float32))
    with jax.enable_x64(True):
        fields = validate_model_fields(2, 1, R, None, None, 0.9, 0, np.dtype(np.float64))
        assert float(fields["rewards"][1, 0]) == 1e-40


# ---- interval models: bounds rounded outward, never subnormal


def box(lower_value, upper_value):
    """Row (1, 0): lower ``[1 − u, l]`` on states 0 and 2, upper ``[1, u]``; others exact."""
    lo, hi = np.zeros((3, 2, 3)), np.zeros((3, 2, 3))
    lo[:, :, 0] = hi[:, :, 0] = 1
    lo[1, 0, 0], lo[1, 0, 2], hi[1, 0, 2] = 1 - upper_value, lower_value, upper_value
    return lo, hi


@pytest.mark.parametrize("layout", ["dense", "lists", "ragged"])
@pytest.mark.parametrize(
    ("dtype", "value"),
    [(np.float64, 1e-320), (np.float32, 1e-40), (np.float32, 1e-50)],
    ids=["float64-1e-320", "float32-1e-40", "float64-1e-50-into-float32"],
)
def test_interval_bounds_below_tiny_are_rounded_outward(layout, dtype, value):
    tiny = np.finfo(dtype).tiny
    lo, hi = box(value, value)
    with x64(dtype):
        if layout == "ragged":
            rid, tgt, _ = ragged_of(hi)
            s, a = divmod(rid, 2)
            mask = np.ones((3, 2), bool)
            fields = validate_model_fields(
                3, 2, np.zeros((3, 2)), None, None, 0.9, 0, np.dtype(dtype)
            )
            mdp = ragged_interval_from_lists(rid, tgt, lo[s, a, tgt], hi[s, a, tgt], mask, fields)
            mdp = jp.to_padded(mdp)
        elif layout == "lists":
            nxt, _ = sparse_of(lo)
            mdp = jp.make_interval_mdp(lo, hi, np.zeros((3, 2)), next_states=nxt, dtype=dtype)
        else:
            mdp = jp.make_interval_mdp(lo, hi, np.zeros((3, 2)), dtype=dtype)
        mdp = jp.to_dense(mdp)
        low, high = np.asarray(mdp.lower), np.asarray(mdp.upper)
    assert low.dtype == high.dtype == dtype
    assert low[1, 0, 2] == 0 and high[1, 0, 2] == tiny
    assert low[1, 0, 0] <= 1 - value and high[1, 0, 0] == 1
    # nothing else is subnormal, and every interval contains the given one
    for x in (low, high):
        assert not np.any((np.abs(x) < tiny) & (x != 0))
    assert np.all(low <= lo) and np.all(high >= hi)


@pytest.mark.parametrize(("dtype", "value"), [(np.float32, 1e-40), (np.float64, 1e-320)])
def test_interval_rewards_below_tiny_are_refused(dtype, value):
    lo, hi = box(0.0, 0.5)
    R = np.zeros((3, 2))
    R[0, 1] = value
    with x64(dtype):
        with pytest.raises(ValueError, match=r"rewards has an entry .* at index \(0, 1\)"):
            jp.make_interval_mdp(lo, hi, R, dtype=dtype)


# ---- loaders: they go through the constructors

DRN = """@type: DTMC
@parameters

@reward_models
r
@nr_states
3
@nr_choices
3
@model
state 0 [1] init
\taction 0 [0]
\t\t1 : 0.5
\t\t2 : 0.5
state 1 [{reward}]
\taction 0 [0]
\t\t1 : {stay}
\t\t2 : {leave}
state 2 [0] goal
\taction 0 [0]
\t\t2 : 1
"""


def test_a_drn_file_with_a_subnormal_probability_or_reward_is_refused(tmp_path):
    path = tmp_path / "m.drn"
    path.write_text(DRN.format(reward=0, stay="0.99999", leave="0.00001"))
    jp.load_mdp(path)
    path.write_text(DRN.format(reward=0, stay="1e-40", leave="1"))
    with pytest.raises(ValueError, match=r"m\.drn.*probs has an entry 1e-40 at index"):
        jp.load_mdp(path)
    path.write_text(DRN.format(reward="1e-45", stay="0.5", leave="0.5"))
    with pytest.raises(ValueError, match=r"rewards has an entry 1e-45 at index \(1, 0\)"):
        jp.load_mdp(path)
    with jax.enable_x64(True):  # normal in float64
        mdp = jp.load_mdp(path, dtype=np.float64)
        assert float(mdp.rewards[1, 0]) == 1e-45


def test_an_npz_with_subnormal_rewards_is_refused(tmp_path):
    R = np.zeros((3, 2))
    R[2, 0] = 1e-42
    path = tmp_path / "m.npz"
    np.savez(path, transitions=rows(0.5, np.float64), rewards=R)
    with pytest.raises(ValueError, match=r"rewards has an entry 1e-42 at index \(2, 0\)"):
        jp.load_mdp(path, discount=0.9)
