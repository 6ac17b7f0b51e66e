"""The rounding of a Bellman backup and the error bounds built on it.

How many ulps one backup may be off (:func:`summation_ulps`, :func:`backup_ulps`), the
margin ``ρ`` that makes (:func:`rounding_margin`), the contraction factor of the stored model
(:func:`contraction_modulus`), the error bound of value iteration with ``ρ`` in it
(:func:`error_bound`) and the default tolerance that bound can always certify
(:func:`default_tolerance`).
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp

from ..models.core import Model, row_length, row_sums, transition_rows


def summation_ulps(n: int) -> float:
    """``16 + 2⌈log₂ n⌉``: the rounding of a backup over ``n`` terms, in units of ``eps``.

    The error of pairwise summation with a factor of safety, for backups whose worst case
    cannot be bounded cheaply (the robust ones: sorts, running sums, clips). A documented
    heuristic: checked against float64 fixed points in the tests.
    """
    return 16 + 2 * math.ceil(math.log2(max(n, 2)))


def backup_ulps(mdp: Model) -> float:
    """The rounding of one plain backup ``r + γ Σ p v`` in units of ``eps``, ``max|r| + max|v|``.

    A sum of ``n`` products in any order is within ``γ_n ≈ n·eps/2`` of exact (Higham 2002,
    §3.1), the product with ``γ`` and the addition of ``r`` add one rounding each:
    ``(n + 2)/2`` ulps, taken as ``(n + 3)/2`` to absorb second-order terms and row sums up to
    ``1 + 256 eps``. ``n`` is ``S`` (dense rows) or ``K`` (successor lists). Beyond about 50
    terms this worst case exceeds :func:`summation_ulps`, which is used instead (XLA sums in
    blocks and trees, whose errors grow far slower than the worst case).
    """
    n = row_length(mdp)
    return min((n + 3) / 2, summation_ulps(n))


def rounding_margin(mdp: Model, *values: jax.Array, ulps: float | None = None) -> jax.Array:
    """``ρ``: a bound on the floating-point error of one backup applied to ``values``.

    ``ulps · eps · (max|r| + max|v|)``, with ``max|r|`` over allowed actions and ``max|v|``
    over all of ``values``; ``ulps`` defaults to :func:`summation_ulps` of ``S`` (a robust
    backup; :func:`backup_ulps` for a plain one). 0 when ``γ = 0`` (``r + 0·x`` is exact).
    """
    if ulps is None:
        ulps = summation_ulps(mdp.num_states)
    eps = jnp.finfo(mdp.rewards.dtype).eps
    r = jnp.max(jnp.abs(jnp.where(mdp.action_mask, mdp.rewards, 0)))
    v = functools.reduce(jnp.maximum, [jnp.max(jnp.abs(x)) for x in values], jnp.zeros((), r.dtype))
    return jnp.where(mdp.discount > 0, ulps * eps * (r + v), 0)


def contraction_modulus(mdp: Model) -> jax.Array:
    """``κ = γ · max(1, max row sum)`` over allowed rows: the Bellman operator's modulus.

    Rows are validated to sum to 1 within ``256 eps`` and never renormalized, so the stored
    model may contract slightly slower than ``γ``; it matters only for ``γ`` near 1.
    """
    rows = transition_rows(mdp)
    sums = row_sums(rows)
    most = jnp.max(jnp.where(mdp.action_mask, sums, 0))
    return mdp.discount * jnp.maximum(most, 1)


def error_bound(kappa, delta, rho):
    """``(κδ + ρ)/(1 − κ)`` rounded upward (inf when ``κ >= 1``); δ is itself a rounded max."""
    eps = jnp.finfo(rho.dtype).eps
    bound = (kappa * delta * (1 + eps) + rho) / (1 - kappa) * (1 + 8 * eps)
    return jnp.where(kappa < 1, bound, jnp.inf)


def default_tolerance(
    mdp: Model, *, ulps: float | None = None, modulus: jax.Array | None = None
) -> jax.Array:
    """ε for infinite-horizon iterations: relative to the value scale ``max|r| / (1 − γ)``.

    ``1e-8`` of that scale in float64, ``1e-4`` in float32, and never below what rounding
    lets value iteration certify: ``6 ρ / (1 − κ)`` with ``ρ`` the :func:`rounding_margin` of
    a backup at values of that scale (``ulps`` and ``modulus`` as for
    :func:`value_iteration`), so that the default is always certifiable.
    """
    rel = 1e-8 if mdp.rewards.dtype == jnp.float64 else 1e-4
    kappa = mdp.discount if modulus is None else modulus
    r = jnp.max(jnp.abs(jnp.where(mdp.action_mask, mdp.rewards, 0)))
    scale = r / (1 - mdp.discount)
    floor = 6 * rounding_margin(mdp, r / (1 - kappa), ulps=ulps) / (1 - kappa)
    return jnp.maximum(rel * jnp.maximum(scale, 1), jnp.where(kappa < 1, floor, 0))
