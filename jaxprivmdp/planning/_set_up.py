"""The set of a boundary's bounds, on the host: its parameters and the greedy fill's width.

:func:`set_up` is the host work that :func:`cost_of_privacy`, :func:`robust_solve`,
:func:`synthesize` and :func:`sweep` share before their pure cores run.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import is_concrete
from ..mechanisms.core import Mechanism
from ..models.core import Model, check_public_support
from ..sets.core import SetParams, UncertaintySet, union_counts
from ._width import bounds_width


def set_up(
    mdp: Model, mech: Mechanism, uncertainty_set: UncertaintySet, fill_width: int | None = None
):
    """Host work shared by the boundaries: ``(params, width)`` for the set ``uncertainty_set`` of
    releases of ``mech`` (its parameter any shape: a sweep's grid gives one set per entry).

    ``mdp`` fixes the dtype, the public support and the union bound's count. A support-aware
    set needs a public support (:func:`check_public_support`). The set's parameters are
    computed from concrete values even inside another function's trace (a model or policy
    traced, ``k`` and ``β`` not), so the width and the tables are those of an eager call.
    """
    if uncertainty_set.support_aware:
        check_public_support(mdp)
    with jax.ensure_compile_time_eval():
        params = _set_params(mech, mdp, uncertainty_set)
        alpha = params.alpha
        if uncertainty_set.counts is not None:
            params, alpha = _checked_counts(mdp, mech, uncertainty_set, params)
    aware, radius_box = uncertainty_set.support_aware, params.is_radius_box
    width = bounds_width(mdp, alpha, aware, fill_width, is_radius_box=radius_box)
    return params, width


def _set_params(mech: Mechanism, mdp: Model, uncertainty_set: UncertaintySet) -> SetParams:
    """``mech.set_params``, refused unless a :class:`SetParams` (a 0.x ``(kind, params)``)."""
    params = mech.set_params(mdp, uncertainty_set)
    if not isinstance(params, SetParams):
        raise TypeError(
            f"{type(mech).__name__}.set_params must return a SetParams, not "
            f"{type(params).__name__} (the parameters say which box they are, no (kind, params))"
        )
    return params


def _checked_counts(
    mdp: Model, mech: Mechanism, uncertainty_set: UncertaintySet, params: SetParams
):
    """``(params, alpha)`` of a set that carries its counts (``UncertaintySet.counts``).

    A concrete model must count no more (a ``ValueError`` otherwise: fewer would break the
    union bound). A traced one is counted in the trace: where it counts more, the
    parameters of its shapes' counts (an upper bound, always valid) are selected instead;
    ``alpha``, for the static width, is the smaller of the two (the wider reach)."""
    counts = union_counts(mdp, uncertainty_set.support_aware)
    if all(isinstance(c, int) for c in counts):
        if any(c > h for c, h in zip(counts, uncertainty_set.counts, strict=True)):
            raise ValueError(
                f"the set's counts {tuple(uncertainty_set.counts)} are below this model's "
                f"{tuple(counts)} (largest row, entries, rows): use bound.counted(model)"
            )
        return params, params.alpha
    shapes = _set_params(mech, mdp, dataclasses.replace(uncertainty_set, counts=None))
    held = jnp.all(jnp.stack(counts) <= jnp.asarray(uncertainty_set.counts, jnp.int32))
    chosen = jax.tree.map(lambda a, b: jnp.where(held, a, b), params, shapes)
    alpha = params.alpha
    if is_concrete(params.alpha, shapes.alpha):
        alpha = np.minimum(np.asarray(params.alpha), np.asarray(shapes.alpha))
    return chosen, alpha
