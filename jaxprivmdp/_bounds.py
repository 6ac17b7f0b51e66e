"""Pessimistic and optimistic values of a privately synthesized policy (Theorems 1 and 2)."""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree
from jax.typing import ArrayLike

from ._checks import host_scalar
from ._models import Model, check_model
from ._planning import (
    check_iterations,
    default_tolerance,
    policy_rows,
    validate_policy,
    weighted_sum,
)
from ._robust import check_radius_inputs, fill_width, outward_radius, robust_backup
from ._sparse import SparseMDP


class PrivacyBounds(NamedTuple):
    """Bounds on the value of a privately synthesized policy.

    Attributes:
      pessimistic: ``v̲`` `[T + 1, S]` (finite horizon) or `[S]` (infinite horizon).
      optimistic: ``v̄``, same shape.
      cost: scalar ``v̄(s0) − v̲(s0)`` at the initial state (stage 0): the bound on the cost
        of privacy ``|E[V^π̄(s0) | P̄, k] − V̄^π̄(s0)|``.
      iterations: robust value-iteration sweeps (the horizon for a finite horizon).
      converged: whether the infinite-horizon iteration met its tolerance. The returned
        bounds are valid either way (they are widened by the remaining contraction error).
    """

    pessimistic: jax.Array
    optimistic: jax.Array
    cost: jax.Array
    iterations: jax.Array
    converged: jax.Array


def _stage_backup(mdp: Model, decision, v_low, v_high, alpha, beta, width, support_aware):
    rows, rewards, weights = policy_rows(mdp, decision)
    low, high = robust_backup(
        rows, alpha, v_low, v_high, beta, width=width, support_aware=support_aware
    )
    g = mdp.discount
    return weighted_sum(weights, rewards + g * low), weighted_sum(weights, rewards + g * high)


def _finite_bounds(mdp, policy, alpha, beta, width, support_aware):
    def stage(carry, decision):
        out = _stage_backup(mdp, decision, *carry, alpha, beta, width, support_aware)
        return out, out

    rt = mdp.terminal_reward
    _, (low, high) = jax.lax.scan(stage, (rt, rt), policy, reverse=True)
    low = jnp.concatenate([low, rt[None]], axis=0)
    high = jnp.concatenate([high, rt[None]], axis=0)
    s0 = mdp.initial_state
    one = jnp.asarray(True)
    return PrivacyBounds(low, high, high[0, s0] - low[0, s0], jnp.asarray(mdp.horizon), one)


def rounding_margin(mdp: Model, v_low: jax.Array, v_high: jax.Array) -> jax.Array:
    """A bound on the floating-point error of one robust backup (a documented heuristic).

    A backup adds a reward to ``γ`` times a convex combination of values, summed over up to
    ``S`` terms: its rounding error is taken as ``(16 + 2⌈log₂ S⌉)`` ulps of
    ``max|r| + max|v|``, the error of pairwise summation with a factor of safety. Checked
    against float64 fixed points in ``tests/test_bounds.py``.
    """
    eps = jnp.finfo(mdp.rewards.dtype).eps
    ulps = 16 + 2 * math.ceil(math.log2(max(mdp.num_states, 2)))
    r = jnp.max(jnp.abs(jnp.where(mdp.action_mask, mdp.rewards, 0)))
    v = jnp.maximum(jnp.max(jnp.abs(v_low)), jnp.max(jnp.abs(v_high)))
    return ulps * eps * (r + v)


def _dense_tangent_solve(g, y):
    # Implicit differentiation of the fixed point solves (γB − I) x = y with B the backup's
    # Jacobian: a dense [2S, 2S] system, built only under differentiation.
    flat_y, unravel = ravel_pytree(y)
    jac = jax.jacfwd(lambda x: ravel_pytree(g(unravel(x)))[0])(flat_y)
    return unravel(jnp.linalg.solve(jac, flat_y))


