"""Total reward ``R [C]`` on interval models: ``V(s) = opt_policy opt_nature E[Σ_t r(s_t, a_t)]``.

Rewards are non-negative, so the total is the limit of non-decreasing partial sums and may be
infinite (PRISM's ``Infinity``). Nature's box is a polytope and ``x · v`` is linear, so nature
may be read as choosing one of the box's finitely many vertices: a finite turn-based
stochastic game with a non-negative total reward. What each part of the answer rests on:

- **0**, exactly, where the side(s) minimizing the cost keep every positive-reward row away
  with probability 1 (the complement of :func:`._interval_graph.reward_reachers`, on the
  rows' sums of bounds);
- **inf**, exactly, where the side(s) maximizing it make positive-reward rows recur forever,
  or reach a state already found infinite, with positive probability whatever the other side
  does (:func:`._interval_graph.recurring_reward`: almost-sure Büchi in the game, grown by
  positive attractors): the expected total is infinite against every strategy of the other
  side;
- **lower bounds** ``B^n(0)``, iterated from 0 (:func:`._interval_iteration.run`): the value
  of the ``n``-step game, at most ``V`` whatever the quantifiers' order, since every play's
  partial sum is at most its total;
- **upper bounds** only from a verified *pre-fixpoint* ``U >= 0`` (``B(U) <= U`` tested
  against the rounding, ``U`` the decided values where decided): the side(s) minimizing the
  cost play greedily on ``U``; then whatever the others do, ``U(s_t) + Σ_{i<t} r_i`` is a
  non-negative supermartingale, so ``E[Σ_{i<t} r_i] <= U(s_0)`` for every ``t`` and, by
  monotone convergence, the expected total is at most ``U(s_0)``: Puterman 1994, §7.2-7.3
  (positive and negative models; V the least fixed point of ``B``), with nature a second
  player. It needs no uniqueness of fixed points, and ``U`` may be ``inf`` in some states.
  The first finite ``U`` comes from :func:`first_upper` (a climb from the lower bound on a
  padded game, verified), then :func:`._interval_iteration.run` lowers it, deflating the
  zero-reward sets the players can stay in, where iterating from above stalls; a policy
  maximizing the cost loses its reward-free self-loops (:func:`_without_idling`), which
  change no fixed point that matters and would stall every state.

A state neither decided nor under a verified finite bound keeps ``upper = inf`` and the
answer ``converged`` False: a finite value that no pre-fixpoint was found for (the climb did
not settle in the iterations allowed) is never reported as exact, nor guessed.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ..models.core import interval_excess
from . import _interval_graph as graph
from ._interval_graph import moving
from ._interval_iteration import deflate, q_values, run
from ._precision import gap_floor, normal_upper

# The padding of the climb: each row's reward raised by this share of the tolerance (of the
# row's reward plus its state's lower bound), so that a climbed bound verifies with a margin
# far above the rounding; then PAD_STEP times smaller while tol is not met, down to PAD_FLOOR.
PAD_SHARE, PAD_STEP, PAD_FLOOR = 0.25, 64.0, 1e-11
CLIMB_ROUNDS = 3
# Rounds of the lower bound's iteration and the upper bound's climb, this many backups at
# first, then ROUND_GROWTH times more each round.
FIRST_ROUND, ROUND_GROWTH = 256, 8


def total_reward(imdp, opts, limits, problem):
    """``(lower, upper, policy, iterations, converged)`` of ``R{opts}=? [C]`` on the float64
    host model (see the module). ``opts``: ``(policy, nature)``, each ``"max"``/``"min"``;
    ``limits``: ``(tol, max_iterations)``; ``problem``: the checker's ``Problem`` builder
    ``(imdp, rewards, fixed, fixed_value, opts, ceiling, xp)``."""
    tol, max_iterations = limits
    mask = np.asarray(imdp.action_mask)
    rewards = np.asarray(imdp.rewards, np.float64)
    e = graph.edges(imdp.lower, imdp.upper, imdp.next_states, imdp.action_mask)
    positive_rows = ((rewards > 0) & mask).reshape(-1)
    helps = (opts[0] == "max", opts[1] == "max")  # the cost's maximizers
    reach, rank = graph.reward_reachers(e, positive_rows, *helps)
    infinite = graph.recurring_reward(e, positive_rows, *helps) & reach
    fixed = ~reach | infinite
    value = np.where(infinite, np.inf, 0.0)
    p = problem(imdp, rewards, fixed, value, opts, np.inf, np)
    p = jax.tree_util.tree_map(jnp.asarray, p)
    if helps[0]:
        p = p._replace(usable=jnp.asarray(_without_idling(e, rewards)))
    lo, up = value, np.where(fixed, value, np.inf)
    free = graph.edges(imdp.lower, imdp.upper, imdp.next_states, mask & (rewards == 0))
    comps = graph.staying_components(free, ~fixed)
    structure = (free, comps, _staying_rows(e, comps, rewards))
    it, met, cap, moved = 0, False, FIRST_ROUND, True
    eta = max(PAD_SHARE * tol, PAD_FLOOR)
    while moved and not met and it < max_iterations:  # rounds of both, growing: an upper
        before = (lo, up)  # bound needs a lower one near the value, not at its end
        more = min(cap, max_iterations - it)
        sets = _deflatable(free, np.isfinite(up) & ~fixed)
        lo, up, n, met = run(p, e, lo, up, tol, more, probability=False, components=sets)
        it += n
        if not met and it < max_iterations:
            more = min(cap, max_iterations - it)
            lo, up, n, met, eta = _from_above(p, e, (lo, up), structure, (tol, eta), more)
            it += n
        cap *= ROUND_GROWTH
        moved = not (np.array_equal(lo, before[0]) and np.array_equal(up, before[1]))
    policy = _policy(p, e, lo, rank, positive_rows, helps)
    return lo, up, policy, it, met


def _from_above(p, e: graph.Edges, bounds, structure, precision, budget):
    """``(lo, up, iterations, met, eta)``: a verified upper bound (:func:`first_upper` with
    the padding ``eta``; ``precision = (tol, eta)``), lowered by interval iteration, its
    stalls in zero-reward sets deflated (:func:`._interval_iteration.run`) or set to their
    exits (:func:`lowered_components`); again with a smaller padding while ``tol`` is not met
    (a padded game's value exceeds the value by about the padding times the expected number
    of steps, and where the players may idle in a zero-reward loop, iterating down from it
    stalls). ``eta``: the padding to try next."""
    lo, up = bounds
    free, comps, stay = structure
    tol, eta = precision
    fixed = np.asarray(p.fixed)
    it, met = 0, False
    while eta >= PAD_FLOOR and not met and it < budget:
        first, climbed = first_upper(p, e, lo, (comps, stay), eta, max(budget - it, 1))
        it += climbed
        if np.any(np.isfinite(first) & ~fixed):  # it settled: a smaller padding next
            eta /= PAD_STEP
        if not np.any(first < up):
            break
        up = np.minimum(up, first)
        finite = np.isfinite(up)
        sets = _deflatable(free, finite & ~fixed)
        kept = [C for C in comps if np.all(finite[C])]
        for _ in range(CLIMB_ROUNDS):
            lo, up, more, met = run(p, e, lo, up, tol, max(budget - it, 1), probability=False,
                                    components=sets)  # fmt: skip
            it += more
            lower = None if met else lowered_components(p, e, up, kept)
            if lower is None:
                break
            up = lower
    return lo, up, it, met, eta


def _deflatable(free: graph.Edges, where):
    """The sets :func:`._interval_iteration.run` deflates: the zero-reward sets the players
    can stay in among the unsettled states of ``where`` (those with a finite upper bound when
    the run starts: it only lowers them)."""

    def components(unsettled):
        return graph.staying_components(free, unsettled & where)

    return components


def _without_idling(e: graph.Edges, rewards) -> np.ndarray:
    """`[S, A]` the allowed rows but the reward-free self-loops that cannot leave (kept where
    a state has nothing else). For a policy maximizing the cost such a row adds nothing:
    ``B(U)(s) = U(s)`` on it for every ``U``, so ``B`` without it has the same least fixed
    point (the one without it is a fixed point of ``B``) and every pre-fixpoint of it is one
    of ``B``; and without it iterating down from above no longer stalls on every ``U(s)``."""
    src = e.row // e.allowed.shape[1]
    lo_out, up_out = e.inside(e.target != src)
    rows = np.arange(e.allowed.size)
    idle = (~e.can_hit(rows, lo_out, up_out)).reshape(e.allowed.shape) & (rewards == 0)
    keep = e.allowed & ~idle
    return np.where(np.any(keep, axis=1, keepdims=True), keep, e.allowed)


def _staying_rows(e: graph.Edges, comps, rewards) -> np.ndarray:
    """`[S, A]` the zero-reward rows of a component's states that some distribution keeps
    inside it: the rows the climb does not pad (a padded loop the play can keep forever
    would climb forever)."""
    comp = np.full(e.num_states, -1)
    for i, C in enumerate(comps):
        comp[C] = i
    src = e.row // e.allowed.shape[1]
    out = comp[e.target] != comp[src]
    lo_out, up_out = e.inside(out)
    rows = np.arange(e.allowed.size)
    keeps = ~e.must_hit(rows, lo_out, up_out) & (comp[rows // e.allowed.shape[1]] >= 0)
    return keeps.reshape(e.allowed.shape) & (rewards == 0) & e.allowed


@jax.jit
def _climb(p, pad, u, cap):
    """``u ← max(u, B_pad(u))`` (plain float, the decided states at their values) until
    nothing moves or ``cap`` steps: ``(u, steps)``. ``B_pad``: the backup with each row's
    reward raised by ``pad`` `[S, A]`."""

    def step(u):
        q = q_values(p, u[None])[0] + pad
        best = p.policy_sign * jnp.max(jnp.where(p.usable, p.policy_sign * q, -jnp.inf), -1)
        return jnp.where(p.fixed, p.fixed_value, jnp.maximum(u, best))

    def cond(carry):
        _, i, moved = carry
        return (i < cap) & moved

    def body(carry):
        u, i, _ = carry
        new = step(u)
        return new, i + 1, jnp.any(new != u)

    u, i, _ = lax.while_loop(cond, body, (u, jnp.asarray(0, jnp.int32), jnp.asarray(True)))
    return u, i


def first_upper(p, e: graph.Edges, lo, structure, eta, max_iterations):
    """``(U, steps)``: a verified pre-fixpoint ``B(U) <= U`` (``inf`` where none was found).

    A climb from ``lo`` on the *padded* game (each row's reward raised by ``eta (r + lo(s) +
    tiny)``, so that its fixed point exceeds ``B`` of itself by a margin far above the
    rounding), except on the zero-reward rows that can stay in their component
    (``structure = (components, staying rows)``), where a padded loop would climb forever:
    there the climb settles on equal values, or a component that does not verify is set to
    its exits' bound (:func:`_snapped`), or raised and deflated
    (:func:`._interval_iteration.deflate`), and the climb goes on. Then every state that
    does not verify is set to ``inf`` until the rest verifies (an ``inf`` state satisfies
    ``B(U) <= U`` trivially, and a state whose rows can reach one no longer does)."""
    comps, stay = structure
    rewards = np.asarray(p.rewards)
    fixed, fixed_value = np.asarray(p.fixed), np.asarray(p.fixed_value)
    base = np.where(np.isfinite(lo), lo, 0.0)
    top = max(float(base.max(initial=0.0)), float(rewards.max(initial=0.0)))
    tiny = 1e-3 * top + gap_floor(np.float64)  # (a pad above the tests' floor slack)
    pad = np.where(stay, 0.0, eta * (rewards + base[:, None] + tiny))
    u = np.where(fixed, fixed_value, lo)
    steps, cap = 0, max(int(max_iterations), 1)
    for _ in range(CLIMB_ROUNDS):
        u, n = _climb(p, jnp.asarray(pad), jnp.asarray(u), cap)
        u, steps = np.asarray(u), steps + int(n)
        ok = _verified(p, e, u)
        bad = [C for C in comps if not np.all(ok[C])]
        if np.all(ok) or not bad:
            break
        u = _accepted(p, e, u, _snapped(e, u, bad, lower_only=False), bad)
        ok = _verified(p, e, u)
        bad = [C for C in bad if not np.all(ok[C])]
        if bad:
            u = deflate(p, e, lo, _raised(e, u, bad, eta, tiny), bad)
    return _closed(p, e, normal_upper(u)), steps


def lowered_components(p, e: graph.Edges, up, comps):
    """``up`` with each set of ``comps`` lowered to its exits' bound where that verifies
    (:func:`_snapped`), or None if none lowers: a pre-fixpoint again (lowering some states
    only lowers the others' backups)."""
    if not comps:
        return None
    cand = _accepted(p, e, up, _snapped(e, up, comps, lower_only=True), comps)
    return cand if np.any(cand < up) else None


def _snapped(e: graph.Edges, u, comps, lower_only) -> np.ndarray:
    """``u`` with each set ``C`` at the largest ``u`` of the successors outside ``C`` of its
    states' rows (0 if none; unchanged if one is ``inf``), or at most that with
    ``lower_only``: a candidate (where the play idles in ``C`` at no cost until it leaves,
    its value is at most that of the best state it can leave for), kept only where it
    verifies (:func:`_accepted`)."""
    comp = np.full(u.shape[0], -1)
    for i, C in enumerate(comps):
        comp[C] = i
    src = e.row // e.allowed.shape[1]
    out = (comp[src] >= 0) & (comp[e.target] != comp[src])
    top = np.zeros(len(comps))
    np.maximum.at(top, comp[src[out]], u[e.target[out]])
    member = comp >= 0
    level = top[comp[member]]
    level = np.where(np.isfinite(level), level, u[member])
    cand = u.copy()
    cand[member] = np.minimum(u[member], level) if lower_only else level
    return cand


def _accepted(p, e: graph.Edges, u, cand, comps) -> np.ndarray:
    """``cand`` where each set of ``comps`` verifies there (:func:`_verified`), ``u`` on the
    sets that do not (checked again until none fails)."""
    live = np.ones(len(comps), bool)
    while True:
        trial = u.copy()
        for i, C in enumerate(comps):
            if live[i]:
                trial[C] = cand[C]
        trial = normal_upper(trial)  # (verified as the device reads it, and kept so)
        ok = _verified(p, e, trial)
        bad = np.array([live[i] and not np.all(ok[C]) for i, C in enumerate(comps)])
        if not np.any(bad):
            return trial
        live &= ~bad


def _raised(e: graph.Edges, u, comps, eta, tiny) -> np.ndarray:
    """``u`` on each set ``C`` raised to the largest finite ``u`` among ``C`` and its rows'
    successors (a bound on the exits' values to deflate from), padded by ``η``."""
    u = u.copy()
    src = e.row // e.allowed.shape[1]
    for C in comps:
        inside = np.zeros(u.shape[0], bool)
        inside[C] = True
        near = np.concatenate([u[C], u[e.target[inside[src]]]])
        top = float(np.max(near[np.isfinite(near)], initial=0.0))
        u[C] = top * (1 + eta) + eta * tiny
    return u


@jax.jit
def _rows_verified(p, u):
    """`[S, A]` bool: ``r + opt Σ x (u − u(s)) <= 0`` whatever the rounding (as
    :func:`._interval_iteration.verified`, row by row)."""
    excess, err = interval_excess(p.lower, p.upper, p.next_states, u, u, p.nature_sign)
    err = err + jnp.where(moving(p, u), p.floor, 0)
    return p.rewards + excess + err + p.rel * jnp.abs(p.rewards) <= 0


def _verified(p, e: graph.Edges, u) -> np.ndarray:
    """`[S]` bool: ``B(u)(s) <= u(s)``, proven row by row by :func:`_rows_verified` or, exactly,
    by ``r + max_t u(t) <= u(s)`` over the row's successors (rounded up): a row that keeps
    the play among states of at most ``u(s)`` at no cost verifies whatever nature does,
    where the fill's error bound (its mass moved by a few ulps) would not."""
    ok = np.asarray(_rows_verified(p, jnp.asarray(u)))
    rewards = np.asarray(p.rewards)
    top = np.full(e.allowed.size, -np.inf)
    np.maximum.at(top, e.row, u[e.target])
    src = np.arange(e.allowed.size) // e.allowed.shape[1]
    with np.errstate(invalid="ignore"):
        bound = (rewards.reshape(-1) + top) * (1 + 4 * float(np.finfo(np.float64).eps))
        ok = ok | (bound <= u[src]).reshape(ok.shape)
    usable = np.asarray(p.usable)
    if float(p.policy_sign) > 0:
        state = np.all(ok | ~usable, axis=1)
    else:
        state = np.any(ok & usable, axis=1)
    return state | np.asarray(p.fixed)


def _closed(p, e: graph.Edges, u) -> np.ndarray:
    """``u`` set to ``inf`` wherever ``B(u) <= u`` fails, until it holds everywhere."""
    while True:
        ok = _verified(p, e, u) | ~np.isfinite(u)
        if np.all(ok):
            return u
        u = np.where(ok, u, np.inf)


def _policy(p, e: graph.Edges, lo, rank, positive_rows, helps) -> np.ndarray:
    """A stationary policy: the best action on ``lo`` (ties within 1e-9 relative); a policy
    maximizing the cost prefers, among ties, a row that pays or reaches a state of lower
    ``rank`` (:func:`._interval_graph.reward_reachers`), so that a tie with a zero-reward
    loop does not keep it there."""
    policy_max, nature_max = helps
    q = np.asarray(_q_values(p, jnp.asarray(lo[None])))[0]
    sign = 1.0 if policy_max else -1.0
    score = np.where(np.asarray(p.usable), sign * np.nan_to_num(q, posinf=1e300), -np.inf)
    best = score.max(axis=1, keepdims=True)
    near = score >= best - 1e-9 * np.maximum(np.abs(best), 1.0)
    if policy_max:
        src = e.row // e.allowed.shape[1]
        closer = (rank[e.target] >= 0) & ((rank[e.target] < rank[src]) | (rank[src] < 0))
        lo_in, up_in = e.inside(closer)
        hits = e.can_hit if nature_max else e.must_hit
        rows = np.arange(e.allowed.size)
        progress = (positive_rows | hits(rows, lo_in, up_in)).reshape(score.shape)
        score = np.where(near & progress, score + 1e300, score)
    return np.argmax(score, axis=1).astype(np.int32)


_q_values = jax.jit(q_values)
