"""Uncertainty sets: for a privatized row, the per-entry box and mixture weight it allows.

``_radius`` is Lemma 1's ``α``; ``_beta`` tabulates exact Beta-marginal intervals of the
Dirichlet mechanism (host float64, looked up on the device); ``_boxes`` builds every set's
per-entry bounds ``l ≤ P2 ≤ u`` and weight ``β'`` (``"paper"``, ``"exact"``, ``"certified"``)
from the public support, never from the release.

Imports: ``jaxprivmdp._checks``, :mod:`jaxprivmdp.models`, :mod:`jaxprivmdp.mechanisms`.
"""

from ._boxes import BOUNDS as BOUNDS
from ._radius import concentration_radius as concentration_radius

__all__ = ["BOUNDS", "concentration_radius"]
