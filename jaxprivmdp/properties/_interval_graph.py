"""The graph analysis of an interval model, on the host: which states a property decides.

Two players choose in turn at every step: the *policy* an action, then *nature* a
distribution in the row's box. Which entries nature can make positive, or must, depends on
the whole row, not on one entry: in ``{l <= x <= u, Σ x = 1}`` the mass ``x(X)`` on a set
``X`` of entries ranges over ``[max(Σ_X l, 1 − Σ_{¬X} u), min(Σ_X u, 1 − Σ_{¬X} l)]``. So the
qualitative questions are asked of these per-row sums (a plain graph of "entries with
``u > 0``" would let nature drop an entry it cannot drop, or keep one it cannot keep):

- :func:`positive`: the states from which the *reaching* side can make the target's
  probability positive against the *avoiding* side (an attractor; its complement has
  probability 0: PRISM's Prob0 generalized to the two players);
- :func:`almost_sure`: those from which it can make it 1 (the nested fixpoint of
  almost-sure reachability in turn-based stochastic games, de Alfaro & Henzinger 2000;
  PRISM's Prob1);
- :func:`staying_components`: sets of states the players can keep the play in forever,
  where an upper bound iterated from above may never come down
  (:mod:`._interval_iteration` deflates them);
- :func:`moving`, :func:`floor_slack`: which rows' backups and tests need an absolute slack
  below ``tiny``, and how much.

Each side quantifies: ``True`` = it helps ("there is"), ``False`` = it opposes ("for
every"). A row's bounds are read as the distributions they stand for: ``l / max(1, Σ l)``
and ``u / min(1, Σ u)`` (a point row ``l = u`` summing to ``1 ± 1e-7`` is its normalized
self). Whether a mass can be or must be positive is decided exactly where it is a sum of
bounds (``Σ_X l > 0``: non-negative terms), and a difference ``1 − Σ`` counts as positive
above :data:`TOL_ULPS` ulps per entry of the row, the rounding of the float sums, so that
bounds meant to sum to exactly 1 never make an entry look reachable or avoidable (a genuine
mass of less than about 1e-15 there is read as 0).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from ..models.core import RaggedRows, map_blocks
from ._precision import underflow

# A difference ``1 − Σ`` of a row's bounds counts as positive above this many ulps per entry
# of the row (plus 2): the rounding of the float sums, for bounds meant to sum to exactly 1.
# A sum of bounds alone (``Σ_X l > 0``) is decided exactly: non-negative terms.
TOL_ULPS = 4


class Edges(NamedTuple):
    """An interval model's allowed rows as an edge list, float64 on the host.

    Attributes:
      row: `[E]` the row ``s · A + a`` of each entry; target: `[E]` its successor.
      lo, up: `[E]` the normalized bounds; num_rows: ``S · A``; num_states: ``S``.
      allowed: `[S, A]` bool; sum_lo, sum_up: `[S · A]` the rows' sums of bounds;
      by_target: ``(order, ptr)``, the entries sorted by successor and where each
        successor's run starts (a CSR of the reversed graph); tau: `[S · A]` the least
        positive ``1 − Σ`` per row (:data:`TOL_ULPS`).
    """

    row: np.ndarray
    target: np.ndarray
    lo: np.ndarray
    up: np.ndarray
    allowed: np.ndarray
    sum_lo: np.ndarray
    sum_up: np.ndarray
    by_target: tuple | None = None
    tau: np.ndarray | None = None

    @property
    def num_states(self) -> int:
        return self.allowed.shape[0]

    def sums(self, weights: np.ndarray) -> np.ndarray:
        """`[S · A]` per-row sums of per-entry ``weights`` `[E]`."""
        return np.bincount(self.row, weights=weights, minlength=self.allowed.size)

    def inside(self, into: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """`[S · A]` ``(Σ_X l, Σ_X u)`` per row over the entries ``into`` `[E]` bool (for a
        set of states ``X`` `[S]`: ``X[e.target]``; never guessed from the shape, which is
        the same for both where a model has one entry per state)."""
        if into.shape != self.row.shape:
            raise ValueError(f"inside takes a mask per entry [{self.row.size}], got {into.shape}")
        return self.sums(np.where(into, self.lo, 0)), self.sums(np.where(into, self.up, 0))

    def can_hit(self, rows, lo_in, up_in, lo_rest=None):
        """Whether some distribution of the row puts mass on ``X`` (``Σ_X l``, ``Σ_X u`` given):
        ``min(Σ_X u, 1 − Σ_{rest} l) > 0``, ``rest`` all other entries unless ``lo_rest``."""
        rest = self.sum_lo[rows] - lo_in if lo_rest is None else lo_rest
        return (up_in > 0) & (1 - rest > self.tau[rows])

    def must_hit(self, rows, lo_in, up_in):
        """Whether every distribution of the row puts mass on ``X``: ``max(Σ_X l, 1 − Σ_¬X u)
        > 0``."""
        return (lo_in > 0) | (1 - (self.sum_up[rows] - up_in) > self.tau[rows])


def normalized_bounds(lower: np.ndarray, upper: np.ndarray):
    """The bounds read as distributions: ``l / max(1, Σ l)``, ``u / min(1, Σ u)`` per row."""
    sum_l = lower.sum(axis=-1, keepdims=True)
    sum_u = upper.sum(axis=-1, keepdims=True)
    lo = lower / np.maximum(sum_l, 1)
    up = upper / np.where(sum_u > 0, np.minimum(sum_u, 1), 1)
    return lo, np.maximum(up, lo)


def _listed(lower, upper, targets, rows, allowed):
    """``(row, target, lo, up)`` of the entries with ``u > 0`` of the allowed rows."""
    keep = (upper > 0) & allowed[..., None] & (targets >= 0)
    rows = np.broadcast_to(rows[..., None], keep.shape)
    index = _index_dtype(keep.size)
    return rows[keep].astype(index), targets[keep].astype(index), lower[keep], upper[keep]


def _index_dtype(n: int):
    """int32 for indices below 2³¹ (half the memory of the edge lists: 10⁶ states' are
    100 MB less), else int64."""
    return np.int32 if n < 2**31 - 1 else np.int64


def edges(lower, upper, next_states, action_mask) -> Edges:
    """The entries with ``u > 0`` of the allowed rows (bounds already normalized): dense
    `[S, A, S]` bounds, `[S, A, K]` over ``next_states``, or a ragged model's blocks
    (``next_states`` a :class:`~jaxprivmdp.models.core.RaggedRows`, the bounds per block)."""
    S, A = action_mask.shape
    if isinstance(next_states, RaggedRows):
        flat = np.asarray(action_mask).reshape(-1)
        blocks = zip(lower, upper, next_states.blocks, next_states.ids, strict=True)
        parts = [
            _listed(lo, up, np.asarray(ns), np.asarray(ids, np.int64), flat[np.asarray(ids)])
            for lo, up, ns, ids in blocks
        ]
        row, target, lo, up = (np.concatenate(x) for x in zip(*parts, strict=True))
        order = np.argsort(row, kind="stable")  # by row, as the padded layout's
        listed = row[order], target[order], lo[order], up[order]
    else:
        targets = next_states
        if next_states is None:
            targets = np.broadcast_to(np.arange(S), lower.shape)
        rows = np.arange(S * A).reshape(S, A)
        listed = _listed(lower, upper, targets, rows, action_mask)
    e = Edges(*listed, action_mask, np.zeros(0), np.zeros(0))
    order = np.argsort(e.target, kind="stable").astype(_index_dtype(max(e.row.size, S * A)))
    ptr = np.searchsorted(e.target[order], np.arange(S + 1))
    n = np.bincount(e.row, minlength=S * A)
    tau = TOL_ULPS * (n + 2) * float(np.finfo(np.float64).eps)
    return e._replace(sum_lo=e.sums(e.lo), sum_up=e.sums(e.up), by_target=(order, ptr), tau=tau)


def _into(e: Edges, states: np.ndarray) -> np.ndarray:
    """The indices of the entries whose successor is one of ``states`` (a CSR by target)."""
    order, ptr = e.by_target
    starts, lens = ptr[states], ptr[states + 1] - ptr[states]
    offsets = np.repeat(starts - np.cumsum(lens) + lens, lens)
    return order[offsets + np.arange(lens.sum())]


def _distinct(ids: np.ndarray, scratch: np.ndarray) -> np.ndarray:
    """``ids`` without repeats, in ``O(len(ids))`` (``np.unique`` sorts: most of a round's
    time on 10⁶ states); ``scratch`` an int array over the ids' range, any contents."""
    place = np.arange(ids.size)
    scratch[ids] = place
    return ids[scratch[ids] == place]


