"""Dynamic programming: optimal policies (``solve``) and policy values (``evaluate``).

Finite horizon: backward induction as a reverse ``lax.scan``. Infinite horizon: value
iteration in a ``lax.while_loop`` with Puterman's ε-optimality stopping rule, and exact
policy evaluation by a linear solve.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from ._checks import as_numpy, check_count, check_range, is_concrete
from ._models import Model, Rows, check_model, expect, transition_rows
from ._sparse import SparseMDP


class Solution(NamedTuple):
    """An optimal policy and its values.

    Attributes:
      policy: `[T, S]` int (finite horizon) or `[S]` int (infinite horizon): the action chosen
        in each (stage,) state; ties go to the lowest action index.
      values: `[T + 1, S]` optimal values per stage (``values[T] = R_T``), or `[S]` the value
        iteration estimate of ``V*`` (within ``tol / 2`` of it when ``converged``).
      iterations: number of value-iteration sweeps (the horizon ``T`` for a finite horizon).
      converged: whether the stopping rule was met (always True for a finite horizon).
    """

    policy: jax.Array
    values: jax.Array
    iterations: jax.Array
    converged: jax.Array


def check_iterations(tol, max_iterations) -> None:
    """``tol`` a finite scalar > 0 (or None), ``max_iterations`` an int >= 1 (or traced)."""
    if tol is not None:
        check_range("tol", tol, low=0.0, low_open=True, scalar=True)
    if is_concrete(max_iterations):
        check_count("max_iterations", max_iterations)


def default_tolerance(mdp: Model) -> jax.Array:
    """ε for infinite-horizon iterations: relative to the value scale ``max|r| / (1 − γ)``.

    ``1e-8`` of that scale in float64, ``1e-4`` in float32 (whose rounding allows no better).
    """
    rel = 1e-8 if mdp.rewards.dtype == jnp.float64 else 1e-4
    scale = jnp.max(jnp.abs(jnp.where(mdp.action_mask, mdp.rewards, 0))) / (1 - mdp.discount)
    return rel * jnp.maximum(scale, 1)


def q_values(mdp: Model, values: jax.Array) -> jax.Array:
    """`[S, A]` ``r(s, a) + γ Σ_s' P(s, a, s') v(s')``; masked actions get the dtype's min."""
    q = mdp.rewards + mdp.discount * expect(transition_rows(mdp), values)
    return jnp.where(mdp.action_mask, q, jnp.finfo(q.dtype).min)


def greedy(q: jax.Array) -> tuple[jax.Array, jax.Array]:
    policy = jnp.argmax(q, axis=-1).astype(jnp.int32)  # first maximum: lowest index
    return policy, jnp.take_along_axis(q, policy[:, None], axis=-1)[:, 0]


def value_iteration(mdp: Model, q_fn, tol: jax.Array, max_iterations: jax.Array) -> Solution:
    """Value iteration of ``v ← max_a q_fn(v)`` from 0 (any monotone γ-contraction).

    ``q_fn`` maps `[S]` values to `[S, A]` action values (:func:`q_values`, or a robust one).
    """
    # Puterman (1994), Thm 6.3.1: once ‖v' − v‖∞ < ε(1 − γ)/(2γ), the greedy policy of v' is
    # ε-optimal and ‖v' − V*‖∞ < ε/2.
    gamma = mdp.discount
    threshold = jnp.where(gamma > 0, tol * (1 - gamma) / (2 * gamma), jnp.inf)

    def cond(carry):
        _, delta, it = carry
        return (delta >= threshold) & (it < max_iterations)

    def body(carry):
        v, _, it = carry
        _, v_new = greedy(q_fn(v))
        return v_new, jnp.max(jnp.abs(v_new - v)), it + 1

    v0 = jnp.zeros(mdp.num_states, mdp.rewards.dtype)
    inf = jnp.asarray(jnp.inf, v0.dtype)
    v, delta, it = jax.lax.while_loop(cond, body, (v0, inf, jnp.asarray(0)))
    policy, _ = greedy(q_fn(v))
    return Solution(policy, v, it, delta < threshold)


def backward_induction(mdp: Model, q_fn) -> Solution:
    """Backward induction ``v_t = max_a q_fn(v_{t+1})`` from ``R_T`` (a reverse scan)."""

    def stage(v_next, _):
        policy, v = greedy(q_fn(v_next))
        return v, (policy, v)

    _, (policy, values) = jax.lax.scan(stage, mdp.terminal_reward, length=mdp.horizon, reverse=True)
    values = jnp.concatenate([values, mdp.terminal_reward[None]], axis=0)
    return Solution(policy, values, jnp.asarray(mdp.horizon), jnp.asarray(True))


@jax.jit
def solve_core(mdp: Model, tol: jax.Array | None, max_iterations: jax.Array) -> Solution:
    """:func:`solve` on validated inputs: pure, jit/vmap-friendly; ``tol=None`` = default.

    ``max_iterations`` is an array leaf (a new guard never recompiles).
    """

    def q_fn(v):
        return q_values(mdp, v)

    if mdp.is_finite_horizon:
        return backward_induction(mdp, q_fn)
    tol = default_tolerance(mdp) if tol is None else jnp.asarray(tol, mdp.rewards.dtype)
    return value_iteration(mdp, q_fn, tol, max_iterations)


def solve(
    mdp: Model, *, tol: ArrayLike | None = None, max_iterations: ArrayLike = 10_000
) -> Solution:
    """An optimal deterministic Markov policy of ``mdp`` and its values.

    Finite horizon: backward induction ``V_t = max_a r + γ P V_{t+1}``, ``V_T = R_T``, as a
    jit-compiled reverse ``lax.scan``. Infinite horizon: value iteration from 0 in a
    ``lax.while_loop``, stopped once ``‖v_{n+1} − v_n‖∞ < ε(1 − γ)/(2γ)``, which makes the
    greedy policy ε-optimal (Puterman 1994, Thm 6.3.1), or after ``max_iterations``.
    Works under ``jax.jit`` and ``jax.vmap`` over the model's arrays.

    Args:
      mdp: from :func:`make_mdp` (or a privatized copy of one).
      tol: ε, the optimality target of value iteration (infinite horizon only); default
        :func:`default_tolerance`.
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


# ----------------------------------------------------------------------------- policies


def is_deterministic(policy: jax.Array) -> bool:
    """Integer policies pick one action per state; float policies are probabilities."""
    return jnp.issubdtype(policy.dtype, jnp.integer)


def select_rows(x: jax.Array, decision: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The per-action entries a decision rule uses, and their weights.

    Args:
      x: `[S, A, ...]` per (state, action) data (rewards, transition rows, ...).
      decision: `[S]` int actions, or `[S, A]` probabilities ``π(a | s)``.

    Returns:
      ``(rows, weights)``: `[S, 1, ...]` and ones `[S, 1]` for a deterministic rule (only the
      chosen rows are gathered), or ``x`` itself and ``π`` `[S, A]` for a stochastic one.
    """
    if is_deterministic(decision):
        idx = decision.reshape(decision.shape + (1,) * (x.ndim - 1))
        return jnp.take_along_axis(x, idx, axis=1), jnp.ones((x.shape[0], 1), x.dtype)
    return x, decision.astype(x.dtype)


def weighted_sum(weights: jax.Array, terms: jax.Array) -> jax.Array:
    """`[S]` ``Σ_a π(a|s) terms(s, a)``, where unused actions contribute exactly 0.

    Masked rows may hold any finite values; their terms can overflow, and ``0 · inf`` would
    be NaN, so zero-weight terms are dropped rather than multiplied.
    """
    return jnp.sum(jnp.where(weights > 0, weights * terms, 0), axis=-1)


def validate_policy(mdp: Model, policy: ArrayLike) -> jax.Array:
    """Checks a policy's shape, dtype and support against ``mdp``.

    Deterministic policies are ints `[T, S]` / `[S]`; stochastic ones are probabilities
    `[T, S, A]` / `[S, A]` that sum to 1 over allowed actions.

    Raises:
      ValueError: naming the problem (shape, out-of-range or masked action, bad row).
    """
    check_model(mdp)
    S, A = mdp.num_states, mdp.num_actions
    lead = (mdp.horizon,) if mdp.is_finite_horizon else ()
    if not is_concrete(policy, mdp.action_mask):
        # Under a transformation: shapes and dtypes are known at trace time, values are not.
        policy = jnp.asarray(policy)
        if is_deterministic(policy):
            shape, dtype = lead + (S,), jnp.int32
        else:
            shape, dtype = lead + (S, A), mdp.rewards.dtype
        if policy.shape != shape:
            raise ValueError(f"policy must have shape {shape}, got {policy.shape}")
        return policy.astype(dtype)
    if _valid_on_device(mdp, policy, lead):
        return policy  # the common case: a policy from solve(), checked without a copy
    pol = as_numpy("policy", policy)
    mask = np.asarray(mdp.action_mask)
    if np.issubdtype(pol.dtype, np.integer):
        if pol.shape != lead + (S,):
            raise ValueError(
                f"a deterministic policy must have shape {lead + (S,)}, got {pol.shape}"
            )
        if pol.min() < 0 or pol.max() >= A:
            raise ValueError(f"policy actions must lie in [0, {A}), got {pol.min()}..{pol.max()}")
        used = np.take_along_axis(np.broadcast_to(mask, lead + (S, A)), pol[..., None], -1)
        if not used.all():
            where = tuple(int(i) for i in np.argwhere(~used[..., 0])[0])
            raise ValueError(f"policy chooses a masked action at (stage/state) {where}")
        return _as_device(policy, pol, jnp.int32)
    if not np.issubdtype(pol.dtype, np.floating):
        raise ValueError(
            f"policy must be ints (actions) or floats (probabilities), got {pol.dtype}"
        )
    if pol.shape != lead + (S, A):
        raise ValueError(f"a stochastic policy must have shape {lead + (S, A)}, got {pol.shape}")
    if not np.all(np.isfinite(pol)) or np.any(pol < 0):
        raise ValueError("policy probabilities must be finite and non-negative")
    if np.any((pol > 0) & ~mask):
        raise ValueError("policy puts probability on a masked action")
    tol = 256 * np.finfo(pol.dtype).eps
    if np.any(np.abs(pol.sum(-1) - 1) > tol):
        raise ValueError("policy probabilities must sum to 1 over actions in every state")
    return _as_device(policy, pol, mdp.rewards.dtype)


@jax.jit
def _policy_ok(action_mask: jax.Array, policy: jax.Array) -> jax.Array:
    """True when a policy of the right shape is valid: the checks below, as one reduction."""
    if is_deterministic(policy):
        mask = jnp.broadcast_to(action_mask, policy.shape + action_mask.shape[-1:])
        in_range = (policy >= 0) & (policy < action_mask.shape[-1])
        idx = jnp.clip(policy, 0, action_mask.shape[-1] - 1)[..., None]
        return jnp.all(in_range & jnp.take_along_axis(mask, idx, -1)[..., 0])
    mask = jnp.broadcast_to(action_mask, policy.shape)
    tol = 256 * jnp.finfo(policy.dtype).eps
    return jnp.all(jnp.isfinite(policy) & (policy >= 0) & ((policy == 0) | mask)) & jnp.all(
        jnp.abs(policy.sum(-1) - 1) <= tol
    )


def _valid_on_device(mdp: Model, policy, lead: tuple) -> bool:
    """A device policy of the working dtype and shape that passes :func:`_policy_ok`.

    One small dispatch and one boolean back, instead of copying the policy and the mask to
    the host; anything else (host arrays, other dtypes, invalid policies) takes the host
    path, which names the problem.
    """
    if not isinstance(policy, jax.Array):
        return False
    S, A = mdp.num_states, mdp.num_actions
    deterministic = policy.dtype == jnp.int32 and policy.shape == lead + (S,)
    stochastic = policy.dtype == mdp.rewards.dtype and policy.shape == lead + (S, A)
    if not (deterministic or stochastic):
        return False
    ok = _policy_ok(mdp.action_mask, policy)
    # Inside another function's trace even concrete inputs give a traced result.
    return is_concrete(ok) and bool(ok)


def _as_device(given, host: np.ndarray, dtype) -> jax.Array:
    """``given`` itself when it already is a device array of ``dtype`` (no new upload)."""
    if isinstance(given, jax.Array) and given.dtype == dtype:
        return given
    return jnp.asarray(host, dtype)


def policy_rows(mdp: Model, decision: jax.Array):
    """``(rows, rewards, weights)`` a decision rule uses: see :func:`select_rows`."""
    all_rows = transition_rows(mdp)
    probs, weights = select_rows(all_rows.probs, decision)
    def chosen(x):
        return None if x is None else select_rows(x, decision)[0]

    rows = Rows(probs, chosen(all_rows.next_states), chosen(all_rows.support))
    rewards, _ = select_rows(mdp.rewards, decision)
    return rows, rewards, weights


def _evaluate_finite(mdp: Model, policy: jax.Array) -> jax.Array:
    def stage(v_next, decision):
        rows, rewards, weights = policy_rows(mdp, decision)
        v = weighted_sum(weights, rewards + mdp.discount * expect(rows, v_next))
        return v, v

    _, values = jax.lax.scan(stage, mdp.terminal_reward, policy, reverse=True)
    return jnp.concatenate([values, mdp.terminal_reward[None]], axis=0)


def _evaluate_infinite(mdp: Model, policy: jax.Array) -> jax.Array:
    rows, rewards, weights = policy_rows(mdp, policy)
    if isinstance(mdp, SparseMDP):
        return _evaluate_by_iteration(mdp, rows, rewards, weights)
    used = weights > 0
    p_pi = jnp.einsum("sa,sat->st", weights, jnp.where(used[..., None], rows.probs, 0))
    r_pi = weighted_sum(weights, rewards)
    lhs = jnp.eye(mdp.num_states, dtype=p_pi.dtype) - mdp.discount * p_pi
    return jnp.linalg.solve(lhs, r_pi)


def _evaluate_by_iteration(mdp: Model, rows: Rows, rewards, weights) -> jax.Array:
    """``V = r_π + γ P_π V`` by fixed-point iteration (no `[S, S]` matrix for sparse models).

    The γ-contraction is iterated until an iteration changes nothing beyond rounding (or
    ``γ^n`` is below the dtype's resolution): the result is the fixed point to float
    precision, as the dense linear solve is.
    """
    eps = jnp.finfo(mdp.rewards.dtype).eps
    r_pi = weighted_sum(weights, rewards)
    # γ^n · max|V| < eps · max|V| after n = log(eps)/log(γ) sweeps, plus some for rounding.
    gamma = mdp.discount
    limit = jnp.where(gamma > 0, jnp.ceil(jnp.log(eps) / jnp.log(gamma)) + 16, 1)

    def cond(carry):
        _, delta, scale, it = carry
        return (delta > 4 * eps * scale) & (it < limit)

    def body(carry):
        v, _, _, it = carry
        new = r_pi + gamma * weighted_sum(weights, expect(rows, v))
        return new, jnp.max(jnp.abs(new - v)), jnp.max(jnp.abs(new)), it + 1

    inf, zero = jnp.asarray(jnp.inf, r_pi.dtype), jnp.asarray(0, r_pi.dtype)
    v, *_ = jax.lax.while_loop(cond, body, (r_pi, inf, zero, 1))
    return v


@jax.jit
def evaluate_core(mdp: Model, policy: jax.Array) -> jax.Array:
    """:func:`evaluate` on a validated policy: pure, jit/vmap/grad-friendly."""
    if mdp.is_finite_horizon:
        return _evaluate_finite(mdp, policy)
    return _evaluate_infinite(mdp, policy)


def evaluate(mdp: Model, policy: ArrayLike) -> jax.Array:
    """Values of a Markov policy on ``mdp``.

    Finite horizon: ``V_t(s) = Σ_a π_t(a|s) (r(s, a) + γ Σ_s' P(s, a, s') V_{t+1}(s'))`` by a
    reverse ``lax.scan``. Infinite horizon: the exact solution of ``(I − γ P_π) V = r_π``.

    Works under ``jax.jit``, ``jax.vmap`` and ``jax.grad`` (with respect to the model's
    arrays or a stochastic policy).

    Args:
      mdp: the MDP to evaluate on (e.g. the true one, for a policy synthesized privately).
      policy: deterministic `[T, S]` / `[S]` ints, or stochastic `[T, S, A]` / `[S, A]`
        probabilities.

    Returns:
      `[T + 1, S]` values per stage (``V_T = R_T``), or `[S]` for an infinite horizon.

    Raises:
      ValueError: for a policy of the wrong shape or one using masked actions.
    """
    return evaluate_core(mdp, validate_policy(mdp, policy))
