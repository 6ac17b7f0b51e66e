"""The internal API of :mod:`jaxprivmdp.properties`: what the layers above use.

Not part of ``jaxprivmdp.*`` (no compatibility promise to users); the other subpackages
import this module, never ``properties``' underscore modules (``tests/test_layout.py``).
"""

from ._objective import BEST_CASE as BEST_CASE
from ._objective import WORST_CASE as WORST_CASE
from ._objective import bound_end as bound_end
from ._objective import objective as objective
from ._objective import worst_end_name as worst_end_name
from ._parse import parse_property as parse_property
from ._query_parse import parse_query as parse_query
from ._query_parse import split_properties as split_properties
from ._reward import PropertyModel as PropertyModel
from ._reward import as_problem as as_problem
from ._reward import host_problem_input as host_problem_input
from ._reward import in_property_scale as in_property_scale
from ._reward import problem_input as problem_input

__all__ = [
    "BEST_CASE",
    "PropertyModel",
    "WORST_CASE",
    "bound_end",
    "as_problem",
    "host_problem_input",
    "in_property_scale",
    "objective",
    "parse_property",
    "parse_query",
    "split_properties",
    "problem_input",
    "worst_end_name",
]
