"""The expectation of a value vector under an interval row: nature's optimum over the box.

For row ``(s, a)`` with bounds ``l <= x <= u`` on the simplex, ``max{x · v}`` (or ``min``) is a
fractional knapsack, solved exactly by the greedy fill the robust bounds use
(``jaxprivmdp.planning._inner``; PRISM's and IntervalMDP.jl's "O-maximization"): start at
``x = l``, pour the slack ``1 − Σ l`` into the entries with the largest ``v`` first (smallest
to minimize), each up to ``u``. Here for every row of a model at once, dense `[S, A, S]` (one
sort of ``v`` serves every row) or over successor lists `[S, A, K]` (a sort per row), in
JAX or NumPy (``xp``: the host runs it too, for the graph analysis's end components).
A ragged model's rows come as blocks (``next_states`` a
:class:`~jaxprivmdp.models._ragged.RaggedRows` of the buckets' successors and row ids,
``lower`` and ``upper`` tuples of `[n_b, K_b]`): each block is filled by the same per-row
code and its `[n_b]` results are scattered into `[S, A]` (0 in rows of no block).

The planning kernel (``jaxprivmdp.planning._kernel``) is the same fill specialized to the
boxes of a set around a release (capacities of at least ``min(α, 1)``, so a bounded prefix of
the order suffices) and to a mixture weight; an interval model's boxes are arbitrary, so this
one pours over whole rows. Rounding is the caller's: every product here has non-negative
factors when ``v >= 0``, and the fill's amounts are within ``2 (n + 2)`` ulps (of 1) of the
exact fill's (``n`` entries), which :func:`fill_margin` bounds.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ._ragged import RaggedRows


def _scatter(parts, blocks: RaggedRows, xp):
    """`[..., S, A]` of the per-block results `[..., n_b]` (0 in the rows of no block)."""
    S, A = blocks.shape
    lead = parts[0].shape[:-1]
    out = xp.zeros(lead + (S * A,), parts[0].dtype)
    for part, ids in zip(parts, blocks.ids, strict=True):
        if xp is np:
            out[..., ids] = part
        else:
            out = out.at[..., ids].set(part, indices_are_sorted=True, unique_indices=True)
    return out.reshape(lead + (S, A))


def _per_block(fn, lower, upper, blocks: RaggedRows, xp):
    """``fn(lower_b, upper_b, next_states_b, ids_b)`` of every block (an array or a tuple of
    arrays, `[..., n_b]`), scattered into `[..., S, A]`."""
    outs = [
        fn(lo, up, ns, ids)
        for lo, up, ns, ids in zip(lower, upper, blocks.blocks, blocks.ids, strict=True)
    ]
    if isinstance(outs[0], tuple):
        return tuple(_scatter([o[i] for o in outs], blocks, xp) for i in range(len(outs[0])))
    return _scatter(outs, blocks, xp)


# Under JAX, padded rows are filled this many states at a time (``lax.map`` in batches): the
# fill's temporaries, a dozen arrays the shape of the rows, then take a block's memory, not
# 10⁶ states' (about 1 GB more at 10⁶ states, 2 actions, 4 successors).
STATE_BLOCK = 1 << 15


def _by_states(fn, xp, *rows):
    """``fn(*rows)`` for arrays ``rows`` with the states first (`[S, ...]`), its outputs
    with the states first: in blocks of :data:`STATE_BLOCK` states under JAX."""
    if xp is not jnp or rows[0].shape[0] <= STATE_BLOCK:
        return fn(*rows)

    def one(state):
        return jax.tree_util.tree_map(lambda a: a[0], fn(*(a[None] for a in state)))

    return lax.map(one, rows, batch_size=STATE_BLOCK)


def _sorted_rows(lower, upper, next_states, values, sign, xp):
    """``(l, caps, w)`` `[B, S, A, N]` with each row's entries in nature's pouring order."""
    key = -sign * values  # ascending key: the largest sign · v first
    if next_states is None:  # dense: one order for every row
        order = xp.argsort(key, axis=-1)  # [B, S]
        l_ = xp.moveaxis(lower[:, :, order], 2, 0)  # [B, S, A, S]
        u_ = xp.moveaxis(upper[:, :, order], 2, 0)
        w = xp.take_along_axis(values, order, axis=-1)[:, None, None, :]
        w = xp.broadcast_to(w, l_.shape)
        return l_, u_ - l_, w
    idx = xp.maximum(next_states, 0)
    w = values[:, idx]  # [B, S, A, K]; padding has l = u = 0, so its place does not matter
    order = xp.argsort(-sign * w, axis=-1)
    w = xp.take_along_axis(w, order, axis=-1)
    l_ = xp.take_along_axis(xp.broadcast_to(lower, w.shape), order, axis=-1)
    u_ = xp.take_along_axis(xp.broadcast_to(upper, w.shape), order, axis=-1)
    return l_, u_ - l_, w


# Up to this many successors a row is filled by pairwise comparisons (K² per row, no sort):
# XLA:CPU sorts many short rows slowly (as in ``jaxprivmdp.planning._kernel``).
PAIRWISE_MAX_SUCCESSORS = 16


def _fill(lower, upper, next_states, values, sign, xp):
    """``(x, w, u, l)`` `[B, S, A, N]`: nature's distribution, the values it weighs and the
    bounds, aligned (in the rows' own order for short lists, in pouring order otherwise)."""
    if next_states is not None and next_states.shape[-1] <= PAIRWISE_MAX_SUCCESSORS:
        w = values[:, xp.maximum(next_states, 0)]  # [B, S, A, K]
        key = sign * w
        n = w.shape[-1]
        low = xp.broadcast_to(lower, w.shape)
        caps = xp.broadcast_to(upper, w.shape) - low
        mass_before = xp.zeros_like(caps)
        at = xp.arange(n).reshape((1,) * (w.ndim - 1) + (n,))
        for i in range(n):  # entry i is poured before j: a static loop, so that no
            k_i = key[..., i : i + 1]  # `[..., K, K]` array is formed (memory: 10⁶ states)
            before = (k_i > key) | ((k_i == key) & (i < at))
            mass_before = mass_before + xp.where(before, caps[..., i : i + 1], 0)
        slack = xp.maximum(1 - xp.sum(low, axis=-1), 0)[..., None]
        x = low + xp.clip(slack - mass_before, 0, caps)
        return x, w, xp.broadcast_to(upper, w.shape), low
    l_, caps, w = _sorted_rows(lower, upper, next_states, values, sign, xp)
    slack = xp.maximum(1 - xp.sum(l_, axis=-1), 0)[..., None]
    before = xp.cumsum(caps, axis=-1) - caps
    return l_ + xp.clip(slack - before, 0, caps), w, l_ + caps, l_


def _weighed(x, w, up, low, sign, xp):
    """``Σ x w`` per row, where an infinite value counts only if nature can give it mass
    (maximizing: ``min(Σ_inf u, 1 − Σ_fin l) > 0``) or must (minimizing: ``max(Σ_inf l, 1 −
    Σ_fin u) > 0``), decided on the bounds, not on the fill's rounded masses (a rounding's
    1e-16 on a state of infinite expected reward would make a finite value infinite); a
    difference ``1 − Σ`` counts above ``4 (n + 2)`` ulps, ``n`` the row's own entries (``u >
    0``), not its padded width: the threshold of the graph analysis
    (``properties._interval_graph``), which decides the infinite states on the same reading
    (a row read as finite here and as reaching ``inf`` there would verify a bound below the
    value)."""
    infinite = xp.isinf(w)
    lo_inf = xp.sum(xp.where(infinite, low, 0), axis=-1)
    up_inf = xp.sum(xp.where(infinite, up, 0), axis=-1)
    lo_fin = xp.sum(xp.where(infinite, 0, low), axis=-1)
    up_fin = xp.sum(xp.where(infinite, 0, up), axis=-1)
    entries = xp.sum(up > 0, axis=-1).astype(w.dtype)
    tau = 4 * (entries + 2) * float(np.finfo(w.dtype).eps)
    can = (up_inf > 0) & (1 - lo_fin > tau)
    must = (lo_inf > 0) | (1 - up_fin > tau)
    reached = xp.where(sign > 0, can, must)
    finite = xp.sum(x * xp.where(infinite | (x <= 0), 0, w), axis=-1)
    return xp.where(reached, xp.inf, finite)


def interval_expect(lower, upper, next_states, values, sign, xp=jnp, with_scale=False):
    """``sign · max_x sign · (x · v)`` over each row's box: `[B, S, A]` (and, with
    ``with_scale``, each row's largest finite ``|v|`` over the entries it can use, `[B, S,
    A]`: the scale of :func:`fill_margin`'s absolute error).

    Args:
      lower, upper: `[S, A, N]` the bounds (dense ``N = S``, or over ``next_states``), each
        row's polytope non-empty (``Σ l <= 1 <= Σ u``; a negative slack is read as 0).
      next_states: None or `[S, A, K]` successor indices (``-1`` padding), or a ragged
        model's blocks (see the module; then ``lower``, ``upper`` per block).
      values: `[B, S]` value vectors (``B`` of them, e.g. a lower and an upper bound).
      sign: ``1``: nature maximizes; ``-1``: it minimizes (a Python number or a traced
        scalar).
      xp: ``jax.numpy`` (jit-able) or ``numpy``.
    """
    if isinstance(next_states, RaggedRows):

        def block(lo, up, ns, _):
            return interval_expect(lo, up, ns, values, sign, xp, with_scale)

        return _per_block(block, lower, upper, next_states, xp)
    if next_states is None:
        return _expect(lower, upper, None, values, sign, xp, with_scale)

    def rows(lo, up, ns):  # the states first for _by_states: `[S, B, A]`
        out = _expect(lo, up, ns, values, sign, xp, with_scale)
        return jax.tree_util.tree_map(lambda a: xp.moveaxis(a, 1, 0), out)

    out = _by_states(rows, xp, lower, upper, next_states)
    return jax.tree_util.tree_map(lambda a: xp.moveaxis(a, 0, 1), out)


def _expect(lower, upper, next_states, values, sign, xp, with_scale):
    """:func:`interval_expect` of rows in one piece."""
    x, w, u, low = _fill(lower, upper, next_states, values, sign, xp)
    value = _weighed(x, w, u, low, sign, xp)
    if not with_scale:
        return value
    usable = (u > 0) & xp.isfinite(w)
    return value, xp.max(xp.where(usable, xp.abs(w), 0), axis=-1)


def interval_excess(lower, upper, next_states, values, shift, sign, xp=jnp):
    """``(E, err)`` `[S, A]`: nature's optimum of ``Σ x (v − shift_s)`` over each row's box
    (``v`` `[S]`, ``shift`` `[S]` per state), and a bound on the rounding of the computed
    ``E``. Since ``Σ x = 1`` on the box, ``r + E`` is ``B(v)(s) − shift_s``: a test of
    ``B(v) <= v`` in which an entry with ``v_t = shift_s`` (a state staying where it is)
    contributes exactly 0, however its mass is rounded."""
    if isinstance(next_states, RaggedRows):
        A = next_states.shape[1]

        def block(lo, up, ns, ids):
            return _excess(lo, up, ns, values, shift[ids // A], sign, xp)

        return _per_block(block, lower, upper, next_states, xp)
    if next_states is None:
        return _excess(lower, upper, None, values, shift[:, None], sign, xp)

    def rows(lo, up, ns, row_shift):
        return _excess(lo, up, ns, values, row_shift, sign, xp)

    return _by_states(rows, xp, lower, upper, next_states, shift[:, None])


def _excess(lower, upper, next_states, values, row_shift, sign, xp):
    """:func:`interval_excess` of rows `[..., K]`, ``row_shift`` the shift of each row."""
    x, w, u, low = (a[0] for a in _fill(lower, upper, next_states, values[None], sign, xp))
    w = w - row_shift[..., None]  # inf stays inf (a finite shift; a row of an infinite
    # state, shift inf, is a decided state's and not tested)
    excess = _weighed(x, w, u, low, sign, xp)
    terms = x * xp.where((x > 0) & xp.isfinite(w), w, 0)
    rel, absolute = fill_margin(w.shape[-1], w.dtype)
    reach = xp.where((u > 0) & xp.isfinite(w), xp.abs(w), 0)
    err = rel * xp.sum(xp.abs(terms), axis=-1) + absolute * xp.max(reach, axis=-1)
    return excess, err


def nature_choice(lower, upper, next_states, values, sign, xp=np):
    """`[S, A, N]` the distribution nature picks in each row against ``values`` `[S]`: the
    greedy fill of :func:`interval_expect`, in the rows' own entry order. A ragged model's
    blocks: a tuple, one `[n_b, K_b]` per block."""
    if isinstance(next_states, RaggedRows):
        return tuple(
            nature_choice(lo, up, ns, values, sign, xp)
            for lo, up, ns in zip(lower, upper, next_states.blocks, strict=True)
        )
    if next_states is not None and next_states.shape[-1] <= PAIRWISE_MAX_SUCCESSORS:

        def rows(lo, up, ns):  # the pairwise fill keeps the rows' order
            return _fill(lo, up, ns, values[None], sign, xp)[0][0]

        return _by_states(rows, xp, lower, upper, next_states)
    x = _fill(lower, upper, next_states, values[None], sign, xp)[0][0]
    if next_states is None:
        order = xp.broadcast_to(xp.argsort(-sign * values), x.shape)
    else:
        order = xp.argsort(-sign * values[xp.maximum(next_states, 0)], axis=-1)
    return xp.take_along_axis(x, xp.argsort(order, axis=-1), axis=-1)


def row_entries(x, next_states, rows) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """NumPy ``(i, t, w)``: the entries ``x > 0`` of the flat rows ``rows`` `[n]` (``s·A +
    a``) of :func:`nature_choice`'s ``x`` in any layout: row ``rows[i]`` puts ``w`` on state
    ``t``, by ``i``. O(entries of those rows + n log n), whatever the layout."""
    rows = np.asarray(rows, np.int64)
    if isinstance(next_states, RaggedRows):
        parts = []
        for xb, ns, ids in zip(x, next_states.blocks, next_states.ids, strict=True):
            ids = np.asarray(ids)
            at = np.minimum(np.searchsorted(ids, rows), max(ids.size - 1, 0))
            i = np.flatnonzero(ids[at] == rows)
            parts.append((i, np.asarray(xb)[at[i]], np.asarray(ns)[at[i]]))
        i = np.concatenate([np.repeat(i, xb.shape[1]) for i, xb, _ in parts])
        w = np.concatenate([xb.reshape(-1) for _, xb, _ in parts])
        t = np.concatenate([ns.reshape(-1) for *_, ns in parts])
        order = np.argsort(i, kind="stable")
        i, w, t = i[order], w[order], t[order]
    else:
        x = np.asarray(x)
        flat = x.reshape(-1, x.shape[-1])[rows]
        if next_states is None:
            targets = np.broadcast_to(np.arange(x.shape[-1]), flat.shape)
        else:
            targets = np.asarray(next_states).reshape(-1, x.shape[-1])[rows]
        i = np.repeat(np.arange(rows.size), flat.shape[1])
        w, t = flat.reshape(-1), targets.reshape(-1)
    use = (w > 0) & (t >= 0)
    return i[use], t[use].astype(np.int64), w[use]


def fill_margin(n: int, dtype) -> tuple[float, float]:
    """``(relative, absolute)``: a computed :func:`interval_expect` of ``v >= 0`` is within
    ``relative · exact + absolute · max v`` of the exact optimum over the box.

    The products and their sum: ``(n + 2) u`` relative (non-negative terms; Higham 2002,
    §3.1). The fill: each pour ``clip(slack − before, 0, cap)`` is off by at most the
    rounding of ``slack`` and of the running sum ``before`` (``(n + 1) u`` each, of
    quantities at most 1), so the mass moved between entries is at most ``2 (n + 2) u`` per
    entry and ``Σ`` over the row at most ``2 n (n + 2) u``, each unit changing the value by at
    most ``max v``. A heuristic cap for long rows (XLA sums in blocks) is not applied here:
    the bound is the worst case of sequential sums.
    """
    u = float(np.finfo(dtype).eps) / 2
    return (n + 2) * u * 1.01, 2 * n * (n + 2) * u * 1.01
