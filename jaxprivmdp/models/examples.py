"""Example models: the paper's two (Section VI), a gridworld (a sparse robot map) and a
leader-election-like chain with one state of huge fan-out (ragged rows)."""

from __future__ import annotations

import jax
import numpy as np

from .._checks import check_count, check_key, check_range, working_dtype
from ._dense import TabularMDP, make_mdp, resolve_discount
from ._memory import check_fits, device_memory, host_memory
from ._ragged import RaggedMDP, make_ragged_mdp
from ._sparse import PADDING, SparseMDP, make_sparse_mdp

HIT_PROBABILITIES = (0.9, 0.2, 0.8, 0.3)


def investment(*, dtype=None) -> TabularMDP:
    """Example 1: a corporation choosing which of four startups to acquire.

    States ``s0`` (0), ``Hit`` (1), ``Miss`` (2). At ``s0`` the four actions (startups) lead
    to ``Hit`` with probabilities 0.9, 0.2, 0.8, 0.3 and to ``Miss`` otherwise; ``Hit`` and
    ``Miss`` have a single (self-loop) action. Horizon 1, terminal reward 1 at ``Hit`` and 0
    elsewhere, no immediate rewards. ``s0`` is never re-entered, so rows have structural zeros:
    privatize with ``support="nonzero"`` (the paper privatizes the (hit, miss) pair).
    The optimal value is 0.9. With ``β = 0.1`` the sweep reproduces the paper's Figure 1a
    (β is not stated in the paper; the figure's numbers fit it).
    """
    P = np.zeros((3, 4, 3))
    for a, hit in enumerate(HIT_PROBABILITIES):
        P[0, a, 1], P[0, a, 2] = hit, 1 - hit
    P[1, :, 1] = 1.0
    P[2, :, 2] = 1.0
    mask = np.zeros((3, 4), bool)
    mask[0, :] = True
    mask[1:, 0] = True
    return make_mdp(
        P,
        np.zeros((3, 4)),
        terminal_reward=np.array([0.0, 1.0, 0.0]),
        horizon=1,
        action_mask=mask,
        dtype=dtype,
    )


def random_mdp(
    key: jax.Array,
    num_states: int = 20,
    num_actions: int = 5,
    horizon: int | None = 10,
    *,
    discount: float | None = None,
    dtype=None,
) -> TabularMDP:
    """Example 2: a random MDP (the paper does not give its generator; this one is ours).

    Generator (kept stable: the same key gives the same MDP in every release):
    rows ``P(s, a) ~ Dirichlet(1, …, 1)`` (uniform on the simplex, so every entry is
    positive almost surely), then rewards ``r(s, a) ~ U[0, 1]``, then terminal rewards
    ``R_T(s) ~ U[0, 1]``, all drawn in float64 on the host by NumPy's PCG64 generator
    seeded with the key's data, so the MDP does not depend on the JAX backend or dtype. All
    actions are allowed; ``s0 = 0``. The paper's absolute values in Figure 1b come from its
    own (unpublished) generator and differ from ours; the qualitative behaviour matches.

    Args:
      key: PRNG key.
      num_states: ``S`` (paper: 20).
      num_actions: ``A`` (paper: 5).
      horizon: ``T`` (paper: 10), or None for an infinite horizon (then ``discount < 1`` and
        rewards are ``U[0, 1]``, no terminal reward).
      discount: ``γ`` (default, as everywhere: 1 with a horizon, 0.95 without).
      dtype: float dtype of the arrays.

    Raises:
      ValueError: for a key that is not a PRNG key (an int seed included), sizes < 1, or a
        size whose dense arrays do not fit in memory (checked before anything is drawn).
    """
    key = check_key(key)
    S, A = check_count("num_states", num_states), check_count("num_actions", num_actions)
    _check_random_mdp_size(S, A, working_dtype(dtype))
    seed = np.asarray(jax.random.key_data(key)).astype(np.uint64).ravel().tolist()
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(S), size=(S, A))
    P /= P.sum(-1, keepdims=True)  # exact rounding of the float64 draws
    discount = resolve_discount(horizon, discount)
    if horizon is None:
        rewards = rng.uniform(0, 1, size=(S, A))
        return make_mdp(P, rewards, discount=discount, dtype=dtype)
    rewards = rng.uniform(0, 1, size=(S, A))
    terminal = rng.uniform(0, 1, size=S)
    return make_mdp(
        P, rewards, terminal_reward=terminal, horizon=horizon, discount=discount, dtype=dtype
    )


