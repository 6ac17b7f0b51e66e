"""The MDP container and its eager validation.

Named dimensions used throughout the package: ``S`` states, ``A`` actions, ``T`` horizon,
``K`` privacy levels, ``N`` trials.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from .._checks import (
    ROW_SUM_TOLERANCE,
    as_numpy,
    check_int,
    check_range,
    float_array,
    refuse_subnormal,
    working_dtype,
)


@dataclasses.dataclass(frozen=True, kw_only=True)
class ModelFields:
    """What every kind of model has besides its transitions (see :class:`TabularMDP`).

    Attributes:
      rewards: `[S, A]` one-step rewards ``r(s, a)``.
      terminal_reward: `[S]` terminal values ``R_T`` (finite horizon; zeros otherwise).
      discount: scalar ``γ`` (an array leaf: sweeping it never recompiles).
      action_mask: `[S, A]` bool, True where the action is allowed (the paper's ``A_s``).
      horizon: static ``T >= 1`` or None for the infinite-horizon discounted problem.
      initial_state: static index of ``s_0``.
    """

    rewards: jax.Array
    terminal_reward: jax.Array
    discount: jax.Array
    action_mask: jax.Array
    horizon: int | None = dataclasses.field(default=None, metadata=dict(static=True))
    initial_state: int = dataclasses.field(default=0, metadata=dict(static=True))

    @property
    def num_states(self) -> int:
        return self.rewards.shape[0]

    @property
    def num_actions(self) -> int:
        return self.rewards.shape[1]

    @property
    def is_finite_horizon(self) -> bool:
        return self.horizon is not None

    def shared_fields(self) -> dict:
        """The fields above, to build another kind of model from this one."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(ModelFields)}


#: ``γ`` of an infinite-horizon model whose discount is not given (:func:`resolve_discount`).
DEFAULT_DISCOUNT = 0.95


def resolve_discount(horizon: int | None, discount: float | None) -> float:
    """The one rule for ``discount`` in every constructor (``make_mdp``, ``make_sparse_mdp``,
    ``load_mdp``, the examples): a given discount is kept; otherwise a finite horizon
    ``T`` means the undiscounted ``T``-step problem (``γ = 1``), and no horizon the
    infinite-horizon discounted problem with ``γ =`` :data:`DEFAULT_DISCOUNT` (0.95)."""
    if discount is not None:
        return discount
    return 1.0 if horizon is not None else DEFAULT_DISCOUNT


MODEL_DATA_FIELDS = ["rewards", "terminal_reward", "discount", "action_mask"]
MODEL_META_FIELDS = ["horizon", "initial_state"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class TabularMDP(ModelFields):
    """A finite MDP ``(S, A_s, r, P, T, γ)`` with dense rows, as an immutable pytree.

    Build it with :func:`make_mdp`, which validates every field; this class itself never
    validates (JAX rebuilds pytrees with tracers). Fields are keyword-only.

    Attributes:
      transitions: `[S, A, S]` ``P(s' | s, a)``. Rows of masked actions are ignored.
      support: None, or `[S, A, S]` bool: each row's *public* support, the entries that may
        be positive whatever the data. A release made by this library carries the support it
        was privatized over (its input's nonzero pattern under ``support="nonzero"``, else
        every entry); the support-aware sets use it and never ``P̄ > 0``, whose zeros may be
        noise (a projection, an underflowed draw). None: not known (the support-aware sets
        are then refused).
      rewards, terminal_reward, discount, action_mask, horizon, initial_state: see
        :class:`ModelFields`.
    """

    transitions: jax.Array
    support: jax.Array | None = None


jax.tree_util.register_dataclass(
    TabularMDP,
    data_fields=["transitions", "support", *MODEL_DATA_FIELDS],
    meta_fields=MODEL_META_FIELDS,
)


def check_mask(action_mask: ArrayLike | None, S: int, A: int) -> np.ndarray:
    """A concrete `[S, A]` action mask as bool (default all True); every state needs one."""
    if action_mask is None:
        return np.ones((S, A), bool)
    mask = as_numpy("action_mask", action_mask)
    if mask.shape != (S, A):
        raise ValueError(f"action_mask must have shape [S, A] = {(S, A)}, got {mask.shape}")
    if mask.dtype != np.bool_:
        if not np.all(np.isin(mask, (0, 1))):
            raise ValueError("action_mask must be boolean (True = allowed)")
        mask = mask.astype(bool)
    no_action = np.flatnonzero(~mask.any(axis=1))
    if no_action.size:
        raise ValueError(f"state(s) {no_action.tolist()} have no allowed action in action_mask")
    return mask


def validate_transitions(
    transitions: ArrayLike, action_mask: ArrayLike | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Checks a concrete `[S, A, S]` transition array and `[S, A]` mask on the host.

    Returns:
      float64 and bool NumPy copies (nothing the user gave is changed).

    Raises:
      ValueError: naming the first offending entry or row.
    """
    given = getattr(transitions, "dtype", None)
    P = float_array("transitions", transitions, np.float64)
    if P.ndim != 3 or P.shape[0] != P.shape[2] or min(P.shape) < 1:
        raise ValueError(f"transitions must have shape [S, A, S] with S, A >= 1, got {P.shape}")
    S, A, _ = P.shape
    mask = check_mask(action_mask, S, A)
    neg = np.argwhere((P < 0) & mask[:, :, None])
    if neg.size:
        s, a, s2 = (int(i) for i in neg[0])
        raise ValueError(
            f"transitions has a negative entry {float(P[s, a, s2]):.9g} at (state {s}, action {a}, "
            f"next state {s2})"
        )
    sums = P.astype(np.float64).sum(axis=-1)
    off = np.argwhere((np.abs(sums - 1) > ROW_SUM_TOLERANCE) & mask)
    if off.size:
        s, a = (int(i) for i in off[0])
        half = given is not None and np.dtype(given) == np.float16
        why = (
            "; float16 rounds rows by up to 1e-3: store them in float32 or float64" if half else ""
        )
        raise ValueError(
            f"transitions row (state {s}, action {a}) sums to {float(sums[s, a]):.9g}, not 1 "
            f"(tolerance {ROW_SUM_TOLERANCE:.1e}; {len(off)} such row(s)){why}; rows are never "
            "renormalized silently"
        )
    return P, mask


def make_mdp(
    transitions: ArrayLike,
    rewards: ArrayLike,
    *,
    terminal_reward: ArrayLike | None = None,
    horizon: int | None = None,
    discount: float | None = None,
    action_mask: ArrayLike | None = None,
    initial_state: int = 0,
    support: ArrayLike | None = None,
    dtype=None,
) -> TabularMDP:
    """Validates the arrays of an MDP and returns an immutable :class:`TabularMDP`.

    Args:
      transitions: `[S, A, S]` transition probabilities ``P(s' | s, a)``; every allowed row
        must be non-negative and sum to 1 within a dtype-aware tolerance. Nothing is
        renormalized. No nonzero entry of an allowed row, and no nonzero reward, may lie
        below ``np.finfo(dtype).tiny`` in magnitude (XLA flushes such subnormal numbers to
        zero): use 0 or a normal number.
      rewards: `[S, A]` rewards ``r(s, a)``.
      terminal_reward: `[S]` terminal reward ``R_T`` (default zeros). Finite horizon only.
      horizon: ``T >= 1`` for a finite horizon, or None for an infinite discounted horizon.
      discount: ``γ`` in ``[0, 1]``, ``< 1`` when ``horizon`` is None. Default
        (:func:`resolve_discount`): 1 with a horizon, 0.95 without.
      action_mask: `[S, A]` bool, True = allowed (default all True). Every state needs one.
      initial_state: index of ``s_0``.
      support: optional `[S, A, S]` bool, the rows' *public* support (entries that may be
        positive whatever the data; ``transitions`` must be 0 outside it). Give it for a
        released ``P̄`` built by hand (the true rows' zero pattern under
        ``support="nonzero"``, else all True) to use the support-aware sets; a release's
        zeros are never taken as the support. Default None: not recorded.
      dtype: float dtype of the arrays (default: JAX's default float, float32 unless x64).

    Returns:
      A :class:`TabularMDP`.

    Raises:
      ValueError: naming the offending argument (shape, NaN/inf, negative entry, a row that
        does not sum to 1, a state with no allowed action, discount or horizon out of range,
        probability outside ``support``, a nonzero probability or reward below the dtype's
        smallest normal number).
    """
    dtype = working_dtype(dtype)
    P, mask = validate_transitions(transitions, action_mask)
    refuse_subnormal("transitions", P, dtype, allowed=mask[:, :, None])
    S, A, _ = P.shape
    fields = validate_model_fields(
        S, A, rewards, terminal_reward, horizon, discount, initial_state, dtype
    )
    if support is not None:
        support = jnp.asarray(check_support(support, P, mask))
    return TabularMDP(
        transitions=jnp.asarray(P, dtype),
        support=support,
        action_mask=jnp.asarray(mask),
        **fields,
    )


def check_support(support: ArrayLike, probs: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """A concrete public support like ``probs`` as bool; ``probs`` must be 0 outside it."""
    supp = as_numpy("support", support)
    if supp.shape != probs.shape:
        raise ValueError(f"support must have the shape of the rows {probs.shape}, got {supp.shape}")
    if supp.dtype != np.bool_:
        if not np.all(np.isin(supp, (0, 1))):
            raise ValueError("support must be boolean (True = the entry may be positive)")
        supp = supp.astype(bool)
    outside = np.argwhere((probs != 0) & ~supp & mask[:, :, None])
    if outside.size:
        s, a, j = (int(i) for i in outside[0])
        raise ValueError(
            f"row (state {s}, action {a}) puts {float(probs[s, a, j]):.9g} on entry {j}, "
            "outside its support"
        )
    return supp


def validate_model_fields(
    S, A, rewards, terminal_reward, horizon, discount, initial_state, dtype
) -> dict:
    """Checks everything of a model but its transitions; returns the constructor's fields."""
    R = float_array("rewards", rewards, dtype, normal=True)
    if R.shape != (S, A):
        raise ValueError(f"rewards must have shape [S, A] = {(S, A)}, got {R.shape}")
    if terminal_reward is None:
        RT = np.zeros(S, dtype)
    else:
        RT = float_array("terminal_reward", terminal_reward, dtype, normal=True)
        if RT.shape != (S,):
            raise ValueError(f"terminal_reward must have shape [S] = {(S,)}, got {RT.shape}")
    discount = resolve_discount(horizon, discount)
    if horizon is not None:
        if isinstance(horizon, bool) or not isinstance(horizon, int | np.integer):
            raise ValueError(f"horizon must be an int >= 1 or None, got {horizon!r}")
        horizon = check_int("horizon", horizon, low=1)
        check_range("discount", discount, low=0.0, high=1.0, scalar=True)
    else:
        check_range(
            "discount (infinite horizon)", discount, low=0.0, high=1.0, high_open=True, scalar=True
        )
        if terminal_reward is not None and np.any(RT != 0):
            raise ValueError("terminal_reward is only meaningful with a finite horizon")
    # device_put: jnp.asarray would compile a conversion for each new shape (ms apiece);
    # R and RT are fresh copies, so device_put may alias them.
    return dict(
        rewards=jax.device_put(R),
        terminal_reward=jax.device_put(RT),
        discount=jnp.asarray(discount, dtype),
        horizon=horizon,
        initial_state=check_int("initial_state", initial_state, low=0, high=S),
    )


class Bucketed:
    """What a model stored in ``buckets`` (blocks with ``next_states`` `[n_b, K_b]`) says of
    its layout: the ragged point and interval models."""

    @property
    def max_successors(self) -> int:
        """The longest block's ``K_b`` (at least 1)."""
        return max((b.next_states.shape[1] for b in self.buckets), default=1)

    @property
    def num_slots(self) -> int:
        """Stored successor slots, padding included (``Σ n_b K_b``)."""
        return sum(b.next_states.size for b in self.buckets)
