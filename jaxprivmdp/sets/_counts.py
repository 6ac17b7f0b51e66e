"""What a set's union bound counts on a model: entries per row, in all rows, allowed rows.

The set objects (``_sets``) record these counts so that a release traced under ``jax.jit``
uses the sets an eager call uses; the boxes (``_boxes``) turn them into levels. Both import
this module, which imports neither.
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from .._checks import is_concrete
from ..models.core import Model, RaggedMDP, Rows, ragged_entry_count, row_support, transition_rows


class UnionCounts(NamedTuple):
    """What a set's union bound counts on a model: :meth:`UncertaintySet.counted`.

    Attributes:
      largest_row: the entries of the largest allowed row (its public support when the set
        is support-aware, else ``S``).
      entries: the entries of all allowed rows, counted the same way.
      rows: the allowed rows (actions not masked).
    """

    largest_row: int
    entries: int
    rows: int


def entry_count(
    mdp: Model, *, support_aware: bool, whole_model: bool, counts: UnionCounts | None = None
) -> int:
    """How many entries the union bound covers: per row (the largest row) or in all rows.

    Rows of masked actions are never used and not counted. Support-aware sets count each
    row's public support (:func:`jaxprivmdp.models._rows.row_support`: a sparse model's listed
    successors, the support a dense release records; never ``P̄ > 0``); sets over the whole
    simplex count all ``S`` entries of a row. A model traced under a transformation is
    counted from its shapes alone (every row, ``K`` or ``S`` entries each): an upper bound,
    so the sets stay valid, only wider. ``counts`` (a set's, checked by
    ``planning._bounds.set_up``) replaces the counting.
    """
    if counts is not None:
        return counts.entries if whole_model else counts.largest_row
    if isinstance(mdp, RaggedMDP):
        return ragged_entry_count(mdp, support_aware, whole_model)
    rows = transition_rows(mdp)
    width = rows.probs.shape[-1] if support_aware else mdp.num_states
    if not is_concrete(mdp.action_mask, rows.support):
        return width * mdp.num_states * mdp.num_actions if whole_model else width
    sizes = _row_sizes(mdp, rows, support_aware, np)  # on the host: no device dispatch
    return int(sizes.sum() if whole_model else max(int(sizes.max()), 1))


def _row_sizes(mdp: Model, rows: Rows, support_aware: bool, xp):
    """`[S, A]` int32 entries each allowed row counts (0 for masked rows), with ``xp``
    (NumPy for a concrete model, ``jax.numpy`` in a trace)."""
    if support_aware:
        sizes = xp.sum(xp.asarray(row_support(rows)), axis=-1, dtype=np.int32)
    else:
        sizes = xp.full(mdp.action_mask.shape, mdp.num_states, np.int32)
    return xp.where(xp.asarray(mdp.action_mask), sizes, 0)


def row_count(mdp: Model, counts: UnionCounts | None = None) -> int:
    """The allowed rows (all ``S·A`` for a model traced under a transformation), or
    ``counts.rows``."""
    if counts is not None:
        return counts.rows
    if not is_concrete(mdp.action_mask):
        return mdp.num_states * mdp.num_actions
    return max(int(np.asarray(mdp.action_mask).sum()), 1)


def union_counts(mdp: Model, support_aware: bool) -> UnionCounts:
    """The :class:`UnionCounts` of ``mdp``: ints where its action mask and support are
    concrete; else int32 scalars computed in the trace (dense and sparse models only).

    Raises:
      ValueError: for a traced ragged model, or a traced one with ``2**31`` entries or more.
    """
    rows = None if isinstance(mdp, RaggedMDP) else transition_rows(mdp)
    concrete = (
        is_concrete(mdp.action_mask)
        if rows is None
        else is_concrete(mdp.action_mask, rows.support, rows.next_states)
    )
    if concrete:
        return UnionCounts(
            *(entry_count(mdp, support_aware=support_aware, whole_model=w) for w in (False, True)),
            row_count(mdp),
        )
    shapes = entry_count(mdp, support_aware=support_aware, whole_model=True)
    if rows is None or shapes >= 2**31:
        raise ValueError(
            "a set's counts cannot be checked against this model under a transformation "
            "(a ragged model, or 2**31 entries or more): close over the model instead"
        )
    sizes = _row_sizes(mdp, rows, support_aware, jnp)
    allowed = jnp.sum(mdp.action_mask, dtype=jnp.int32)
    return UnionCounts(jnp.maximum(jnp.max(sizes), 1), jnp.sum(sizes), jnp.maximum(allowed, 1))
