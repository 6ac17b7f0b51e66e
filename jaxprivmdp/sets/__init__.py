"""Uncertainty sets: for a privatized row, the per-entry box and mixture weight it allows.

``_sets`` holds the set objects (:class:`PaperSet`, :class:`ExactSet`,
:class:`CertifiedSet`: ``β``, ``support_aware``, the union bound's scope, the mixture
weight); ``_boxes`` the per-entry bounds ``l ≤ P2 ≤ u`` every set gives the robust kernel and
the blocks that build them (a radius box, the exact Beta intervals), always over the public
support, never read off the release; ``_radius`` is Lemma 1's ``α``; ``_beta`` tabulates the
Dirichlet mechanism's Beta quantiles (host float64, looked up on the device).

Imports: ``jaxprivmdp._checks`` and :mod:`jaxprivmdp.models`. A mechanism (one layer up)
turns a set into boxes for its own noise.
"""

from ._radius import concentration_radius as concentration_radius
from ._sets import BOUNDS as BOUNDS
from ._sets import CertifiedSet as CertifiedSet
from ._sets import ExactSet as ExactSet
from ._sets import PaperSet as PaperSet
from ._sets import UncertaintySet as UncertaintySet
from ._sets import UnionCounts as UnionCounts

__all__ = [
    "BOUNDS",
    "CertifiedSet",
    "ExactSet",
    "PaperSet",
    "UncertaintySet",
    "UnionCounts",
    "concentration_radius",
]
