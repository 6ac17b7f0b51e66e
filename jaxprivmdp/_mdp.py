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


@dataclasses.dataclass(frozen=True)
class TabularMDP:
    """A finite MDP ``(S, A_s, r, P, T, γ)`` as an immutable pytree.

    Build it with :func:`make_mdp`, which validates every field; this class itself never
    validates (JAX rebuilds pytrees with tracers).

    Attributes:
      transitions: `[S, A, S]` ``P(s' | s, a)``. Rows of masked actions are ignored.
      rewards: `[S, A]` one-step rewards ``r(s, a)``.
      terminal_reward: `[S]` terminal values ``R_T`` (finite horizon; zeros otherwise).
      discount: scalar ``γ`` (an array leaf: sweeping it never recompiles).
      action_mask: `[S, A]` bool, True where the action is allowed (the paper's ``A_s``).
      horizon: static ``T >= 1`` or None for the infinite-horizon discounted problem.
      initial_state: static index of ``s_0``.
    """

    transitions: jax.Array
    rewards: jax.Array
    terminal_reward: jax.Array
    discount: jax.Array
    action_mask: jax.Array
    horizon: int | None = dataclasses.field(default=None, metadata=dict(static=True))
    initial_state: int = dataclasses.field(default=0, metadata=dict(static=True))

    @property
    def num_states(self) -> int:
        return self.transitions.shape[0]

    @property
    def num_actions(self) -> int:
        return self.transitions.shape[1]

    @property
    def is_finite_horizon(self) -> bool:
        return self.horizon is not None


jax.tree_util.register_dataclass(
    TabularMDP,
    data_fields=["transitions", "rewards", "terminal_reward", "discount", "action_mask"],
    meta_fields=["horizon", "initial_state"],
)


def check_count(name: str, value) -> int:
    """``value`` as an int ``>= 1``, or a ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ValueError(f"{name} must be an int >= 1, got {value!r}")
    return int(value)


def working_dtype(dtype=None) -> np.dtype:
    """float32 or float64 (default: JAX's default float); anything else is refused."""
    try:
        dtype = np.dtype(dtype or jnp.zeros(()).dtype)
    except TypeError:
        raise ValueError(f"dtype must be float32 or float64, got {dtype!r}") from None
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"dtype must be float32 or float64, got {dtype}")
    return dtype


def row_sum_tolerance(dtype) -> float:
    """Tolerance on ``|Σ_s' P(s, a, s') − 1|``: a few hundred ulps of the dtype."""
    return float(256 * np.finfo(dtype).eps)


def is_concrete(x) -> bool:
    """True when ``x`` holds values (not a tracer), so it can be validated eagerly."""
    return not isinstance(x, jax.core.Tracer)


def check_range(
    name: str, value, *, low=None, high=None, low_open=False, high_open=False, scalar=False
) -> None:
    """Raises ValueError unless every entry of a concrete ``value`` lies in the interval.

    With ``scalar=True`` the value must also be a single number (a silently broadcast array
    would give wrong results). Tracers pass through unchecked: validation happens at the
    eager API boundary.
    """
    if not is_concrete(value):
        return
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if scalar and arr.ndim != 0:
        raise ValueError(f"{name} must be a scalar, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {value!r}")
    bad = np.zeros(arr.shape, bool)
    if low is not None:
        bad |= arr <= low if low_open else arr < low
    if high is not None:
        bad |= arr >= high if high_open else arr > high
    if np.any(bad):
        lo = "(" if low_open else "["
        hi = ")" if high_open else "]"
        interval = f"{lo}{'-inf' if low is None else low}, {'inf' if high is None else high}{hi}"
        raise ValueError(f"{name} must lie in {interval}, got {arr[bad].ravel()[:5].tolist()}")


def as_numpy(name: str, x: ArrayLike) -> np.ndarray:
    """``np.asarray(x)``, with a ValueError naming ``name`` for ragged or odd input."""
    try:
        return np.asarray(x)
    except Exception as e:  # e.g. ragged nested lists
        raise ValueError(f"{name} could not be converted to an array: {e}") from None


def _float_array(name: str, x: ArrayLike, dtype) -> np.ndarray:
    arr = as_numpy(name, x)
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.bool_)
    ):
        raise ValueError(f"{name} must be numeric, got dtype {arr.dtype}")
    arr = arr.astype(dtype)
    bad = ~np.isfinite(arr)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"{name} has a non-finite entry {float(arr[idx])} at index {idx}")
    return arr


