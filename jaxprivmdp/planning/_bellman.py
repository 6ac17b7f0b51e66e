"""Optimal policies (``solve``): backward induction and value iteration.

Finite horizon: backward induction as a reverse ``lax.scan``. Infinite horizon: value
iteration in a ``lax.while_loop`` with Puterman's ε-optimality stopping rule, adjusted for
the rounding of each backup (``_rounding``) so that what ``converged`` promises holds in the
working dtype. Both take any monotone backup ``q_fn`` (the robust ones of ``_bounds`` too).
"""

from __future__ import annotations

import functools
import math
import sys
import time
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import check_count, check_range, is_concrete
from .._refusals import refuses
from ..models.core import Model, check_model, expect, transition_rows
from ._options import SolverOptions, solver_options
from ._policies import check_stage
from ._rounding import (
    backup_ulps,
    contraction_modulus,
    default_tolerance,
    error_bound,
    rounding_margin,
    summation_ulps,
)


class Solution(NamedTuple):
    """An optimal policy and its values.

    Attributes:
      policy: `[T, S]` int (finite horizon) or `[S]` int (infinite horizon, or the one stage
        asked for with ``solve(..., stage=t)``): the action chosen in each (stage,) state; ties
        go to the lowest action index.
      values: `[T + 1, S]` optimal values per stage (``values[T] = R_T``; `[S]`, ``V_t``, with
        ``stage=t``), or `[S]` the value iteration estimate of ``V*`` (within ``tol / 2`` of it
        when ``converged``).
      iterations: number of value-iteration sweeps (the stages backed up for a finite
        horizon: ``T``, or ``T − t`` with ``stage=t``).
      converged: whether the stopping rule certified ``tol`` (always True for a finite
        horizon). Infinite horizon: then ``‖values − V*‖∞ <= tol / 2`` and the policy is
        ``tol``-optimal, rounding included; False after ``max_iterations`` sweeps, or when
        ``tol`` is below what the dtype can certify (see :func:`solve`).
      error_bound: scalar bound on ``‖values − V*‖∞`` (over all stages for a finite horizon;
        over stages ``t..T − 1`` with ``stage=t``) that holds in the working dtype: the
        contraction bound plus the rounding of every backup (:func:`rounding_margin`). ``V*``
        is the optimal value of the model as stored (its arrays in the working dtype; the
        robust optimum for ``robust_solve``). None only for a Solution built by hand.
    """

    policy: jax.Array
    values: jax.Array
    iterations: jax.Array
    converged: jax.Array
    error_bound: jax.Array | None = None


def check_iterations(tol, max_iterations) -> None:
    """``tol`` a finite scalar > 0 (or None), ``max_iterations`` an int >= 1 (or traced)."""
    if tol is not None:
        check_range("tol", tol, low=0.0, low_open=True, scalar=True)
    if is_concrete(max_iterations):
        check_count("max_iterations", max_iterations)


PROGRESS_SECONDS = 5.0


class Progress:
    """Host-side reporter of a long run, called from the compiled loop by
    ``jax.debug.callback`` and throttled to one report every ``every`` seconds (and the last).

    ``fn(done, total)`` if given, else a line on stderr with the rate and the time left
    (backward induction) or the last change ``δ`` (value iteration, whose ``total`` is
    ``max_iterations``). Hashable by ``(fn, label, every)``: a static argument of a jitted
    core that does not recompile per call. Its clock restarts when a run reports step 1.
    """

    def __init__(self, fn: Callable[[int, int], None] | None, label: str, every: float):
        self.fn, self.label, self.every = fn, label, every
        self.start = self.last = time.monotonic()

    def _key(self):
        return (self.fn, self.label, self.every)

    def __hash__(self):
        return hash(self._key())

    def __eq__(self, other):
        return isinstance(other, Progress) and self._key() == other._key()

    def __call__(self, done, total, change, final=False):
        done, total, now = int(np.max(done)), int(np.max(total)), time.monotonic()
        if done <= 1:
            self.start = self.last = now
        if not (final or done >= total) and now - self.last < self.every:
            return
        self.last = now
        if self.fn is not None:
            self.fn(done, total)
            return
        elapsed = now - self.start
        if self.label == "backward induction":
            left = elapsed / max(done, 1) * (total - done)
            text = f"stage {done:,}/{total:,}, {elapsed:.1f} s, about {left:.0f} s left"
        else:
            what = "error bound" if final else "last change"
            text = f"sweep {done:,} (of at most {total:,}), {elapsed:.1f} s, {what} "
            text += f"{np.max(change):.3g}"
        print(f"{self.label}: {text}", file=sys.stderr, flush=True)


