"""The public boundary of the mechanism axis: names mapped once to objects, and ``privatize``.

A user passes the object (``jp.Gaussian(sigma=0.05)``); :func:`as_mechanism` checks it
(refusing the 0.2 name form with the object form); :func:`mechanism_class` maps the command
line's names to the classes. Nothing below the public functions sees a name.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .._checks import check_key, check_positive
from .._refusals import mechanism_object, refuses
from ..models.core import (
    RaggedMDP,
    check_model,
    model_mechanism_input,
    ragged_mechanism_input,
    with_probs,
)
from ._additive import Gaussian, Laplace
from ._base import Mechanism
from ._base import privatize_jit as _privatize_jit  # one cache with dirichlet_mechanism's
from ._base import privatize_rows as privatize_rows  # (experiments._synthesis imports it here)
from ._dirichlet import Dirichlet

MECHANISMS: dict[str, type[Mechanism]] = {m.name: m for m in (Dirichlet, Gaussian, Laplace)}


def mechanism_class(name) -> type[Mechanism]:
    """The class called ``name``, or a ValueError listing the names."""
    if isinstance(name, type) and issubclass(name, Mechanism):
        return name
    if name not in MECHANISMS:
        raise ValueError(
            f"mechanism must be one of {', '.join(map(repr, MECHANISMS))} or a "
            f"jaxprivmdp.Mechanism, got {name!r}"
        )
    return MECHANISMS[name]


def as_mechanism(mechanism, function: str, *, dtype=None) -> Mechanism:
    """The mechanism a public call was given, which must be an object (a name or a bare
    number, the 0.2 form, is a TypeError showing the object form). With ``dtype`` a
    concrete parameter is checked finite and positive in it."""
    mech = mechanism_object(function, mechanism, Mechanism)
    if dtype is not None:
        check_positive(mech.parameter_name(), mech.parameter, dtype=dtype)
    return mech


@refuses("mechanism", "sampler", "k")
def privatize(
    key: jax.Array,
    mdp,
    mechanism: Mechanism,
    *,
    support=None,
    smoothing: float | None = None,
):
    """Privatizes a whole model with any mechanism: the same kind of model comes back.

    ``privatize(key, mdp, jp.Gaussian(0.05))``. The Dirichlet mechanism
    (``jp.Dirichlet(k)``) is :func:`jaxprivmdp.dirichlet_mechanism`'s; the additive ones add
    noise of standard deviation / scale ``σ`` / ``λ`` to every supported entry of every
    allowed row and project each row onto the simplex over its support. Works under
    ``jax.jit``/``jax.vmap`` over ``key`` and the mechanism (values are checked when
    concrete). Calibrate with ``Mechanism.calibrate``; use :func:`jaxprivmdp.secure_key`
    for a real release.

    Args:
      key: a JAX PRNG key.
      mdp: a :class:`TabularMDP`, :class:`SparseMDP` or :class:`RaggedMDP` (its own action
        mask is used; a ragged model's buckets are privatized one by one, each with the key
        folded with its index: the same distribution as the padded layout's, other draws).
      mechanism: a :class:`Mechanism` object: ``jp.Dirichlet(k)`` (its ``sampler`` in the
        object), ``jp.Gaussian(sigma)`` or ``jp.Laplace(scale)``.
      support: None or ``"nonzero"`` (privatize over each row's nonzero entries).
      smoothing: optional ``η`` (dense models), see :func:`dirichlet_mechanism`.

    Returns:
      The privatized model, which records the support it was privatized over.

    Raises:
      TypeError: a mechanism that is not an object (a name or a number).
      ValueError: a parameter ``<= 0``, or (Dirichlet) rows with zeros without ``support``
        or ``smoothing``.
    """
    key = check_key(key)
    check_model(mdp)
    dtype = mdp.rewards.dtype
    mech = as_mechanism(mechanism, "privatize", dtype=dtype)
    if isinstance(mdp, RaggedMDP):
        return _privatize_ragged(
            key, mdp, mech.replace(jnp.asarray(mech.parameter, dtype)), support, smoothing
        )
    rows_in = model_mechanism_input(mdp, support, smoothing, interior=mech.needs_interior)
    mech = mech.replace(jnp.asarray(mech.parameter, dtype))
    p_bar = _privatize_jit(key, rows_in.rows, mech, rows_in.support, rows_in.action_mask)
    return with_probs(mdp, p_bar, rows_in.support)


def _privatize_ragged(key, mdp, mech: Mechanism, support, smoothing):
    rows_in = ragged_mechanism_input(mdp, support, smoothing)
    rows, sampled, mask = rows_in
    return with_probs(mdp, _privatize_jit(key, rows, mech, sampled, mask))
