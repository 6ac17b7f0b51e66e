"""Experiments: the three axes composed into runs a researcher asks for.

``_synthesis`` is Algorithm 1 for one release (privatize, plan, bound); ``_sweep`` runs many
trials over a grid of mechanism parameters as one compiled computation (chunking, sharding,
keys); ``_frontier`` traces the privacy-utility frontier; ``_certify`` certifies a property's
value on the true model from a release (its interval model); ``_report`` writes tables and
figures.

Imports: every layer below (models, io, privacy, mechanisms, sets, planning).
"""

from ._certify import CertifiedProperty as CertifiedProperty
from ._certify import certify_property as certify_property
from ._chunks import Chunking as Chunking
from ._frontier import FrontierResult as FrontierResult
from ._frontier import frontier as frontier
from ._sweep import RobustSummary as RobustSummary
from ._sweep import SweepResult as SweepResult
from ._sweep import sweep as sweep
from ._sweep import sweep_key as sweep_key
from ._synthesis import RobustPolicy as RobustPolicy
from ._synthesis import Synthesis as Synthesis
from ._synthesis import synthesize as synthesize

__all__ = [
    "CertifiedProperty",
    "Chunking",
    "FrontierResult",
    "RobustPolicy",
    "RobustSummary",
    "SweepResult",
    "Synthesis",
    "certify_property",
    "frontier",
    "sweep",
    "sweep_key",
    "synthesize",
]