def as_progress(progress, label: str) -> Progress | None:
    """``solve``'s ``progress`` argument (None, True, or ``fn(done, total)``) as a reporter."""
    if progress is None or progress is False:
        return None
    if progress is not True and not callable(progress):
        raise ValueError(f"progress must be None, True or a callable, got {progress!r}")
    return Progress(None if progress is True else progress, label, PROGRESS_SECONDS)


def q_values(mdp: Model, values: jax.Array) -> jax.Array:
    """`[S, A]` ``r(s, a) + γ Σ_s' P(s, a, s') v(s')``; masked actions get the dtype's min."""
    q = mdp.rewards + mdp.discount * expect(transition_rows(mdp), values)
    return jnp.where(mdp.action_mask, q, jnp.finfo(q.dtype).min)


def greedy(q: jax.Array) -> tuple[jax.Array, jax.Array]:
    policy = jnp.argmax(q, axis=-1).astype(jnp.int32)  # first maximum: lowest index
    return policy, jnp.take_along_axis(q, policy[:, None], axis=-1)[:, 0]


def value_iteration(
    mdp: Model,
    q_fn,
    tol: jax.Array,
    max_iterations: jax.Array,
    *,
    ulps: float | None = None,
    modulus: jax.Array | None = None,
    progress: Progress | None = None,
) -> Solution:
    """Value iteration of ``v ← max_a q_fn(v)`` from 0 (any monotone κ-contraction).

    ``q_fn`` maps `[S]` values to `[S, A]` action values (:func:`q_values`, or a robust one);
    ``ulps`` is the rounding of one of its backups (:func:`rounding_margin`; default the
    heuristic for robust backups) and ``modulus`` its contraction factor (default ``γ``).
    ``progress`` (a :class:`Progress`) is called after every sweep (it throttles itself).
    """
    # Puterman (1994), Thm 6.3.1, with the rounding ρ of each computed backup T̃
    # (‖T̃v − Tv‖∞ <= ρ): for v' = T̃v and δ = ‖v' − v‖∞,
    #   ‖v' − V*‖∞ <= (κδ + ρ)/(1 − κ)                 (Banach, with a perturbed last step),
    #   the greedy π of T̃v' has ‖T_π v' − v'‖∞ <= κδ + 3ρ, so ‖V^π − V*‖∞ <= 2(κδ + 2ρ)/(1 − κ).
    # Converged (both promises kept) once (κδ + 2ρ)/(1 − κ) <= tol/2. A tol below about
    # 4ρ/(1 − κ) can never be certified: once κδ <= ρ (rounding dominates), the loop goes on
    # only until δ = 0 (a fixed point of the rounded operator) or for as many sweeps as the
    # contraction needs to shrink δ from ρ/κ to an ulp (rounding may keep δ from reaching 0).
    ulps = summation_ulps(mdp.num_states) if ulps is None else ulps
    kappa = mdp.discount if modulus is None else modulus
    eps = jnp.finfo(tol.dtype).eps
    contracting = (kappa > 0) & (kappa < 1)
    log_kappa = jnp.log(jnp.where(contracting, kappa, 0.5))
    extra = jnp.where(contracting, jnp.ceil(math.log(4 * ulps) / -log_kappa), 0)

    def cond(carry):
        *_, done, it = carry
        return ~done & (it < max_iterations)

    def body(carry):
        v, _, _, since, _, it = carry
        _, v_new = greedy(q_fn(v))
        delta = jnp.max(jnp.abs(v_new - v))
        rho = rounding_margin(mdp, v, v_new, ulps=ulps)
        certified = (kappa < 1) & (error_bound(kappa, delta, 2 * rho) <= tol / 2)
        rounding = kappa * delta * (1 + eps) <= rho
        since = since + rounding
        done = certified | (rounding & ((delta == 0) | (since > extra)))
        if progress is not None:
            jax.debug.callback(progress, it + 1, max_iterations, delta)
        return v_new, error_bound(kappa, delta, rho), certified, since, done, it + 1

    v0 = jnp.zeros(mdp.num_states, mdp.rewards.dtype)
    inf = jnp.asarray(jnp.inf, v0.dtype)
    false = jnp.asarray(False)
    init = (v0, inf, false, jnp.asarray(0, jnp.int32), false, jnp.asarray(0))
    v, error, certified, _, _, it = jax.lax.while_loop(cond, body, init)
    if progress is not None:
        jax.debug.callback(progress, it, max_iterations, error, True)
    policy, _ = greedy(q_fn(v))
    return Solution(policy, v, it, certified, error)


