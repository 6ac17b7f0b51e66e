"""The name of the reward structure :func:`~jaxprivmdp.load_mdp` takes from an explicit file.

A model holds its rewards, not their name; a command that plans on them says which
structure it used (``reward structure: "steps"``), so a cost is never mistaken for a gain.
"""

from __future__ import annotations

import warnings
from pathlib import Path

from ._drn import reward_model_names
from ._rewards import pick_structure


def reward_structure_name(path, reward_structure: int | str | None = None) -> str | None:
    """The name of the reward structure ``load_mdp(path, reward_structure=...)`` uses.

    Args:
      path: the model file (``.drn``, ``.tra``; None for any other: an ``.npz`` holds
        unnamed rewards).
      reward_structure: as for :func:`~jaxprivmdp.load_mdp` (a name, an index, or None: the
        only one).

    Returns:
      The name, or None for an unnamed structure, no structure, or an ``.npz``. Call it after
      ``load_mdp`` accepted the same arguments: an ambiguous choice also gives None.
    """
    path = Path(path)
    if isinstance(reward_structure, str):
        return reward_structure
    if path.suffix == ".drn":
        names = reward_model_names(path)
        k = 0 if reward_structure is None else int(reward_structure)
        if (reward_structure is None and len(names) != 1) or not 0 <= k < len(names):
            return None
        return names[k]
    if path.suffix == ".tra":
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # load_mdp has warned already
                structure = pick_structure(path, None, reward_structure)
        except ValueError:
            return None
        return None if structure is None else structure.name
    return None
