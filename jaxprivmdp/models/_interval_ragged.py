"""Ragged interval models: an interval MDP's successor lists bucketed by length.

The interval counterpart of :mod:`._ragged` (read its docstring: the same design). An
:class:`~jaxprivmdp.models._interval.IntervalMDP` over successor lists pads every row to the
longest, `[S, A, K]`: one state with 4,096 successors among thousands with one or two makes
``S·A·4096`` slots of each bound. A :class:`RaggedIntervalMDP` keeps its rows in buckets, the
rows with at most ``K_b`` successors (``K_b`` a power of two) forming one block `[n_b, K_b]`
of successors and both bounds, with their flat row ids ``s·A + a``: fewer than twice the
transitions in padded slots, at most ``log2(K) + 1`` blocks. The widest block is cut to the
longest row (the rounding bounds of a backup grow with the row length, and are then those
of the padded layout). Rows with no entry (masked actions) are in no bucket.

The checker reads the blocks through the properties :attr:`~RaggedIntervalMDP.lower`,
:attr:`~RaggedIntervalMDP.upper` (tuples, one `[n_b, K_b]` per bucket) and
:attr:`~RaggedIntervalMDP.next_states` (the successors with their row ids, a
:class:`~jaxprivmdp.models._ragged.RaggedRows`): the kernel
(:mod:`._interval_expect`) fills each block with the per-row code of the padded layout and
scatters the `[n_b]` results into `[S, A]`, so a check costs O(transitions + S·A) memory.

Built by :func:`interval_to_ragged` (``jp.to_ragged`` of an interval model), by the loader of
PRISM's interval files where padding would be skewed (:func:`ragged_interval_from_lists`,
validated as :func:`~jaxprivmdp.models._interval.make_interval_mdp`), and by
``interval_of_point`` of a :class:`~jaxprivmdp.models._ragged.RaggedMDP`;
:func:`ragged_interval_to_padded` converts back.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import ROW_SUM_TOLERANCE, as_numpy, check_count, float_array
from ._dense import MODEL_DATA_FIELDS, MODEL_META_FIELDS, Bucketed, ModelFields
from ._interval import IntervalMDP, _rounded, interval_to_sparse
from ._ragged import RaggedMDP, RaggedRows, bucket_lists
from ._sparse import PADDING


class IntervalBucket(NamedTuple):
    """One block of rows with at most ``K_b`` successors each.

    Attributes:
      rows: `[n_b]` int32 flat row ids ``s·A + a``, increasing.
      next_states: `[n_b, K_b]` int32 successors, ``-1`` for padding (at the end of a row).
      lower, upper: `[n_b, K_b]` their bounds (0 on padding).
    """

    rows: jax.Array
    next_states: jax.Array
    lower: jax.Array
    upper: jax.Array


@dataclasses.dataclass(frozen=True, kw_only=True)
class RaggedIntervalMDP(Bucketed, ModelFields):
    """An interval MDP with ragged successor lists, as an immutable pytree.

    Made by ``jp.to_ragged`` of an :class:`IntervalMDP` or by ``jp.load_mdp`` of a PRISM
    interval file whose rows are very unequal; ``jp.to_padded`` gives the `[S, A, K]`
    :class:`IntervalMDP`. ``lower``, ``upper`` and ``next_states`` read the buckets (per
    bucket, not `[S, A, K]` arrays).

    Attributes:
      buckets: the blocks of rows, by increasing ``K_b`` (see :class:`IntervalBucket`).
      rewards, terminal_reward, discount, action_mask, horizon, initial_state: see
        :class:`ModelFields`.
    """

    buckets: tuple[IntervalBucket, ...]

    @property
    def lower(self) -> tuple:
        """The lower bounds, one `[n_b, K_b]` per bucket."""
        return tuple(b.lower for b in self.buckets)

    @property
    def upper(self) -> tuple:
        """The upper bounds, one `[n_b, K_b]` per bucket."""
        return tuple(b.upper for b in self.buckets)

    @property
    def next_states(self) -> RaggedRows:
        """The buckets' successors and row ids, as the checker's kernel reads them."""
        return RaggedRows(
            tuple(b.next_states for b in self.buckets),
            tuple(b.rows for b in self.buckets),
            tuple(self.action_mask.shape),
        )


jax.tree_util.register_dataclass(
    RaggedIntervalMDP, data_fields=["buckets", *MODEL_DATA_FIELDS], meta_fields=MODEL_META_FIELDS
)

#: The interval models' classes (``isinstance`` of any layout).
INTERVAL_MODELS = (IntervalMDP, RaggedIntervalMDP)


def _where(rid: int, A: int) -> str:
    s, a = divmod(int(rid), A)
    return f"row (state {s}, action {a})"


def _check_interval_lists(rid, nxt, lo, hi, mask: np.ndarray) -> None:
    """The checks of ``make_interval_mdp`` on transition lists (rows of allowed actions)."""
    S, A = mask.shape
    for name, x, n in (("row_ids", rid, S * A), ("next_states", nxt, S)):
        bad = np.flatnonzero((x < 0) | (x >= n))
        if bad.size:
            raise ValueError(f"{name}[{bad[0]}] = {x[bad[0]]} is outside [0, {n})")
    allowed = mask.reshape(-1)[rid]
    checks = (
        (lo < 0, "lower bound {l:.9g} is negative"),
        (lo > hi, "lower bound {l:.9g} exceeds its upper bound {u:.9g}"),
        (hi > 1, "upper bound {u:.9g} exceeds 1"),
    )
    for bad, what in checks:
        found = np.flatnonzero(bad & allowed)
        if found.size:
            i = found[0]
            raise ValueError(
                f"{_where(rid[i], A)}, next state {nxt[i]}: " + what.format(l=lo[i], u=hi[i])
                + f" ({found.size} such entr{'y' if found.size == 1 else 'ies'}); every entry "
                "needs 0 <= lower <= upper <= 1"
            )  # fmt: skip
    key = np.sort(rid * S + nxt)
    twice = np.flatnonzero(key[1:] == key[:-1])
    if twice.size:
        k = int(key[twice[0]])
        raise ValueError(f"next_states {_where(k // S, A)} lists state {k % S} twice")
    low = np.bincount(rid, weights=lo, minlength=S * A)
    high = np.bincount(rid, weights=hi, minlength=S * A)
    allowed_rows = mask.reshape(-1)
    for bad, sums, what in (
        (low > 1 + ROW_SUM_TOLERANCE, low, "lower bounds sum to {:.9g} > 1"),
        (high < 1 - ROW_SUM_TOLERANCE, high, "upper bounds sum to {:.9g} < 1"),
    ):
        found = np.flatnonzero(bad & allowed_rows)
        if found.size:
            r = found[0]
            raise ValueError(
                f"{_where(r, A)}: its " + what.format(float(sums[r])) + f" (tolerance "
                f"{ROW_SUM_TOLERANCE:.1e}; {found.size} such row(s)): no distribution lies "
                "between its bounds"
            )


def _trimmed(last: IntervalBucket) -> IntervalBucket:
    """The widest bucket cut to its longest row: the longest bucket is then as long as the
    longest row, the ``n`` of the fill's rounding bound (``fill_margin``), as in the padded
    layout (concrete buckets only)."""
    if isinstance(last.next_states, jax.core.Tracer):
        return last
    n = max(int(np.asarray(last.next_states >= 0).sum(-1).max(initial=0)), 1)
    return IntervalBucket(last.rows, *(x[:, :n] for x in last[1:]))


def _buckets(rid, nxt, lo, hi) -> tuple[IntervalBucket, ...]:
    """The buckets of transitions sorted by row (NumPy arrays in, device arrays out)."""
    positions = np.arange(rid.size, dtype=np.float64)  # both bounds placed alike
    out = []
    for ids, idx, pos in bucket_lists(rid, nxt, positions):
        listed = idx >= 0
        at = np.where(listed, pos, 0).astype(np.int64)
        bounds = (np.where(listed, x[at], 0).astype(x.dtype) for x in (lo, hi))
        out.append(IntervalBucket(ids, idx, *bounds))
    if out:
        out[-1] = _trimmed(out[-1])
    return tuple(IntervalBucket(*jax.device_put(tuple(b))) for b in out)


def ragged_interval_from_lists(row_ids, next_states, lower, upper, mask, fields: dict):
    """A validated :class:`RaggedIntervalMDP` of transition lists (`[N]` each: the row
    ``s·A + a``, the successor, its bounds; any order, kept within a row), the `[S, A]`
    ``mask`` and the validated ``fields`` of ``validate_model_fields``. Bounds the dtype
    cannot hold exactly are rounded outward, as by ``make_interval_mdp`` (a positive bound
    below the dtype's ``tiny``, which XLA would flush to zero: ``lower`` to 0, ``upper`` to
    ``tiny``).

    Raises:
      ValueError: naming the first offending row ``(s, a)`` and its numbers.
    """
    rid, nxt = as_numpy("row_ids", row_ids), as_numpy("next_states", next_states)
    for name, x in (("row_ids", rid), ("next_states", nxt)):
        if not np.issubdtype(x.dtype, np.integer) or x.ndim != 1:
            raise ValueError(f"{name} must be 1-D integers, got {x.dtype} {x.shape}")
    lo, hi = float_array("lower", lower, np.float64), float_array("upper", upper, np.float64)
    if not rid.shape == nxt.shape == lo.shape == hi.shape:
        raise ValueError(
            f"row_ids, next_states, lower and upper must have one shape, got {rid.shape}, "
            f"{nxt.shape}, {lo.shape}, {hi.shape}"
        )
    rid, nxt = rid.astype(np.int64), nxt.astype(np.int64)
    _check_interval_lists(rid, nxt, lo, hi, mask)
    dtype = fields["rewards"].dtype
    lo, hi = _rounded(lo, dtype, toward=0.0), _rounded(hi, dtype, toward=1.0)
    order = np.argsort(rid, kind="stable")
    rid, nxt, lo, hi = rid[order], nxt[order], lo[order], hi[order]
    mask = jax.device_put(np.array(mask, bool))
    return RaggedIntervalMDP(buckets=_buckets(rid, nxt, lo, hi), action_mask=mask, **fields)


def interval_lists(mdp: IntervalMDP | RaggedIntervalMDP):
    """NumPy ``(row_ids, next_states, lower, upper)`` of every listed entry, by row (slot
    order kept; dense bounds: the entries with ``upper > 0``)."""
    if isinstance(mdp, IntervalMDP):
        lo, hi = np.asarray(mdp.lower), np.asarray(mdp.upper)
        S, A, K = lo.shape
        if mdp.next_states is None:
            listed = hi > 0
            tgt = np.broadcast_to(np.arange(K), lo.shape)
        else:
            tgt = np.asarray(mdp.next_states)
            listed = tgt >= 0
        rows = np.broadcast_to(np.arange(S * A).reshape(S, A, 1), lo.shape)
        return rows[listed], tgt[listed].astype(np.int64), lo[listed], hi[listed]
    parts = [[], [], [], []]
    for b in mdp.buckets:
        nxt = np.asarray(b.next_states)
        listed = nxt >= 0
        rows = np.broadcast_to(np.asarray(b.rows, np.int64)[:, None], nxt.shape)
        for part, x in zip(parts, (rows, nxt, b.lower, b.upper), strict=True):
            part.append(np.asarray(x)[listed])
    rid, nxt, lo, hi = (np.concatenate(p) for p in parts)
    order = np.argsort(rid, kind="stable")
    return rid[order], nxt[order].astype(np.int64), lo[order], hi[order]


def interval_to_ragged(mdp: IntervalMDP) -> RaggedIntervalMDP:
    """The same interval model with its listed entries in buckets (bounds unchanged; a dense
    model's entries with ``upper > 0``, masked rows emptied, as ``to_sparse``)."""
    if mdp.next_states is None:
        mdp = interval_to_sparse(mdp)
    rid, nxt, lo, hi = interval_lists(mdp)
    return RaggedIntervalMDP(buckets=_buckets(rid, nxt, lo, hi), **mdp.shared_fields())


def ragged_interval_to_padded(
    mdp: RaggedIntervalMDP, max_successors: int | None = None
) -> IntervalMDP:
    """The same model as an :class:`IntervalMDP` over `[S, A, K]` successor lists (``K``
    default: the longest row)."""
    rid, nxt, lo, hi = interval_lists(mdp)
    S, A = mdp.num_states, mdp.num_actions
    counts = np.bincount(rid, minlength=S * A)
    most = max(int(counts.max(initial=0)), 1)
    K = most if max_successors is None else check_count("max_successors", max_successors)
    if K < most:
        raise ValueError(f"a row has {most} successors, more than max_successors = {K}")
    starts = np.cumsum(counts) - counts
    flat = rid * K + np.arange(rid.size) - np.repeat(starts, counts)
    idx = np.full(S * A * K, PADDING, np.int32)
    low, high = np.zeros(S * A * K, lo.dtype), np.zeros(S * A * K, hi.dtype)
    idx[flat], low[flat], high[flat] = nxt, lo, hi
    shape = (S, A, K)
    return IntervalMDP(
        lower=jnp.asarray(low.reshape(shape)),
        upper=jnp.asarray(high.reshape(shape)),
        next_states=jnp.asarray(idx.reshape(shape)),
        **mdp.shared_fields(),
    )


def ragged_interval_of_point(mdp: RaggedMDP) -> RaggedIntervalMDP:
    """A ragged point model as the ragged interval model with ``lower = upper``."""
    buckets = [IntervalBucket(b.rows, b.next_states, b.probs, b.probs) for b in mdp.buckets]
    if buckets:
        buckets[-1] = _trimmed(buckets[-1])
    return RaggedIntervalMDP(buckets=buckets, **mdp.shared_fields())