def backward_induction(
    mdp: Model,
    q_fn,
    *,
    ulps: float | None = None,
    modulus: jax.Array | None = None,
    stage: jax.Array | None = None,
    progress: Progress | None = None,
) -> Solution:
    """Backward induction ``v_t = max_a q_fn(v_{t+1})`` from ``R_T`` (a reverse scan).

    The error bound follows the rounding stage by stage: ``e_t <= ρ_t + κ e_{t+1}``, ``e_T = 0``
    (``ulps`` and ``modulus`` as for :func:`value_iteration`). With ``stage=t`` (an int,
    traced or not) only stage ``t``'s policy and values are kept: a loop of ``T − t`` backups
    whose memory is `[S]`, not `[T + 1, S]` (the same numbers, bit for bit). ``progress`` is
    called after every stage.
    """
    kappa = mdp.discount if modulus is None else modulus
    T = mdp.horizon
    end = 0 if stage is None else stage

    def backup(v_next, e_next, t):
        policy, v = greedy(q_fn(v_next))
        e = rounding_margin(mdp, v_next, ulps=ulps) + kappa * e_next
        e = e * (1 + 4 * jnp.finfo(e.dtype).eps)
        if progress is not None:
            jax.debug.callback(progress, T - t, T - end, e)
        return policy, v, e

    zero = jnp.zeros((), mdp.terminal_reward.dtype)
    if stage is None:

        def step(carry, t):  # stacks its input values (see _bounds._finite_bounds)
            policy, v, e = backup(*carry, t)
            return (v, e), (policy, carry[0], e)

        xs = None if progress is None else jnp.arange(T)  # the stage index, for progress only
        (first, _), (policy, later, errors) = jax.lax.scan(
            step, (mdp.terminal_reward, zero), xs, length=T, reverse=True
        )
        values = jnp.concatenate([first[None], later], axis=0)
        return Solution(policy, values, jnp.asarray(T), jnp.asarray(True), jnp.max(errors))

    def body(i, carry):
        v_next, e_next, e_max, _ = carry
        policy, v, e = backup(v_next, e_next, T - 1 - i)
        return v, e, jnp.maximum(e_max, e), policy

    S = mdp.num_states
    init = (mdp.terminal_reward, zero, zero, jnp.zeros(S, jnp.int32))
    v, _, e_max, policy = jax.lax.fori_loop(0, T - stage, body, init)
    return Solution(policy, v, jnp.asarray(T - stage), jnp.asarray(True), e_max)


@functools.partial(jax.jit, static_argnames=("progress",))
def solve_core(
    mdp: Model,
    tol: jax.Array | None,
    max_iterations: jax.Array,
    stage: jax.Array | None = None,
    progress: Progress | None = None,
) -> Solution:
    """:func:`solve` on validated inputs: pure, jit/vmap-friendly; ``tol=None`` = default.

    ``max_iterations`` and ``stage`` are array leaves (a new guard or stage never recompiles);
    ``progress`` a static :class:`Progress` (None: no callback in the program).
    """

    def q_fn(v):
        return q_values(mdp, v)

    ulps, kappa = backup_ulps(mdp), contraction_modulus(mdp)
    if mdp.is_finite_horizon:
        return backward_induction(
            mdp, q_fn, ulps=ulps, modulus=kappa, stage=stage, progress=progress
        )
    if tol is None:
        tol = default_tolerance(mdp, ulps=ulps, modulus=kappa)
    tol = jnp.asarray(tol, mdp.rewards.dtype)
    return value_iteration(
        mdp, q_fn, tol, max_iterations, ulps=ulps, modulus=kappa, progress=progress
    )


