"""Error-free transformations: sums and products to twice the working precision.

An exact split of a float into halves (:func:`split_halves`), a product as four exact terms
(:func:`exact_product`), Knuth's two-sum (:func:`two_sum`) and a sum carried as an
unevaluated pair ``hi + lo`` (:func:`ff_sum`). Policy evaluation on successor lists computes
its residuals with them (``_evaluation``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def split_halves(x: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``x = hi + lo`` exactly, each with at most half of the significand's bits.

    The product of two halves is then exact in the same dtype (12 + 12 <= 24 bits in float32,
    26 + 26 <= 53 in float64). ``hi`` is ``x`` rounded to its top bits on the bit pattern (no
    multiplication, so no fused multiply-add can change it); ``x − hi`` is exact (Sterbenz).
    """
    nmant = jnp.finfo(x.dtype).nmant  # 23 / 52 stored bits
    drop = nmant - ((nmant + 1) // 2 - 1)  # keep (nmant + 1) // 2 significant bits
    uint = np.uint32 if x.dtype == np.float32 else np.uint64
    bits = jax.lax.bitcast_convert_type(x, uint)
    half, mask = uint(1 << (drop - 1)), ~uint((1 << drop) - 1)
    hi = jax.lax.bitcast_convert_type((bits + half) & mask, x.dtype)
    return hi, x - hi


def exact_product(a: jax.Array, b: jax.Array) -> list[jax.Array]:
    """Four arrays whose exact sum is ``a · b`` (each an exact product of halves)."""
    a_hi, a_lo = split_halves(a)
    b_hi, b_lo = split_halves(b)
    return [a_hi * b_hi, a_hi * b_lo, a_lo * b_hi, a_lo * b_lo]


def two_sum(a: jax.Array, b: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``s = fl(a + b)`` and its exact error ``e = a + b − s`` (Knuth; additions only)."""
    s = a + b
    b_virtual = s - a
    return s, (a - (s - b_virtual)) + (b - b_virtual)


def ff_sum(x: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``Σ x`` over the last axis as an unevaluated pair ``hi + lo``: twice the precision.

    One variadic reduction whose combiner adds pairs with :func:`two_sum` and carries the
    errors (valid in any order XLA picks): within about ``n² u² Σ|x|`` of the exact sum
    (``u`` the unit roundoff), against ``n u Σ|x|`` for a plain sum.
    """

    def add(a, b):
        s, e = two_sum(a[0], b[0])
        return s, a[1] + b[1] + e

    zero = jnp.zeros((), x.dtype)
    return jax.lax.reduce((x, jnp.zeros_like(x)), (zero, zero), add, (x.ndim - 1,))
