"""Conversions between the dense layout and the successor lists: :func:`to_sparse` and
:func:`to_dense` (from a sparse or a ragged model; both also take an interval model), and
:func:`interval_of_point`, a point model as the interval model with ``lower = upper``.

They live apart from the containers because ``to_dense`` reads all three layouts: the ragged
container builds on the sparse one, so a conversion inside ``_sparse`` that reads a ragged
model would make the two modules import each other.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ._dense import TabularMDP
from ._interval import IntervalMDP, interval_to_dense, interval_to_sparse
from ._interval_ragged import (
    RaggedIntervalMDP,
    interval_to_ragged,
    ragged_interval_of_point,
    ragged_interval_to_padded,
)
from ._memory import check_fits, device_memory
from ._ragged import RaggedMDP
from ._ragged import to_padded as _padded_point
from ._ragged import to_ragged as _ragged_point
from ._sparse import PADDING, SparseMDP


def to_sparse(
    mdp: TabularMDP | IntervalMDP | RaggedIntervalMDP, max_successors: int | None = None
) -> SparseMDP | IntervalMDP:
    """A dense model's rows as successor lists: its recorded support (else its nonzero
    pattern) becomes the lists.

    An :class:`IntervalMDP` (dense or sparse) becomes an interval model over successor lists
    that list each allowed row's entries with ``upper > 0`` (masked rows are emptied); a
    :class:`RaggedIntervalMDP` its padded lists (:func:`to_padded`).

    Args:
      mdp: a :class:`TabularMDP`, an :class:`IntervalMDP` or a :class:`RaggedIntervalMDP`,
        with concrete arrays.
      max_successors: ``K`` (default: the largest number of nonzeros, or of entries with
        ``upper > 0``, in an allowed row).

    Returns:
      A :class:`SparseMDP` (an :class:`IntervalMDP` with ``next_states`` for an interval
      model) with the same rewards, discount, horizon and initial state.

    Raises:
      ValueError: if a row has more than ``max_successors`` nonzeros.
    """
    if isinstance(mdp, IntervalMDP):
        return interval_to_sparse(mdp, max_successors)
    if isinstance(mdp, RaggedIntervalMDP):
        return ragged_interval_to_padded(mdp, max_successors)
    if not isinstance(mdp, TabularMDP):
        raise ValueError(f"mdp must be a TabularMDP or an IntervalMDP, got {type(mdp).__name__}")
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


def to_dense(
    mdp: SparseMDP | RaggedMDP | IntervalMDP | RaggedIntervalMDP,
) -> TabularMDP | IntervalMDP:
    """The `[S, A, S]` model of a sparse or ragged one (for small models: tests, comparisons);
    its successor lists become the recorded support.

    An :class:`IntervalMDP` or :class:`RaggedIntervalMDP` gets `[S, A, S]` bounds (``l = u =
    0`` off its lists); a dense one is returned as it is.

    Raises:
      ValueError: for a model whose dense arrays (``S·A·S`` probabilities and support flags)
        do not fit in the device's memory, checked before anything is allocated.
    """
    if isinstance(mdp, RaggedIntervalMDP):
        mdp = ragged_interval_to_padded(mdp)
    if isinstance(mdp, IntervalMDP):
        return interval_to_dense(mdp)
    if isinstance(mdp, RaggedMDP):
        mdp = _padded_point(mdp)
    if not isinstance(mdp, SparseMDP):
        raise ValueError(
            "mdp must be a SparseMDP, a RaggedMDP, an IntervalMDP or a RaggedIntervalMDP, got "
            f"{type(mdp).__name__}"
        )
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


def interval_of_point(
    mdp: TabularMDP | SparseMDP | RaggedMDP,
) -> IntervalMDP | RaggedIntervalMDP:
    """A point model as the interval model with ``lower = upper =`` its rows: dense for a
    :class:`TabularMDP` (its recorded support is dropped), over the same successor lists for a
    :class:`SparseMDP`, over the same buckets (a :class:`RaggedIntervalMDP`) for a
    :class:`RaggedMDP`.

    Raises:
      ValueError: for anything else.
    """
    if isinstance(mdp, RaggedMDP):
        return ragged_interval_of_point(mdp)
    if isinstance(mdp, SparseMDP):
        rows, next_states = mdp.probs, mdp.next_states
    elif isinstance(mdp, TabularMDP):
        rows, next_states = mdp.transitions, None
    else:
        raise ValueError(
            "mdp must be a TabularMDP, a SparseMDP or a RaggedMDP (a point model), got "
            f"{type(mdp).__name__}"
        )
    return IntervalMDP(lower=rows, upper=rows, next_states=next_states, **mdp.shared_fields())


def to_ragged(mdp: SparseMDP | IntervalMDP) -> RaggedMDP | RaggedIntervalMDP:
    """The same model with its successor lists bucketed by length (see
    :class:`RaggedMDP`): every listed slot stays listed, with its probability or bounds.

    Args:
      mdp: a :class:`SparseMDP` (gives a :class:`RaggedMDP`) or an :class:`IntervalMDP`
        (gives a :class:`RaggedIntervalMDP`; a dense one's entries with ``upper > 0``, its
        masked rows emptied, as :func:`to_sparse`), with concrete arrays.

    Returns:
      The ragged model, with the same rewards, discount, horizon, mask and initial state.

    Raises:
      ValueError: for any other kind of model.
    """
    if isinstance(mdp, IntervalMDP):
        return interval_to_ragged(mdp)
    if not isinstance(mdp, SparseMDP):
        raise ValueError(f"mdp must be a SparseMDP or an IntervalMDP, got {type(mdp).__name__}")
    return _ragged_point(mdp)


def to_padded(
    mdp: RaggedMDP | RaggedIntervalMDP, max_successors: int | None = None
) -> SparseMDP | IntervalMDP:
    """A ragged model with its rows padded to one length ``K``: `[S, A, K]` successor lists
    (each row's entries first, in their order, then ``-1`` padding).

    Args:
      mdp: a :class:`RaggedMDP` (gives a :class:`SparseMDP`) or a
        :class:`RaggedIntervalMDP` (gives an :class:`IntervalMDP` over successor lists).
      max_successors: ``K`` (default: the longest row).

    Returns:
      The padded model, with the same rewards, discount, horizon, mask and initial state.

    Raises:
      ValueError: a row longer than ``max_successors``; any other kind of model.
    """
    if isinstance(mdp, RaggedIntervalMDP):
        return ragged_interval_to_padded(mdp, max_successors)
    if not isinstance(mdp, RaggedMDP):
        raise ValueError(
            f"mdp must be a RaggedMDP or a RaggedIntervalMDP, got {type(mdp).__name__}"
        )
    return _padded_point(mdp, max_successors)
