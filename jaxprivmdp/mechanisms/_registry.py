"""The mechanism axis: every way of privatizing rows provides the same four things.

- ``"dirichlet"``: parameter ``k`` (larger = less noise); ``P̄ ~ Dirichlet(k·p)``; one
  row's (ε, δ) from ``privacy.guarantee``; its sets: Lemma 1's α, or the exact Beta
  marginals (``_sets``).
- ``"gaussian"``: parameter ``σ`` (smaller = less noise); ``P̄ = Π(p + N(0, σ² I))``; the
  analytic Gaussian mechanism's (ε, δ); its set: ``‖P̄ − p‖∞ <= r`` with ``r`` a χ² tail
  of ``‖Z‖₂``.
- ``"laplace"``: parameter ``λ`` (smaller = less noise); ``P̄ = Π(p + Laplace(λ))``; pure
  ``ε = b/λ``; its set: the same box, ``r`` a tail bound of ``‖Z‖₂``.

``Π`` is the Euclidean projection onto the simplex over the row's support
(``_additive.py``). ``synthesize``, ``sweep`` and the bounds look a mechanism up here by name
and call these functions; none of them has a case per mechanism.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Literal

import jax
import jax.numpy as jnp

from ..privacy import _additive as additive_privacy
from ..privacy import _row
from . import _additive
from ._dirichlet import privatize as dirichlet_privatize

MechanismName = Literal["dirichlet", "gaussian", "laplace"]


@dataclasses.dataclass(frozen=True)
class Mechanism:
    """One member of the mechanism family (static: a name and functions).

    Attributes:
      name: ``"dirichlet"``, ``"gaussian"`` or ``"laplace"``.
      parameter: the parameter's name (``k``, ``sigma``, ``scale``).
      needs_interior: whether every supported entry must be positive (the Dirichlet's
        concentrations ``k·p`` must be).
      privatize: ``(key, rows, param, support, action_mask, sampler) -> P̄`` (pure).
      radius: ``(param, n, level) -> r`` on the host with ``P(‖P̄ − p‖∞ > r) <= level``
        for a row of ``n`` entries, or None (the Dirichlet's sets live in ``_sets``).
      epsilon: ``(param, *, b, eta, n, delta) -> ε`` of one row at ``δ``.
      calibrate: ``(epsilon, delta, *, b, eta, n) -> param``, the least noise meeting both.
      floor: ``(delta, *, b, eta, n) -> ε``, the smallest ε any parameter reaches (0 for
        the additive mechanisms; the Dirichlet mechanism's smallest ε over the grid of ``k``
        that ``calibrate`` searches).
    """

    name: str
    parameter: str
    needs_interior: bool
    privatize: Callable
    radius: Callable | None
    epsilon: Callable
    calibrate: Callable
    floor: Callable


def _additive_privatize(noise):
    def privatize(key, rows, param, support, action_mask, sampler=None):
        del sampler  # one sampler: jax.random's
        return _additive.add_noise(key, rows, param, support, action_mask, noise)

    return privatize


def _dirichlet_epsilon(k, *, b, eta, n, delta):
    return _row.guarantee(k, b=b, eta=eta, n=n, target_delta=delta).epsilon


def _calibrate(name):
    return functools.partial(additive_privacy.calibrate, name)


MECHANISMS: dict[str, Mechanism] = {
    "dirichlet": Mechanism(
        name="dirichlet",
        parameter="k",
        needs_interior=True,
        privatize=dirichlet_privatize,
        radius=None,
        epsilon=_dirichlet_epsilon,
        calibrate=_calibrate("dirichlet"),
        floor=lambda delta, *, b, eta, n: _row.smallest_epsilon(
            b=b, eta=eta, n=n, target_delta=delta
        ),
    ),
    "gaussian": Mechanism(
        name="gaussian",
        parameter="sigma",
        needs_interior=False,
        privatize=_additive_privatize("gaussian"),
        radius=lambda sigma, n, level: _additive.noise_radius("gaussian", sigma, n, level),
        epsilon=lambda sigma, *, b, eta, n, delta: additive_privacy.gaussian_epsilon(
            sigma, delta, b=b
        ),
        calibrate=_calibrate("gaussian"),
        floor=lambda delta, *, b, eta, n: 0.0,
    ),
    "laplace": Mechanism(
        name="laplace",
        parameter="scale",
        needs_interior=False,
        privatize=_additive_privatize("laplace"),
        radius=lambda scale, n, level: _additive.noise_radius("laplace", scale, n, level),
        epsilon=lambda scale, *, b, eta, n, delta: additive_privacy.laplace_epsilon(scale, b=b),
        calibrate=_calibrate("laplace"),
        floor=lambda delta, *, b, eta, n: 0.0,
    ),
}


def privatize(
    key: jax.Array,
    mdp,
    parameter,
    *,
    mechanism: MechanismName = "dirichlet",
    support=None,
    smoothing: float | None = None,
    sampler="jax",
):
    """Privatizes a whole model with any mechanism: the same kind of model comes back.

    ``mechanism="dirichlet"`` is :func:`jaxprivmdp.dirichlet_mechanism` with ``k =
    parameter``; ``"gaussian"`` / ``"laplace"`` add noise of standard deviation / scale
    ``parameter`` to every supported entry of every allowed row and project each row onto
    the simplex over its support. Works under ``jax.jit``/``jax.vmap`` over ``key`` and
    ``parameter`` (values are checked when concrete). Calibrate ``parameter`` for a target
    (ε, δ) with :func:`jaxprivmdp.privacy.calibrate`; use :func:`jaxprivmdp.secure_key` for
    a real release.

    Args:
      key: a JAX PRNG key.
      mdp: a :class:`TabularMDP` or :class:`SparseMDP` (its own action mask is used).
      parameter: ``k`` (Dirichlet), ``σ`` (Gaussian) or ``λ`` (Laplace), ``> 0``.
      mechanism: ``"dirichlet"``, ``"gaussian"`` or ``"laplace"``.
      support: None or ``"nonzero"`` (privatize over each row's nonzero entries).
      smoothing: optional ``η`` (dense models), see :func:`dirichlet_mechanism`.
      sampler: the Dirichlet mechanism's gamma sampler (``"jax"`` or ``"fast"``).

    Returns:
      The privatized model.

    Raises:
      ValueError: an unknown mechanism, ``parameter <= 0``, or (Dirichlet) rows with zeros
        without ``support`` or ``smoothing``.
    """
    from .._checks import check_key, check_positive
    from ..models._rows import check_model, with_probs
    from ..models._support import model_mechanism_input
    from ._dirichlet import check_sampler

    key = check_key(key)
    check_model(mdp)
    mech = get_mechanism(mechanism)
    sampler = check_sampler(sampler)
    dtype = mdp.rewards.dtype
    check_positive(mech.parameter, parameter, dtype=dtype)
    inp = model_mechanism_input(mdp, support, smoothing, interior=mech.needs_interior)
    p_bar = _privatize_jit(
        key,
        inp.rows,
        jnp.asarray(parameter, dtype),
        inp.support,
        inp.action_mask,
        mechanism=mech.name,
        sampler=sampler,
    )
    return with_probs(mdp, p_bar, inp.support)


@functools.partial(jax.jit, static_argnames=("mechanism", "sampler"))
def _privatize_jit(key, rows, parameter, support, action_mask, *, mechanism, sampler):
    return get_mechanism(mechanism).privatize(key, rows, parameter, support, action_mask, sampler)


def get_mechanism(name) -> Mechanism:
    """The mechanism called ``name``, or a ValueError listing the names."""
    if isinstance(name, Mechanism):
        return name
    if name not in MECHANISMS:
        raise ValueError(
            f"mechanism must be one of {', '.join(map(repr, MECHANISMS))}, got {name!r}"
        )
    return MECHANISMS[name]
