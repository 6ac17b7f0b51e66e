"""The numerical cores of checking an interval model: robust interval iteration and backward
induction, each backup the policy's optimum over actions of nature's optimum over the box
(:func:`jaxprivmdp.models.core.interval_expect`), rounded outward.

Unbounded properties (:func:`solve_unbounded`): a lower bound iterated up from the decided
states and 0, an upper bound down from 1 (probabilities) or from a verified bound (rewards).
Both stay valid bounds in floating point: every backup is widened by the fill's rounding
(:func:`jaxprivmdp.models.core.fill_margin`), and an upper bound only ever comes from

- iterating ``B`` from a *pre-fixpoint* ``U`` (``B(U) <= U``; the value, the least fixed
  point of ``B``, lies below every pre-fixpoint: Knaster-Tarski, Park induction): ``1`` for
  probabilities, or a candidate ``L (1 + κ) + κ max L`` the host verified to be one
  (optimistic value iteration, Hartmanns & Kaminski 2020);
- *deflating* a set ``C`` of states the players can keep the play in (where iterating from
  above stalls, as it does in a point model's end components): the smallest ``λ`` with
  ``B(U[C := λ]) <= λ`` on ``C``, found by bisection, is again a pre-fixpoint on ``C``
  (bounded value iteration for stochastic games, Kelmendi, Krämer, Křetínský, Weininger
  2018; the set need not be an end component for the bound to hold, only to be useful).

For expected rewards, the least fixed point is the value only when the side minimizing the
cost cannot loop forever at no cost (else the value is larger: PRISM's ``inf`` for a policy
that never arrives); where it can (``zero_loops``), no upper bound is claimed.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ..models.core import fill_margin, interval_excess, interval_expect
from ._interval_graph import floor_slack, moving
from ._precision import gap_floor, normal_upper, to_device

# Interval iteration runs in chunks of these many backups, growing, between host steps.
FIRST_CHUNK, CHUNK_GROWTH = 16, 8
# Verified guesses tried before the iteration goes on alone, once this many backups ran:
# soon on large models (at least SMALL_ROWS rows), where a backup is dear; late on small ones,
# where iterating is cheap and compiling the guess's programs would cost more than it saves.
GUESSES, GUESS_AFTER, GUESS_AFTER_SMALL, SMALL_ROWS = 2, 16, 1024, 1 << 14
BISECTION_STEPS = 60


class Problem(NamedTuple):
    """What the cores iterate on (a pytree of arrays; ``next_states`` None for dense rows).

    Attributes:
      lower, upper: `[S, A, N]` the normalized bounds; next_states: `[S, A, K]` or None.
      rewards: `[S, A]`; usable: `[S, A]` the allowed actions.
      fixed: `[S]` bool, the decided states; fixed_value: `[S]` their values.
      policy_sign, nature_sign: ``1`` to maximize, ``-1`` to minimize.
      rel, absolute: the widening of a backup (:func:`widening`); ceiling: a bound on
        every value (1 for probabilities, ``inf`` for rewards).
      floor: the absolute slack of a row (:func:`._interval_graph.floor_slack`).
    """

    lower: jax.Array
    upper: jax.Array
    next_states: jax.Array | None
    rewards: jax.Array
    usable: jax.Array
    fixed: jax.Array
    fixed_value: jax.Array
    policy_sign: jax.Array
    nature_sign: jax.Array
    rel: jax.Array
    absolute: jax.Array
    ceiling: jax.Array
    floor: jax.Array


def widening(n: int, dtype) -> tuple[float, float]:
    """``(relative, absolute)`` widening of a backup ``r + opt Σ x v``: the fill's rounding,
    one more rounding for the reward's addition, rounded up."""
    rel, absolute = fill_margin(n, dtype)
    u = float(np.finfo(dtype).eps) / 2
    return (rel + 2 * u) * 1.01, absolute * 1.01


def q_values(p: Problem, values, xp=jnp):
    """`[B, S, A]` ``r + nature-opt Σ x v`` for value vectors `[B, S]`."""
    expect = interval_expect(p.lower, p.upper, p.next_states, values, p.nature_sign, xp)
    return p.rewards[None] + expect


