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
from ._load import model_from_arrays as model_from_arrays
from ._load import read_model_npz as read_model_npz
from ._load import stored_scalars as stored_scalars

__all__ = [
    "atomic_outputs",
    "atomic_path",
    "check_output_file",
    "check_output_folder",
    "model_from_arrays",
    "read_model_npz",
    "stored_scalars",
]
