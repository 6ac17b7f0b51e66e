"""The sparse MDP container: successor lists `[S, A, K]`, for models too large to be dense.

Each row ``(s, a)`` lists up to ``K`` successors ``next_states[s, a, :]`` with their
probabilities ``probs[s, a, :]``. Unused slots are *padding*: ``next_states = -1`` and
probability 0. The row's *support* is its listed successors: public structure, as the zero
pattern under ``support="nonzero"`` is for a dense model. :func:`make_sparse_mdp` stores a
slot given with probability 0 as padding (unless ``support`` keeps it), so a model's support
is its positive slots; a release keeps the lists, so an entry the noise sets to 0 stays in
the support.
Nothing of size `[S, A, S]` is ever built from a sparse model.
"""

from __future__ import annotations

import dataclasses
import itertools

import jax
import numpy as np
from jax.typing import ArrayLike

from .._checks import ROW_SUM_TOLERANCE, as_numpy, float_array, refuse_subnormal, working_dtype
from ._dense import (
    MODEL_DATA_FIELDS,
    MODEL_META_FIELDS,
    ModelFields,
    check_mask,
    check_support,
    validate_model_fields,
)

PADDING = -1


@dataclasses.dataclass(frozen=True, kw_only=True)
class SparseMDP(ModelFields):
    """A finite MDP with successor lists, as an immutable pytree (see :func:`make_sparse_mdp`).

    Attributes:
      next_states: `[S, A, K]` int32 successor indices, ``-1`` for padding.
      probs: `[S, A, K]` their probabilities (0 on padding). Rows of masked actions are
        ignored.
      rewards, terminal_reward, discount, action_mask, horizon, initial_state: see
        :class:`ModelFields`.
    """

    next_states: jax.Array
    probs: jax.Array

    @property
    def max_successors(self) -> int:
        return self.next_states.shape[2]


jax.tree_util.register_dataclass(
    SparseMDP,
    data_fields=["next_states", "probs", *MODEL_DATA_FIELDS],
    meta_fields=MODEL_META_FIELDS,
)


