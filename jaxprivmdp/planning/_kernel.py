"""The robust Bellman backups of the bounds: the inner problem for every row at once.

Each row's inner problem (the paper's LP (P), and the greedy fill that solves it exactly) is
stated in :mod:`._inner`. Every capacity ``u_j − l_j`` is at least ``min(α, 1)``, so the fill
stops within the first ``⌈1/α⌉`` entries in ``v``-order: inside the Bellman recursions only
those few entries need the cumulative sum; the rest is the dense product ``l · v``, a pass like
a Bellman backup. That width is static (it sets shapes), proven or checked at run time: see
:mod:`._width`.

The same fill solves the problem for any per-entry bounds ``l ≤ u`` and weight ``β'``:
:func:`robust_backup` takes them from a set of ``jaxprivmdp.sets._boxes`` (the paper's box, or
the exact and certified boxes built from Beta marginals), so every set shares this kernel.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.lax import Precision

from ..models.core import SLOT_SUM_MAX, RaggedRows, Rows, blockwise, row_support, successors
from ..sets.core import box_caps
from ._inner import pour_sorted, running_sum
from ._width import CheckedWidth


def _in_global_order(rows: Rows, x: jax.Array, order: jax.Array, default, num_states: int):
    """`[2, ..., m]` each row's entries ``x`` at the states ``order`` `[2, m]` (of
    ``num_states``).

    Dense rows are indexed directly; for successor lists a state the list does not hold
    gets ``default``.
    """
    if rows.next_states is None:
        return jnp.moveaxis(x[..., order], -2, 0)
    two, m = order.shape
    K = rows.next_states.shape[-1]
    if K <= UNROLLED_MAX_SUCCESSORS:  # K comparisons with the window's states per row
        # A list holds each state once (make_sparse_mdp checks it) and the window too, so at
        # most one successor matches a slot; padding (-1) matches none. No scatter, no gather.
        states = order.reshape((two,) + (1,) * (rows.next_states.ndim - 1) + (m,))
        x = jnp.broadcast_to(x, rows.next_states.shape)
        out = jnp.full((two,) + rows.next_states.shape[:-1] + (m,), default, x.dtype)
        for j in range(K):
            hit = rows.next_states[None, ..., j, None] == states
            out = jnp.where(hit, x[None, ..., j, None], out)
        return out
    # Longer lists: each listed entry goes to its state's place in the window through a
    # scatter of the window's states (K entries per row; comparing every successor with every
    # state of the window costs K·m per row, which pays only for short lists: 1.05-1.16x
    # faster up to 8 on the CPU).
    rank = jnp.full((two, num_states), m, jnp.int32)
    rank = rank.at[jnp.arange(two)[:, None], order].set(jnp.arange(m, dtype=jnp.int32))
    listed = rows.next_states >= 0
    place = jnp.where(listed[None], rank[:, jnp.maximum(rows.next_states, 0)], m)  # [2, ..., K]
    flat = place.reshape(-1, place.shape[-1])
    line = jnp.arange(flat.shape[0])[:, None]
    found = (
        jnp.zeros((flat.shape[0], m), x.dtype)
        .at[line, flat]
        .add(jnp.broadcast_to(x, place.shape).reshape(flat.shape), mode="drop")
    )
    hits = jnp.zeros((flat.shape[0], m), jnp.int32).at[line, flat].add(1, mode="drop")
    out = jnp.where(hits > 0, found, default)
    return out.reshape(place.shape[:-1] + (m,))


# Up to this many successors a row's greedy fill is computed by pairwise comparisons
# (K² per row, no sort): XLA:CPU sorts many short rows slowly. Longer lists are sorted.
PAIRWISE_MAX_SUCCESSORS = 16


def _comes_before(w: jax.Array) -> jax.Array:
    """`[..., n, n]` bool: entry ``i`` precedes ``j`` in ``w``'s ascending order.

    Ties are broken by index, the order a stable sort (and ``lax.top_k``) gives, so the
    pairwise fills pour exactly as the sorted one does.
    """
    n = w.shape[-1]
    slot = jnp.arange(n)
    earlier = (slot[:, None] < slot[None, :]).reshape((1,) * (w.ndim - 1) + (n, n))
    w_i, w_j = w[..., :, None], w[..., None, :]
    return (w_i < w_j) | ((w_i == w_j) & earlier)


def _fill_within_rows(rows: Rows, box, values: jax.Array, slack: jax.Array):
    """The greedy fill over each row's own support, in each row's own value order.

    Returns ``(fill, w_min)``, each `[2, ...]`: ``Σ_j pour_j w_j`` and ``min_j w_j`` over the
    support. Entry ``j`` receives ``clip(slack − Σ_{i before j} cap_i, 0, cap_j)`` where
    "before" is the row's value order (ties by slot), the same as pouring in sorted order.
    """
    inside = row_support(rows)
    w = values[:, successors(rows)]  # [2, ..., K]
    caps = jnp.broadcast_to(jnp.where(inside, box_caps(box), 0), w.shape)
    w_min = jnp.min(jnp.where(inside, w, jnp.inf), axis=-1)
    w_min = jnp.where(jnp.isfinite(w_min), w_min, 0)  # masked rows: unused
    K = w.shape[-1]
    if K > PAIRWISE_MAX_SUCCESSORS:
        order = jnp.argsort(jnp.where(inside, w, jnp.inf), axis=-1)
        w_sorted = jnp.take_along_axis(jnp.where(inside, w, 0), order, -1)
        pour = pour_sorted(slack, jnp.take_along_axis(caps, order, -1))
        return jnp.sum(pour * w_sorted, axis=-1), w_min
    if K <= UNROLLED_MAX_SUCCESSORS:
        return _fill_unrolled(w, caps, inside, slack), w_min
    before = _comes_before(w)  # [2, ..., K(i), K(j)]
    mass_before = jnp.sum(jnp.where(before, caps[..., :, None], 0), axis=-2)  # [2, ..., K]
    slack = jnp.broadcast_to(slack, caps.shape[:-1])[..., None]
    pour = jnp.clip(slack - mass_before, 0, caps)
    return jnp.sum(pour * jnp.where(inside, w, 0), axis=-1), w_min


# Up to this many successors the pairwise fill is written out entry by entry, for the reason
# (and at the length) the expectation over successor lists is: XLA:CPU reduces a minor axis of
# 3 entries about 10 times slower than it adds [...] arrays (models._rows.SLOT_SUM_MAX).
UNROLLED_MAX_SUCCESSORS = SLOT_SUM_MAX


def _fill_unrolled(w: jax.Array, caps: jax.Array, inside: jax.Array, slack: jax.Array):
    """:func:`_fill_within_rows`'s pairwise fill over few successors, as elementwise sums of
    `[2, ...]` arrays (in slot order, as the reduction adds them)."""
    K = w.shape[-1]
    w_, c_ = [w[..., i] for i in range(K)], [caps[..., i] for i in range(K)]
    inside, slack = jnp.broadcast_to(inside, w.shape), jnp.broadcast_to(slack, w.shape[:-1])
    fill = jnp.zeros_like(w_[0])
    for j in range(K):
        mass = jnp.zeros_like(w_[0])
        for i in range(K):  # i before j: a smaller value, or the same at an earlier slot
            if i != j:
                before = (w_[i] < w_[j]) | (w_[i] == w_[j]) if i < j else w_[i] < w_[j]
                mass = mass + jnp.where(before, c_[i], 0)
        pour = jnp.clip(slack - mass, 0, c_[j])
        fill = fill + pour * jnp.where(inside[..., j], w_[j], 0)
    return fill


# Dense rows of up to this many states whose fill may reach every entry are filled without
# a sort or a gather: "entry i comes before j" in the shared value order is one [S, S]
# matrix per stage, and every row's mass before each entry is one matrix product.
SHARED_PAIRWISE_MAX = 64


def _fill_shared_pairwise(rows: Rows, box, values, slack, support_aware):
    """The greedy fill of dense rows over all ``S`` entries in the shared value order.

    Returns ``(fill, w_min)`` like :func:`_fill_within_rows`: entry ``j`` receives
    ``clip(slack − Σ_{i before j} cap_i, 0, cap_j)``, "before" being the value order with
    ties broken by index (the order ``lax.top_k`` gives).
    """
    S = values.shape[-1]
    caps = box_caps(box)  # [..., S] (0 outside the support when support-aware)
    before = _comes_before(values)  # [2, S(i), S(j)], shared by all rows
    mass_before = jnp.einsum(
        "...i,kij->k...j", caps, before.astype(caps.dtype), precision=Precision.HIGHEST
    )
    slack = jnp.broadcast_to(slack, mass_before.shape[:-1])[..., None]
    pour = jnp.clip(slack - mass_before, 0, jnp.broadcast_to(caps, mass_before.shape))
    v_rows = values.reshape((2,) + (1,) * (caps.ndim - 1) + (S,))
    fill = jnp.sum(pour * v_rows, axis=-1)
    if support_aware:
        w_min = jnp.min(jnp.where(row_support(rows), v_rows, jnp.inf), axis=-1)
        w_min = jnp.where(jnp.isfinite(w_min), w_min, 0)  # rows without support: unused
    else:
        w_min = jnp.broadcast_to(
            jnp.min(values, axis=-1).reshape((2,) + (1,) * (caps.ndim - 1)), fill.shape
        )
    return fill, w_min


def _fill_in_window(rows: Rows, box, values, slack, width: int, support_aware: bool):
    """The greedy fill over the ``width`` smallest entries of each value vector.

    One order shared by all rows: each value vector is ranked once (``lax.top_k``) and only
    its first ``width`` entries are gathered from the rows. Returns ``(fill, w_min,
    complete)``, each `[2, ...]`: ``complete`` says the row's fill (and, support-aware, its
    smallest value over the support) lies within the window, so that the result equals the
    fill over all entries (a row with no support never does).
    """
    neg, order = jax.lax.top_k(-values, width)  # [2, m]: the smallest values, ascending
    w_sorted = -neg
    S = values.shape[-1]
    # One array placed in the window where the caps are at hand (Beta boxes carry them;
    # successor lists subtract over their K entries: 1.1x faster at 300², the same bits);
    # the paper's box on dense rows places both bounds rather than subtract over all S.
    if box.caps is not None or rows.next_states is not None:
        caps = _in_global_order(rows, box_caps(box), order, box.outside, S)  # [2, ..., m]
    else:
        lower = _in_global_order(rows, box.lower, order, 0, S)
        caps = _in_global_order(rows, box.upper, order, box.outside, S) - lower
    before = running_sum(caps) - caps
    slack = jnp.broadcast_to(slack, caps.shape[:-1])
    pour = jnp.clip(slack[..., None] - before, 0, caps)
    fill = jnp.einsum("k...m,km->k...", pour, w_sorted, precision=Precision.HIGHEST)
    # The last entry of the window receives nothing: the slack is poured before it.
    complete = before[..., -1] >= slack
    w_rows = w_sorted.reshape((2,) + (1,) * (caps.ndim - 2) + (width,))
    if not support_aware:
        w_min = jnp.broadcast_to(w_rows[..., 0], fill.shape)
        return fill, w_min, complete
    # Dense rows: their public support (the box is 0 outside it).
    inside = row_support(rows)
    if width < S:
        inside = _in_global_order(rows, inside, order, False, S)
        w_min = jnp.min(jnp.where(inside, w_rows, jnp.inf), axis=-1)
        complete = complete & jnp.isfinite(w_min)  # its smallest supported value, too
    else:
        v_rows = values.reshape((2,) + (1,) * (rows.probs.ndim - 1) + values.shape[-1:])
        w_min = jnp.min(jnp.where(inside[None], v_rows, jnp.inf), axis=-1)
    w_min = jnp.where(jnp.isfinite(w_min), w_min, 0)  # rows without support: unused
    return fill, w_min, complete


def _fill_shared(rows: Rows, box, values, slack, width: int, support_aware: bool):
    """``(fill, w_min, complete)`` in the order shared by all rows, over ``width`` entries."""
    S = values.shape[-1]
    if rows.next_states is None and width >= S <= SHARED_PAIRWISE_MAX:
        fill, w_min = _fill_shared_pairwise(rows, box, values, slack, support_aware)
        return fill, w_min, jnp.ones(fill.shape, bool)
    return _fill_in_window(rows, box, values, slack, min(width, S), support_aware)


def checked_backup(
    rows: Rows,
    box,
    v_low: jax.Array,
    v_high: jax.Array,
    *,
    width: int,
    support_aware: bool = False,
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """:func:`robust_backup` over ``width`` entries, and whether they were every fill's reach.

    Returns:
      ``(low, high, complete)``, each `[...]`: ``complete`` is True for a row whose fills
      (and smallest supported value) lay within the ``width`` entries, so that its result is
      the one over all entries; always for support-aware successor lists (no width), never
      for a support-aware dense row with no support (a masked row, say).
    """
    if isinstance(rows, RaggedRows):  # block by block
        kw = dict(width=width, support_aware=support_aware)
        return blockwise(checked_backup, rows, box, v_low, v_high, **kw)
    values = jnp.stack([v_low, -v_high])  # [2, S]: a max is a min of −v.
    table = jnp.stack([v_low, -v_high, jnp.ones_like(v_low)], axis=-1)  # [S, 3]
    if rows.next_states is None:
        dense = jnp.matmul(box.lower, table, precision=Precision.HIGHEST)
    else:
        dense = jnp.einsum(
            "...k,...kc->...c", box.lower, table[successors(rows)], precision=Precision.HIGHEST
        )
    slack = jnp.maximum(1 - dense[..., 2], 0)
    if support_aware and rows.next_states is not None:
        fill, w_min = _fill_within_rows(rows, box, values, slack)
        complete = jnp.ones(slack.shape, bool)
    else:
        fill, w_min, complete = _fill_shared(rows, box, values, slack, width, support_aware)
        complete = jnp.all(complete, axis=0)
    inner = jnp.moveaxis(dense[..., :2], -1, 0) + fill
    beta = box.mixture
    out = beta * w_min + (1 - beta) * inner
    return out[0], -out[1], complete


def robust_backup(
    rows: Rows,
    box,
    v_low: jax.Array,
    v_high: jax.Array,
    *,
    width: int | CheckedWidth,
    support_aware: bool = False,
) -> tuple[jax.Array, jax.Array]:
    """Pessimistic ``min p·v_low`` and optimistic ``max p·v_high`` over every row's set.

    The set of a row is ``{β' P1 + (1 − β') P2 : P1, P2 ∈ Δ, l ≤ P2 ≤ u}`` with the
    per-entry bounds and weight of ``box`` (a :class:`jaxprivmdp.sets._boxes.RowBox`; any member of
    the set axis), so the optimum is ``β' min_j v_j + (1 − β')·`` the greedy fill from ``l``.

    Over the whole simplex (``support_aware=False``) and for dense support-aware rows the
    order of the values is shared by all rows, so each value vector is ranked once per stage
    and only its first ``width`` entries in that order are selected (``lax.top_k``) and
    gathered from the rows: exact when ``width`` covers every entry a fill can reach (an
    ``int`` from :func:`jaxprivmdp.planning._width.bounds_width`), or checked here (a
    :class:`CheckedWidth`: the stage is recomputed over all ``S`` entries when a fill did not
    complete; the bounds check once per recursion instead, with :func:`checked_backup`). The
    dense part, ``Σ_j l_j v_j`` for both value vectors and the mass ``Σ_j l_j``, is one
    product with a `[S, 3]` matrix (dense rows) or a gather of it (successor lists).
    Support-aware successor lists are ranked row by row over their ``K`` entries (``width``
    unused).

    Args:
      rows: privatized rows ``p̄`` `[..., S]` or successor lists `[..., K]`.
      box: the rows' bounds ``lower``/``upper`` (same layout), ``outside`` and ``mixture``.
      v_low: `[S]` the pessimistic values of the next stage.
      v_high: `[S]` the optimistic values of the next stage.
      width: static: how many entries in value order the fill may reach, proven (``int``)
        or checked (:class:`CheckedWidth`).
      support_aware: restrict the set to each row's support.

    Returns:
      Two arrays `[...]`: the min for ``v_low`` and the max for ``v_high``.
    """
    if isinstance(rows, RaggedRows):  # block by block (each checks its own fills)
        kw = dict(width=width, support_aware=support_aware)
        return blockwise(robust_backup, rows, box, v_low, v_high, **kw)
    S = v_low.shape[-1]
    args = (rows, box, v_low, v_high)
    if not isinstance(width, CheckedWidth):
        return checked_backup(*args, width=width, support_aware=support_aware)[:2]
    low, high, complete = checked_backup(*args, width=width.entries, support_aware=support_aware)
    if width.entries >= S:
        return low, high
    if support_aware:  # rows with no support (masked ones) are the same over all entries
        complete = complete | ~jnp.any(row_support(rows), axis=-1)
    return jax.lax.cond(
        jnp.all(complete),
        lambda: (low, high),
        lambda: checked_backup(*args, width=S, support_aware=support_aware)[:2],
    )
