"""The model axis: what planning, bounds and the mechanism need of either kind of MDP.

A dense :class:`TabularMDP` keeps rows `[S, A, S]`; a :class:`SparseMDP` keeps successor
lists `[S, A, K]`. Every other module reaches the rows only through :class:`Rows` and the
functions here, so neither kind needs special cases elsewhere.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp

from ._mdp import TabularMDP
from ._sparse import SparseMDP

Model = TabularMDP | SparseMDP


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
    """``mdp`` itself if it is a :class:`TabularMDP` or :class:`SparseMDP`, else a ValueError."""
    if not isinstance(mdp, TabularMDP | SparseMDP):
        raise ValueError(
            f"{name} must be a TabularMDP (make_mdp) or a SparseMDP (make_sparse_mdp), got "
            f"{type(mdp).__name__}"
        )
    return mdp


def transition_rows(mdp: Model) -> Rows:
    """All rows of the model, `[S, A, ·]`."""
    if isinstance(mdp, SparseMDP):
        return Rows(mdp.probs, mdp.next_states, mdp.next_states >= 0)
    return Rows(mdp.transitions, None, mdp.support)


def with_probs(mdp: Model, probs: jax.Array) -> Model:
    """The same model with other row probabilities (a privatized copy): same support."""
    if isinstance(mdp, SparseMDP):
        return dataclasses.replace(mdp, probs=probs)
    return dataclasses.replace(mdp, transitions=probs)


def successors(rows: Rows) -> jax.Array:
    """`[..., K]` gather-safe successor indices (padding points at state 0, probability 0)."""
    return jnp.maximum(rows.next_states, 0)


def expect(rows: Rows, values: jax.Array) -> jax.Array:
    """`[...]` ``Σ_s' p(s') v(s')`` for every row: a product (dense) or a gather (sparse)."""
    if rows.next_states is None:
        return rows.probs @ values
    return jnp.sum(rows.probs * values[successors(rows)], axis=-1)


def row_support(rows: Rows) -> jax.Array:
    """`[..., S]` or `[..., K]` bool: each row's support.

    Dense rows: the entries with positive probability. Successor lists: the listed entries,
    whatever their probability: the list is the public support, and a privatized entry that
    underflowed to 0 still belongs to it.
    """
    if rows.next_states is None:
        return rows.probs > 0
    return rows.next_states >= 0