def _check_random_mdp_size(S: int, A: int, dtype) -> None:
    """Refuses a random MDP the machine cannot hold. Its rows are dense (every entry is
    positive): drawn in float64 on the host and validated in a float64 copy (16 bytes per
    entry at the peak), then moved to the device in ``dtype``."""
    entries = S * A * S
    what = f"random_mdp(num_states={S}, num_actions={A}): [S, A, S] = {entries:.3g} entries"
    instead = (
        "use fewer states, or a sparse model for large S (jp.make_sparse_mdp with successor "
        "lists, or jp.examples.gridworld)"
    )
    check_fits(what, entries * 16, host_memory(), "this machine's memory", instead)
    check_fits(what, entries * dtype.itemsize, device_memory(), "this device's memory", instead)


# Actions of the gridworld: (row, column) moves.
MOVES = ((-1, 0), (0, 1), (1, 0), (0, -1))  # up, right, down, left


def gridworld(
    height: int,
    width: int,
    *,
    slip: float = 0.1,
    obstacles=None,
    horizon: int | None = None,
    discount: float | None = None,
    dtype=None,
) -> SparseMDP:
    """A robot on a ``height × width`` map: walls, a goal, slip to the perpendicular moves.

    States are cells ``s = row · width + column``; the robot starts at the top-left cell
    (``s0 = 0``) and the goal is the bottom-right cell. Actions are up, right, down, left.
    A move goes where intended with probability ``1 − slip`` and to each perpendicular
    direction with ``slip / 2``; a move into the border or an obstacle stays put (merged
    with any other way of staying, so a row lists at most 3 distinct successors, in
    increasing state order as :func:`~jaxprivmdp.to_sparse` lists them). Every step
    costs 1 (reward −1) until the goal, which is absorbing with reward 0. Obstacle cells
    are states no move enters (their actions stay put, reward 0). Built with NumPy in O(S)
    memory: a 1000×1000 map (10⁶ states) builds and validates in about 2 s on a 2-core CPU.

    Args:
      height: rows of the map, ``>= 1``.
      width: columns of the map, ``>= 1`` (and ``height · width >= 2``).
      slip: probability of slipping, in ``[0, 1]``.
      obstacles: None, or a bool array `[height, width]` (True = wall), or an iterable of
        ``(row, column)`` cells. Neither the start nor the goal may be an obstacle.
      horizon: ``T`` for a finite horizon, or None for an infinite discounted one.
      discount: ``γ`` (``< 1`` for an infinite horizon). Default, as everywhere: 1 with a
        horizon (the ``T``-step problem), 0.95 without.
      dtype: float dtype.

    Returns:
      A :class:`SparseMDP` with ``S = height · width``, ``A = 4``, ``K = 3``.

    Raises:
      ValueError: for sizes < 1, ``slip`` outside ``[0, 1]``, or obstacles that are out of
        range or cover the start or the goal.
    """
    H, W = check_count("height", height), check_count("width", width)
    S = H * W
    if S < 2:
        raise ValueError("a gridworld needs at least 2 cells (a start and a goal)")
    check_range("slip", slip, low=0.0, high=1.0, scalar=True)
    walls = _obstacle_map(obstacles, H, W)
    goal = S - 1
    if walls[0, 0] or walls.reshape(-1)[goal]:
        raise ValueError("obstacles must not cover the start (0, 0) or the goal")
    rows, cols = np.divmod(np.arange(S), W)
    blocked = walls.reshape(-1)

    def target(move):  # [S] where a move from every cell lands
        r, c = rows + move[0], cols + move[1]
        inside = (r >= 0) & (r < H) & (c >= 0) & (c < W)
        dest = np.where(inside, np.clip(r, 0, H - 1) * W + np.clip(c, 0, W - 1), -1)
        return np.where(inside & ~blocked[np.maximum(dest, 0)], dest, np.arange(S))

    next_states = np.empty((S, 4, 3), np.int64)
    probs = np.empty((S, 4, 3))
    for a, move in enumerate(MOVES):
        left, right = MOVES[(a - 1) % 4], MOVES[(a + 1) % 4]
        next_states[:, a] = np.stack([target(move), target(left), target(right)], -1)
        probs[:, a] = (1 - slip, slip / 2, slip / 2)
    # Absorbing goal and obstacle cells: stay put with probability 1.
    still = blocked.copy()
    still[goal] = True
    next_states[still] = np.arange(S)[still, None, None]
    probs[still] = (1.0, 0.0, 0.0)
    next_states, probs = _merge_duplicates(next_states, probs)
    rewards = np.where(still[:, None], 0.0, -1.0) * np.ones((1, 4))
    return make_sparse_mdp(
        next_states,
        probs,
        rewards,
        horizon=horizon,
        discount=discount,
        initial_state=0,
        dtype=dtype,
    )