def validate_successors(
    next_states: ArrayLike, probs: ArrayLike, action_mask: ArrayLike | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Checks concrete successor lists on the host; returns them as int32, float64 and bool
    arrays (the arguments themselves where they are such NumPy arrays: nothing writes to them).

    Raises:
      ValueError: naming the first offending row: shapes, an index out of range, a
        successor listed twice, probability on padding, a negative or non-finite entry, a
        row that does not sum to 1.
    """
    idx = as_numpy("next_states", next_states)
    if not np.issubdtype(idx.dtype, np.integer):
        raise ValueError(f"next_states must be integers, got dtype {idx.dtype}")
    if idx.ndim != 3 or min(idx.shape) < 1:
        raise ValueError(
            f"next_states must have shape [S, A, K] with S, A, K >= 1, got {idx.shape}"
        )
    S, A, K = idx.shape
    p = float_array("probs", probs, np.float64, copy=False)
    if p.shape != idx.shape:
        raise ValueError(f"probs must have the shape of next_states {idx.shape}, got {p.shape}")
    mask = check_mask(action_mask, S, A)

    allowed = mask[:, :, None]
    # Each check is a cheap pass over the arrays; the offending row is looked for only when
    # one fails (the masked rows may hold anything).
    if idx.min() < PADDING or idx.max() >= S:
        bad = np.argwhere(((idx < PADDING) | (idx >= S)) & allowed)
        if bad.size:
            s, a, j = bad[0]
            raise ValueError(
                f"next_states {_row(bad[0])} lists state {int(idx[s, a, j])}, outside [0, {S}) "
                f"(padding is {PADDING})"
            )
    padding = idx == PADDING
    on_padding = padding & (p != 0)
    if on_padding.any():
        on_padding = np.argwhere(on_padding & allowed)
        if on_padding.size:
            s, a, j = on_padding[0]
            raise ValueError(
                f"probs {_row(on_padding[0])} puts {p[s, a, j]:.9g} on padding (slot {j})"
            )
    if p.min() < 0:
        neg = np.argwhere((p < 0) & allowed)
        if neg.size:
            s, a, j = neg[0]
            raise ValueError(
                f"probs {_row(neg[0])} has a negative entry {p[s, a, j]:.9g} (slot {j})"
            )
    _check_distinct(idx, p, padding, mask)
    sums = _row_sums(p)
    off = np.abs(sums - 1) > ROW_SUM_TOLERANCE
    if off.any():
        off = np.argwhere(off & mask)
        if off.size:
            s, a = off[0]
            raise ValueError(
                f"probs {_row(off[0])} sums to {float(sums[s, a]):.9g}, not 1 (tolerance "
                f"{ROW_SUM_TOLERANCE:.1e}; {len(off)} such row(s)); rows are never renormalized"
            )
    return idx.astype(np.int32, copy=False), p, mask


def _row(where) -> str:
    s, a = (int(i) for i in where[:2])
    return f"row (state {s}, action {a})"


# Up to this many slots, duplicates are found by comparing each pair of slots (K(K-1)/2
# passes over [S, A]), and row sums are added slot by slot (NumPy's own order below 8 terms);
# beyond, by a sort of each row and NumPy's sum.
_FEW_SLOTS = 7


def _check_distinct(idx: np.ndarray, p: np.ndarray, padding: np.ndarray, mask) -> None:
    """A ValueError for the first allowed row that lists a successor twice with positive mass
    (naming the smallest such successor)."""
    K = idx.shape[2]
    fillers = -1 - np.arange(K, dtype=idx.dtype if idx.dtype.kind == "i" else np.int64)
    listed = np.where((p > 0) & ~padding, idx, fillers)  # unique fillers: no mass
    if K <= _FEW_SLOTS:
        twice = np.zeros(mask.shape, bool)
        for j, k in itertools.combinations(range(K), 2):
            twice |= listed[..., j] == listed[..., k]
    else:
        ordered = np.sort(listed, axis=-1)
        twice = (ordered[..., 1:] == ordered[..., :-1]).any(-1)
    twice &= mask
    if twice.any():
        first = np.argwhere(twice)[0]
        ordered = np.sort(listed[tuple(first)])
        state = ordered[np.argmax(ordered[1:] == ordered[:-1])]
        raise ValueError(f"next_states {_row(first)} lists state {int(state)} twice")


def _row_sums(p: np.ndarray) -> np.ndarray:
    """`[S, A]` each row's sum, bit for bit ``p.sum(-1)``."""
    if p.shape[2] > _FEW_SLOTS:
        return p.sum(-1)
    sums = p[..., 0].copy()
    for j in range(1, p.shape[2]):
        sums += p[..., j]
    return sums


def make_sparse_mdp(
    next_states: ArrayLike,
    probs: ArrayLike,
    rewards: ArrayLike,
    *,
    terminal_reward: ArrayLike | None = None,
    discount: float | None = None,
    action_mask: ArrayLike | None = None,
    horizon: int | None = None,
    initial_state: int = 0,
    support: ArrayLike | None = None,
    dtype=None,
) -> SparseMDP:
    """Validates successor lists and returns an immutable :class:`SparseMDP`.

    Args:
      next_states: `[S, A, K]` ints: the successors of each row, padded to ``K`` with ``-1``.
      probs: `[S, A, K]` their probabilities: non-negative, 0 on padding, each allowed row
        summing to 1 (within 3.1e-5; nothing is renormalized), each nonzero one at least
        ``np.finfo(dtype).tiny`` (XLA flushes smaller, subnormal, numbers to zero; so for
        the rewards).
      rewards: `[S, A]` rewards ``r(s, a)``.
      terminal_reward: `[S]` terminal reward ``R_T`` (default zeros). Finite horizon only.
      discount: ``γ`` in ``[0, 1]``, ``< 1`` when ``horizon`` is None. Default
        (:func:`~jaxprivmdp.models._dense.resolve_discount`): 1 with a horizon, 0.95 without.
      action_mask: `[S, A]` bool, True = allowed (default all True).
      horizon: ``T >= 1``, or None for an infinite discounted horizon.
      initial_state: index of ``s_0``.
      support: optional `[S, A, K]` bool, the slots that are public support. Default: the
        slots with positive probability; every other slot is stored as padding (its state
        is not a successor). Give it to rebuild a release, whose listed entries may be 0:
        ``support=next_states >= 0`` keeps every listed slot.
      dtype: float dtype (default: JAX's default float).

    Returns:
      A :class:`SparseMDP` whose listed successors are exactly the support.

    Raises:
      ValueError: naming the offending argument and row (also for a nonzero probability or
        reward below the dtype's smallest normal number).
    """
    rest = (terminal_reward, horizon, discount, initial_state)
    return _validated(next_states, probs, rewards, action_mask, rest, support, dtype, owned=False)


def sparse_mdp_of_owned(
    next_states: np.ndarray,
    probs: np.ndarray,
    rewards: ArrayLike,
    *,
    action_mask: np.ndarray,
    discount: float | None = None,
    horizon: int | None = None,
    initial_state: int = 0,
    dtype=None,
) -> SparseMDP:
    """:func:`make_sparse_mdp` of arrays the caller hands over (a loader's fresh ones that
    nothing else holds or writes): every check, without the copies that keep a caller's
    arrays apart from the model's (the model may share their memory; ``probs`` may be
    written)."""
    rest = (None, horizon, discount, initial_state)
    return _validated(next_states, probs, rewards, action_mask, rest, None, dtype, owned=True)


def _validated(next_states, probs, rewards, action_mask, rest, support, dtype, owned: bool):
    """``rest``: ``(terminal_reward, horizon, discount, initial_state)``."""
    dtype = working_dtype(dtype)
    idx, p, mask = validate_successors(next_states, probs, action_mask)
    refuse_subnormal("probs", p, dtype, allowed=mask[:, :, None])
    S, A, _ = idx.shape
    if support is None:
        keep = p > 0
    else:
        keep = check_support(support, p, mask)
    keep = keep & (idx >= 0)  # (not in place: `support` may be the caller's array)
    drop = ~keep
    if (drop & (idx != PADDING)).any():  # slots stored as padding
        idx = np.where(keep, idx, PADDING).astype(np.int32, copy=False)
    p = p.astype(dtype, copy=not owned)  # written below: a copy unless it is ours
    np.copyto(p, 0.0, where=drop)
    fields = validate_model_fields(S, A, rewards, *rest, dtype)
    # device_put transfers host arrays as they are; jnp.asarray would compile a conversion for
    # each new shape (tens of ms apiece, most of a small model's construction). On a CPU,
    # device_put may *alias* a 64-byte-aligned NumPy buffer instead of copying it, so each
    # array handed over must be our own: `p` is (or was handed over), `idx` and `mask` may be
    # the caller's unless they were handed over.
    if not owned:
        idx, mask = _owned(idx, next_states), _owned(mask, action_mask)
    idx, p, mask = jax.device_put((idx, p, mask))  # (one call: less overhead than three)
    return SparseMDP(next_states=idx, probs=p, action_mask=mask, **fields)


def _owned(x: np.ndarray, given) -> np.ndarray:
    """``x``, copied where it may share memory with what the caller ``given``."""
    return x.copy() if given is not None and np.may_share_memory(x, given) else x
