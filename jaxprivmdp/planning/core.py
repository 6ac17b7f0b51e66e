"""The internal API of :mod:`jaxprivmdp.planning`: what the other layers import.

What the experiments use of planning beyond the public functions: the jit-friendly cores
the public functions wrap (solve, evaluate, bounds, robust policy), the stage pass and the
checks the public functions share.

Not part of ``jaxprivmdp.*`` (no promise to users; names may change with the library).
Other subpackages import this module or :mod:`jaxprivmdp.planning`, never its underscore
modules (``tests/test_layout.py`` checks it).
"""

from ._bellman import Progress as Progress
from ._bellman import as_progress as as_progress
from ._bellman import check_iterations as check_iterations
from ._bellman import q_values as q_values
from ._bellman import solve_core as solve_core
from ._bounds import bounds_core as bounds_core
from ._bounds import set_up as set_up
from ._evaluation import evaluate_core as evaluate_core
from ._options import solver_options as solver_options
from ._policies import check_stage as check_stage
from ._robust_policy import robust_solve_core as robust_solve_core
from ._stage_pass import SetArgs as SetArgs
from ._stage_pass import robust_q_fn as robust_q_fn
from ._stage_pass import stage_pass as stage_pass

__all__ = [
    "Progress",
    "SetArgs",
    "as_progress",
    "bounds_core",
    "check_iterations",
    "check_stage",
    "evaluate_core",
    "q_values",
    "robust_q_fn",
    "robust_solve_core",
    "set_up",
    "solve_core",
    "solver_options",
    "stage_pass",
]
