"""Counter-based random words for the samplers: every element draws from its own *name*.

An element's words are a hash of the key and a counter: its name ``(i0, i1)`` (two uint32)
and a stream. The default names are ``(0, position)``, the element's place in the flat
array. A caller that names elements by what they are (the Dirichlet mechanism: a row and
the rank of the entry in the row's support) gets draws that do not depend on the layout:
a dense row and the same row as a successor list draw the same numbers.

For the default ``threefry2x32`` keys the Threefry-2x32 hash is evaluated inline on the
counter ``(i0·spread + stream, i1)``, bit-identical to ``jax.extend.random.threefry_2x32``,
so XLA fuses it with the sampler arithmetic instead of looping over full-size arrays; other
key implementations use ``jax.random.bits`` of the key folded with the counter.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

_THREEFRY_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def _rotl(x: jax.Array, r: int) -> jax.Array:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def _threefry2x32(k0, k1, x0, x1):
    """Threefry-2x32 (20 rounds), unrolled so that XLA fuses it with its consumers.

    Same function as ``jax.extend.random.threefry2x32_p``; jax lowers that primitive on
    CPU as a rolled loop over full arrays, which is memory-bound and cannot fuse.
    """
    ks = (k0, k1, k0 ^ k1 ^ np.uint32(0x1BD11BDA))
    x0 = x0 + ks[0]
    x1 = x1 + ks[1]
    for i in range(5):
        for r in _THREEFRY_ROTATIONS[i % 2]:
            x0 = x0 + x1
            x1 = _rotl(x1, r)
            x1 = x0 ^ x1
        x0 = x0 + ks[(i + 1) % 3]
        x1 = x1 + ks[(i + 2) % 3] + np.uint32(i + 1)
    return x0, x1


def _is_threefry(key: jax.Array) -> bool:
    return str(jax.random.key_impl(key)) == "threefry2x32"


def _words(key: jax.Array, x0: jax.Array, x1: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Two independent uint32 words per counter ``(x0, x1)`` (uint32 arrays of one shape).

    ``key``: one key, or one per element (an array of keys shaped like the counters).
    """
    if _is_threefry(key):
        kd = jax.random.key_data(key)
        return _threefry2x32(kd[..., 0], kd[..., 1], x0, x1)

    def one(k, a, b):
        bits = jax.random.bits(jax.random.fold_in(jax.random.fold_in(k, a), b), (2,), jnp.uint32)
        return bits[0], bits[1]

    return jax.vmap(one, in_axes=(0 if key.ndim else None, 0, 0))(key, x0, x1)


def default_names(n: int) -> tuple[jax.Array, jax.Array]:
    """``(0, position)`` for ``n`` elements."""
    return jnp.zeros((n,), jnp.uint32), lax.iota(jnp.uint32, n)


class _Bits:
    """Random words for ``n`` named elements: uint32 for float32 work, uint64 for float64.

    ``pair(stream)`` gives two independent words per element; a float64 pair hashes two
    streams. Streams must stay below ``spread`` (elements ``i0`` and ``i0 + 1`` would share
    counters otherwise); with the default names (``i0 = 0``) the counter is ``(stream,
    position)`` whatever ``spread`` is.

    Args:
      key: one key, or one per element.
      n: the number of elements.
      dtype: the working float dtype.
      names: ``(i0, i1)`` uint32 `[n]`, or None for :func:`default_names`.
      spread: the number of streams per ``i0``.
    """

    def __init__(self, key: jax.Array, n: int, dtype: np.dtype, names=None, spread: int = 1):
        self.key, self.n, self.wide = key, n, dtype == np.float64
        self.names, self.spread = names, spread

    def _hash(self, stream) -> tuple[jax.Array, jax.Array]:
        if self.names is None and not (_is_threefry(self.key) or self.key.ndim):
            bits = jax.random.bits(jax.random.fold_in(self.key, stream), (2, self.n), jnp.uint32)
            return bits[0], bits[1]
        i0, i1 = default_names(self.n) if self.names is None else self.names
        x0 = i0 * np.uint32(self.spread) + jnp.asarray(stream).astype(jnp.uint32)
        return _words(self.key, x0, i1)

    def pair(self, stream) -> tuple[jax.Array, jax.Array]:
        if not self.wide:
            return self._hash(stream)
        a0, a1 = self._hash(2 * stream)
        b0, b1 = self._hash(2 * stream + 1)
        return _join64(a0, a1), _join64(b0, b1)


def _join64(hi: jax.Array, lo: jax.Array) -> jax.Array:
    return (hi.astype(jnp.uint64) << np.uint64(32)) | lo.astype(jnp.uint64)