def _attractor(e: Edges, start, allowed, rows_ok, hit, policy_helps):
    """``(X, rank)``: ``start`` grown by the ``allowed`` states where some (``policy_helps``)
    or every allowed action's row is ``rows_ok`` and ``hit(rows, lo_in, up_in)`` (the sums of
    the row's bounds over ``X``), as a worklist: each round touches only the entries into the
    states it added (a fixpoint over all entries per round costs the depth times the edges)."""
    S, A = e.allowed.shape
    X = start.copy()
    rank = np.where(start, 0, -1)
    lo_in = e.sums(np.where(X[e.target], e.lo, 0))
    up_in = e.sums(np.where(X[e.target], e.up, 0))
    every = np.arange(S * A)
    good = rows_ok & e.allowed.reshape(-1) & hit(every, lo_in, up_in)
    n_good = np.bincount(every // A, weights=good, minlength=S)
    n_allowed = e.allowed.sum(axis=1)
    states_ok = (n_good > 0) if policy_helps else ((n_good == n_allowed) & (n_allowed > 0))
    new = np.flatnonzero(states_ok & allowed & ~X)
    r, scratch_rows, scratch_states = 0, np.empty(S * A, np.int64), np.empty(S, np.int64)
    while new.size:
        r += 1
        X[new] = True
        rank[new] = r
        idx = _into(e, new)
        np.add.at(lo_in, e.row[idx], e.lo[idx])
        np.add.at(up_in, e.row[idx], e.up[idx])
        rows = _distinct(e.row[idx], scratch_rows)
        rows = rows[rows_ok[rows] & ~good[rows] & e.allowed.reshape(-1)[rows]]
        rows = rows[hit(rows, lo_in[rows], up_in[rows])]
        good[rows] = True
        np.add.at(n_good, rows // A, 1)
        touched = _distinct(rows // A, scratch_states)
        ok = (n_good[touched] > 0) if policy_helps else (n_good[touched] == n_allowed[touched])
        new = touched[ok & allowed[touched] & ~X[touched]]
    return X, rank


def positive(e: Edges, target, allowed, policy_helps, nature_helps):
    """`(X, rank)`: the states (``target`` or ``allowed``) from which the target is reached
    with positive probability whatever the opposing side does; ``rank`` `[S]` the round a
    state joined (0 for the target, -1 outside)."""

    def hit(rows, lo_in, up_in):
        return (e.can_hit if nature_helps else e.must_hit)(rows, lo_in, up_in)

    ok = np.ones(e.allowed.size, bool)
    return _attractor(e, target, allowed, ok, hit, policy_helps)


def almost_sure(e: Edges, target, allowed, policy_helps, nature_helps):
    """`[S]` the states from which the target is reached with probability 1 whatever the
    opposing side does (through ``allowed`` states): ``νY. μZ. target ∪ CPre(Y, Z)``, the
    rows of ``CPre`` those that stay in ``Y`` (some distribution, or every one, as nature
    helps or not) and put mass on ``Z`` (the most mass within ``Y``, or the least)."""
    Y = target | allowed
    every = np.arange(e.allowed.size)
    while True:
        lo_out, up_out = e.inside(~Y[e.target])
        if nature_helps:  # some distribution within Y: no mass must go out
            stays = ~e.must_hit(every, lo_out, up_out)
        else:  # every distribution within Y: no mass can go out
            stays = ~e.can_hit(every, lo_out, up_out)
        lo_y = e.inside(Y[e.target])[0]

        def hit(rows, lo_in, up_in, lo_y=lo_y):
            if nature_helps:  # within Y: min(Σ_Z u, 1 − Σ_{Y∖Z} l)
                return e.can_hit(rows, lo_in, up_in, lo_rest=lo_y[rows] - lo_in)
            return e.must_hit(rows, lo_in, up_in)

        Z, _ = _attractor(e, target, allowed & Y, stays, hit, policy_helps)
        if np.array_equal(Z, Y):
            return Z
        Y = Z


def staying_components(e: Edges, states: np.ndarray) -> list[np.ndarray]:
    """The end components among ``states``: maximal sets ``C``, strongly connected through
    entries nature can make positive, in which every state has an action whose row nature
    can keep inside ``C`` (the end components of a point model, nature's choice a second
    action; the usual refinement: strongly connected components, drop the rows that cannot
    stay in their own, repeat). Lists of states, each of two or more states or of one state
    whose row can stay on itself."""
    S = e.num_states
    src = e.row // e.allowed.shape[1]
    C, rows_ok = states.copy(), e.allowed.reshape(-1).copy()
    while True:
        use = rows_ok[e.row] & C[src] & C[e.target]
        graph = sp.csr_matrix((np.ones(use.sum()), (src[use], e.target[use])), shape=(S, S))
        labels = np.where(C, connected_components(graph, connection="strong")[1], -1)
        own = (labels[src] == labels[e.target]) & C[src]
        lo_out, up_out = e.inside(~own)  # some distribution stays in its own component
        ok = rows_ok & ~e.must_hit(np.arange(e.allowed.size), lo_out, up_out)
        keep = C & np.any(ok.reshape(e.allowed.shape), axis=1)
        if np.array_equal(keep, C) and np.array_equal(ok, rows_ok):
            break
        C, rows_ok = keep, ok
    return [np.flatnonzero(labels == c) for c in np.unique(labels[C])]


def reward_reachers(e: Edges, positive_rows, policy_helps, nature_helps):
    """``(X, rank)``: the states from which the cost's maximizing side(s) (``True`` = helps)
    make a positive-reward row happen with positive probability, whatever the other side
    does; outside ``X`` the total is 0 (the minimizing side keeps every positive row away
    with probability 1). ``rank`` `[S]`: the round a state joined (1 for a state whose own
    row pays), -1 outside."""
    hits = e.can_hit if nature_helps else e.must_hit

    def hit(rows, lo_in, up_in):
        return positive_rows[rows] | hits(rows, lo_in, up_in)

    S = e.num_states
    ok = np.ones(e.allowed.size, bool)
    return _attractor(e, np.zeros(S, bool), np.ones(S, bool), ok, hit, policy_helps)


def recurring_reward(e: Edges, positive_rows, policy_helps, nature_helps):
    """`[S]` the states with an infinite expected total: those from which the cost's
    maximizing side(s) make positive-reward rows recur forever, or reach a state already
    found infinite, with positive probability whatever the other side does.

    ``I`` grows from nothing: ``W = νY. μZ. I ∪ CPre_Y(positive rows ∪ Z) ∪ Hit(I)``, the
    set in which they can, from every state, with positive probability take a positive row
    within ``|Y|`` steps, every row they use either staying in ``Y`` (some distribution, or
    every one, as nature helps or not) or reaching ``I`` with positive probability (then
    ``I ← the positive attractor of W``, until it stops growing). Their strategy: the
    attractor's rows in ``W``. A play that uses a row reaching ``I`` at some point does so
    with positive probability, and ``I``'s expected total is infinite; a play that never
    does stays in ``W`` and takes positive rows infinitely often with probability 1, a total
    of ``inf``."""
    S = e.num_states
    every = np.arange(e.allowed.size)
    infinite = np.zeros(S, bool)
    while True:
        lo_i, up_i = e.inside(infinite[e.target])
        reach_i = (e.can_hit if nature_helps else e.must_hit)(every, lo_i, up_i)
        Y = np.ones(S, bool)
        while True:
            Z = _keeps_paying(e, Y, infinite, positive_rows | reach_i, reach_i, policy_helps,
                              nature_helps)  # fmt: skip
            if np.array_equal(Z, Y):
                break
            Y = Z
        grown = positive(e, Y, np.ones(S, bool), policy_helps, nature_helps)[0]
        if np.array_equal(grown, infinite):
            return infinite
        infinite = grown


def _keeps_paying(e: Edges, Y, start, paying, escapes, policy_helps, nature_helps):
    """One ``μZ`` of :func:`recurring_reward` within ``Y``: rows that are ``escapes`` (reach
    the infinite states), or stay in ``Y`` and are ``paying`` or put mass on ``Z``."""
    every = np.arange(e.allowed.size)
    lo_out, up_out = e.inside(~Y[e.target])
    if nature_helps:  # some distribution within Y
        stays = ~e.must_hit(every, lo_out, up_out)
    else:  # every distribution within Y
        stays = ~e.can_hit(every, lo_out, up_out)
    lo_y = e.inside(Y[e.target])[0]

    def hit(rows, lo_in, up_in):
        if nature_helps:  # within Y: min(Σ_Z u, 1 − Σ_{Y∖Z} l)
            z = e.can_hit(rows, lo_in, up_in, lo_rest=lo_y[rows] - lo_in)
        else:
            z = e.must_hit(rows, lo_in, up_in)
        return escapes[rows] | (stays[rows] & (paying[rows] | z))

    ok = np.ones(e.allowed.size, bool)
    return _attractor(e, start & Y, Y, ok, hit, policy_helps)[0]


# The rows' absolute slack below ``tiny`` (:mod:`._interval_iteration`'s widening and tests).


def floor_slack(n: int, dtype) -> float:
    """The absolute slack a widened or verified row of ``n`` entries adds beyond
    :func:`._interval_iteration.widening` (where it computes anything nonzero), so that its
    bound holds for values below ``finfo(dtype).tiny``, where rounding is absolute
    (:func:`._precision.underflow`).

    Twice :func:`underflow` ``(n, dtype)``: one for the ``2 n + 4`` operations of the plain
    backup (the products, their sum, the reward, the widening), one for what the fill and the
    tests add: the differences ``v − v(s)`` of a verification (``n``), the terms of the
    error bound and the test's own sums (a few), each of which may lose a result below
    ``tiny`` whole (XLA flushes it to 0). The fill's masses (the running sums, the slack
    ``1 − Σ l``, its clip) are at most 1 and lose at most ``tiny`` per operation: a mass
    error far inside the 1 % margin of the absolute term of that widening (``tiny`` is
    below ``eps · 1e-290``), which scales with the row's largest value; where that product
    is itself below ``tiny`` (and flushed), it is one more operation covered here."""
    return 2 * underflow(n, dtype)


def moving(p, values) -> jax.Array:
    """`[S, A]` bool, for the checker's ``Problem`` ``p``: the rows with a nonzero reward or
    an entry nature may use (``u > 0``) on a value other than their own state's, the rows
    whose tested ``r + opt Σ x (v − v(s))`` is not exactly 0 (the others' products and sums
    are all exact zeros, and their test needs no slack: a set the play may stay in verifies
    at any level)."""
    own, ns = values[:, None, None], p.next_states
    if ns is None:
        rows = jnp.any((p.upper > 0) & (values[None, None, :] != own), axis=-1)
    elif isinstance(ns, RaggedRows):
        A = ns.shape[1]

        def block(succ, up, ids):
            v = values[jnp.maximum(succ, 0)]
            return jnp.any((up > 0) & (v != values[ids // A][:, None]), axis=-1)

        rows = map_blocks(block, ns, p.upper, ns.ids, fill=False)
    else:
        rows = jnp.any((p.upper > 0) & (values[jnp.maximum(ns, 0)] != own), axis=-1)
    return rows | (p.rewards != 0)
