"""Ragged successor lists: a sparse MDP whose rows are bucketed by their number of successors.

A :class:`SparseMDP` pads every row to the longest one, `[S, A, K]`: one state with 4,096
successors among 12,400 states with about one each (Storm's ``leader4_8``) makes 50.8 M
slots for 16,495 transitions. A :class:`RaggedMDP` keeps the rows in *buckets*: the rows
with at most ``K_b`` successors, ``K_b`` a power of two, form one padded block `[n_b, K_b]`
with their flat row ids ``s·A + a``. Each row sits in the smallest bucket that holds it, so
the padded slots are fewer than twice the transitions, and there are at most
``log2(K) + 1`` blocks (13 for 4,096): few static shapes, each compiled once. Rows with no
successor (masked actions) are in no bucket.

Every row operation runs per block with the per-row code of the padded layout (a block is a
:class:`~jaxprivmdp.models._rows.Rows` of shape `[n_b, K_b]`), in a static Python loop, and
its `[n_b]` results are scattered into `[S, A]` (:func:`map_blocks`): memory and time
O(transitions + S·A) whatever the degree distribution. Buckets rather than CSR with segment
reductions: the per-row code (expectations, the robust kernel's sorts, the samplers'
normalization and simplex projections) is reused unchanged, where CSR would need a segmented
version of each (segmented sorts in particular).

Built by :func:`make_ragged_mdp` from a list of transitions, by :func:`to_ragged` from a
:class:`SparseMDP`, and chosen by the PRISM/Storm loaders when padding would exceed twice
the transitions plus rows (:func:`is_skewed`; ``load_mdp(..., layout=)`` chooses);
``make_sparse_mdp`` and every regular model are unchanged. :func:`to_padded` converts back.

Supported: ``solve``, ``evaluate`` (a deterministic rule weights all rows one-hot: the same
values), ``check``, ``privatize`` (every mechanism; each bucket drawn with the key folded
with its index: the padded layout's distribution, not its draws), ``synthesize`` (its
``private_transitions`` is then a tuple, one `[n_b, K_b]` per bucket), ``sweep``,
``cost_of_privacy`` and ``robust_solve`` (every set, support-aware or not),
``property_model``, ``save_mdp`` / ``load_mdp``, ``dirichlet_mechanism(key, model,
Dirichlet(k))`` (``privatize``'s release), and the privacy accounting (``privacy.mdp_guarantee``,
``frontier``, the CLI's ``privacy`` and ``privatize``: bucket by bucket, the padded layout's
numbers bit for bit, ``privacy._private_rows``). ``smoothing`` is refused (it needs all
``S`` entries of every row, as for a :class:`SparseMDP`). Any code that reads a ragged
model's rows as one `[S, A, K]` array gets a ValueError saying to use :func:`to_padded`
(:func:`unsupported`; :class:`RaggedRows` refuses ``probs``).
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from .._checks import ROW_SUM_TOLERANCE, as_numpy, float_array, refuse_subnormal, working_dtype
from ._dense import (
    MODEL_DATA_FIELDS,
    MODEL_META_FIELDS,
    Bucketed,
    ModelFields,
    check_mask,
    validate_model_fields,
)
from ._sparse import PADDING, SparseMDP

LAYOUTS = ("auto", "padded", "ragged")


class Bucket(NamedTuple):
    """One block of rows with at most ``K_b`` successors each.

    Attributes:
      rows: `[n_b]` int32 flat row ids ``s·A + a``, increasing.
      next_states: `[n_b, K_b]` int32 successors, ``-1`` for padding (at the end of a row).
      probs: `[n_b, K_b]` their probabilities (0 on padding).
    """

    rows: jax.Array
    next_states: jax.Array
    probs: jax.Array


@dataclasses.dataclass(frozen=True, kw_only=True)
class RaggedMDP(Bucketed, ModelFields):
    """A finite MDP with ragged successor lists, as an immutable pytree (:func:`make_ragged_mdp`).

    Attributes:
      buckets: the blocks of rows, by increasing ``K_b`` (see :class:`Bucket`).
      rewards, terminal_reward, discount, action_mask, horizon, initial_state: see
        :class:`ModelFields`.
    """

    buckets: tuple[Bucket, ...]


jax.tree_util.register_dataclass(
    RaggedMDP, data_fields=["buckets", *MODEL_DATA_FIELDS], meta_fields=MODEL_META_FIELDS
)


@dataclasses.dataclass(frozen=True)
class RaggedRows:
    """The rows of a :class:`RaggedMDP` (or a privatized copy): blocks of padded rows.

    Attributes:
      blocks: one :class:`~jaxprivmdp.models._rows.Rows` `[n_b, K_b]` per bucket.
      ids: `[n_b]` flat row ids ``s·A + a`` of each block.
      shape: static ``(S, A)``.
    """

    blocks: tuple
    ids: tuple
    shape: tuple[int, int]

    # Code written for `[S, A, ·]` rows reaches these and gets a clear error, not a wrong answer.
    @property
    def probs(self):
        raise unsupported(
            "this function (the uncertainty sets: robust_solve, cost_of_privacy, bounds; or "
            "other code that reads the rows as one [S, A, K] array)"
        )

    next_states = support = probs


jax.tree_util.register_dataclass(RaggedRows, data_fields=["blocks", "ids"], meta_fields=["shape"])


def map_blocks(fn, rows: RaggedRows, *per_block, fill=0) -> jax.Array:
    """`[S, A, ...]`: ``fn(block, *args)`` (`[n_b, ...]`) of every block, scattered into place.

    ``per_block``: sequences with one entry per block (a box's blocks, say). Rows in no
    block (no successor) get ``fill``.
    """
    S, A = rows.shape
    out = None
    for i, (block, ids) in enumerate(zip(rows.blocks, rows.ids, strict=True)):
        part = fn(block, *(x[i] for x in per_block))
        if out is None:
            out = jnp.full((S * A,) + part.shape[1:], fill, part.dtype)
        out = out.at[ids].set(part, indices_are_sorted=True, unique_indices=True)
    if out is None:
        raise ValueError("a RaggedMDP without rows")
    return out.reshape((S, A) + out.shape[1:])


def blockwise(fn, rows: RaggedRows, per_block, *args, **kwargs) -> tuple:
    """:func:`map_blocks` for an ``fn(block, extra, *args, **kwargs)`` that returns a tuple of
    `[n_b]` arrays (``extra``: ``per_block``'s entry): a tuple of `[S, A]` arrays (0 or
    False for rows in no block)."""
    S, A = rows.shape
    outs = None
    for block, ids, extra in zip(rows.blocks, rows.ids, per_block, strict=True):
        parts = fn(block, extra, *args, **kwargs)
        if outs is None:
            outs = [jnp.zeros((S * A,) + p.shape[1:], p.dtype) for p in parts]
        outs = [
            o.at[ids].set(p, indices_are_sorted=True, unique_indices=True)
            for o, p in zip(outs, parts, strict=True)
        ]
    return tuple(o.reshape((S, A) + o.shape[1:]) for o in outs)


def entry_count(mdp: RaggedMDP, support_aware: bool, whole_model: bool) -> int:
    """``sets._boxes.entry_count`` of a ragged model: each allowed row's listed successors
    (support-aware) or all ``S`` entries; the largest row, or their sum over the model."""
    rows = RaggedRows(
        tuple(b.next_states for b in mdp.buckets),
        tuple(b.rows for b in mdp.buckets),
        mdp.action_mask.shape,
    )
    S, A = mdp.num_states, mdp.num_actions
    width = mdp.max_successors if support_aware else S
    leaves = [*rows.blocks, mdp.action_mask]
    if not all(not isinstance(x, jax.core.Tracer) for x in leaves):
        return width * S * A if whole_model else width
    mask = np.asarray(mdp.action_mask)
    if support_aware:
        sizes = np.asarray(map_blocks(lambda nxt: (nxt >= 0).sum(-1), rows))
    else:
        sizes = np.full(mask.shape, S)
    sizes = np.where(mask, sizes, 0)
    return int(sizes.sum() if whole_model else max(int(sizes.max()), 1))


def with_self_loops(mdp: RaggedMDP, states: jax.Array, action_mask: jax.Array) -> RaggedMDP:
    """Every row of the ``states`` (`[S]` bool) a self-loop (in its first slot), and the
    given action mask: what ``property_model`` does to the decided states."""
    A = mdp.num_actions
    buckets = []
    for b in mdp.buckets:
        state = b.rows // A
        K = b.next_states.shape[1]
        loop = jnp.where(jnp.arange(K) == 0, state[:, None], PADDING).astype(jnp.int32)
        hit = states[state][:, None]
        probs = jnp.where(hit, (loop >= 0).astype(b.probs.dtype), b.probs)
        buckets.append(b._replace(next_states=jnp.where(hit, loop, b.next_states), probs=probs))
    return dataclasses.replace(mdp, buckets=tuple(buckets), action_mask=action_mask)


def is_skewed(num_rows: int, max_successors: int, num_transitions: int) -> bool:
    """Whether padding every row to the longest would exceed twice ``transitions + rows``."""
    return num_rows * max_successors > 2 * (num_transitions + num_rows)


def _check_lists(row_ids, next_states, probs, S: int, A: int):
    """Concrete 1-D transition lists, checked on the host: int64, int64, float64 (no copies)."""
    rid = as_numpy("row_ids", row_ids)
    nxt = as_numpy("next_states", next_states)
    for name, x in (("row_ids", rid), ("next_states", nxt)):
        if not np.issubdtype(x.dtype, np.integer) or x.ndim != 1:
            raise ValueError(f"{name} must be 1-D integers, got {x.dtype} {x.shape}")
    p = float_array("probs", probs, np.float64, copy=False)
    if not rid.shape == nxt.shape == p.shape:
        raise ValueError(
            f"row_ids, next_states and probs must have one shape, got {rid.shape}, "
            f"{nxt.shape}, {p.shape}"
        )
    for name, x, n in (("row_ids", rid, S * A), ("next_states", nxt, S)):
        if x.size and (x.min() < 0 or x.max() >= n):  # reductions first: no temporaries
            bad = np.flatnonzero((x < 0) | (x >= n))
            raise ValueError(f"{name}[{bad[0]}] = {x[bad[0]]} is outside [0, {n})")
    if p.size and p.min() < 0:
        bad = np.flatnonzero(p < 0)
        raise ValueError(f"probs[{bad[0]}] = {p[bad[0]]:.9g} is negative")
    return rid.astype(np.int64, copy=False), nxt.astype(np.int64, copy=False), p


def _check_rows(rid, nxt, p, mask: np.ndarray) -> None:
    """No successor twice in a row; every allowed row sums to 1 (nothing is renormalized)."""
    S, A = mask.shape
    key = rid * S
    key += nxt
    if not (key[1:] > key[:-1]).all():  # (lists sorted by row and successor need no sort)
        key.sort()
    twice = np.flatnonzero(key[1:] == key[:-1])
    if twice.size:
        k = int(key[twice[0]])
        s, a = divmod(k // S, A)
        raise ValueError(f"next_states row (state {s}, action {a}) lists state {k % S} twice")
    sums = np.bincount(rid, weights=p, minlength=S * A).reshape(S, A)
    off = np.argwhere((np.abs(sums - 1) > ROW_SUM_TOLERANCE) & mask)
    if off.size:
        s, a = off[0]
        raise ValueError(
            f"probs row (state {s}, action {a}) sums to {float(sums[s, a]):.9g}, not 1 "
            f"(tolerance {ROW_SUM_TOLERANCE:.1e}; {len(off)} such row(s)); rows are never "
            "renormalized"
        )


def bucket_lists(rid: np.ndarray, nxt: np.ndarray, p: np.ndarray) -> list[tuple]:
    """NumPy ``(rows, next_states, probs)`` blocks of transitions sorted by row (stable)."""
    starts = np.flatnonzero(np.concatenate([[True], rid[1:] != rid[:-1]]))
    ids = rid[starts]
    counts = np.diff(np.append(starts, rid.size))
    width = 1 << np.ceil(np.log2(counts)).astype(np.int64)
    rank = np.arange(rid.size) - np.repeat(starts, counts)
    out = []
    for K in np.unique(width):
        pick = width == K
        n = int(pick.sum())
        which = np.repeat(pick, counts)
        slot = np.repeat(np.arange(n), counts[pick]) * K + rank[which]
        idx = np.full(n * int(K), PADDING, np.int32)
        prob = np.zeros(n * int(K))
        idx[slot], prob[slot] = nxt[which], p[which]
        out.append((ids[pick].astype(np.int32), idx.reshape(n, K), prob.reshape(n, K)))
    return out


def make_ragged_mdp(
    row_ids: ArrayLike,
    next_states: ArrayLike,
    probs: ArrayLike,
    rewards: ArrayLike,
    *,
    terminal_reward: ArrayLike | None = None,
    discount: float | None = None,
    action_mask: ArrayLike | None = None,
    horizon: int | None = None,
    initial_state: int = 0,
    dtype=None,
) -> RaggedMDP:
    """Validates a list of transitions and returns a :class:`RaggedMDP` (O(transitions)).

    Args:
      row_ids: `[N]` ints, each transition's row ``s·A + a`` (any order; the order within a
        row is kept).
      next_states: `[N]` ints, its successor ``s'``.
      probs: `[N]` its probability: non-negative, each allowed row summing to 1 (within
        3.1e-5; nothing is renormalized). Entries 0 are dropped (the support is the
        positive entries, as for :func:`make_sparse_mdp`); a nonzero one must be at least
        ``np.finfo(dtype).tiny`` (XLA flushes smaller, subnormal, numbers to zero; so for
        the rewards).
      rewards: `[S, A]` rewards (they give ``S`` and ``A``).
      terminal_reward: as for :func:`make_sparse_mdp`, as are ``discount``,
        ``action_mask``, ``horizon``, ``initial_state`` and ``dtype``.

    Raises:
      ValueError: naming the offending argument, entry or row.
    """
    dtype = working_dtype(dtype)
    r = as_numpy("rewards", rewards)
    if r.ndim != 2 or min(r.shape) < 1:
        raise ValueError(f"rewards must have shape [S, A] with S, A >= 1, got {r.shape}")
    S, A = r.shape
    mask = check_mask(action_mask, S, A)
    fields = validate_model_fields(
        S, A, rewards, terminal_reward, horizon, discount, initial_state, dtype
    )
    return ragged_from_lists(row_ids, next_states, probs, mask, fields)


def ragged_from_lists(row_ids, next_states, probs, mask, fields: dict, support=None) -> RaggedMDP:
    """:func:`make_ragged_mdp` of validated ``fields`` and ``mask``; ``support``: `[N]` bool,
    the entries kept listed (a release's, whose entries may be 0; default: positive ones)."""
    S, A = mask.shape
    rid, nxt, p = _check_lists(row_ids, next_states, probs, S, A)
    refuse_subnormal("probs", p, fields["rewards"].dtype, allowed=mask.reshape(-1)[rid])
    _check_rows(rid, nxt, p, mask)
    keep = p > 0
    if support is not None:
        keep = as_numpy("support", support).astype(bool)
        if keep.shape != p.shape or np.any(~keep & (p > 0)):
            raise ValueError(f"support must be {p.shape} bool, True on every positive entry")
    if not keep.all():
        rid, nxt, p = rid[keep], nxt[keep], p[keep]
    if not (rid[1:] >= rid[:-1]).all():  # (a stable sort of sorted rows keeps them)
        order = np.argsort(rid, kind="stable")
        rid, nxt, p = rid[order], nxt[order], p[order]
    blocks = bucket_lists(rid, nxt, p)
    dtype = fields["rewards"].dtype
    put = jax.device_put  # of fresh arrays: jnp.asarray would compile a conversion per shape
    buckets = tuple(Bucket(put(i), put(n), put(q.astype(dtype, copy=False))) for i, n, q in blocks)
    return RaggedMDP(buckets=buckets, action_mask=jax.device_put(mask.copy()), **fields)


def transition_lists(mdp: SparseMDP | RaggedMDP) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """NumPy ``(row_ids, next_states, probs)`` of every listed slot, by row (slot order kept)."""
    if isinstance(mdp, SparseMDP):
        nxt = np.asarray(mdp.next_states)
        s, a, k = np.nonzero(nxt >= 0)
        return s * mdp.num_actions + a, nxt[s, a, k], np.asarray(mdp.probs)[s, a, k]
    parts = [
        (np.repeat(np.asarray(b.rows), b.next_states.shape[1]), np.asarray(b.next_states), b.probs)
        for b in mdp.buckets
    ]
    rid = np.concatenate([r for r, _, _ in parts])
    nxt = np.concatenate([n.reshape(-1) for _, n, _ in parts])
    p = np.concatenate([np.asarray(q).reshape(-1) for *_, q in parts])
    listed = nxt >= 0
    order = np.argsort(rid[listed], kind="stable")
    return rid[listed][order], nxt[listed][order], p[listed][order]


def to_ragged(mdp: SparseMDP) -> RaggedMDP:
    """The same model with its listed successors in buckets (probabilities unchanged, also
    a release's zero entries: every listed slot stays listed)."""
    if not isinstance(mdp, SparseMDP):
        raise ValueError(f"mdp must be a SparseMDP, got {type(mdp).__name__}")
    blocks = bucket_lists(*transition_lists(mdp))
    buckets = tuple(
        Bucket(jnp.asarray(i), jnp.asarray(n), jnp.asarray(q, mdp.probs.dtype))
        for i, n, q in blocks
    )
    return RaggedMDP(buckets=buckets, **mdp.shared_fields())


def to_padded(mdp: RaggedMDP, max_successors: int | None = None) -> SparseMDP:
    """The same model as a :class:`SparseMDP` `[S, A, K]` (``K`` default: the longest row)."""
    if not isinstance(mdp, RaggedMDP):
        raise ValueError(f"mdp must be a RaggedMDP, got {type(mdp).__name__}")
    rid, nxt, p = transition_lists(mdp)
    S, A = mdp.num_states, mdp.num_actions
    counts = np.bincount(rid, minlength=S * A)
    most = max(int(counts.max()), 1)
    K = most if max_successors is None else int(max_successors)
    if K < most:
        raise ValueError(f"a row has {most} successors, more than max_successors = {K}")
    starts = np.cumsum(counts) - counts
    flat = rid * K + np.arange(rid.size) - np.repeat(starts, counts)
    idx = np.full(S * A * K, PADDING, np.int32)
    probs = np.zeros(S * A * K, p.dtype)
    idx[flat], probs[flat] = nxt, p
    return SparseMDP(
        next_states=jnp.asarray(idx.reshape(S, A, K)),
        probs=jnp.asarray(probs.reshape(S, A, K)),
        **mdp.shared_fields(),
    )


def unsupported(what: str) -> ValueError:
    """The error of a feature the ragged layout lacks: what to do instead."""
    return ValueError(
        f"{what} does not support a RaggedMDP (successor lists bucketed by length) yet; "
        "convert it with jp.to_padded(mdp) (an [S, A, K] SparseMDP, K the longest row: "
        "S·A·K slots) or, for small models, jp.to_dense(jp.to_padded(mdp))"
    )
