"""Conversions between the dense layout and the successor lists: :func:`to_sparse` and
:func:`to_dense` (from a sparse or a ragged model).

They live apart from the containers because ``to_dense`` reads all three layouts: the ragged
container builds on the sparse one, so a conversion inside ``_sparse`` that reads a ragged
model would make the two modules import each other.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ._dense import TabularMDP
from ._memory import check_fits, device_memory
from ._ragged import RaggedMDP, to_padded
from ._sparse import PADDING, SparseMDP


def to_sparse(mdp: TabularMDP, max_successors: int | None = None) -> SparseMDP:
    """A dense model's rows as successor lists: its recorded support (else its nonzero
    pattern) becomes the lists.

    Args:
      mdp: a :class:`TabularMDP` with concrete arrays.
      max_successors: ``K`` (default: the largest number of nonzeros in an allowed row).

    Returns:
      A :class:`SparseMDP` with the same rewards, discount, horizon and initial state.

    Raises:
      ValueError: if a row has more than ``max_successors`` nonzeros.
    """
    if not isinstance(mdp, TabularMDP):
        raise ValueError(f"mdp must be a TabularMDP, got {type(mdp).__name__}")
    P = np.asarray(mdp.transitions)
    mask = np.asarray(mdp.action_mask)
    nonzero = (P > 0) if mdp.support is None else np.asarray(mdp.support)
    nonzero = nonzero & mask[:, :, None]
    most = max(int(nonzero.sum(-1).max()), 1)
    K = most if max_successors is None else int(max_successors)
    if K < most:
        raise ValueError(f"a row has {most} nonzeros, more than max_successors = {K}")
    # Stable order: the nonzeros first, in state order, then padding.
    order = np.argsort(~nonzero, axis=-1, kind="stable")[..., :K]
    listed = np.take_along_axis(nonzero, order, -1)
    idx = np.where(listed, order, PADDING).astype(np.int32)
    probs = np.where(listed, np.take_along_axis(P, order, -1), 0).astype(P.dtype)
    return SparseMDP(next_states=jnp.asarray(idx), probs=jnp.asarray(probs), **mdp.shared_fields())


def to_dense(mdp: SparseMDP) -> TabularMDP:
    """The `[S, A, S]` model of a sparse or ragged one (for small models: tests, comparisons);
    its successor lists become the recorded support.

    Raises:
      ValueError: for a model whose dense arrays (``S·A·S`` probabilities and support flags)
        do not fit in the device's memory, checked before anything is allocated.
    """
    if isinstance(mdp, RaggedMDP):
        mdp = to_padded(mdp)
    if not isinstance(mdp, SparseMDP):
        raise ValueError(f"mdp must be a SparseMDP or RaggedMDP, got {type(mdp).__name__}")
    S, A, _ = mdp.next_states.shape
    dtype = np.dtype(mdp.probs.dtype)
    check_fits(
        f"to_dense of a SparseMDP with S = {S}, A = {A}: [S, A, S] = {S * A * S:.3g} "
        f"{dtype.name} probabilities and bool support",
        S * A * S * (dtype.itemsize + 1),
        device_memory(),
        "this device's memory",
        "keep the model sparse (solve, evaluate, synthesize, sweep, cost_of_privacy and "
        "privacy.mdp_guarantee take a SparseMDP as it is, in O(S·A·K) per stage)",
    )
    idx = jnp.where(mdp.next_states >= 0, mdp.next_states, 0)
    P = jnp.zeros((S, A, S), mdp.probs.dtype)
    s, a = jnp.meshgrid(jnp.arange(S), jnp.arange(A), indexing="ij")
    P = P.at[s[..., None], a[..., None], idx].add(mdp.probs)
    support = (
        jnp.zeros((S, A, S), bool).at[s[..., None], a[..., None], idx].max(mdp.next_states >= 0)
    )
    return TabularMDP(transitions=P, support=support, **mdp.shared_fields())