def _infinite_bounds(mdp, policy, alpha, beta, width, support_aware, tol, max_iterations):
    gamma = mdp.discount
    # Stop when the contraction error bound γ d / (1 − γ) is below tol.
    threshold = jnp.where(gamma > 0, tol * (1 - gamma) / gamma, jnp.inf)

    def backup(v):
        return _stage_backup(mdp, policy, *v, alpha, beta, width, support_aware)

    def residual(v):
        new = backup(v)
        return new[0] - v[0], new[1] - v[1]

    def iterate(_, v0):
        def cond(carry):
            _, _, d_low, d_high, it = carry
            return (jnp.maximum(d_low, d_high) >= threshold) & (it < max_iterations)

        def body(carry):
            v_low, v_high, _, _, it = carry
            new_low, new_high = backup((v_low, v_high))
            d_low = jnp.max(jnp.abs(new_low - v_low))
            d_high = jnp.max(jnp.abs(new_high - v_high))
            return new_low, new_high, d_low, d_high, it + 1

        inf = jnp.asarray(jnp.inf, v0[0].dtype)
        low, high, d_low, d_high, it = jax.lax.while_loop(cond, body, (*v0, inf, inf, 0))
        # The count travels as a float: custom_root's JVP rule mishandles integer aux outputs
        # (exact: max_iterations is far below 2^24).
        return (low, high), (d_low, d_high, it.astype(low.dtype))

    v0 = jnp.zeros(mdp.num_states, mdp.rewards.dtype)
    # custom_root: the loop runs forward only; gradients come from the implicit function
    # theorem at the fixed point (reverse mode cannot go through a while_loop).
    (low, high), (d_low, d_high, it) = jax.lax.custom_root(
        residual, (v0, v0), iterate, _dense_tangent_solve, has_aux=True
    )
    it = it.astype(jnp.int32)
    # With ρ the rounding error of one backup, ‖v_n − v*‖∞ ≤ (γ‖v_n − v_{n−1}‖∞ + ρ)/(1 − γ)
    # (Banach, with a perturbed last step): widen so the bounds stay valid, also in float32.
    rho = rounding_margin(mdp, low, high)
    low = low - (gamma * d_low + rho) / (1 - gamma)
    high = high + (gamma * d_high + rho) / (1 - gamma)
    s0 = mdp.initial_state
    converged = jnp.maximum(d_low, d_high) < threshold
    return PrivacyBounds(low, high, high[s0] - low[s0], it, converged)


@functools.partial(jax.jit, static_argnames=("width", "support_aware"))
def bounds_core(
    mdp, policy, alpha, beta, tol, max_iterations, *, width: int, support_aware: bool = False
) -> PrivacyBounds:
    """:func:`cost_of_privacy` on validated inputs: pure, jit/vmap/grad-friendly.

    ``alpha`` is the radius in the model's dtype; ``tol=None`` means the default tolerance.
    Only ``width`` (a shape) is static.
    """
    if mdp.is_finite_horizon:
        return _finite_bounds(mdp, policy, alpha, beta, width, support_aware)
    tol = default_tolerance(mdp) if tol is None else jnp.asarray(tol, mdp.rewards.dtype)
    return _infinite_bounds(mdp, policy, alpha, beta, width, support_aware, tol, max_iterations)


def bounds_width(mdp: Model, alpha, support_aware: bool) -> int:
    """The static fill width: all ``S`` for support-aware dense rows (capacities outside
    the support are 0, so the shared order may run past ``fill_width``)."""
    if support_aware and not isinstance(mdp, SparseMDP):
        return mdp.num_states
    return fill_width(alpha, mdp.num_states)