def validate_transitions(
    transitions: ArrayLike, action_mask: ArrayLike | None = None, *, dtype=None
) -> tuple[np.ndarray, np.ndarray]:
    """Checks an `[S, A, S]` transition array and an `[S, A]` mask; returns NumPy copies.

    Raises:
      ValueError: naming the first offending entry or row.
    """
    dtype = working_dtype(dtype)
    P = _float_array("transitions", transitions, dtype)
    # The tolerance follows the less precise of the given and the working dtype.
    given = getattr(transitions, "dtype", dtype)
    # (float32 at the coarsest: a float16 row can be off by 1e-3 and is refused.)
    tol_dtype = np.dtype(np.float32) if np.dtype(given) in (np.float16, np.float32) else dtype
    if P.ndim != 3 or P.shape[0] != P.shape[2] or min(P.shape) < 1:
        raise ValueError(f"transitions must have shape [S, A, S] with S, A >= 1, got {P.shape}")
    S, A, _ = P.shape
    if action_mask is None:
        mask = np.ones((S, A), bool)
    else:
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
    neg = np.argwhere((P < 0) & mask[:, :, None])
    if neg.size:
        s, a, s2 = (int(i) for i in neg[0])
        raise ValueError(
            f"transitions has a negative entry {float(P[s, a, s2]):.9g} at (state {s}, action {a}, "
            f"next state {s2})"
        )
    sums = P.sum(axis=-1)
    tol = row_sum_tolerance(tol_dtype)
    off = np.argwhere((np.abs(sums - 1) > tol) & mask)
    if off.size:
        s, a = (int(i) for i in off[0])
        raise ValueError(
            f"transitions row (state {s}, action {a}) sums to {float(sums[s, a]):.9g}, not 1 "
            f"(tolerance {tol:.1e} for {tol_dtype}; {len(off)} such row(s)); rows are never "
            "renormalized silently"
        )
    return P, mask


def make_mdp(
    transitions: ArrayLike,
    rewards: ArrayLike,
    *,
    terminal_reward: ArrayLike | None = None,
    horizon: int | None = None,
    discount: float = 1.0,
    action_mask: ArrayLike | None = None,
    initial_state: int = 0,
    dtype=None,
) -> TabularMDP:
    """Validates the arrays of an MDP and returns an immutable :class:`TabularMDP`.

    Args:
      transitions: `[S, A, S]` transition probabilities ``P(s' | s, a)``; every allowed row
        must be non-negative and sum to 1 within a dtype-aware tolerance. Nothing is
        renormalized.
      rewards: `[S, A]` rewards ``r(s, a)``.
      terminal_reward: `[S]` terminal reward ``R_T`` (default zeros). Finite horizon only.
      horizon: ``T >= 1`` for a finite horizon, or None for an infinite discounted horizon.
      discount: ``γ`` in ``[0, 1]``; must be ``< 1`` when ``horizon`` is None.
      action_mask: `[S, A]` bool, True = allowed (default all True). Every state needs one.
      initial_state: index of ``s_0``.
      dtype: float dtype of the arrays (default: JAX's default float, float32 unless x64).

    Returns:
      A :class:`TabularMDP`.

    Raises:
      ValueError: naming the offending argument (shape, NaN/inf, negative entry, a row that
        does not sum to 1, a state with no allowed action, discount or horizon out of range).
    """
    dtype = working_dtype(dtype)
    P, mask = validate_transitions(transitions, action_mask, dtype=dtype)
    S, A, _ = P.shape
    R = _float_array("rewards", rewards, dtype)
    if R.shape != (S, A):
        raise ValueError(f"rewards must have shape [S, A] = {(S, A)}, got {R.shape}")
    if terminal_reward is None:
        RT = np.zeros(S, dtype)
    else:
        RT = _float_array("terminal_reward", terminal_reward, dtype)
        if RT.shape != (S,):
            raise ValueError(f"terminal_reward must have shape [S] = {(S,)}, got {RT.shape}")
    if horizon is not None:
        if isinstance(horizon, bool) or not isinstance(horizon, int | np.integer):
            raise ValueError(f"horizon must be an int >= 1 or None, got {horizon!r}")
        if horizon < 1:
            raise ValueError(f"horizon must be >= 1 (or None for infinite), got {horizon}")
        horizon = int(horizon)
        check_range("discount", discount, low=0.0, high=1.0, scalar=True)
    else:
        check_range(
            "discount (infinite horizon)", discount, low=0.0, high=1.0, high_open=True, scalar=True
        )
        if terminal_reward is not None and np.any(RT != 0):
            raise ValueError("terminal_reward is only meaningful with a finite horizon")
    if isinstance(initial_state, bool) or not isinstance(initial_state, int | np.integer):
        raise ValueError(f"initial_state must be an int, got {initial_state!r}")
    if not 0 <= initial_state < S:
        raise ValueError(f"initial_state must lie in [0, {S}), got {initial_state}")
    return TabularMDP(
        transitions=jnp.asarray(P),
        rewards=jnp.asarray(R),
        terminal_reward=jnp.asarray(RT),
        discount=jnp.asarray(discount, dtype),
        action_mask=jnp.asarray(mask),
        horizon=horizon,
        initial_state=int(initial_state),
    )
