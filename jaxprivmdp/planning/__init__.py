"""Planning: dynamic programming on a model, nominal or robust over a set.

``_bellman`` solves (backward induction, value iteration with a stopping rule that holds
in the working dtype); ``_evaluation`` evaluates policies exactly; ``_policies`` validates
them and picks their rows; ``_rounding`` bounds the rounding of a backup; ``_error_free`` has
sums and products to twice the precision; ``_kernel`` is the one robust kernel (the sorted
greedy fill that solves the paper's inner LP exactly over any box) and ``_width`` how far
its fill reaches (a static width, proven from concrete values or checked at run time);
``_set_up`` computes a set's parameters and that width on the host; ``_bounds`` runs the
kernel through the stages for the cost-of-privacy bounds, ``_robust_policy`` for the robust
private policy (both take a property's reward problem from
:mod:`jaxprivmdp.properties` in place of a model, the layer below); ``_interval_model`` turns
a release and its set into the interval MDP of the same boxes.

Imports: ``jaxprivmdp._checks``, :mod:`jaxprivmdp.models`, :mod:`jaxprivmdp.mechanisms`,
:mod:`jaxprivmdp.sets`, :mod:`jaxprivmdp.properties`. What the experiments use beyond the
public functions (the jit-friendly cores) is in :mod:`jaxprivmdp.planning.core`.
"""

from ._bellman import Solution as Solution
from ._bellman import solve as solve
from ._bounds import PrivacyBounds as PrivacyBounds
from ._bounds import cost_of_privacy as cost_of_privacy
from ._evaluation import evaluate as evaluate
from ._inner import robust_expectation as robust_expectation
from ._interval_model import interval_model as interval_model
from ._options import SolverOptions as SolverOptions
from ._robust_policy import robust_solve as robust_solve

__all__ = [
    "PrivacyBounds",
    "Solution",
    "SolverOptions",
    "cost_of_privacy",
    "evaluate",
    "interval_model",
    "robust_expectation",
    "robust_solve",
    "solve",
]
