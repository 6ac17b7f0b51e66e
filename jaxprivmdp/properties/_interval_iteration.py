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

# Interval iteration runs in chunks of these many backups, growing, between host steps.
FIRST_CHUNK, CHUNK_GROWTH = 64, 8
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
    expect, scale = interval_expect(
        p.lower, p.upper, p.next_states, values, p.nature_sign, xp, with_scale=True
    )
    sign, usable = p.policy_sign, p.usable
    low = expect * (1 - p.rel) - p.absolute * scale  # per row, then the policy's optimum
    high = expect * (1 + p.rel) + p.absolute * scale
    low = sign * xp.max(xp.where(usable, sign * (p.rewards * (1 - p.rel) + low[0]), -xp.inf), -1)
    high = sign * xp.max(xp.where(usable, sign * (p.rewards * (1 + p.rel) + high[1]), -xp.inf), -1)
    low = xp.maximum(low, 0)
    high = xp.minimum(high, p.ceiling)
    both = xp.stack([low, high])
    fixed = xp.broadcast_to(p.fixed, both.shape)
    return xp.where(fixed, xp.broadcast_to(p.fixed_value, both.shape), both)


def _met(lo, up, tol):
    width = up - lo
    close = jnp.isfinite(up) & (width <= tol * (jnp.abs(up) + jnp.abs(lo)))
    return jnp.all(close | (lo == up))


@functools.partial(jax.jit, static_argnames=("stop_when_stalled",))
def iterate(p: Problem, lo, up, tol, cap, stop_when_stalled: bool):
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
        return lo2, up2, i + 1, _met(lo2, up2, tol), moved

    start = (lo, up, jnp.asarray(0, jnp.int32), _met(lo, up, tol), jnp.asarray(True))
    lo, up, i, met, _ = lax.while_loop(cond, body, start)
    return lo, up, i, met


@jax.jit
def verified(p: Problem, values) -> jax.Array:
    """`[S]` bool: ``B(v)(s) <= v(s)`` holds whatever the rounding (decided states: True),
    tested as ``r + opt Σ x (v − v(s)) <= 0`` (:func:`interval_excess`)."""
    excess, err = interval_excess(
        p.lower, p.upper, p.next_states, values, values, p.nature_sign
    )
    ok = p.rewards + excess + err + p.rel * jnp.abs(p.rewards) <= 0
    every = jnp.all(ok | ~p.usable, axis=-1)
    some = jnp.any(ok & p.usable, axis=-1)
    return jnp.where(p.policy_sign > 0, every, some) | p.fixed


def pre_fixpoint(p: Problem, lo, up, tol) -> np.ndarray | None:
    """A verified upper bound from the lower one (``B(U) <= U``, widened), or None."""
    finite = lo[np.isfinite(lo)]
    tiny = 1e-3 * float(np.max(finite, initial=0.0)) + 1e-300
    for kappa in (tol / 64, tol / 8, tol / 2):
        cand = np.where(p.fixed, p.fixed_value, lo * (1 + kappa) + kappa * tiny)
        cand = np.minimum(cand, up)
        if not np.all(np.isfinite(cand) | np.asarray(p.fixed)):
            return None
        if bool(np.all(verified(p, jnp.asarray(cand)))):
            return cand
    return None


def deflate(p: Problem, lo, up, components) -> np.ndarray:
    """``up`` lowered on each set of ``components`` (disjoint) to the smallest ``λ`` such that
    ``U' = U[C := min(U, λ)]`` keeps ``B(U') <= U'`` (widened): a bisection for all sets at
    once, the final ``U'`` verified jointly (a set that fails keeps its ``U``)."""
    S = up.shape[0]
    comp = np.full(S, -1)
    for i, C in enumerate(components):
        comp[C] = i
    n = len(components)
    member = comp >= 0
    seg = np.where(member, comp, n)
    low = np.full(n + 1, -np.inf)
    np.maximum.at(low, seg, lo)
    high = np.full(n + 1, -np.inf)
    np.maximum.at(high, seg, up)
    live = np.ones(n + 1, bool)
    live[n] = False

    def failing(lam):
        trial = np.where(member & live[seg], np.minimum(up, lam[seg]), up)
        bad = ~np.asarray(verified(p, jnp.asarray(trial)))
        return np.bincount(seg, weights=bad, minlength=n + 1) > 0, trial

    live &= ~failing(high)[0]
    for _ in range(BISECTION_STEPS):
        mid = np.where(live, 0.5 * (low + high), high)
        bad, _ = failing(mid)
        high = np.where(live & ~bad, mid, high)
        low = np.where(live & bad, mid, low)
    while True:  # the sets' bounds together
        bad, trial = failing(high)
        if not np.any(bad & live):
            return trial
        live &= ~bad


def run(p: Problem, lo, up, tol, max_iterations, *, probability, components):
    """The host loop: chunks of :func:`iterate`, a verified candidate or a deflation between
    them. ``components()`` lists the sets to deflate (probabilities; None: none).
    Returns ``(lo, up, iterations, met)``."""
    total, chunk, met = 0, FIRST_CHUNK, False
    lo, up = jnp.asarray(lo), jnp.asarray(up)
    while total < max_iterations:
        cap = min(chunk, max_iterations - total)
        lo, up, steps, met = iterate(p, lo, up, tol, cap, probability)
        total += int(steps)
        if bool(met) or total >= max_iterations:
            break
        lo_h, up_h = np.asarray(lo), np.asarray(up)
        better = pre_fixpoint(p, lo_h, up_h, tol)
        if probability and components is not None:
            deflated = deflate(p, lo_h, up_h, components(up_h > lo_h))
            better = deflated if better is None else np.minimum(better, deflated)
        if better is not None and np.any(better < up_h):
            up = jnp.asarray(np.minimum(better, up_h))
        elif int(steps) < cap:  # stalled, and nothing lowers the upper bound
            break
        chunk *= CHUNK_GROWTH
    return np.asarray(lo), np.asarray(up), total, bool(met)


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
