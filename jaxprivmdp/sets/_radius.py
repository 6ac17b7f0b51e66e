"""Lemma 1's radius: the box ``‖P̄ − p‖∞ < α`` that holds with probability ``≥ 1 − β``.

``α = sqrt(log(1/β) / (2(k + 1)))`` for the Dirichlet mechanism with parameter ``k``: the
paper's set (:class:`~jaxprivmdp.PaperSet`) is this box with a ``β`` mixture. Here in three
forms: public (JAX, any shape), host float64 (static sizes) and rounded outward into a dtype
(the sets).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from .._checks import check_positive, check_range, is_concrete, round_up


def concentration_radius(k: ArrayLike, beta: ArrayLike) -> jax.Array:
    """The radius ``α = sqrt(log(1/β) / (2(k + 1)))`` of Lemma 1.

    With probability at least ``1 − β`` the Dirichlet mechanism's output satisfies
    ``‖M(p) − p‖∞ < α``.

    Args:
      k: the mechanism's parameter, ``k > 0`` (any shape, broadcast with ``beta``).
      beta: the failure probability, in ``(0, 1)``.

    Returns:
      ``α``, broadcast shape of ``k`` and ``beta``.

    Raises:
      ValueError: if a concrete ``k <= 0`` or ``beta`` is outside ``(0, 1)``.

    References:
      Gohari, Hale, Topcu, CDC 2020, Lemma 1.
    """
    check_positive("k", k, scalar=False)
    check_range("beta", beta, low=0.0, high=1.0, low_open=True, high_open=True)
    k, beta = jnp.asarray(k), jnp.asarray(beta)
    dtype = jnp.result_type(k, beta, float)
    k, beta = jnp.broadcast_arrays(k.astype(dtype), beta.astype(dtype))
    return _radius(jnp, k, beta)


def _radius(xp, k, beta):
    return xp.sqrt(xp.log(1 / beta) / (2 * (k + 1)))


def host_radius(k, beta) -> np.ndarray:
    """Lemma 1's ``α`` of concrete values, in float64 NumPy (for static sizes, no device)."""
    return _radius(np, np.asarray(k, np.float64), np.asarray(beta, np.float64))


def outward_radius(k, beta, dtype) -> jax.Array | np.ndarray:
    """Lemma 1's ``α`` in ``dtype``, rounded up: a larger box only widens the bounds.

    Concrete ``k`` and ``β`` are computed in float64 on the host and rounded up to
    ``dtype``; traced ones on the device, raised by 4 ulps (more than the rounding of
    ``log``, the division and ``sqrt``).
    """
    if is_concrete(k, beta):
        if np.ndim(k) == 0 and np.ndim(beta) == 0:  # one call per trial: remembered
            return np.asarray(_outward_scalar(float(k), float(beta), np.dtype(dtype).name), dtype)
        return round_up(host_radius(k, beta), dtype)
    alpha = _radius(jnp, jnp.asarray(k, dtype), jnp.asarray(beta, dtype))
    return alpha * (1 + 4 * jnp.finfo(dtype).eps)


@functools.lru_cache(maxsize=1024)
def _outward_scalar(k: float, beta: float, dtype_name: str) -> float:
    """:func:`outward_radius` of one ``(k, β)`` (a float: the dtype's value, exactly)."""
    return float(round_up(host_radius(k, beta), np.dtype(dtype_name)))
