"""The paper's two example MDPs (Section VI)."""

from __future__ import annotations

import jax
import numpy as np

from ._checks import check_count, check_key
from ._mdp import TabularMDP, make_mdp

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
      discount: ``γ`` (default 1 for a finite horizon, 0.95 for an infinite one).
      dtype: float dtype of the arrays.

    Raises:
      ValueError: for a key that is not a PRNG key (an int seed included) or sizes < 1.
    """
    key = check_key(key)
    S, A = check_count("num_states", num_states), check_count("num_actions", num_actions)
    seed = np.asarray(jax.random.key_data(key)).astype(np.uint64).ravel().tolist()
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(S), size=(S, A))
    P /= P.sum(-1, keepdims=True)  # exact rounding of the float64 draws
    if discount is None:
        discount = 1.0 if horizon is not None else 0.95
    if horizon is None:
        rewards = rng.uniform(0, 1, size=(S, A))
        return make_mdp(P, rewards, discount=discount, dtype=dtype)
    rewards = rng.uniform(0, 1, size=(S, A))
    terminal = rng.uniform(0, 1, size=S)
    return make_mdp(
        P, rewards, terminal_reward=terminal, horizon=horizon, discount=discount, dtype=dtype
    )
