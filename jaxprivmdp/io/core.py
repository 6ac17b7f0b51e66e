"""The internal API of :mod:`jaxprivmdp.io`: what the other layers import.

What the command line uses of the file layer beyond the public readers: atomic outputs
and the ``.npz`` reading it shares with :func:`jaxprivmdp.load_mdp`.

Not part of ``jaxprivmdp.*`` (no promise to users; names may change with the library).
Other subpackages import this module or :mod:`jaxprivmdp.io`, never its underscore
modules (``tests/test_layout.py`` checks it).
"""

from ._files import atomic_outputs as atomic_outputs
from ._files import atomic_path as atomic_path
from ._files import check_output_file as check_output_file
from ._files import check_output_folder as check_output_folder
from ._files import sidecar_path as sidecar_path
from ._json import json_number as json_number
from ._load import model_from_arrays as model_from_arrays
from ._load import read_model_npz as read_model_npz
from ._load import release_record as release_record
from ._load import stored_scalars as stored_scalars
from ._record import read_sidecar as read_sidecar
from ._reward_name import reward_structure_name as reward_structure_name

__all__ = [
    "atomic_outputs",
    "atomic_path",
    "check_output_file",
    "check_output_folder",
    "json_number",
    "model_from_arrays",
    "read_model_npz",
    "read_sidecar",
    "release_record",
    "reward_structure_name",
    "sidecar_path",
    "stored_scalars",
]
