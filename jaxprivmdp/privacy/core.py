"""The internal API of :mod:`jaxprivmdp.privacy`: what the other layers import.

What the experiments, mechanisms and command line use of the accounting beyond the
public functions: the private rows of a model and the smallest ε a row admits.

Not part of ``jaxprivmdp.*`` (no promise to users; names may change with the library).
Other subpackages import this module or :mod:`jaxprivmdp.privacy`, never its underscore
modules (``tests/test_layout.py`` checks it).
"""

from ._adjacency import as_adjacency as as_adjacency
from ._private_rows import PrivateRows as PrivateRows
from ._private_rows import ragged_rows as ragged_rows
from ._private_rows import rows_of_input as rows_of_input
from ._private_rows import smallest_entry as smallest_entry
from ._release import model_rows as model_rows
from ._release import release_of_rows as release_of_rows
from ._row import smallest_epsilon as smallest_epsilon

__all__ = [
    "as_adjacency",
    "model_rows",
    "PrivateRows",
    "ragged_rows",
    "release_of_rows",
    "rows_of_input",
    "smallest_entry",
    "smallest_epsilon",
]
