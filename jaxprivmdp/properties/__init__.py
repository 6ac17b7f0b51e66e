"""Properties: PRISM-style queries on a model, checked, or turned into a reward problem.

``_check`` is the boundary (:func:`check`: validate, dispatch, :class:`CheckResult`); the
grammar is in ``_parse``, the labels and the state formulas over them in ``_labels``, the
host graph precomputation (attractors, end components) in ``_graph``, the jitted interval
and value iteration in ``_iteration``, the unbounded properties in ``_unbounded`` and their
policy in ``_policy``. ``_reward`` is the bridge to privacy: :func:`property_model` turns a
step-bounded property into the finite-horizon reward problem (:class:`PropertyModel`) that
the planners and experiments take in place of a model, and ``in_property_scale`` turns their
numbers back into the property's scale (a ``min`` property is solved as a maximization).

Why this layer sits below planning: checking a property needs only the model's rows (its own
iteration, not the robust kernel), while the planners need the reward bridge; so planning
imports this subpackage and never the other way round.

Imports: ``jaxprivmdp._checks`` and :mod:`jaxprivmdp.models` only. What the layers above use
beyond the public names is in :mod:`jaxprivmdp.properties.core`.
"""

from ._check import CheckResult as CheckResult
from ._check import check as check
from ._reward import PropertyModel as PropertyModel
from ._reward import property_model as property_model

__all__ = ["CheckResult", "PropertyModel", "check", "property_model"]
