"""Markov policies: validation against a model, and the rows a decision rule uses.

:func:`validate_policy` checks a policy's shape, dtype and support (on the device when it
can); :func:`select_rows`, :func:`policy_rows` and :func:`weighted_sum` pick and weight the
rows of the actions a deterministic or stochastic decision rule takes.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from .._checks import as_numpy, is_concrete
from ..models.core import Model, RaggedRows, Rows, check_model, transition_rows


def is_deterministic(policy: jax.Array) -> bool:
    """Integer policies pick one action per state; float policies are probabilities."""
    return jnp.issubdtype(policy.dtype, jnp.integer)


def check_stage(mdp: Model, stage) -> None:
    """``stage``: None, or an int in ``[0, T)`` (finite horizon; only 0 for an infinite one)."""
    if stage is None or not is_concrete(stage):
        return
    top = mdp.horizon if mdp.is_finite_horizon else 1
    if isinstance(stage, bool) or not isinstance(stage, int | np.integer) or not 0 <= stage < top:
        where = f"[0, {top})" if mdp.is_finite_horizon else "0 (infinite horizon)"
        raise ValueError(f"stage must be None or an int in {where}, got {stage!r}")


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


# Policies up to this many entries are checked on the host: copying one back and checking it
# in NumPy took 43 µs against 77 µs for a dispatch of the device check and its answer
# (`[10, 20]` ints on the CPU backend). Larger ones are checked
# on the device, without a copy.
HOST_CHECK_MAX = 1 << 14


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
        return policy  # a large policy from solve(), checked without a copy
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
    """A device policy of the working dtype and shape, larger than ``HOST_CHECK_MAX``, that
    passes :func:`_policy_ok`.

    One small dispatch and one boolean back, instead of copying the policy and the mask to
    the host; anything else (host arrays, small policies, other dtypes, invalid policies)
    takes the host path, which names the problem.
    """
    if not isinstance(policy, jax.Array) or policy.size <= HOST_CHECK_MAX:
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
    """``(rows, rewards, weights)`` a decision rule uses: see :func:`select_rows`.

    A :class:`RaggedMDP`'s rows stay in their blocks: all rows, with ``π`` `[S, A]` as the
    weights (a deterministic rule's one-hot), whose zeros drop the unused rows exactly.
    """
    all_rows = transition_rows(mdp)
    if isinstance(all_rows, RaggedRows):
        if is_deterministic(decision):
            decision = jax.nn.one_hot(decision, mdp.num_actions, dtype=mdp.rewards.dtype)
        return all_rows, mdp.rewards, decision.astype(mdp.rewards.dtype)
    probs, weights = select_rows(all_rows.probs, decision)

    def chosen(x):
        return None if x is None else select_rows(x, decision)[0]

    rows = Rows(probs, chosen(all_rows.next_states), chosen(all_rows.support))
    rewards, _ = select_rows(mdp.rewards, decision)
    return rows, rewards, weights
