"""Interval MDPs: every transition probability known only to lie in ``[l, u]``.

An :class:`IntervalMDP` (IMDP) is the object PRISM (``Pmaxmin=?``), Storm's robust value
iteration and IntervalMDP.jl work with: row ``(s, a)`` is any distribution ``x`` on the
simplex with ``lower[s, a] <= x <= upper[s, a]`` entry by entry, chosen by *nature* each time
the row is used. A point model is the interval model with ``lower = upper``.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from .._checks import ROW_SUM_TOLERANCE, as_numpy, check_count, float_array, working_dtype
from ._dense import (
    MODEL_DATA_FIELDS,
    MODEL_META_FIELDS,
    ModelFields,
    check_mask,
    validate_model_fields,
)
from ._memory import check_fits, device_memory
from ._sparse import PADDING, _check_distinct


@dataclasses.dataclass(frozen=True, kw_only=True)
class IntervalMDP(ModelFields):
    """A finite interval MDP, as an immutable pytree (see :func:`make_interval_mdp`).

    Attributes:
      lower, upper: the per-entry bounds ``0 <= l <= u <= 1``: dense `[S, A, S]`, or
        `[S, A, K]` over the successor lists ``next_states`` (0 on padding).
      next_states: None (dense), or `[S, A, K]` int32 successor indices, ``-1`` for padding:
        an entry not listed has ``l = u = 0``.
      rewards, terminal_reward, discount, action_mask, horizon, initial_state: see
        :class:`ModelFields`.
    """

    lower: jax.Array
    upper: jax.Array
    next_states: jax.Array | None = None

    @property
    def is_sparse(self) -> bool:
        return self.next_states is not None

    @property
    def row_length(self) -> int:
        """Entries per row: ``S`` (dense) or ``K`` (successor lists)."""
        return self.lower.shape[2]


jax.tree_util.register_dataclass(
    IntervalMDP,
    data_fields=["lower", "upper", "next_states", *MODEL_DATA_FIELDS],
    meta_fields=MODEL_META_FIELDS,
)


def make_interval_mdp(
    lower: ArrayLike,
    upper: ArrayLike,
    rewards: ArrayLike,
    *,
    next_states: ArrayLike | None = None,
    action_mask: ArrayLike | None = None,
    horizon: int | None = None,
    discount: float | None = None,
    terminal_reward: ArrayLike | None = None,
    initial_state: int = 0,
    dtype=None,
) -> IntervalMDP:
    """Validates the bounds of an interval MDP and returns an immutable :class:`IntervalMDP`.

    Row ``(s, a)`` is any distribution ``x`` with ``lower[s, a] <= x <= upper[s, a]``, picked
    by nature each time the row is used; a point model is the case ``lower = upper``.

    Args:
      lower: `[S, A, S]` lower bounds ``l(s' | s, a)`` (dense), or `[S, A, K]` over
        ``next_states``. Every allowed row needs ``0 <= l <= u <= 1`` entry by entry and
        ``Σ l <= 1 <= Σ u`` (within 3.1e-5, as a point model's row sums), so that some
        distribution fits between its bounds.
      upper: upper bounds ``u``, the shape of ``lower``.
      rewards: `[S, A]` rewards ``r(s, a)``.
      next_states: None for dense bounds, or `[S, A, K]` ints: the successors of each row,
        padded to ``K`` with ``-1`` (``l = u = 0`` on padding; each state listed once per
        row). An entry not listed has ``l = u = 0``.
      action_mask: `[S, A]` bool, True = allowed (default all True). Every state needs one;
        the bounds of masked rows are not checked and never read.
      horizon: ``T >= 1`` for a finite horizon, or None for an infinite discounted horizon.
      discount: ``γ`` in ``[0, 1]``, ``< 1`` when ``horizon`` is None. Default
        (:func:`~jaxprivmdp.models._dense.resolve_discount`): 1 with a horizon, 0.95 without.
      terminal_reward: `[S]` terminal reward ``R_T`` (default zeros). Finite horizon only.
      initial_state: index of ``s_0``.
      dtype: float dtype of the arrays (default: JAX's default float, float32 unless x64).
        A bound that ``dtype`` cannot hold exactly is rounded outward (``lower`` down,
        ``upper`` up, staying in ``[0, 1]``), so the stored intervals contain the given ones.
        So is a positive bound below ``np.finfo(dtype).tiny`` (a subnormal number, which
        XLA flushes to zero on CPU, and float32 on GPU): ``lower`` to 0, ``upper`` to
        ``tiny``. A nonzero reward below ``tiny`` is refused (it cannot be rounded outward).

    Returns:
      An :class:`IntervalMDP` holding copies (nothing given is changed or renormalized).

    Raises:
      ValueError: naming the offending argument, and the first offending row ``(s, a)`` with
        its numbers: shapes, a NaN or infinite entry, ``l < 0``, ``l > u``, ``u > 1``, a row
        whose bounds hold no distribution (``Σ l > 1`` or ``Σ u < 1``), a successor out of
        range or listed twice, a bound on padding, a state with no allowed action, discount
        or horizon out of range, a nonzero reward below the dtype's smallest normal number.
    """
    dtype = working_dtype(dtype)
    lo, hi, idx, mask = validate_intervals(lower, upper, next_states, action_mask)
    S, A = mask.shape
    fields = validate_model_fields(
        S, A, rewards, terminal_reward, horizon, discount, initial_state, dtype
    )
    lo, hi = _rounded(lo, dtype, toward=0.0), _rounded(hi, dtype, toward=1.0)
    if idx is not None:
        idx = np.array(idx, np.int32)  # a copy: device_put may alias a NumPy buffer
    lo, hi, idx, mask = jax.device_put((lo, hi, idx, np.array(mask, bool)))
    return IntervalMDP(lower=lo, upper=hi, next_states=idx, action_mask=mask, **fields)


def validate_intervals(
    lower: ArrayLike,
    upper: ArrayLike,
    next_states: ArrayLike | None = None,
    action_mask: ArrayLike | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]:
    """Checks concrete interval bounds on the host (see :func:`make_interval_mdp`).

    Returns:
      ``(lower, upper, next_states, mask)``: float64 copies of the bounds, the successor
      lists as given (None for dense bounds) and the `[S, A]` bool mask.

    Raises:
      ValueError: naming the first offending row and its numbers.
    """
    lo = float_array("lower", lower, np.float64)
    hi = float_array("upper", upper, np.float64)
    if next_states is None:
        idx = None
        if lo.ndim != 3 or lo.shape[0] != lo.shape[2] or min(lo.shape) < 1:
            raise ValueError(
                "lower must have shape [S, A, S] with S, A >= 1 (or [S, A, K] with "
                f"next_states), got {lo.shape}"
            )
    else:
        idx = as_numpy("next_states", next_states)
        if not np.issubdtype(idx.dtype, np.integer):
            raise ValueError(f"next_states must be integers, got dtype {idx.dtype}")
        if idx.ndim != 3 or min(idx.shape) < 1:
            raise ValueError(
                f"next_states must have shape [S, A, K] with S, A, K >= 1, got {idx.shape}"
            )
        if lo.shape != idx.shape:
            raise ValueError(
                f"lower must have the shape of next_states {idx.shape}, got {lo.shape}"
            )
    if hi.shape != lo.shape:
        raise ValueError(f"upper must have the shape of lower {lo.shape}, got {hi.shape}")
    mask = check_mask(action_mask, lo.shape[0], lo.shape[1])
    if idx is not None:
        _check_lists(idx, lo, hi, mask)
    _check_entries(lo, hi, idx, mask)
    _check_sums(lo, hi, mask)
    return lo, hi, idx, mask


def _row(where) -> str:
    s, a = (int(i) for i in where[:2])
    return f"row (state {s}, action {a})"


def _entry(where, idx) -> str:
    """Entry ``where = (s, a, j)`` in words: its next state (and slot, for lists)."""
    s, a, j = (int(i) for i in where)
    if idx is None:
        return f"next state {j}"
    return f"slot {j} (next state {int(idx[s, a, j])})"


def _check_lists(idx: np.ndarray, lo: np.ndarray, hi: np.ndarray, mask: np.ndarray) -> None:
    """Successor lists: indices in range, nothing on padding, each state listed once."""
    S = mask.shape[0]
    allowed = mask[:, :, None]
    bad = np.argwhere(((idx < PADDING) | (idx >= S)) & allowed)
    if bad.size:
        s, a, j = bad[0]
        raise ValueError(
            f"next_states {_row(bad[0])} lists state {int(idx[s, a, j])} in slot {j}, outside "
            f"[0, {S}) (padding is {PADDING})"
        )
    padding = idx == PADDING
    on_padding = np.argwhere(padding & ((lo != 0) | (hi != 0)) & allowed)
    if on_padding.size:
        s, a, j = on_padding[0]
        raise ValueError(
            f"{_row(on_padding[0])} has bounds [{lo[s, a, j]:.9g}, {hi[s, a, j]:.9g}] on "
            f"padding (slot {j}): lower and upper must be 0 there"
        )
    _check_distinct(idx, ~padding, padding, mask)  # every listed slot counts, even u = 0


def _check_entries(lo: np.ndarray, hi: np.ndarray, idx, mask: np.ndarray) -> None:
    """``0 <= l <= u <= 1`` on every entry of an allowed row."""
    allowed = mask[:, :, None]
    checks = (
        (lo < 0, "lower bound {l:.9g} is negative"),
        (lo > hi, "lower bound {l:.9g} exceeds its upper bound {u:.9g}"),
        (hi > 1, "upper bound {u:.9g} exceeds 1"),
    )
    for bad, what in checks:
        found = np.argwhere(bad & allowed)
        if found.size:
            s, a, j = found[0]
            raise ValueError(
                f"{_row(found[0])}, {_entry(found[0], idx)}: "
                + what.format(l=lo[s, a, j], u=hi[s, a, j])
                + f" ({len(found)} such entr{'y' if len(found) == 1 else 'ies'}); every entry "
                "needs 0 <= lower <= upper <= 1"
            )


def _check_sums(lo: np.ndarray, hi: np.ndarray, mask: np.ndarray) -> None:
    """``Σ l <= 1 <= Σ u`` (within the row-sum tolerance) on every allowed row."""
    low_sums, high_sums = lo.sum(-1), hi.sum(-1)
    checks = (
        (low_sums > 1 + ROW_SUM_TOLERANCE, low_sums, "lower bounds sum to {:.9g} > 1"),
        (high_sums < 1 - ROW_SUM_TOLERANCE, high_sums, "upper bounds sum to {:.9g} < 1"),
    )
    for bad, sums, what in checks:
        found = np.argwhere(bad & mask)
        if found.size:
            s, a = found[0]
            raise ValueError(
                f"{_row(found[0])}: its " + what.format(float(sums[s, a])) + " (tolerance "
                f"{ROW_SUM_TOLERANCE:.1e}; {len(found)} such row(s)): no distribution lies "
                "between its bounds"
            )


def _rounded(x: np.ndarray, dtype: np.dtype, toward: float) -> np.ndarray:
    """``x`` in ``dtype``, each entry that rounding moved away from ``toward`` moved back
    one ulp past its value (outward rounding of a bound in ``[0, 1]``), and no entry
    subnormal: XLA flushes those to zero on CPU (and float32 on GPU), which would move an
    upper bound inward. A positive bound below ``tiny`` becomes 0 (lower) or ``tiny``
    (upper), outward too."""
    dtype = np.dtype(dtype)
    out = x.astype(dtype)
    if dtype != x.dtype:
        moved = out > x if toward == 0.0 else out < x
        out = np.where(moved, np.nextafter(out, dtype.type(toward)), out)
    tiny = np.finfo(dtype).tiny
    below = (np.abs(out) < tiny) & (out != 0)
    if below.any():  # (a negative entry: a masked row's, never read; still outward)
        low, high = (-tiny, 0.0) if toward == 0.0 else (0.0, tiny)
        out = np.where(below, np.where(out > 0, high, low).astype(dtype), out)
    return out


def interval_to_dense(mdp: IntervalMDP) -> IntervalMDP:
    """The `[S, A, S]` bounds of an interval model (the model itself if dense).

    Raises:
      ValueError: for a model whose dense bounds do not fit in the device's memory.
    """
    if not mdp.is_sparse:
        return mdp
    S, A, _ = mdp.next_states.shape
    dtype = np.dtype(mdp.lower.dtype)
    check_fits(
        f"to_dense of a sparse IntervalMDP with S = {S}, A = {A}: 2 × [S, A, S] = "
        f"{2 * S * A * S:.3g} {dtype.name} bounds",
        2 * S * A * S * dtype.itemsize,
        device_memory(),
        "this device's memory",
        "keep the interval model sparse",
    )
    listed = mdp.next_states >= 0
    idx = jnp.where(listed, mdp.next_states, 0)
    s, a = jnp.meshgrid(jnp.arange(S), jnp.arange(A), indexing="ij")
    at = (s[..., None], a[..., None], idx)

    def scatter(bounds):
        return jnp.zeros((S, A, S), bounds.dtype).at[at].add(jnp.where(listed, bounds, 0))

    return IntervalMDP(lower=scatter(mdp.lower), upper=scatter(mdp.upper), **mdp.shared_fields())


def interval_to_sparse(mdp: IntervalMDP, max_successors: int | None = None) -> IntervalMDP:
    """An interval model as successor lists: the entries with ``upper > 0`` of each allowed
    row, in state order for dense bounds (slot order for lists); masked rows are emptied.

    Raises:
      ValueError: if a row has more than ``max_successors`` such entries.
    """
    lo, hi = np.asarray(mdp.lower), np.asarray(mdp.upper)
    mask = np.asarray(mdp.action_mask)
    if mdp.is_sparse:
        idx = np.asarray(mdp.next_states)
    else:
        idx = np.broadcast_to(np.arange(lo.shape[2], dtype=np.int32), lo.shape)
    keep = (idx >= 0) & (hi > 0) & mask[:, :, None]
    most = max(int(keep.sum(-1).max()), 1)
    K = most if max_successors is None else check_count("max_successors", max_successors)
    if K < most:
        raise ValueError(f"a row has {most} entries with upper > 0, more than max_successors = {K}")
    order = np.argsort(~keep, axis=-1, kind="stable")[..., :K]
    listed = np.take_along_axis(keep, order, -1)
    widen = ((0, 0), (0, 0), (0, K - order.shape[-1]))  # K beyond the row length: padding

    def take(x, fill):
        taken = np.where(listed, np.take_along_axis(x, order, -1), fill).astype(x.dtype)
        return np.pad(taken, widen, constant_values=fill)

    return IntervalMDP(
        lower=jnp.asarray(take(lo, 0)),
        upper=jnp.asarray(take(hi, 0)),
        next_states=jnp.asarray(take(idx, PADDING).astype(np.int32)),
        **mdp.shared_fields(),
    )
