"""Files: reading models the user gives and writing results whole or not at all.

``_files`` reads ``.npz`` archives defensively (sizes, member names, dtypes checked before
anything is loaded) and writes outputs atomically; ``_load`` reads models from ``.npz``,
PRISM's and Storm's explicit formats (transitions, labels, reward structures).

Imports: ``jaxprivmdp._checks`` and :mod:`jaxprivmdp.models`.
"""

from ._load import load_labels as load_labels
from ._load import load_mdp as load_mdp

__all__ = ["load_labels", "load_mdp"]
