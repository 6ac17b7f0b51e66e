"""The mechanism family's interface: :class:`Mechanism`, a small immutable pytree.

A mechanism carries its parameter (a pytree leaf: traced under ``jit``, batched under
``vmap``, a 1-D grid in a sweep) and any static options, and provides everything the other
layers need of it, so that adding a mechanism is one new class and touches no other module:

- ``privatize(key, rows, support, action_mask)``: the release (pure, jit/vmap-friendly);
- ``set_params(mdp, uncertainty_set)``: the :class:`~jaxprivmdp.sets.core.SetParams` of
  the per-entry boxes its noise implies for an uncertainty set (default: a scale family's
  tail radius, :meth:`unit_radius`);
- ``epsilon(adjacency, delta=...)`` / ``guarantee(...)``: one row's (ε, δ) for adjacent rows
  (a :class:`jaxprivmdp.privacy.Adjacency`);
- ``calibrate(epsilon, delta, adjacency)``: the least-noise member meeting a target;
- ``grid(values)``: one object holding a 1-D grid of parameters (what a sweep takes).

Subclasses are frozen dataclasses with exactly one data field (the parameter); fields with
``metadata=dict(static=True)`` are static (part of the compiled program). They are
registered as pytrees automatically.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import check_positive, host_callback, is_concrete, round_up
from .._refusals import refuses
from ..models.core import Model
from ..privacy import Adjacency
from ..sets.core import SetParams, UncertaintySet, entry_count, radius_params, row_level


class RowGuarantee(NamedTuple):
    """One row's privacy guarantee under b-adjacency (``‖p − q‖₁ <= b``).

    Attributes:
      epsilon: the privacy loss bound.
      delta: the probability it may fail (0 for a pure-ε mechanism).
      b: the adjacency bound.
      details: the accounting's own record (:class:`jaxprivmdp.privacy.Guarantee` for the
        Dirichlet mechanism), or None.
    """

    epsilon: float
    delta: float
    b: float
    details: object = None


def _data_fields(cls) -> list[str]:
    return [f.name for f in dataclasses.fields(cls) if not f.metadata.get("static")]


def _static_fields(cls) -> list[str]:
    return [f.name for f in dataclasses.fields(cls) if f.metadata.get("static")]


class Mechanism:
    """Base class of the mechanisms (:class:`Dirichlet`, :class:`Gaussian`, :class:`Laplace`).

    Class attributes a subclass sets:
      name: a short name (``"dirichlet"``), used in tables and messages.
      needs_interior: whether every supported entry of a row must be positive (the
        Dirichlet's concentrations ``k·p`` must be).
      noise_grows_with_parameter: True when a larger parameter means more noise (σ, λ),
        False when less (the Dirichlet's ``k``): calibration and plots read it.
    """

    name: ClassVar[str]
    needs_interior: ClassVar[bool] = False
    noise_grows_with_parameter: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)

        def flatten(m):
            data = tuple(getattr(m, f) for f in _data_fields(type(m)))
            return data, tuple(getattr(m, f) for f in _static_fields(type(m)))

        def unflatten(aux, data):
            m = object.__new__(cls)  # no __init__: leaves may be tracers or placeholders
            for name, value in zip(_data_fields(cls), data, strict=True):
                object.__setattr__(m, name, value)
            for name, value in zip(_static_fields(cls), aux, strict=True):
                object.__setattr__(m, name, value)
            return m

        jax.tree_util.register_pytree_node(cls, flatten, unflatten)

    # ------------------------------------------------------------------ the parameter

    @classmethod
    def parameter_name(cls) -> str:
        """The name of the one data field (``"k"``, ``"sigma"``, ``"scale"``)."""
        (name,) = _data_fields(cls)
        return name

    @property
    def parameter(self):
        """The parameter's value (any shape; a 1-D grid in a sweep)."""
        return getattr(self, self.parameter_name())

    def __post_init__(self):
        if is_concrete(self.parameter):  # traced under jit: checked by the boundary
            check_positive(self.parameter_name(), self.parameter, scalar=False)

    def replace(self, parameter) -> Mechanism:
        """The same mechanism (same static options) with another parameter value."""
        return dataclasses.replace(self, **{self.parameter_name(): parameter})

    @classmethod
    def grid(cls, values) -> Mechanism:
        """One mechanism holding a 1-D grid of parameters, e.g. ``Gaussian.grid(sigmas)``
        (a mechanism with static options takes them here too: ``Dirichlet.grid(ks,
        sampler="fast")``)."""
        arr = np.asarray(values, np.float64)
        if arr.ndim != 1 or arr.size == 0:
            raise ValueError(f"a grid must be a non-empty 1-D sequence, got shape {arr.shape}")
        return cls(arr)

    def static_options(self) -> dict:
        """The static fields and their values (e.g. the Dirichlet's sampler)."""
        return {f: getattr(self, f) for f in _static_fields(type(self))}

    # ----------------------------------------------------------------- behaviour

    def privatize(self, key: jax.Array, rows: jax.Array, support, action_mask) -> jax.Array:
        """``P̄``: every allowed row privatized over its support (pure, jit/vmap-friendly).

        Args:
          key: PRNG key.
          rows: `[S, A, S]` or `[S, A, K]` rows to privatize.
          support: bool, like ``rows``: the entries privatized; others stay 0.
          action_mask: `[S, A]` bool: rows of masked actions are returned unchanged.
        """
        raise NotImplementedError(f"{type(self).__name__} must define privatize")

    def unit_radius(self, n: int, level: float) -> float:
        """Host float64: ``r`` with ``P(‖P̄ − p‖∞ > r·parameter) <= level`` for a row of
        ``n`` entries, for a scale family (noise proportional to the parameter). The default
        :meth:`set_params` builds every set's box from it."""
        raise NotImplementedError(
            f"{type(self).__name__} defines no unit_radius: define it, or override set_params"
        )

    def set_params(self, mdp: Model, uncertainty_set: UncertaintySet) -> SetParams:
        """The :class:`~jaxprivmdp.sets.core.SetParams` of ``uncertainty_set`` for releases
        of this mechanism: a box ``P̄ ± r`` (``radius_params``: no tables) or per-entry Beta
        intervals (``beta_params``: with tables); the parameters say which
        (``SetParams.is_radius_box``).

        Default (a scale family): the box ``P̄ ± r`` with ``r = parameter × unit_radius(n,
        level)`` at level ``β`` per row (paper and exact sets) or ``β / R`` over the ``R``
        allowed rows (certified), ``n`` the entries of the largest row (its public support
        when support-aware), rounded up.
        """
        dtype = mdp.rewards.dtype
        aware, counts = uncertainty_set.support_aware, uncertainty_set.counts
        n = entry_count(mdp, support_aware=aware, whole_model=False, counts=counts)
        level = row_level(mdp, uncertainty_set)
        unit = _host_or_callback(self.unit_radius, n, level, dtype)
        alpha = jnp.asarray(self.parameter, dtype) * unit * (1 + 4 * jnp.finfo(dtype).eps)
        return radius_params(alpha, uncertainty_set, dtype)

    @refuses("b", "eta")
    def epsilon(self, adjacency: Adjacency, *, delta: float, n=None) -> float:
        """One row's ε at ``delta`` for adjacent rows (host, concrete parameter):
        ``adjacency`` a :class:`jaxprivmdp.privacy.Adjacency` (its ``eta`` and the row
        dimension ``n`` for the Dirichlet mechanism)."""
        raise NotImplementedError(f"{type(self).__name__} states no privacy guarantee")

    @refuses("b", "eta")
    def guarantee(self, adjacency: Adjacency, *, delta: float, n=None) -> RowGuarantee:
        """One row's :class:`RowGuarantee` at ``delta`` (see :meth:`epsilon`)."""
        return RowGuarantee(self.epsilon(adjacency, delta=delta, n=n), delta, adjacency.b)

    @classmethod
    @refuses("b", "eta")
    def calibrate(cls, epsilon: float, delta: float, adjacency: Adjacency, *, n=None):
        """The least-noise member meeting ``(epsilon, delta)`` for one adjacent row."""
        raise NotImplementedError(f"{cls.__name__} cannot be calibrated")

    @classmethod
    @refuses("b", "eta")
    def floor(cls, delta: float, adjacency: Adjacency, *, n=None) -> float:
        """The smallest ε any parameter reaches at ``delta`` (0 unless overridden)."""
        return 0.0


def privatize_rows(mech: Mechanism, key, rows, support, action_mask):
    """``mech.privatize``, also of a ragged model's rows (tuples, one entry per bucket:
    :func:`~jaxprivmdp.models._support.ragged_mechanism_input`). Each bucket is privatized
    as `[n_b, 1, K_b]` rows with the key folded with the bucket's index: every row's release
    has the distribution it has in the padded layout (rows are privatized independently
    over their support), not the same draws. A bucket of one-successor rows is not sampled:
    every mechanism returns such a row as all its mass on its one entry (1, masked rows 0),
    which is what it comes back as (no compiled sampler for it)."""
    if not isinstance(rows, tuple):
        return mech.privatize(key, rows, support, action_mask)
    out = []
    for i, (p, s, m) in enumerate(zip(rows, support, action_mask, strict=True)):
        if p.shape[-1] == 1:
            out.append(jnp.where(m[:, None], jnp.ones_like(p), jnp.zeros_like(p)))
            continue
        key_i = jax.random.fold_in(key, i)
        out.append(mech.privatize(key_i, p[:, None], s[:, None], m[:, None])[:, 0])
    return tuple(out)


@jax.jit
def privatize_jit(key, rows, mech: Mechanism, support, action_mask):
    """:func:`privatize_rows`, compiled: one cache for ``jp.privatize`` and
    ``dirichlet_mechanism`` of a model."""
    return privatize_rows(mech, key, rows, support, action_mask)


def _host_or_callback(fn, n: int, level, dtype) -> jax.Array:
    """``fn(n, level)`` in ``dtype``, on the host; through a callback (one call per batch
    member under ``vmap``; rounded up in ``dtype``) when ``level`` is traced."""
    if is_concrete(level):
        return jnp.asarray(fn(n, float(level)), dtype)
    return host_callback(
        lambda lv: round_up(fn(n, float(lv)), dtype),
        (),
        dtype,
        jax.lax.stop_gradient(level),
        vmap_method="sequential",
    )