def cost_of_privacy(
    private_mdp: Model,
    policy: ArrayLike,
    *,
    k: ArrayLike,
    beta: ArrayLike = 0.1,
    support_aware: bool = False,
    tol: ArrayLike | None = None,
    max_iterations: int = 10_000,
) -> PrivacyBounds:
    """Pessimistic and optimistic values ``v̲``, ``v̄`` of a policy on a privatized MDP.

    With ``α = sqrt(log(1/β) / (2(k + 1)))`` and ``P̂`` the set of the paper's eq. (1):

    .. math::
        v̲_t(s) = Σ_a π_t(a|s) (r(s, a) + γ \\min_{p ∈ P̂(s, a)} p · v̲_{t+1}),
        \\qquad v̲_T = R_T,

    and ``v̄`` with a max. Then ``v̲ ≤ V̄^π ≤ v̄`` at every stage and state, and
    ``|E[V^π(s0) | P̄, k] − V̄^π(s0)| ≤ v̄_0(s0) − v̲_0(s0)`` (Theorem 1). For an infinite
    horizon the two fixed points (Theorem 2) are approached by iterating the γ-contractions to
    ``tol``; the returned vectors are widened by ``(γ‖v_n − v_{n−1}‖∞ + ρ) / (1 − γ)``, the
    remaining contraction error plus a rounding margin ``ρ`` per backup (see
    ``rounding_margin``), so they bound the fixed points even if not converged, in float32
    too. The radius ``α`` is rounded up to the model's dtype (a larger box is conservative).

    Works under ``jax.jit``, ``jax.vmap`` (over ``k``, ``beta``, the policy and the model's
    arrays) and ``jax.grad`` (with respect to ``k``, ``beta`` and the model's arrays; for an
    infinite horizon by implicit differentiation at the fixed point, which builds a dense
    `[2S, 2S]` Jacobian). Values are checked only when concrete.

    Each inner problem is solved exactly by the sort-based greedy of
    :func:`robust_expectation`, ranking the next-stage values once per stage. With concrete
    ``k`` and ``beta`` only the first ``⌈1/α⌉ + 1`` entries in value order are touched (see
    ``fill_width``); under ``jax.jit`` with a traced ``k`` all ``S`` are (still exact, slower
    for large ``S``): to sweep ``k`` quickly, use :func:`sweep`, which sizes the fill from its
    concrete grid.

    Args:
      private_mdp: the privatized MDP ``M̄`` (with ``P̄``).
      policy: deterministic `[T, S]` / `[S]` ints or stochastic `[T, S, A]` / `[S, A]`.
      k: the Dirichlet mechanism's parameter used to privatize, ``k > 0``.
      beta: ``β`` in ``(0, 1)`` of Lemma 1 (the paper's figures fit ``β = 0.1``).
      support_aware: restrict ``P̂`` (both its ``β`` part and its box) to each row's
        support: a :class:`SparseMDP`'s listed successors, or the nonzero entries of a
        dense ``P̄``. Valid when the support is public structure that ``P̄`` shares with
        ``P`` (``support="nonzero"``, or a sparse model): then the true row, ``P̄`` and
        ``E[P | P̄, k]`` all put no mass outside it, so restricting the set keeps every
        point the paper's argument uses (Lemma 2 and Theorem 1's induction). Default False:
        the paper's set over the whole simplex.
      tol: infinite horizon: iterate until the contraction error is below ``tol`` (default
        :func:`default_tolerance`).
      max_iterations: infinite horizon: guard on iterations (not static).

    Returns:
      :class:`PrivacyBounds`.

    Raises:
      ValueError: for ``k <= 0``, ``beta`` outside ``(0, 1)``, or an invalid policy.

    References:
      Gohari, Hale, Topcu, CDC 2020, Theorems 1 and 2, Lemma 1, problem (P).
    """
    check_model(private_mdp, "private_mdp")
    policy = validate_policy(private_mdp, policy)
    dtype = private_mdp.rewards.dtype
    check_radius_inputs(k, beta, dtype)
    check_iterations(tol, max_iterations)
    alpha = outward_radius(k, beta, dtype)
    return bounds_core(
        private_mdp,
        policy,
        host_scalar(alpha, dtype),
        host_scalar(beta, dtype),
        tol,
        max_iterations,
        width=bounds_width(private_mdp, alpha, bool(support_aware)),
        support_aware=bool(support_aware),
    )
