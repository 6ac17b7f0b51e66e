"""What :func:`~jaxprivmdp.io.load_mdp` and :func:`~jaxprivmdp.io.load_labels` take from a
DRN file read by :mod:`._drn`: the rewards of one reward model, the labels, the initial state.
"""

from __future__ import annotations

import warnings

import numpy as np

from ._drn import Drn
from ._text import where


def drn_rewards(drn: Drn, reward_structure, mask: np.ndarray) -> np.ndarray:
    """The one-step rewards `[S, A]` of the reward model ``reward_structure`` (a name or an
    index; None: the only one): state reward plus action reward (0 where masked). Without
    reward models every reward is 0 (with a warning, attributed to ``load_mdp``'s caller)."""
    path, names = drn.explicit.path, drn.reward_names
    listing = "; ".join(f"{i}: {'unnamed' if n is None else repr(n)}" for i, n in enumerate(names))
    S, A = mask.shape
    if reward_structure is None:
        if not names:
            warnings.warn(
                f"{where(path)} has no reward model (@reward_models): every reward is 0",
                stacklevel=4,  # drn_rewards <- _load_explicit <- load_mdp <- the caller
            )
            return np.zeros((S, A))
        if len(names) > 1:
            raise ValueError(
                f"{where(path)} has {len(names)} reward models ({listing}): pass "
                "reward_structure= a name or an index"
            )
        k = 0
    elif isinstance(reward_structure, (bool, np.bool_)):
        raise ValueError(f"reward_structure must be a name or an index, got {reward_structure!r}")
    elif isinstance(reward_structure, (int, np.integer)) and 0 <= reward_structure < len(names):
        k = int(reward_structure)
    elif isinstance(reward_structure, str) and reward_structure in names:
        k = names.index(reward_structure)
    else:
        raise ValueError(
            f"{where(path)}: no reward model {reward_structure!r}; available: {listing or 'none'}"
        )
    r = np.zeros((S, A))
    r[drn.choice_state, drn.choice_local] = drn.action_rewards[:, k]
    r += drn.state_rewards[:, k, None]
    return np.where(mask, r, 0.0)


def drn_labels(drn: Drn) -> dict[str, np.ndarray]:
    """``{name: bool[S]}``: the file's labels in order of appearance, and always ``init``
    (state 0 if no state has it, PRISM's rule) and ``deadlock`` (else the states without
    a choice)."""
    ex = drn.explicit
    S = ex.num_states
    labels = {}
    for name, states in drn.labels.items():
        labels[name] = np.zeros(S, bool)
        labels[name][states] = True
    if "init" not in labels:
        labels["init"] = np.arange(S) == 0
    if "deadlock" not in labels:
        labels["deadlock"] = np.ones(S, bool)
        labels["deadlock"][drn.choice_state] = False
    return labels


def drn_initial_state(drn: Drn) -> int:
    """The state labelled ``init``; refuses none or several (then pass ``initial_state=``)."""
    path = drn.explicit.path
    starts = drn.labels.get("init", [])
    if len(starts) != 1:
        shown = ", ".join(str(s) for s in starts[:10])
        found = f"{len(starts)} states are labelled 'init' ({shown})"
        if not starts:
            found = "no state is labelled 'init'"
        raise ValueError(f"{where(path)}: {found}; pass initial_state= to pick one")
    return int(starts[0])
