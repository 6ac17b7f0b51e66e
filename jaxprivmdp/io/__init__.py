"""Files: reading models the user gives and writing results whole or not at all.

``_files`` reads ``.npz`` archives defensively (sizes, member names, dtypes checked before
anything is loaded) and writes outputs atomically; ``_load`` holds the public readers
(``load_mdp``, ``load_labels``; PRISM's states and properties files are read by
``_states`` and ``_props``), which read ``.npz`` models and dispatch PRISM's and Storm's
explicit formats to ``_transitions`` (``.tra``), ``_rewards`` (reward structures and files),
``_labels`` (``.lab``) and ``_drn`` (Storm's DRN; ``_drn_model`` picks its rewards, labels
and initial state), which share the line and number parsing of ``_text``; files in
PRISM's plain form are read block by block with array operations (``_columns``, decimals
rounded as Python's ``float`` does in ``_decimals``), other forms line by line. ``_save``
writes models (``save_mdp``): an ``.npz``, or through ``_export`` PRISM's explicit files or a
DRN file. PRISM's explicit files of interval models (``[lower,upper]`` for each probability)
are read and laid out by ``_interval_files``. ``_prism_source`` builds models from PRISM/JANI
sources through Storm (``load_prism``, the optional extra ``storm``; sources with interval
updates through ``_prism_source_interval``).

Imports: ``jaxprivmdp._checks`` and :mod:`jaxprivmdp.models`. What the command line uses
beyond the public readers is in :mod:`jaxprivmdp.io.core` (the internal API).
"""

from ._load import load_labels as load_labels
from ._load import load_mdp as load_mdp
from ._prism_source import load_prism as load_prism
from ._props import load_properties as load_properties
from ._save import save_mdp as save_mdp
from ._states import load_variables as load_variables

__all__ = [
    "load_labels",
    "load_mdp",
    "load_prism",
    "load_properties",
    "load_variables",
    "save_mdp",
]
