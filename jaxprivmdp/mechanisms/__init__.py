"""Mechanisms: how rows are privatized, as objects that carry their parameter and behaviour.

``_base`` defines :class:`Mechanism` (privatize, the sets its noise implies, (ε, δ),
calibration, grids); ``_dirichlet`` is the paper's :class:`Dirichlet` mechanism
(``P̄ ~ Dirichlet(k·p)``) with its gamma samplers in ``_sampling`` (random words per
named entry in ``_bits``); ``_additive`` the
:class:`Gaussian` and :class:`Laplace` mechanisms (noise, then the projection onto the simplex
over the row's support); ``_registry`` maps the names the 0.2 keyword form uses to these
classes, and holds the public :func:`privatize`. ``secure_key`` draws a key for a real release.

Imports: ``jaxprivmdp._checks``, :mod:`jaxprivmdp.models`, :mod:`jaxprivmdp.privacy`,
:mod:`jaxprivmdp.sets`. What the layers above use beyond the public classes is in
:mod:`jaxprivmdp.mechanisms.core` (the internal API).
"""

from ._additive import Gaussian as Gaussian
from ._additive import Laplace as Laplace
from ._base import Mechanism as Mechanism
from ._base import RowGuarantee as RowGuarantee
from ._dirichlet import Dirichlet as Dirichlet
from ._dirichlet import dirichlet_mechanism as dirichlet_mechanism
from ._dirichlet import secure_key as secure_key
from ._registry import privatize as privatize

__all__ = [
    "Dirichlet",
    "Gaussian",
    "Laplace",
    "Mechanism",
    "RowGuarantee",
    "dirichlet_mechanism",
    "privatize",
    "secure_key",
]