def backup(p: Problem, values, xp=jnp):
    """`[2, S]` the widened backup of ``[lower, upper]`` and the policy's best `[2, S]`:
    ``lower`` rounded down, ``upper`` up; decided states keep their values."""

    def expect_of(v):  # one vector at a time: the fill's temporaries, `[S, A, K, K]` for
        # short rows, are the iteration's largest buffers (1.8 GB for both at 10⁶ states)
        return interval_expect(
            p.lower, p.upper, p.next_states, v[None], p.nature_sign, xp, with_scale=True
        )

    if xp is jnp:
        expect, scale = (a[:, 0] for a in lax.map(expect_of, values))
    else:
        expect, scale = (xp.concatenate(a) for a in zip(*map(expect_of, values), strict=True))
    sign, usable = p.policy_sign, p.usable
    floor = xp.where((scale > 0) | (p.rewards != 0)[None], p.floor, 0)  # (else exact zeros)
    slack = p.absolute * scale + floor  # (one sum of non-negative terms: no further rounding)
    low = expect * (1 - p.rel) - slack  # per row, then the policy's optimum
    high = expect * (1 + p.rel) + slack
    low = sign * xp.max(xp.where(usable, sign * (p.rewards * (1 - p.rel) + low[0]), -xp.inf), -1)
    high = sign * xp.max(xp.where(usable, sign * (p.rewards * (1 + p.rel) + high[1]), -xp.inf), -1)
    low = xp.maximum(low, 0)
    high = xp.minimum(high, p.ceiling)
    both = xp.stack([low, high])
    fixed = xp.broadcast_to(p.fixed, both.shape)
    return xp.where(fixed, xp.broadcast_to(p.fixed_value, both.shape), both)


def _met(lo, up, tol, complement=False):
    """Whether ``[lo, up]`` meets ``tol`` relative to the values, or to ``1 − values`` (a
    ``G`` property is ``1 −`` the ``F`` property iterated here)."""
    if complement:
        lo, up = 1 - up, 1 - lo
    width = up - lo
    close = (width <= tol * (jnp.abs(up) + jnp.abs(lo))) | (width <= gap_floor(up.dtype))
    return jnp.all((jnp.isfinite(up) & close) | (lo == up))


@functools.partial(jax.jit, static_argnames=("stop_when_stalled", "complement"))
def iterate(p: Problem, lo, up, tol, cap, stop_when_stalled: bool, complement: bool = False):
    """Backs ``[lo, up]`` up until they meet ``tol``, ``cap`` backups, or (with
    ``stop_when_stalled``) the upper bound stops moving: ``(lo, up, steps, met)``."""

    def cond(carry):
        lo, up, i, met, moved = carry
        return (i < cap) & ~met & moved

    def body(carry):
        lo, up, i, _, _ = carry
        new = backup(p, jnp.stack([lo, up]))
        lo2, up2 = jnp.maximum(lo, new[0]), jnp.minimum(up, new[1])
        moved = jnp.any(up2 != up) if stop_when_stalled else jnp.any((lo2 != lo) | (up2 != up))
        return lo2, up2, i + 1, _met(lo2, up2, tol, complement), moved

    start = (lo, up, jnp.asarray(0, jnp.int32), _met(lo, up, tol, complement), jnp.asarray(True))
    lo, up, i, met, _ = lax.while_loop(cond, body, start)
    return lo, up, i, met


@jax.jit
def verified(p: Problem, values) -> jax.Array:
    """`[S]` bool: ``B(v)(s) <= v(s)`` holds whatever the rounding (decided states: True),
    tested as ``r + opt Σ x (v − v(s)) <= 0`` (:func:`interval_excess`)."""
    excess, err = interval_excess(p.lower, p.upper, p.next_states, values, values, p.nature_sign)
    err = err + jnp.where(moving(p, values), p.floor, 0)
    ok = p.rewards + excess + err + p.rel * jnp.abs(p.rewards) <= 0
    every = jnp.all(ok | ~p.usable, axis=-1)
    some = jnp.any(ok & p.usable, axis=-1)
    return jnp.where(p.policy_sign > 0, every, some) | p.fixed


