"""Mechanisms: how rows are privatized, and what each mechanism needs from the other layers.

``_dirichlet`` is the paper's Dirichlet mechanism (``P̄ ~ Dirichlet(k·p)``) with its gamma
samplers in ``_sampling``; ``_additive`` adds Gaussian or Laplace noise and projects onto the
simplex over the row's support; ``_registry`` is the family: each member privatizes, states
its (ε, δ), calibrates and gives its sets a noise radius. ``secure_key`` draws a key for a
real release.

Imports: ``jaxprivmdp._checks``, :mod:`jaxprivmdp.models`, :mod:`jaxprivmdp.privacy`.
"""

from ._dirichlet import dirichlet_mechanism as dirichlet_mechanism
from ._dirichlet import secure_key as secure_key
from ._registry import privatize as privatize

__all__ = ["dirichlet_mechanism", "privatize", "secure_key"]
