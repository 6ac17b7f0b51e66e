"""The internal API of :mod:`jaxprivmdp.sets`: what the other layers import.

What the mechanisms, planning and experiments use of the sets beyond the public
classes: the per-entry boxes and their parameters, and the union bound's counts.

Not part of ``jaxprivmdp.*`` (no promise to users; names may change with the library).
Other subpackages import this module or :mod:`jaxprivmdp.sets`, never its underscore
modules (``tests/test_layout.py`` checks it).
"""

from ._boxes import RowBox as RowBox
from ._boxes import SetParams as SetParams
from ._boxes import beta_params as beta_params
from ._boxes import box_caps as box_caps
from ._boxes import policy_box as policy_box
from ._boxes import radius_params as radius_params
from ._boxes import row_box as row_box
from ._boxes import row_level as row_level
from ._counts import entry_count as entry_count
from ._counts import union_counts as union_counts
from ._radius import outward_radius as outward_radius
from ._sets import PAPER_SET as PAPER_SET
from ._sets import Bound as Bound
from ._sets import UncertaintySet as UncertaintySet
from ._sets import as_set as as_set
from ._sets import set_named as set_named

__all__ = [
    "PAPER_SET",
    "Bound",
    "RowBox",
    "SetParams",
    "UncertaintySet",
    "as_set",
    "beta_params",
    "box_caps",
    "entry_count",
    "outward_radius",
    "policy_box",
    "radius_params",
    "row_box",
    "row_level",
    "set_named",
    "union_counts",
]