@jax.jit
def verified_below(p: Problem, values) -> jax.Array:
    """`[S]` bool: ``B(v)(s) >= v(s)`` holds whatever the rounding (decided states: True),
    tested as ``r + opt Σ x (v − v(s)) >= 0``; the policy's optimum over its usable
    actions (a policy held to one action: that action's row)."""
    excess, err = interval_excess(p.lower, p.upper, p.next_states, values, values, p.nature_sign)
    err = err + jnp.where(moving(p, values), p.floor, 0)
    ok = p.rewards + excess - err - p.rel * jnp.abs(p.rewards) >= 0
    every = jnp.all(ok | ~p.usable, axis=-1)
    some = jnp.any(ok & p.usable, axis=-1)
    return jnp.where(p.policy_sign > 0, some, every) | p.fixed


def pre_fixpoint(p: Problem, lo, tol, complement=False) -> np.ndarray | None:
    """A verified upper bound from the lower one (``B(U) <= U``, widened), or None: ``lo``
    raised by ``κ`` relative to ``lo`` (to ``1 − lo`` with ``complement``)."""
    size = (1 - lo) if complement else lo
    finite = size[np.isfinite(size)]
    tiny = 1e-3 * float(np.max(finite, initial=0.0)) + 1e-300
    # an absolute raise above the verification's floor slack, within gap_floor of the values
    lift = gap_floor(np.float64) / 4
    for kappa in (tol / 64, tol / 8, tol / 2):
        cand = np.where(p.fixed, p.fixed_value, normal_upper(lo + kappa * (size + tiny) + lift))
        if not np.all(np.isfinite(cand) | np.asarray(p.fixed)):
            return None
        if bool(np.all(verified(p, jnp.asarray(cand)))):
            return cand
    return None


def deflate(p: Problem, e, lo, up, components) -> np.ndarray:
    """``up`` lowered on each set ``C`` of ``components`` (disjoint): ``U' = U[C := min(U,
    λ_C)]`` with ``B(U') <= U'``, verified (a pre-fixpoint again), in two ways one after the
    other: every set lowered together (:func:`_deflate_together`: where the sets hold each
    other up, as at the start, when every bound is 1) and each set against the others' bounds
    (:func:`_deflate_each`: never undone by the others)."""
    if not components:
        return up
    return _deflate_each(p, e, lo, _deflate_together(p, lo, up, components), components)


def _deflate_together(p: Problem, lo, up, components) -> np.ndarray:
    """The smallest ``λ_C`` found by one bisection of every set at once, each step verified
    for all sets together; the final bounds verified together, a set that fails keeping its
    ``U`` (and the others checked again)."""
    comp = np.full(up.shape[0], -1)
    for i, C in enumerate(components):
        comp[C] = i
    n = len(components)
    seg = np.where(comp >= 0, comp, n)
    low, high = np.full(n + 1, np.inf), np.full(n + 1, -np.inf)
    np.minimum.at(low, seg, lo)
    np.maximum.at(high, seg, up)
    live = np.arange(n + 1) < n

    def failing(lam):
        trial = normal_upper(np.where(live[seg], np.minimum(up, lam[seg]), up))
        bad = ~np.asarray(verified(p, jnp.asarray(trial)))
        return np.bincount(seg, weights=bad, minlength=n + 1) > 0, trial

    for _ in range(BISECTION_STEPS):
        mid = np.where(live, 0.5 * (np.minimum(low, high) + high), high)
        bad, _ = failing(mid)
        high, low = np.where(live & ~bad, mid, high), np.where(live & bad, mid, low)
    while True:
        bad, trial = failing(high)
        if not np.any(bad & live):
            return trial
        live &= ~bad


