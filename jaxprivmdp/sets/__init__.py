"""Uncertainty sets: for a privatized row, the per-entry box and mixture weight it allows.

``_sets`` holds the set objects (:class:`PaperSet`, :class:`ExactSet`,
:class:`CertifiedSet`: ``β``, ``support_aware``, the union bound's scope, the mixture
weight) and ``_counts`` what their union bound counts on a model; ``_boxes`` the per-entry
bounds ``l ≤ P2 ≤ u`` every set gives the robust kernel and the blocks that build them (a
radius box, the exact Beta intervals), always over the public support, never read off the
release; ``_radius`` is Lemma 1's ``α``; ``_beta`` tabulates the
Dirichlet mechanism's Beta quantiles (host float64, looked up on the device).

Imports: ``jaxprivmdp._checks`` and :mod:`jaxprivmdp.models`. A mechanism (one layer up)
turns a set into boxes for its own noise; what the layers above use beyond the public classes
(the boxes, the counts) is in :mod:`jaxprivmdp.sets.core`.
"""

from ._counts import UnionCounts as UnionCounts
from ._radius import concentration_radius as concentration_radius
from ._sets import CertifiedSet as CertifiedSet
from ._sets import ExactSet as ExactSet
from ._sets import PaperSet as PaperSet
from ._sets import UncertaintySet as UncertaintySet

__all__ = [
    "CertifiedSet",
    "ExactSet",
    "PaperSet",
    "UncertaintySet",
    "UnionCounts",
    "concentration_radius",
]
