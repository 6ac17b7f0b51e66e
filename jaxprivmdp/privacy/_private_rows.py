"""The rows a mechanism changes, as the accounting reads them, whatever the model's layout.

The accounting of a whole model needs, per private row (an allowed row with at least two
entries on the support it is privatized over: :func:`jaxprivmdp.models._support.private_rows`),
its state, action, support size ``n`` and smallest entry on the support (the data-derived
``η``). A dense or padded model gives them from its `[S, A, ·]` rows; a
:class:`~jaxprivmdp.models.RaggedMDP` from its buckets, one block at a time, so that its
accounting costs O(transitions) and never pads a row to the longest. Both give the same rows,
in the same (row-major) order, with the same float64 numbers: the guarantees built on them
are equal bit for bit (the tests compare with ``==``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..models.core import MechanismInput, RaggedMDP, check_options, private_rows


class PrivateRows(NamedTuple):
    """Every private row, in row-major order ``(state, action)``.

    Attributes:
      states: `[R]` int64 states.
      actions: `[R]` int64 actions.
      sizes: `[R]` int64 entries on each row's support (at least 2).
      minima: `[R]` float64 each row's smallest entry on its support.
      shape: ``(S, A)``.
    """

    states: np.ndarray
    actions: np.ndarray
    sizes: np.ndarray
    minima: np.ndarray
    shape: tuple[int, int]

    @property
    def dimension(self) -> int:
        """The largest support among the private rows, at least 2 (what calibration uses)."""
        return max(int(self.sizes.max(initial=0)), 2)


def rows_of_input(rows_in: MechanismInput) -> PrivateRows:
    """:class:`PrivateRows` of host `[S, A, n]` rows (``models._support.host_mechanism_input``)."""
    states, actions = np.nonzero(private_rows(rows_in))
    supp = np.asarray(rows_in.support, bool)[states, actions]
    rows = np.asarray(rows_in.rows, np.float64)[states, actions]
    minima = np.where(supp, rows, np.inf).min(-1, initial=np.inf)
    shape = tuple(np.asarray(rows_in.action_mask).shape)
    return PrivateRows(states, actions, supp.sum(-1).astype(np.int64), minima, shape)


def ragged_rows(mdp: RaggedMDP, support=None, smoothing=None) -> PrivateRows:
    """:class:`PrivateRows` of a :class:`RaggedMDP`, bucket by bucket: each row over its listed
    successors with positive probability (as for a ``SparseMDP``; ``support="nonzero"`` is
    the same, ``smoothing`` is refused: it needs all ``S`` entries of every row)."""
    check_options(support, smoothing)
    if smoothing is not None:
        raise ValueError(
            "smoothing needs dense rows over all S states; a RaggedMDP's rows are "
            "privatized over their listed successors"
        )
    mask = np.asarray(mdp.action_mask, bool).reshape(-1)
    ids, sizes, minima = [], [], []
    for b in mdp.buckets:
        p = np.asarray(b.probs, np.float64)
        supp = (p > 0) & (np.asarray(b.next_states) >= 0)
        n = supp.sum(-1)
        rows = np.asarray(b.rows, np.int64)
        keep = mask[rows] & (n >= 2)
        ids.append(rows[keep])
        sizes.append(n[keep].astype(np.int64))
        minima.append(np.where(supp[keep], p[keep], np.inf).min(-1, initial=np.inf))
    flat = np.concatenate([np.zeros(0, np.int64), *ids])
    order = np.argsort(flat, kind="stable")
    A = mdp.num_actions
    states, actions = np.divmod(flat[order], A)
    cat = np.concatenate
    return PrivateRows(
        states,
        actions,
        cat([np.zeros(0, np.int64), *sizes])[order],
        cat([np.zeros(0), *minima])[order],
        (mdp.num_states, A),
    )


def smallest_entry(mdp: RaggedMDP) -> np.generic:
    """The smallest positive listed entry of the allowed rows, in the model's dtype (as the
    padded layout's ``probs[mask][probs > 0].min()``: the frontier's public ``η``)."""
    mask = np.asarray(mdp.action_mask, bool).reshape(-1)
    parts = [np.asarray(b.probs)[mask[np.asarray(b.rows)]].reshape(-1) for b in mdp.buckets]
    values = np.concatenate([np.zeros(0, mdp.rewards.dtype), *parts])
    return values[values > 0].min()