def _deflate_each(p: Problem, e, lo, up, components) -> np.ndarray:
    """Each set ``C`` lowered to the smallest ``λ`` such that ``B(U') <= λ`` on ``C`` for
    ``U' = U[C := min(U, λ)]``, every other state at its ``U``: then ``U'`` with every set
    lowered at once is still a pre-fixpoint (lowering the others only lowers ``B``). A
    bisection for all sets at once, on the host over the sets' rows (:func:`_excess`); the
    result verified again on the device (a set that fails keeps its ``U``)."""
    n = len(components)
    comp = np.full(up.shape[0], -1)
    for i, C in enumerate(components):
        comp[C] = i
    A = e.allowed.shape[1]
    src = e.row // A
    mine = comp[src] >= 0  # the entries of the sets' rows
    own = mine & (comp[e.target] == comp[src])
    low = np.full(n, np.inf)
    np.minimum.at(low, comp[comp >= 0], lo[comp >= 0])
    high = np.full(n, -np.inf)
    np.maximum.at(high, comp[comp >= 0], up[comp >= 0])
    low = np.minimum(low, high)
    for _ in range(BISECTION_STEPS):
        mid = 0.5 * (low + high)
        ok = _holds(p, e, mine, own, comp, up, mid)
        high, low = np.where(ok, mid, high), np.where(ok, low, mid)
    live = np.ones(n, bool)
    while True:  # verified together; a set that fails keeps its U, and the rest again
        trial = normal_upper(np.where((comp >= 0) & live[comp], np.minimum(up, high[comp]), up))
        bad = ~np.asarray(verified(p, jnp.asarray(trial))) & (comp >= 0)
        if not np.any(bad & live[comp]):
            return trial
        live[comp[bad]] = False


def _holds(p: Problem, e, mine, own, comp, up, lam) -> np.ndarray:
    """`[n]` bool: for each set, ``B(U[C := min(U, λ)]) <= λ`` on ``C`` (widened), the other
    states at ``U``."""
    value = np.where(own, np.minimum(up[e.target], lam[np.maximum(comp[e.target], 0)]),
                     up[e.target])  # fmt: skip
    src = e.row // e.allowed.shape[1]
    shift = np.minimum(up[src], lam[np.maximum(comp[src], 0)])
    excess, err = _excess(p, e, mine, value, shift)
    rewards = np.asarray(p.rewards).reshape(-1)
    err = err + np.where(rewards != 0, float(p.floor), 0)
    ok_row = rewards + excess + err + float(p.rel) * np.abs(rewards) <= 0
    ok_row = ok_row.reshape(e.allowed.shape) | ~e.allowed
    if float(p.policy_sign) > 0:
        ok_state = np.all(ok_row, axis=1)
    else:
        ok_state = np.any(ok_row & e.allowed, axis=1)
    n = lam.shape[0]
    members = comp >= 0
    bad = np.bincount(comp[members], weights=~ok_state[members], minlength=n)
    return bad == 0


def _excess(p: Problem, e, mine, value, shift):
    """Per row `[S · A]`: nature's optimum of ``Σ x (value − shift)`` over the rows with
    entries ``mine`` (per-entry values, so that each set sees itself at its trial and the
    others at their bounds), and its rounding bound; 0 for the other rows. The greedy fill
    on the host over an edge list (rows of unequal length)."""
    idx = np.flatnonzero(mine)
    row, w = e.row[idx], value[idx] - shift[idx]
    lo, cap = e.lo[idx], e.up[idx] - e.lo[idx]
    order = np.lexsort((-float(p.nature_sign) * w, row))
    row, w, lo, cap = row[order], w[order], lo[order], cap[order]
    first = np.ones(row.shape, bool)
    first[1:] = row[1:] != row[:-1]
    line = np.cumsum(first) - 1  # the running sums row by row (one sum over every row
    pos = np.arange(row.size) - np.flatnonzero(first)[line]  # would lose the rows' ulps)
    grid = np.zeros((int(line[-1]) + 1 if row.size else 0, int(pos.max(initial=0)) + 1))
    grid[line, pos] = cap
    before = (np.cumsum(grid, axis=1) - grid)[line, pos]
    slack = np.maximum(1 - e.sum_lo[row], 0)
    x = lo + np.clip(slack - before, 0, cap)
    terms = np.where(x > 0, x * w, 0)
    n = int(np.max(np.bincount(row), initial=1))
    rel, absolute = fill_margin(n, np.float64)
    size = e.allowed.size
    excess = np.bincount(row, weights=terms, minlength=size)
    err = rel * np.bincount(row, weights=np.abs(terms), minlength=size)
    big = np.zeros(size)
    np.maximum.at(big, row, np.where(np.isfinite(w), np.abs(w), 0))
    busy = np.bincount(row, weights=w != 0, minlength=size) > 0  # (as :func:`moving`)
    return excess, err + absolute * big + np.where(busy, floor_slack(n, np.float64), 0)


