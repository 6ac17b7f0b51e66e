"""Planning: dynamic programming on a model, nominal or robust over a set.

``_bellman`` solves and evaluates (backward induction, value iteration with a stopping rule
that holds in the working dtype, exact policy evaluation); ``_kernel`` is the one robust
kernel (the sorted greedy fill that solves the paper's inner LP exactly over any box);
``_bounds`` runs it through the stages for the cost-of-privacy bounds and the robust policy;
``_properties`` checks PRISM-style properties by interval iteration.

Imports: ``jaxprivmdp._checks``, :mod:`jaxprivmdp.models`, :mod:`jaxprivmdp.mechanisms`,
:mod:`jaxprivmdp.sets`.
"""

from ._bellman import Solution as Solution
from ._bellman import solve as solve
from ._bounds import PrivacyBounds as PrivacyBounds
from ._bounds import cost_of_privacy as cost_of_privacy
from ._bounds import robust_solve as robust_solve
from ._evaluation import evaluate as evaluate
from ._kernel import robust_expectation as robust_expectation
from ._property_check import CheckResult as CheckResult
from ._property_check import check as check

__all__ = [
    "CheckResult",
    "PrivacyBounds",
    "Solution",
    "check",
    "cost_of_privacy",
    "evaluate",
    "robust_expectation",
    "robust_solve",
    "solve",
]
