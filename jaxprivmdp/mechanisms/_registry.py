"""The public boundary of the mechanism axis: names mapped once to objects, and ``privatize``.

A user names a mechanism (``mechanism="gaussian"`` with ``k=0.05``, the 0.2 keyword form) or
passes the object (``jp.Gaussian(sigma=0.05)``); :func:`as_mechanism` turns either into a
:class:`~jaxprivmdp.mechanisms.Mechanism`. Nothing below the public functions sees a name.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .._checks import check_key, check_positive
from ..models._ragged import RaggedMDP
from ..models._rows import check_model, with_probs
from ..models._support import model_mechanism_input, ragged_mechanism_input
from ._additive import Gaussian, Laplace
from ._base import Mechanism
from ._base import privatize_jit as _privatize_jit  # one cache with dirichlet_mechanism's
from ._base import privatize_rows as privatize_rows  # (experiments._synthesis imports it here)
from ._dirichlet import Dirichlet, check_sampler

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


def as_mechanism(mechanism, parameter=None, sampler=None, *, dtype=None) -> Mechanism:
    """The mechanism a public call asked for, as an object.

    ``mechanism`` is an object (then ``parameter`` must be None: it carries its own, and
    ``sampler`` must be None or agree with the Dirichlet's) or a name with ``parameter`` (the
    0.2 keyword form: ``k`` is the Dirichlet's ``k`` or the additive noise's σ / λ). With
    ``dtype`` a concrete parameter is checked finite and positive in it.
    """
    if isinstance(mechanism, Mechanism):
        if parameter is not None:
            raise ValueError(
                f"k={parameter!r} was given beside the mechanism object {mechanism!r}; "
                "the object carries its own parameter"
            )
        if sampler is not None and getattr(mechanism, "sampler", sampler) != sampler:
            raise ValueError(
                f"sampler={sampler!r} was given beside {mechanism!r}; pass it in the object"
            )
        mech = mechanism
    else:
        cls = mechanism_class(mechanism)
        if parameter is None:
            raise ValueError(
                f"give the mechanism's parameter: k=... with mechanism={mechanism!r}, or an "
                "object such as jaxprivmdp.Dirichlet(k)"
            )
        check_positive(cls.parameter_name(), parameter, scalar=False)
        options = {"sampler": check_sampler(sampler or "jax")} if cls is Dirichlet else {}
        mech = cls(parameter, **options)
    if dtype is not None:
        check_positive(mech.parameter_name(), mech.parameter, dtype=dtype)
    return mech


def privatize(
    key: jax.Array,
    mdp,
    parameter=None,
    *,
    mechanism="dirichlet",
    support=None,
    smoothing: float | None = None,
    sampler=None,
):
    """Privatizes a whole model with any mechanism: the same kind of model comes back.

    ``privatize(key, mdp, jp.Gaussian(0.05))``, or the keyword form ``privatize(key, mdp,
    0.05, mechanism="gaussian")``. The Dirichlet mechanism is
    :func:`jaxprivmdp.dirichlet_mechanism`; the additive ones add noise of standard
    deviation / scale ``σ`` / ``λ`` to every supported entry of every allowed row and project
    each row onto the simplex over its support. Works under ``jax.jit``/``jax.vmap`` over
    ``key`` and the parameter (values are checked when concrete). Calibrate with
    ``Mechanism.calibrate`` or :func:`jaxprivmdp.privacy.calibrate`; use
    :func:`jaxprivmdp.secure_key` for a real release.

    Args:
      key: a JAX PRNG key.
      mdp: a :class:`TabularMDP`, :class:`SparseMDP` or :class:`RaggedMDP` (its own action
        mask is used; a ragged model's buckets are privatized one by one, each with the key
        folded with its index: the same distribution as the padded layout's, other draws).
      parameter: a :class:`Mechanism`, or ``k`` / ``σ`` / ``λ`` ``> 0`` for ``mechanism``.
      mechanism: with a number as ``parameter``: ``"dirichlet"``, ``"gaussian"`` or
        ``"laplace"``.
      support: None or ``"nonzero"`` (privatize over each row's nonzero entries).
      smoothing: optional ``η`` (dense models), see :func:`dirichlet_mechanism`.
      sampler: the Dirichlet mechanism's gamma sampler (``"jax"`` or ``"fast"``).

    Returns:
      The privatized model, which records the support it was privatized over.

    Raises:
      ValueError: an unknown mechanism, a parameter ``<= 0``, or (Dirichlet) rows with
        zeros without ``support`` or ``smoothing``.
    """
    key = check_key(key)
    check_model(mdp)
    dtype = mdp.rewards.dtype
    if isinstance(parameter, Mechanism):
        mech = as_mechanism(parameter, None, sampler, dtype=dtype)
    else:
        mech = as_mechanism(mechanism, parameter, sampler, dtype=dtype)
    if isinstance(mdp, RaggedMDP):
        return _privatize_ragged(
            key, mdp, mech.replace(jnp.asarray(mech.parameter, dtype)), support, smoothing
        )
    inp = model_mechanism_input(mdp, support, smoothing, interior=mech.needs_interior)
    mech = mech.replace(jnp.asarray(mech.parameter, dtype))
    p_bar = _privatize_jit(key, inp.rows, mech, inp.support, inp.action_mask)
    return with_probs(mdp, p_bar, inp.support)


def _privatize_ragged(key, mdp, mech: Mechanism, support, smoothing):
    inp = ragged_mechanism_input(mdp, support, smoothing)
    return with_probs(mdp, _privatize_jit(key, inp.rows, mech, inp.support, inp.action_mask))
