"""The model axis: what planning, bounds and the mechanism need of either kind of MDP.

A dense :class:`TabularMDP` keeps rows `[S, A, S]`; a :class:`SparseMDP` keeps successor
lists `[S, A, K]`; a :class:`RaggedMDP` keeps them in blocks by length (its rows are a
:class:`RaggedRows`, whose row operations run block by block: :func:`map_blocks`). Every
other module reaches the rows only through :class:`Rows` and the functions here, so no kind
needs special cases elsewhere.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.lax import Precision

from ._dense import TabularMDP
from ._interval_ragged import INTERVAL_MODELS
from ._ragged import RaggedMDP, RaggedRows, map_blocks
from ._sparse import SparseMDP

Model = TabularMDP | SparseMDP | RaggedMDP


class Rows(NamedTuple):
    """Transition rows: dense ``probs`` `[..., S]` (``next_states`` None) or successor lists.

    Attributes:
      probs: `[..., S]` dense rows, or `[..., K]` the listed successors' probabilities.
      next_states: None, or `[..., K]` int successor indices (``-1`` = padding).
      support: None, or bool like ``probs``: each row's public support (see
        :func:`row_support`), which a release never changes.
    """

    probs: jax.Array
    next_states: jax.Array | None = None
    support: jax.Array | None = None


def check_model(mdp, name: str = "mdp") -> Model:
    """``mdp`` itself if it is a :class:`TabularMDP`, :class:`SparseMDP` or :class:`RaggedMDP`,
    else a ValueError (one that says what to do for an :class:`IntervalMDP`)."""
    if isinstance(mdp, INTERVAL_MODELS):
        kind = "an IntervalMDP" if type(mdp) is INTERVAL_MODELS[0] else "a RaggedIntervalMDP"
        raise ValueError(
            f"{name} is {kind} (an interval model), and this takes a point model: a "
            "TabularMDP, SparseMDP or RaggedMDP. Check an interval model with jp.check and a "
            "two-quantifier property (the policy's, then nature's: 'Pmaxmin=? [F \"goal\"]', "
            "'Rminmax=? [F \"goal\"]'; on an interval chain 'Pmin=?' / 'Pmax=?')"
        )
    if not isinstance(mdp, TabularMDP | SparseMDP | RaggedMDP):
        raise ValueError(
            f"{name} must be a TabularMDP (make_mdp), a SparseMDP (make_sparse_mdp) or a "
            f"RaggedMDP (make_ragged_mdp), got {type(mdp).__name__}"
        )
    return mdp


def transition_rows(mdp: Model) -> Rows | RaggedRows:
    """All rows of the model, `[S, A, ·]` (a :class:`RaggedRows` for a :class:`RaggedMDP`)."""
    if isinstance(mdp, RaggedMDP):
        blocks = tuple(Rows(b.probs, b.next_states, b.next_states >= 0) for b in mdp.buckets)
        return RaggedRows(blocks, tuple(b.rows for b in mdp.buckets), mdp.action_mask.shape)
    if isinstance(mdp, SparseMDP):
        return Rows(mdp.probs, mdp.next_states, mdp.next_states >= 0)
    return Rows(mdp.transitions, None, mdp.support)


def with_probs(mdp: Model, probs: jax.Array, support: jax.Array | None = None) -> Model:
    """The same model with other row probabilities (a privatized copy) and public support.

    A sparse model's support is its successor lists, which are kept (a :class:`RaggedMDP`
    takes one `[n_b, K_b]` array per bucket). A dense model records
    ``support`` (`[S, A, S]` bool, the entries the mechanism privatized over) when given,
    else keeps its own.
    """
    if isinstance(mdp, RaggedMDP):
        buckets = tuple(b._replace(probs=p) for b, p in zip(mdp.buckets, probs, strict=True))
        return dataclasses.replace(mdp, buckets=buckets)
    if isinstance(mdp, SparseMDP):
        return dataclasses.replace(mdp, probs=probs)
    if support is None:
        support = mdp.support
    return dataclasses.replace(mdp, transitions=probs, support=support)


def successors(rows: Rows) -> jax.Array:
    """`[..., K]` gather-safe successor indices (padding points at state 0, probability 0)."""
    return jnp.maximum(rows.next_states, 0)


# Successor lists up to this long are summed slot by slot, a gather and a multiply-add per
# slot: XLA:CPU hands ``sum(p * v[successors], -1)`` over a short minor axis to a library
# kernel (YNNPACK) whose fixed cost per call dominated sparse backups (on a 50×50
# gridworld, `evaluate` runs 6× and `solve` 4× faster slot by slot).
SLOT_SUM_MAX = 8


def list_sum(weights: jax.Array, rows: Rows, values: jax.Array) -> jax.Array:
    """`[...]` ``Σ_j weights[..., j] · values[next_states[..., j]]`` over the successor lists
    of ``rows`` (``values`` `[S]`), slot by slot in slot order for short lists."""
    index = successors(rows)
    if not 0 < index.shape[-1] <= SLOT_SUM_MAX:
        return jnp.sum(weights * values[index], axis=-1)
    total = weights[..., 0] * values[index[..., 0]]
    for j in range(1, index.shape[-1]):
        total = total + weights[..., j] * values[index[..., j]]
    return total


def expect(rows: Rows, values: jax.Array) -> jax.Array:
    """`[...]` ``Σ_s' p(s') v(s')`` for every row: a product (dense) or a gather (sparse)."""
    if isinstance(rows, RaggedRows):
        return map_blocks(lambda block: expect(block, values), rows)
    if rows.next_states is None:
        return jnp.matmul(rows.probs, values, precision=Precision.HIGHEST)
    return list_sum(rows.probs, rows, values)


def row_sums(rows: Rows | RaggedRows) -> jax.Array:
    """`[...]` each row's ``Σ p`` (0 for a ragged model's rows without successors)."""
    if isinstance(rows, RaggedRows):
        return map_blocks(lambda block: jnp.sum(block.probs, axis=-1), rows)
    return jnp.sum(rows.probs, axis=-1)


def row_terms(rows: Rows | RaggedRows) -> int:
    """Terms in one state's ``Σ_a Σ_s'`` over the rows given (`[S, A', n]` or ragged)."""
    if isinstance(rows, RaggedRows):
        return rows.shape[1] * max(block.probs.shape[-1] for block in rows.blocks)
    return rows.probs.shape[1] * rows.probs.shape[-1]


def row_slots(mdp: Model) -> int:
    """Stored row entries, padding included: ``S·A·S``, ``S·A·K`` or a ragged model's slots."""
    if isinstance(mdp, RaggedMDP):
        return mdp.num_slots
    return transition_rows(mdp).probs.size


def row_length(mdp: Model) -> int:
    """Terms in one row's sum: ``S`` (dense rows) or the longest successor list."""
    if isinstance(mdp, SparseMDP | RaggedMDP):
        return mdp.max_successors
    return mdp.num_states


def row_support(rows: Rows) -> jax.Array:
    """`[..., S]` or `[..., K]` bool: each row's public support.

    Never read off the probabilities: a release puts exact zeros where the true row is
    positive (a projection, an underflowed gamma draw), so ``P̄ > 0`` is not the support.
    Successor lists: the listed entries, whatever their probability. Dense rows: the
    support the model records (:class:`jaxprivmdp.TabularMDP`); the boundaries refuse a
    support-aware set on a dense model that records none (:func:`check_public_support`).
    """
    if rows.support is not None:
        return rows.support
    if rows.next_states is not None:
        return rows.next_states >= 0
    raise ValueError("these dense rows record no public support (see check_public_support)")


def check_public_support(mdp: Model, name: str = "private_mdp") -> None:
    """A ValueError unless the model records its rows' public support (sparse models do)."""
    if isinstance(mdp, TabularMDP) and mdp.support is None:
        raise ValueError(
            f"support_aware=True needs the public support of {name}'s rows, and this dense "
            "model records none. The support is never read off the release (its zeros may be "
            "noise). Use the model that jp.dirichlet_mechanism / jp.privatize returns for a "
            "model (it carries the support it privatized over), or pass "
            "make_mdp(..., support=mask) with the public zero pattern of the true rows"
        )
