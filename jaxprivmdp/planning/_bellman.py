"""Optimal policies (``solve``): backward induction and value iteration.

Finite horizon: backward induction as a reverse ``lax.scan``. Infinite horizon: value
iteration in a ``lax.while_loop`` with Puterman's ε-optimality stopping rule, adjusted for
the rounding of each backup (``_rounding``) so that what ``converged`` promises holds in the
working dtype. Both take any monotone backup ``q_fn`` (the robust ones of ``_bounds`` too).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from .._checks import check_count, check_range, is_concrete
from ..models._rows import Model, check_model, expect, transition_rows
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
      policy: `[T, S]` int (finite horizon) or `[S]` int (infinite horizon): the action chosen
        in each (stage,) state; ties go to the lowest action index.
      values: `[T + 1, S]` optimal values per stage (``values[T] = R_T``), or `[S]` the value
        iteration estimate of ``V*`` (within ``tol / 2`` of it when ``converged``).
      iterations: number of value-iteration sweeps (the horizon ``T`` for a finite horizon).
      converged: whether the stopping rule certified ``tol`` (always True for a finite
        horizon). Infinite horizon: then ``‖values − V*‖∞ <= tol / 2`` and the policy is
        ``tol``-optimal, rounding included; False after ``max_iterations`` sweeps, or when
        ``tol`` is below what the dtype can certify (see :func:`solve`).
      error_bound: scalar bound on ``‖values − V*‖∞`` (over all stages for a finite horizon)
        that holds in the working dtype: the contraction bound plus the rounding of every
        backup (:func:`rounding_margin`). ``V*`` is the optimal value of the model as stored
        (its arrays in the working dtype; the robust optimum for ``robust_solve``). None only
        for a Solution built by hand.
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
) -> Solution:
    """Value iteration of ``v ← max_a q_fn(v)`` from 0 (any monotone κ-contraction).

    ``q_fn`` maps `[S]` values to `[S, A]` action values (:func:`q_values`, or a robust one);
    ``ulps`` is the rounding of one of its backups (:func:`rounding_margin`; default the
    heuristic for robust backups) and ``modulus`` its contraction factor (default ``γ``).
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
        return v_new, error_bound(kappa, delta, rho), certified, since, done, it + 1

    v0 = jnp.zeros(mdp.num_states, mdp.rewards.dtype)
    inf = jnp.asarray(jnp.inf, v0.dtype)
    false = jnp.asarray(False)
    init = (v0, inf, false, jnp.asarray(0, jnp.int32), false, jnp.asarray(0))
    v, error, certified, _, _, it = jax.lax.while_loop(cond, body, init)
    policy, _ = greedy(q_fn(v))
    return Solution(policy, v, it, certified, error)


def backward_induction(
    mdp: Model, q_fn, *, ulps: float | None = None, modulus: jax.Array | None = None
) -> Solution:
    """Backward induction ``v_t = max_a q_fn(v_{t+1})`` from ``R_T`` (a reverse scan).

    The error bound follows the rounding stage by stage: ``e_t <= ρ_t + κ e_{t+1}``, ``e_T = 0``
    (``ulps`` and ``modulus`` as for :func:`value_iteration`).
    """
    kappa = mdp.discount if modulus is None else modulus

    def stage(carry, _):
        v_next, e_next = carry
        policy, v = greedy(q_fn(v_next))
        e = rounding_margin(mdp, v_next, ulps=ulps) + kappa * e_next
        e = e * (1 + 4 * jnp.finfo(e.dtype).eps)
        return (v, e), (policy, v, e)

    zero = jnp.zeros((), mdp.terminal_reward.dtype)
    _, (policy, values, errors) = jax.lax.scan(
        stage, (mdp.terminal_reward, zero), length=mdp.horizon, reverse=True
    )
    values = jnp.concatenate([values, mdp.terminal_reward[None]], axis=0)
    return Solution(policy, values, jnp.asarray(mdp.horizon), jnp.asarray(True), jnp.max(errors))


@jax.jit
def solve_core(mdp: Model, tol: jax.Array | None, max_iterations: jax.Array) -> Solution:
    """:func:`solve` on validated inputs: pure, jit/vmap-friendly; ``tol=None`` = default.

    ``max_iterations`` is an array leaf (a new guard never recompiles).
    """

    def q_fn(v):
        return q_values(mdp, v)

    ulps, kappa = backup_ulps(mdp), contraction_modulus(mdp)
    if mdp.is_finite_horizon:
        return backward_induction(mdp, q_fn, ulps=ulps, modulus=kappa)
    if tol is None:
        tol = default_tolerance(mdp, ulps=ulps, modulus=kappa)
    tol = jnp.asarray(tol, mdp.rewards.dtype)
    return value_iteration(mdp, q_fn, tol, max_iterations, ulps=ulps, modulus=kappa)


def solve(
    mdp: Model, *, tol: ArrayLike | None = None, max_iterations: ArrayLike = 10_000
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
      tol: ε, the optimality target of value iteration (infinite horizon only); default
        :func:`default_tolerance` (always certifiable).
      max_iterations: guard on value-iteration sweeps (not static: changing it does not
        recompile).

    Returns:
      A :class:`Solution`. Masked actions are never chosen; ties go to the lowest index.

    References:
      Gohari, Hale, Topcu, CDC 2020, Algorithm 1 steps 3-4, Section III-A.
    """
    check_model(mdp)
    check_iterations(tol, max_iterations)
    return solve_core(mdp, tol, max_iterations)
