"""jaxprivmdp: privacy-preserving policy synthesis in MDPs, on JAX.

The data flows one way: model (:func:`make_mdp`) → mechanism (:func:`dirichlet_mechanism`)
→ planning (:func:`solve`, :func:`evaluate`) → bounds (:func:`robust_expectation`,
:func:`cost_of_privacy`, :func:`robust_solve`; ``bound=`` picks the set) → experiments
(:func:`synthesize`, :func:`sweep`) → CLI.

Reference: P. Gohari, M. Hale, U. Topcu, "Privacy-Preserving Policy Synthesis in Markov
Decision Processes", IEEE CDC 2020.
"""

from . import examples as examples
from . import privacy as privacy
from ._bounds import PrivacyBounds as PrivacyBounds
from ._bounds import cost_of_privacy as cost_of_privacy
from ._bounds import robust_solve as robust_solve
from ._check import CheckResult as CheckResult
from ._check import check as check
from ._frontier import FrontierResult as FrontierResult
from ._frontier import frontier as frontier
from ._load import load_labels as load_labels
from ._load import load_mdp as load_mdp
from ._mdp import TabularMDP as TabularMDP
from ._mdp import make_mdp as make_mdp
from ._mechanism import dirichlet_mechanism as dirichlet_mechanism
from ._mechanism import secure_key as secure_key
from ._mechanisms import privatize as privatize
from ._planning import Solution as Solution
from ._planning import evaluate as evaluate
from ._planning import solve as solve
from ._robust import concentration_radius as concentration_radius
from ._robust import robust_expectation as robust_expectation
from ._sets import BOUNDS as BOUNDS
from ._sparse import SparseMDP as SparseMDP
from ._sparse import make_sparse_mdp as make_sparse_mdp
from ._sparse import to_dense as to_dense
from ._sparse import to_sparse as to_sparse
from ._sweep import RobustSummary as RobustSummary
from ._sweep import SweepResult as SweepResult
from ._sweep import sweep as sweep
from ._sweep import sweep_key as sweep_key
from ._synthesis import RobustPolicy as RobustPolicy
from ._synthesis import Synthesis as Synthesis
from ._synthesis import synthesize as synthesize
from ._version import __version__ as __version__

__all__ = [
    "BOUNDS",
    "CheckResult",
    "FrontierResult",
    "PrivacyBounds",
    "RobustPolicy",
    "RobustSummary",
    "Solution",
    "SparseMDP",
    "SweepResult",
    "Synthesis",
    "TabularMDP",
    "check",
    "concentration_radius",
    "cost_of_privacy",
    "dirichlet_mechanism",
    "evaluate",
    "examples",
    "frontier",
    "load_labels",
    "load_mdp",
    "make_mdp",
    "make_sparse_mdp",
    "privacy",
    "privatize",
    "robust_expectation",
    "robust_solve",
    "secure_key",
    "solve",
    "sweep",
    "sweep_key",
    "synthesize",
    "to_dense",
    "to_sparse",
]
