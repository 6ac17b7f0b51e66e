"""The internal API of :mod:`jaxprivmdp.properties`: what the layers above use.

Not part of ``jaxprivmdp.*`` (no compatibility promise to users); the other subpackages
import this module, never ``properties``' underscore modules (``tests/test_layout.py``).
"""

from ._parse import parse_property as parse_property
from ._reward import PropertyModel as PropertyModel
from ._reward import as_problem as as_problem
from ._reward import host_problem_input as host_problem_input
from ._reward import in_property_scale as in_property_scale
from ._reward import problem_input as problem_input

__all__ = [
    "PropertyModel",
    "as_problem",
    "host_problem_input",
    "in_property_scale",
    "parse_property",
    "problem_input",
]
