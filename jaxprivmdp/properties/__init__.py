"""Properties: PRISM-style queries on a model, checked, or turned into a reward problem.

``_check`` is the boundary (:func:`check`: validate, dispatch, :class:`CheckResult`); the
grammar is in ``_parse``, the labels and the state formulas over them in ``_labels``, the
host graph precomputation (attractors, end components) in ``_graph``, the jitted interval
and value iteration in ``_iteration``, the unbounded properties in ``_unbounded``, their
verified starting bounds in ``_guess`` and their policy in ``_policy``, the float64 copy and
the answer's narrowing to the model's dtype in ``_precision``; boolean queries, filters and
several properties at once (:func:`check_all`) in ``_query`` over ``check``, their grammar in
``_query_parse``. Interval models (two quantifiers: the policy's, then nature's) in
``_interval_check`` (the boundary), ``_interval_graph`` (which states are decided) and
``_interval_iteration`` (robust interval iteration, deflation, backward induction).
``_reward`` is the bridge to privacy: :func:`property_model` turns a
step-bounded property into the finite-horizon reward problem (:class:`PropertyModel`) that
the planners and experiments take in place of a model, and ``in_property_scale`` turns their
numbers back into the property's scale (a ``min`` property is solved as a maximization);
``_objective`` gives a model's rewards minimized as a cost (:func:`minimizing`) the same form
and names the worst and best ends of the bounds for either direction.

Why this layer sits below planning: checking a property needs only the model's rows (its own
iteration, not the robust kernel), while the planners need the reward bridge; so planning
imports this subpackage and never the other way round.

Imports: ``jaxprivmdp._checks`` and :mod:`jaxprivmdp.models` only. What the layers above use
beyond the public names is in :mod:`jaxprivmdp.properties.core`.
"""

from ._check import check as check
from ._interval_check import nature_choice as nature_choice
from ._objective import minimizing as minimizing
from ._query import FilterResult as FilterResult
from ._query import QueryResult as QueryResult
from ._query import check_all as check_all
from ._result import CheckResult as CheckResult
from ._reward import PropertyModel as PropertyModel
from ._reward import property_model as property_model

__all__ = [
    "CheckResult",
    "FilterResult",
    "PropertyModel",
    "QueryResult",
    "check",
    "check_all",
    "minimizing",
    "nature_choice",
    "property_model",
]