def _obstacle_map(obstacles, H: int, W: int) -> np.ndarray:
    if obstacles is None:
        return np.zeros((H, W), bool)
    arr = np.asarray(obstacles)
    if arr.dtype == np.bool_:
        if arr.shape != (H, W):
            raise ValueError(
                f"obstacles must have shape [height, width] = {(H, W)}, got {arr.shape}"
            )
        return arr.copy()
    cells = arr.reshape(-1, 2) if arr.size else np.zeros((0, 2), int)
    if not np.issubdtype(cells.dtype, np.integer):
        raise ValueError("obstacles must be a bool map or (row, column) integer pairs")
    bad = (cells[:, 0] < 0) | (cells[:, 0] >= H) | (cells[:, 1] < 0) | (cells[:, 1] >= W)
    if bad.any():
        raise ValueError(f"obstacle {tuple(cells[bad][0])} lies outside the {H}x{W} map")
    walls = np.zeros((H, W), bool)
    walls[cells[:, 0], cells[:, 1]] = True
    return walls


def _merge_duplicates(next_states: np.ndarray, probs: np.ndarray):
    """Adds the probability of a repeated successor to its first slot; the rest is padding.
    Each row's successors come out in increasing state order, padding last."""
    K = next_states.shape[-1]
    for j in range(1, K):
        for i in range(j):
            same = (next_states[..., j] == next_states[..., i]) & (probs[..., j] > 0)
            probs[..., i] += np.where(same, probs[..., j], 0)
            probs[..., j] = np.where(same, 0, probs[..., j])
    # Successors in increasing state order, padding last: the order to_sparse writes, in
    # which the Dirichlet mechanism's fast sampler draws as for the dense model.
    order = np.argsort(np.where(probs > 0, next_states, np.iinfo(np.int64).max), axis=-1)
    next_states = np.take_along_axis(np.where(probs > 0, next_states, PADDING), order, -1)
    return next_states, np.take_along_axis(probs, order, -1)


def leader_like(
    num_states: int = 12_400,
    fanout: int = 4_096,
    *,
    actions: int = 1,
    restart: float = 0.0,
    seed: int = 0,
    discount: float | None = None,
    horizon: int | None = None,
    dtype=None,
) -> RaggedMDP:
    """A chain shaped like Storm's ``leader4_8`` (synchronous leader election, 12,400 states,
    16,495 transitions, one state with 4,096 successors): rows of very unequal length.

    Our own generator (no file of Storm's). State 0 draws a "round" uniformly among states
    ``1 .. fanout``; each state ``s`` in ``1 .. S − 2`` moves to ``s + 1`` (action 0) or, for
    ``a >= 1``, with probability ``restart · u`` (``u`` uniform, on 30% of the rows) back to
    0; state ``S − 1`` (the goal, "elected") is absorbing. Actions ``a >= 1`` of state 0
    go to state ``a``. Rewards uniform in ``[0, 1)``, 0 at the goal. Defaults: one action, no
    restart: ``fanout + S − 1`` transitions (16,495 at the defaults).

    Returns:
      A :class:`RaggedMDP` (``to_padded`` gives the `[S, A, fanout]` layout).
    """
    S, A, F = num_states, actions, fanout
    if not (A >= 1 and 1 <= F <= S - 2):
        raise ValueError(f"need actions >= 1 and 1 <= fanout <= num_states - 2, got {A}, {F}")
    rng = np.random.default_rng(seed)
    chain = np.arange(1, S - 1)
    rid = [np.zeros(F, np.int64), np.arange(1, A), chain * A]  # state 0; 1..S-2, action 0
    nxt = [np.arange(1, F + 1), np.arange(2, A + 1), chain + 1]
    p = [np.full(F, 1.0 / F), np.ones(A - 1), np.ones(chain.size)]
    for a in range(1, A):
        back = restart * rng.random(chain.size) * (rng.random(chain.size) < 0.3)
        rid += [chain * A + a, chain * A + a]
        nxt += [chain + 1, np.zeros(chain.size, np.int64)]
        p += [1 - back, back]
    rid.append((S - 1) * A + np.arange(A))
    nxt.append(np.full(A, S - 1))
    p.append(np.ones(A))
    rewards = rng.random((S, A))
    rewards[S - 1] = 0
    return make_ragged_mdp(
        np.concatenate(rid),
        np.concatenate(nxt),
        np.concatenate(p),
        rewards,
        discount=discount,
        horizon=horizon,
        dtype=dtype,
    )