def run(
    p: Problem,
    e,
    lo,
    up,
    tol,
    max_iterations,
    *,
    probability,
    components,
    complement=False,
    guess=None,
):
    """The host loop: chunks of :func:`iterate`, a verified candidate or a deflation between
    them. ``components(mask)`` lists the sets to deflate among the states of ``mask``
    (probabilities; None: none); ``complement``: ``tol`` is relative to ``1 −`` the values;
    ``guess(lo)``: ``(lower, upper)`` verified bounds (either None), tried after the first
    chunks (:mod:`._interval_guess`). Returns ``(lo, up, iterations, met)``.

    A chunk stops where the upper bound stalls (probabilities), so that the host can lower
    it; when the host cannot, the next chunk iterates on until nothing moves."""
    total, chunk, met, stop_stall = 0, FIRST_CHUNK, False, probability
    lo, up = (jnp.asarray(x) for x in to_device(np.asarray(lo), np.asarray(up)))
    guesses = GUESSES if guess is not None else 0
    after = GUESS_AFTER if p.rewards.size >= SMALL_ROWS else GUESS_AFTER_SMALL
    while total < max_iterations:
        cap = min(chunk, max_iterations - total)
        lo, up, steps, met = iterate(p, lo, up, tol, cap, stop_stall, complement)
        total += int(steps)
        if bool(met) or total >= max_iterations:
            break
        if int(steps) == cap:
            chunk *= CHUNK_GROWTH
        if guesses and total >= after:
            guesses -= 1
            lower, upper = guess(np.asarray(lo))  # (verified as the device reads them)
            if lower is not None or upper is not None:
                lo = lo if lower is None else jnp.maximum(lo, jnp.asarray(lower))
                up = up if upper is None else jnp.minimum(up, jnp.asarray(upper))
                if lower is not None and upper is not None:
                    continue  # (the next chunk stops at once where they meet tol)
        lo_h, up_h = np.asarray(lo), np.asarray(up)
        better = _lowered(p, e, lo_h, up_h, tol, components, complement)
        if better is not None:
            up, stop_stall = jnp.asarray(better), probability
        elif stop_stall:
            stop_stall = False  # the upper bound is stuck: iterate the lower one on
        elif int(steps) < cap:  # nothing moves and nothing lowers the upper bound
            break
    return np.asarray(lo), np.asarray(up), total, bool(met)


def _lowered(p: Problem, e, lo, up, tol, components, complement):
    """A lower verified upper bound than ``up`` (by more than ``tol / 4`` relative in some
    state), or None."""
    candidates = [pre_fixpoint(p, lo, tol, complement)]
    if components is not None:
        candidates.append(deflate(p, e, lo, up, components(up > lo)))
    best = up
    for c in candidates:
        if c is not None:
            best = np.minimum(best, c)  # the least of two pre-fixpoints is one
    with np.errstate(invalid="ignore"):  # inf − inf where both are infinite
        size = np.abs(1 - best) if complement else np.abs(best)
        drop = up - best  # (a drop within gap_floor meets tol already: no gain)
        gain = (drop > 0.25 * tol * size) & (drop > gap_floor(np.float64)) & np.isfinite(best)
    return best if np.any(gain) else None


@functools.partial(jax.jit, static_argnames=("steps",))
def backward(p: Problem, init, steps: int):
    """``steps`` widened backups of ``[init, init]``: ``(lower, upper, first_rule)``."""

    def body(v, _):
        return backup(p, v), None

    v = jnp.stack([init, init])
    if steps == 0:
        return v[0], v[1], jnp.argmax(p.usable, axis=-1).astype(jnp.int32)
    v, _ = lax.scan(body, v, None, length=steps - 1)
    q = q_values(p, v[:1])[0]
    rule = jnp.argmax(jnp.where(p.usable, p.policy_sign * q, -jnp.inf), axis=-1)
    v = backup(p, v)
    return v[0], v[1], rule.astype(jnp.int32)
