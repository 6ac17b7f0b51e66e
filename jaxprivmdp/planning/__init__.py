"""Planning: dynamic programming on a model, nominal or robust over a set.

``_bellman`` solves (backward induction, value iteration with a stopping rule that holds
in the working dtype); ``_evaluation`` evaluates policies exactly; ``_policies`` validates
them and picks their rows; ``_rounding`` bounds the rounding of a backup; ``_error_free`` has
sums and products to twice the precision; ``_kernel`` is the one robust kernel (the sorted
greedy fill that solves the paper's inner LP exactly over any box) and ``_width`` how far
its fill reaches (a static width, proven from concrete values or checked at run time);
``_bounds`` runs it through the stages for the cost-of-privacy bounds, ``_robust_policy``
for the robust private policy; ``_property_*`` check PRISM-style properties by interval
iteration (``_property_check`` is the boundary), and ``_property_reward`` turns a step-bounded
property into the finite-horizon reward problem the privacy functions take.

Imports: ``jaxprivmdp._checks``, :mod:`jaxprivmdp.models`, :mod:`jaxprivmdp.mechanisms`,
:mod:`jaxprivmdp.sets`.
"""

from ._bellman import Solution as Solution
from ._bellman import solve as solve
from ._bounds import PrivacyBounds as PrivacyBounds
from ._bounds import cost_of_privacy as cost_of_privacy
from ._evaluation import evaluate as evaluate
from ._inner import robust_expectation as robust_expectation
from ._property_check import CheckResult as CheckResult
from ._property_check import check as check
from ._property_reward import PropertyModel as PropertyModel
from ._property_reward import property_model as property_model
from ._robust_policy import robust_solve as robust_solve

__all__ = [
    "CheckResult",
    "PrivacyBounds",
    "PropertyModel",
    "Solution",
    "check",
    "cost_of_privacy",
    "evaluate",
    "property_model",
    "robust_expectation",
    "robust_solve",
    "solve",
]
