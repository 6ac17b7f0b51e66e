"""The internal API of :mod:`jaxprivmdp.models`: what the other layers import.

What the layers above use of the models beyond the public names: the rows of any layout
(``Model``, ``Rows``, :func:`transition_rows`), the mechanism's input (``_support``), the
ragged blocks, and the validation the loaders share.

Not part of ``jaxprivmdp.*`` (no promise to users; names may change with the library).
Other subpackages import this module or :mod:`jaxprivmdp.models`, never its underscore
modules (``tests/test_layout.py`` checks it).
"""

from ._convert import interval_of_point as interval_of_point
from ._convert import to_dense as to_dense
from ._convert import to_sparse as to_sparse
from ._dense import TabularMDP as TabularMDP
from ._dense import check_mask as check_mask
from ._dense import make_mdp as make_mdp
from ._dense import resolve_discount as resolve_discount
from ._dense import validate_model_fields as validate_model_fields
from ._interval import IntervalMDP as IntervalMDP
from ._interval import make_interval_mdp as make_interval_mdp
from ._interval import validate_intervals as validate_intervals
from ._interval_expect import fill_margin as fill_margin
from ._interval_expect import interval_excess as interval_excess
from ._interval_expect import interval_expect as interval_expect
from ._interval_expect import nature_choice as nature_choice
from ._interval_expect import row_entries as row_entries
from ._interval_ragged import INTERVAL_MODELS as INTERVAL_MODELS
from ._interval_ragged import RaggedIntervalMDP as RaggedIntervalMDP
from ._interval_ragged import interval_lists as interval_lists
from ._interval_ragged import ragged_interval_from_lists as ragged_interval_from_lists
from ._memory import device_memory as device_memory
from ._ragged import LAYOUTS as LAYOUTS
from ._ragged import RaggedMDP as RaggedMDP
from ._ragged import RaggedRows as RaggedRows
from ._ragged import blockwise as blockwise
from ._ragged import entry_count as ragged_entry_count
from ._ragged import is_skewed as is_skewed
from ._ragged import make_ragged_mdp as make_ragged_mdp
from ._ragged import map_blocks as map_blocks
from ._ragged import ragged_from_lists as ragged_from_lists
from ._ragged import to_padded as to_padded
from ._ragged import transition_lists as transition_lists
from ._ragged import with_self_loops as with_self_loops
from ._rows import SLOT_SUM_MAX as SLOT_SUM_MAX
from ._rows import Model as Model
from ._rows import Rows as Rows
from ._rows import check_model as check_model
from ._rows import check_public_support as check_public_support
from ._rows import expect as expect
from ._rows import row_length as row_length
from ._rows import row_slots as row_slots
from ._rows import row_sums as row_sums
from ._rows import row_support as row_support
from ._rows import row_terms as row_terms
from ._rows import successors as successors
from ._rows import transition_rows as transition_rows
from ._rows import with_probs as with_probs
from ._sparse import PADDING as PADDING
from ._sparse import SparseMDP as SparseMDP
from ._sparse import make_sparse_mdp as make_sparse_mdp
from ._sparse import sparse_mdp_of_owned as sparse_mdp_of_owned
from ._support import MechanismInput as MechanismInput
from ._support import Support as Support
from ._support import ZeroEntryError as ZeroEntryError
from ._support import check_options as check_options
from ._support import host_mechanism_input as host_mechanism_input
from ._support import mechanism_input as mechanism_input
from ._support import mechanism_input_of as mechanism_input_of
from ._support import mechanism_mask as mechanism_mask
from ._support import model_mechanism_input as model_mechanism_input
from ._support import private_rows as private_rows
from ._support import ragged_mechanism_input as ragged_mechanism_input

__all__ = [
    "IntervalMDP",
    "INTERVAL_MODELS",
    "RaggedIntervalMDP",
    "interval_lists",
    "ragged_interval_from_lists",
    "fill_margin",
    "interval_excess",
    "interval_expect",
    "nature_choice",
    "row_entries",
    "LAYOUTS",
    "MechanismInput",
    "Model",
    "PADDING",
    "RaggedMDP",
    "RaggedRows",
    "Rows",
    "SLOT_SUM_MAX",
    "SparseMDP",
    "Support",
    "TabularMDP",
    "ZeroEntryError",
    "blockwise",
    "check_mask",
    "check_model",
    "check_options",
    "check_public_support",
    "device_memory",
    "expect",
    "host_mechanism_input",
    "interval_of_point",
    "is_skewed",
    "make_interval_mdp",
    "make_mdp",
    "make_ragged_mdp",
    "make_sparse_mdp",
    "map_blocks",
    "mechanism_input",
    "mechanism_input_of",
    "mechanism_mask",
    "model_mechanism_input",
    "private_rows",
    "ragged_entry_count",
    "ragged_from_lists",
    "ragged_mechanism_input",
    "resolve_discount",
    "row_length",
    "row_slots",
    "row_sums",
    "row_support",
    "row_terms",
    "sparse_mdp_of_owned",
    "successors",
    "to_dense",
    "to_padded",
    "to_sparse",
    "transition_lists",
    "transition_rows",
    "validate_intervals",
    "validate_model_fields",
    "with_probs",
    "with_self_loops",
]