@refuses("tol", "max_iterations", "fill_width")
def solve(
    mdp: Model,
    *,
    options: SolverOptions | None = None,
    stage: int | None = None,
    progress: bool | Callable[[int, int], None] | None = None,
) -> Solution:
    """An optimal deterministic Markov policy of ``mdp`` and its values.

    Finite horizon: backward induction ``V_t = max_a r + γ P V_{t+1}``, ``V_T = R_T``, as a
    jit-compiled reverse ``lax.scan``. Infinite horizon: value iteration from 0 in a
    ``lax.while_loop`` with Puterman's stopping rule (Puterman 1994, Thm 6.3.1) adjusted for
    rounding. With ``δ`` the last change, ``ρ`` the rounding error of one backup
    (:func:`rounding_margin`) and ``κ`` the contraction factor (``γ``), it stops once
    ``(κδ + 2ρ)/(1 − κ) <= ε/2``: the values are then within ``ε/2`` of ``V*`` and the greedy
    policy is ε-optimal *in the working dtype*. It also stops once rounding dominates (no
    further sweep can certify more, see :func:`value_iteration`) or after ``max_iterations``.
    ``converged`` says whether ε was certified. A requested ε below about ``4ρ/(1 − κ)`` never
    is (in float32 ``ρ`` is a few ulps of ``max|r| + max|V|``, e.g. ε ≈ 3e-3 for values ≈ 80
    at ``γ = 0.96``); the iteration then runs until rounding stops its progress, and
    ``error_bound`` says what holds. ``V*`` is the optimal value of the model as stored (its
    arrays in the working dtype). Works under ``jax.jit`` and ``jax.vmap`` over the model's
    arrays.

    Args:
      mdp: from :func:`make_mdp` (or a privatized copy of one).
      options: :class:`~jaxprivmdp.SolverOptions`: ``tol`` (ε, the optimality target of
        value iteration, infinite horizon only; default :func:`default_tolerance`, always
        certifiable) and ``max_iterations`` (guard on value-iteration sweeps, not static:
        changing it does not recompile). ``fill_width`` is not used (no robust fill).
      stage: finite horizon: keep only stage ``t``'s policy and values (`[S]` each, bit for
        bit those of the full result; memory `[S]`, not `[T + 1, S]`: a 1000×1000 map with
        ``T = 2000`` needs tens of GB in full). ``stage=0`` gives ``V_0`` (``s0``'s value is
        ``values[mdp.initial_state]``); another stage's policy is recomputed on request by
        ``solve(mdp, stage=t)`` (``T − t`` backups; ``t`` is not static: no recompilation).
        Infinite horizon: None or 0 (the results are `[S]` anyway).
      progress: report long runs: True prints a line on stderr at most every 5 s (stage
        and time left, or sweep and last change), a callable gets ``(done, total)`` as often
        (``total`` is ``max_iterations`` for value iteration). Through ``jax.debug.callback``:
        works under ``jax.jit``; when None the compiled program has no callback at all.
        The reporter is part of the compiled program: pass the same function object each
        call (a new ``lambda`` every call compiles again).

    Returns:
      A :class:`Solution`. Masked actions are never chosen; ties go to the lowest index.

    Raises:
      ValueError: for a ``tol``, ``max_iterations``, ``stage`` or ``progress`` out of range.

    References:
      Gohari, Hale, Topcu, CDC 2020, Algorithm 1 steps 3-4, Section III-A.
    """
    check_model(mdp)
    opts = solver_options(options)
    tol, max_iterations = opts.tol, opts.max_iterations
    check_iterations(tol, max_iterations)
    check_stage(mdp, stage)
    label = "backward induction" if mdp.is_finite_horizon else "value iteration"
    if stage is not None and mdp.is_finite_horizon:
        stage = jnp.asarray(stage, jnp.int32)
    else:
        stage = None
    return solve_core(mdp, tol, max_iterations, stage, as_progress(progress, label))
