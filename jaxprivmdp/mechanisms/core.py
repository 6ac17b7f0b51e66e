"""The internal API of :mod:`jaxprivmdp.mechanisms`: what the other layers import.

What planning and the experiments use of the mechanisms beyond the public classes: the
keyword-to-object resolution, the sampler check, the row privatization.

Not part of ``jaxprivmdp.*`` (no promise to users; names may change with the library).
Other subpackages import this module or :mod:`jaxprivmdp.mechanisms`, never its underscore
modules (``tests/test_layout.py`` checks it).
"""

from ._base import Mechanism as Mechanism
from ._base import privatize_rows as privatize_rows
from ._dirichlet import Sampler as Sampler
from ._dirichlet import check_sampler as check_sampler
from ._registry import as_mechanism as as_mechanism
from ._registry import mechanism_class as mechanism_class

__all__ = [
    "Mechanism",
    "Sampler",
    "as_mechanism",
    "check_sampler",
    "mechanism_class",
    "privatize_rows",
]
