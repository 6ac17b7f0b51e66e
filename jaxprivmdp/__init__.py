"""jaxprivmdp: privacy-preserving policy synthesis in MDPs, on JAX.

The data flows one way: model (:func:`make_mdp`) → mechanism (:class:`Dirichlet`,
:class:`Gaussian`, :class:`Laplace`; :func:`privatize`) → planning (:func:`solve`,
:func:`evaluate`) → bounds (:func:`robust_expectation`, :func:`cost_of_privacy`,
:func:`robust_solve`; a set object, :class:`PaperSet`, :class:`ExactSet` or
:class:`CertifiedSet`, says which) → experiments (:func:`synthesize`, :func:`sweep`) → CLI.
Mechanisms, sets and options (:class:`SolverOptions`, :class:`Chunking`,
``privacy.Adjacency``) are small immutable objects; the 0.2 keyword form is refused.

Reference: P. Gohari, M. Hale, U. Topcu, "Privacy-Preserving Policy Synthesis in Markov
Decision Processes", IEEE CDC 2020.

The package loads lazily (PEP 562): ``import jaxprivmdp`` is cheap and the first name used
imports the subpackages (and JAX), so the command line takes over Ctrl-C before JAX loads
(:mod:`jaxprivmdp.cli`). Static tools read the imports under ``TYPE_CHECKING``;
``tests/test_layout.py`` checks that they name the subpackages' exports.
"""

from __future__ import annotations

import functools
import importlib
from typing import TYPE_CHECKING

from ._version import __version__ as __version__

# Hand-written, not the `lazy_loader` package: one more runtime dependency for twenty lines.
# The API is every name the seven subpackages export (their ``__all__``) and ``privacy``; the
# first name asked for loads them all, as an eager ``__init__`` would.
_ROOMS = ("experiments", "io", "mechanisms", "models", "planning", "properties", "sets")


@functools.cache
def _api() -> dict[str, str]:
    """``name -> subpackage`` for the whole API (imports the subpackages, and JAX)."""
    rooms = {room: importlib.import_module(f"{__name__}.{room}") for room in _ROOMS}
    return {name: room for room, module in rooms.items() for name in module.__all__}


def __getattr__(name: str):
    if name == "privacy":
        return importlib.import_module(f"{__name__}.privacy")
    if name == "__all__":
        value = sorted([*_api(), "privacy"])
    elif name in _api():
        value = getattr(importlib.import_module(f"{__name__}.{_api()[name]}"), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return [*__getattr__("__all__"), "__version__"]


if TYPE_CHECKING:
    from . import privacy as privacy
    from .experiments import CertifiedProperty as CertifiedProperty
    from .experiments import Chunking as Chunking
    from .experiments import FrontierResult as FrontierResult
    from .experiments import RobustPolicy as RobustPolicy
    from .experiments import RobustSummary as RobustSummary
    from .experiments import SweepResult as SweepResult
    from .experiments import Synthesis as Synthesis
    from .experiments import certify_property as certify_property
    from .experiments import frontier as frontier
    from .experiments import sweep as sweep
    from .experiments import sweep_key as sweep_key
    from .experiments import synthesize as synthesize
    from .io import load_labels as load_labels
    from .io import load_mdp as load_mdp
    from .io import load_prism as load_prism
    from .io import load_properties as load_properties
    from .io import load_variables as load_variables
    from .io import save_mdp as save_mdp
    from .mechanisms import Dirichlet as Dirichlet
    from .mechanisms import Gaussian as Gaussian
    from .mechanisms import Laplace as Laplace
    from .mechanisms import Mechanism as Mechanism
    from .mechanisms import RowGuarantee as RowGuarantee
    from .mechanisms import dirichlet_mechanism as dirichlet_mechanism
    from .mechanisms import privatize as privatize
    from .mechanisms import secure_key as secure_key
    from .models import IntervalMDP as IntervalMDP
    from .models import RaggedIntervalMDP as RaggedIntervalMDP
    from .models import RaggedMDP as RaggedMDP
    from .models import SparseMDP as SparseMDP
    from .models import TabularMDP as TabularMDP
    from .models import examples as examples
    from .models import make_interval_mdp as make_interval_mdp
    from .models import make_mdp as make_mdp
    from .models import make_ragged_mdp as make_ragged_mdp
    from .models import make_sparse_mdp as make_sparse_mdp
    from .models import to_dense as to_dense
    from .models import to_padded as to_padded
    from .models import to_ragged as to_ragged
    from .models import to_sparse as to_sparse
    from .planning import PrivacyBounds as PrivacyBounds
    from .planning import Solution as Solution
    from .planning import SolverOptions as SolverOptions
    from .planning import cost_of_privacy as cost_of_privacy
    from .planning import evaluate as evaluate
    from .planning import interval_model as interval_model
    from .planning import robust_expectation as robust_expectation
    from .planning import robust_solve as robust_solve
    from .planning import solve as solve
    from .properties import CheckResult as CheckResult
    from .properties import FilterResult as FilterResult
    from .properties import PropertyModel as PropertyModel
    from .properties import QueryResult as QueryResult
    from .properties import check as check
    from .properties import check_all as check_all
    from .properties import minimizing as minimizing
    from .properties import nature_choice as nature_choice
    from .properties import property_model as property_model
    from .sets import CertifiedSet as CertifiedSet
    from .sets import ExactSet as ExactSet
    from .sets import PaperSet as PaperSet
    from .sets import UncertaintySet as UncertaintySet
    from .sets import UnionCounts as UnionCounts
    from .sets import concentration_radius as concentration_radius
