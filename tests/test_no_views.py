"""A model keeps no view of the arrays it was built from.

On a CPU, ``jax.device_put`` keeps a view of a NumPy buffer at a 64-byte-aligned address
instead of copying it; ``make_sparse_mdp`` once handed the caller's ``next_states`` over that
way, and overwriting that array afterwards changed the model. Every constructor is given
aligned arrays already in the dtypes it stores, the arrays are overwritten, and every array
of the model must be unchanged.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import aligned_copy

import jaxprivmdp as jp

S, A = 3, 2


def _float():
    return jnp.zeros(()).dtype  # the working dtype: float64 under JAX_ENABLE_X64


def _dense_args():
    rng = np.random.default_rng(0)
    P = rng.dirichlet(np.ones(S), size=(S, A)).astype(_float())
    return dict(
        transitions=P,
        rewards=rng.uniform(size=(S, A)).astype(_float()),
        terminal_reward=rng.uniform(size=S).astype(_float()),
        action_mask=np.ones((S, A), bool),
        support=P > 0,
    )


def _sparse_args():
    idx = np.array([[[0, 1], [2, -1]], [[1, 2], [0, -1]], [[2, 0], [1, -1]]], np.int32)
    probs = np.array([[[0.5, 0.5], [1, 0]], [[0.25, 0.75], [1, 0]], [[0.5, 0.5], [1, 0]]])
    return dict(
        next_states=idx,
        probs=probs.astype(_float()),
        rewards=np.ones((S, A), _float()),
        terminal_reward=np.zeros(S, _float()),
        action_mask=np.ones((S, A), bool),
        support=idx >= 0,
    )


def _ragged_args():
    sparse = _sparse_args()
    listed = sparse["next_states"] >= 0
    rows = np.broadcast_to(np.arange(S * A).reshape(S, A, 1), listed.shape)
    return dict(
        row_ids=rows[listed].astype(np.int32),
        next_states=sparse["next_states"][listed],
        probs=sparse["probs"][listed],
        rewards=sparse["rewards"],
        terminal_reward=sparse["terminal_reward"],
        action_mask=sparse["action_mask"],
    )


# Each constructor's positional arguments, in order; the rest are keywords.
CASES = {
    "make_mdp": (jp.make_mdp, _dense_args, ("transitions", "rewards")),
    "make_sparse_mdp": (jp.make_sparse_mdp, _sparse_args, ("next_states", "probs", "rewards")),
    "make_ragged_mdp": (
        jp.make_ragged_mdp,
        _ragged_args,
        ("row_ids", "next_states", "probs", "rewards"),
    ),
}


@pytest.mark.parametrize("name", CASES)
def test_a_model_keeps_no_view_of_its_arguments(name):
    make, arguments, positional = CASES[name]
    args = {k: aligned_copy(v) for k, v in arguments().items()}
    given = {k: v.copy() for k, v in args.items()}
    keywords = {k: v for k, v in args.items() if k not in positional}
    model = make(*(args[k] for k in positional), horizon=2, **keywords)
    for k, v in args.items():  # nothing the caller gave was written to
        np.testing.assert_array_equal(v, given[k], err_msg=k)
    stored = [np.array(leaf) for leaf in jax.tree.leaves(model)]
    for v in args.values():
        v[...] = 0
    for before, leaf in zip(stored, jax.tree.leaves(model), strict=True):
        np.testing.assert_array_equal(np.asarray(leaf), before)
