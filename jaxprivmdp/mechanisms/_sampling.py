r"""Exact, fast Gamma and Dirichlet sampling for the Dirichlet mechanism.

``jax.random.dirichlet`` is ``softmax(jax.random.loggamma(key, alpha))`` and, on CPU, its
log-gamma sampler runs one Marsaglia–Tsang rejection loop per element (vmapped
``while_loop``s, 10-25x slower than NumPy; jax issues #12919, #18984). This module
keeps the same algorithm, and so the same exact distribution, but evaluates it as one
fused, element-wise pass plus a rarely needed loop:

1. every element draws ``num_candidates`` i.i.d. Marsaglia–Tsang candidates at once and
   keeps the first accepted one;
2. the rare elements with no accepted candidate are finished by an exact rejection loop
   that only runs while such elements exist and, for large arrays, only touches the
   blocks that hold them;
3. the boost ``log G(a) = log G(a + 1) + log(U) / a`` gives any shape ``a > 0`` in log
   space, so tiny shapes (``1e-6``) stay finite.

Random bits come from the key's own PRNG, hashed per element from the element's *name*
(``_bits``: its position by default; the Dirichlet mechanism names an entry by its row and
its rank in the row's support). An element's draws depend only on the key, its name and its
shape, also in the fallback (its ``i``-th redraw uses the fallback key folded with ``i``),
never on the other elements: a dense row and the same row as a successor list draw the
same numbers.

:func:`loggamma`, the method. Marsaglia–Tsang (2000) for shape :math:`a' = a + 1 \ge 1`: with
:math:`d = a' - 1/3`, :math:`c = 1/\sqrt{9d}`, draw :math:`z \sim N(0, 1)`,
:math:`u \sim U(0, 1)`, set :math:`v = (1 + cz)^3`, and accept iff :math:`v > 0` and

.. math:: \log u < z^2/2 + d - dv + d \log v,

in which case :math:`dv \sim \mathrm{Gamma}(a')`. The acceptance probability is at
least 0.95 for :math:`a' \ge 1`. Then the boost

.. math:: \log G(a) = \log G(a + 1) + \log(U) / a, \qquad U \sim U(0, 1)
   \text{ independent},

which is exact because :math:`\mathrm{Gamma}(a) \overset{d}{=}
\mathrm{Gamma}(a+1) \, U^{1/a}`. Working in log space keeps tiny shapes finite
(``a = 1e-6`` gives ``log G`` of order ``-1e6``, not ``log 0``); every uniform is
drawn strictly inside (0, 1] (``U`` from a full 32-bit word, ``(w + 1/2) 2^-32``;
64 bits in float64), so ``log U`` is finite. The boost is applied to every ``a``,
also ``a >= 1``: in a fused pass its random bits are computed for every element
anyway, and shape ``a + 1 >= 2`` raises the acceptance rate there.

Exactness. Each element draws ``num_candidates`` i.i.d. candidates at once and keeps
the first accepted one, which is precisely what the sequential rejection loop returns.
The elements with none accepted (probability at most ``0.049 ** num_candidates``) go
to a ``lax.while_loop`` whose predicate is "some element is unaccepted", so it runs
zero iterations when there are none; each round gathers the unaccepted elements and
gives each fresh i.i.d. candidates, again keeping the first accepted one: an element's
``i``-th redraw hashes its own name with the fallback key folded with ``i``, so its
candidates are an i.i.d. sequence of its own, whichever round serves it. Its accepted
value is an exact ``Gamma(a + 1)`` draw independent of the rest. No step is
approximated (no truncated loop, no approximate Gamma formula): the result is exact
in distribution up to floating-point rounding, like ``jax.random.loggamma``. As
there, the normal is the inverse CDF (``erfinv``) of a uniform on a ``2^-23`` grid
(``2^-52`` in float64), and ``u`` lies on the grid ``(k + 1/2) 2^-23``. A guard of
256 rounds (reaching it has probability below ``0.049 ** 1024``) would leave such an
element NaN, never a biased value.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.typing import ArrayLike, DTypeLike

from .._checks import check_key, working_dtype
from ._bits import _Bits as _Bits
from ._bits import _threefry2x32 as _threefry2x32
from ._bits import default_names

__all__ = ["loggamma"]

# Block size of the fallback's two-level search for unaccepted elements.
_BLOCK = 16
# Up to this many elements the fallback redraws every element instead of searching.
_DENSE_MAX = 256
# Candidates per element and fallback round.
_FALLBACK_CANDIDATES = 4
# Guard against an endless loop. Reaching it needs every candidate of one element to be
# rejected in every round (probability < 0.05 ** (4 * 256)); the element is then NaN,
# never a biased value.
_MAX_FALLBACK_ROUNDS = 256


def _mantissa(bits: jax.Array) -> jax.Array:
    """Random word -> float on the grid ``1 + k 2^-p`` in ``[1, 2)`` (``p`` mantissa bits)."""
    if bits.dtype == jnp.uint32:
        one, dtype = np.uint32(0x3F800000), jnp.float32
    else:
        one, dtype = np.uint64(0x3FF0000000000000), jnp.float64
    shift = bits.dtype.itemsize * 8 - jnp.finfo(dtype).nmant
    return lax.bitcast_convert_type((bits >> bits.dtype.type(shift)) | one, dtype)


def _open_uniform(m: jax.Array) -> jax.Array:
    """Mantissa ``1 + k 2^-p`` -> ``(k + 1/2) 2^-p``: uniform on a grid inside (0, 1).

    Exact in floating point, so ``log`` of it is finite (>= -16.7 in float32).
    """
    nmant = jnp.finfo(m.dtype).nmant
    return m - jnp.asarray(1.0 - 2.0 ** -(nmant + 1), m.dtype)


def _log_uniform_fine(bits: jax.Array) -> jax.Array:
    """``log U`` from all the bits of a word: ``U = (w + 1/2) 2^-32`` (``2^-64`` in float64).

    Near 0 the grid is as fine as the word (the boost's ``log(U) / a`` samples the far left
    tail of ``log G`` for tiny ``a``, down to ``log 2^-33 = -22.9`` in float32); ``U`` may
    round to 1, so ``U`` is in ``(0, 1]`` and ``log U`` is finite and ``<= 0``.
    """
    width = bits.dtype.itemsize * 8
    dtype = jnp.float32 if width == 32 else jnp.float64
    u = (bits.astype(dtype) + jnp.asarray(0.5, dtype)) * jnp.asarray(2.0**-width, dtype)
    return jnp.minimum(jnp.log(u), jnp.asarray(0.0, dtype))


def _standard_normal(m: jax.Array) -> jax.Array:
    """``sqrt(2) erfinv(2 (m - 1) - 1)``, as ``jax.random.normal`` does."""
    dtype = m.dtype
    lo = np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype))
    u = jnp.maximum(2 * (m - 1) - 1, lo)
    return jnp.asarray(np.sqrt(2.0), dtype) * lax.erf_inv(u)


def _candidate(bits: _Bits, stream, d: jax.Array, c: jax.Array):
    """One Marsaglia–Tsang candidate per element: ``(accepted, log t)``, ``v = t^3``."""
    b_z, b_u = bits.pair(stream)
    z = _standard_normal(_mantissa(b_z))
    log_u = jnp.log(_open_uniform(_mantissa(b_u)))
    s = c * z
    positive = s > -1  # v = (1 + s)^3 > 0
    s = jnp.where(positive, s, 0)
    log_t = jnp.log1p(s)
    w = s * (3 + s * (3 + s))  # v - 1 without cancellation
    # log u < z^2/2 + d - d v + d log v, with d (log v - (v - 1)) = d (3 log1p(s) - w).
    accept = positive & (log_u < 0.5 * z * z + d * (3 * log_t - w))
    return accept, log_t


def _candidates(
    bits: _Bits, a: jax.Array, num_candidates: int, *, rolled: bool = False
) -> jax.Array:
    """First accepted Marsaglia–Tsang candidate for ``Gamma(a + 1)``, plus the boost.

    Returns ``log G(a)`` per element; ``+inf`` where no candidate was accepted (a finite
    sample is never ``+inf``) and NaN where ``a`` is not a positive finite number. Streams
    ``0..num_candidates - 1`` of ``bits`` feed the candidates, stream
    ``num_candidates`` the boost. ``rolled=False`` unrolls the candidates into one fused
    pass (fast for large arrays); ``rolled=True`` loops over them (less code to compile,
    for the small fallback arrays).
    """
    dtype = a.dtype
    d = a + jnp.asarray(2.0 / 3.0, dtype)  # (a + 1) - 1/3
    c = 1 / (3 * jnp.sqrt(d))
    inf = jnp.asarray(jnp.inf, dtype)

    def step(j, log_t):
        accept, log_tj = _candidate(bits, j, d, c)
        return jnp.where((log_t == inf) & accept, log_tj, log_t)

    log_t = jnp.full(a.shape, inf)
    if rolled:
        log_t = lax.fori_loop(0, num_candidates, step, log_t)
    else:
        for j in range(num_candidates):
            log_t = step(j, log_t)
    b_boost, _ = bits.pair(num_candidates)
    log_boost = _log_uniform_fine(b_boost) / a
    valid = (a > 0) & jnp.isfinite(a)
    return jnp.where(valid, jnp.log(d) + 3 * log_t + log_boost, jnp.asarray(jnp.nan, dtype))


def _fallback_slots(n: int, num_candidates: int) -> int:
    """Static number of elements a fallback round can redraw.

    An element is left unaccepted with probability at most ``0.049 ** num_candidates``
    (0.049 is the rejection rate at shape 1). 8 plus 1.25 times that many slots make a
    second round rare (at ``n = 9e5`` and two candidates it needs a 10-sigma excess; at
    ``n = 2000``, one vmapped ``(S, A, S)`` block of the sweep, p < 1e-4). A second round
    costs time, never exactness. Under ``vmap`` every batch member pays for its slots, so
    the constant is kept small.
    """
    return min(n, 8 + math.ceil(1.25 * n * 0.05**num_candidates))


def _pending_blocks(out: jax.Array) -> jax.Array:
    """``[ceil(n / _BLOCK)]`` bool: the block holds an unaccepted (``+inf``) element."""
    num_blocks = -(-out.shape[0] // _BLOCK)
    pending = jnp.pad(out == jnp.inf, (0, num_blocks * _BLOCK - out.shape[0]))
    return pending.reshape(num_blocks, _BLOCK).any(axis=1)


def _fallback_round(key, a, out, pending_blocks, slots, names, spread, attempts):
    """Redraws up to ``slots`` unaccepted elements of ``out`` with fresh candidates.

    Only the pending blocks are read (a prefix sum over blocks, then over the elements of
    the gathered blocks), so a round costs ``O(n / _BLOCK + slots * _BLOCK)``, not ``O(n)``.
    An element's ``i``-th redraw hashes its name with ``fold_in(key, i)`` (``attempts``
    counts them), so which slot it takes and when never changes its draws.
    Returns the updated ``(out, pending_blocks, attempts)``.
    """
    n = a.shape[0]
    num_blocks = pending_blocks.shape[0]
    block_slots = min(num_blocks, slots)
    (blocks,) = jnp.nonzero(pending_blocks, size=block_slots, fill_value=num_blocks)
    # Indices >= n (padding, unused slots) read as "not pending" and are dropped on write.
    elements = blocks[:, None] * _BLOCK + lax.iota(blocks.dtype, _BLOCK)[None, :]
    pending = out.at[elements].get(mode="fill", fill_value=0) == jnp.inf
    (j,) = jnp.nonzero(pending.reshape(-1), size=slots, fill_value=block_slots * _BLOCK)
    selected = jnp.append(elements.reshape(-1), n)[j]
    a_sel = a.at[selected].get(mode="fill", fill_value=1)
    tries = attempts.at[selected].get(mode="fill", fill_value=0)
    keys = jax.vmap(jax.random.fold_in, in_axes=(None, 0))(key, tries.astype(jnp.uint32))
    named = tuple(x.at[selected].get(mode="fill", fill_value=0) for x in names)
    bits = _Bits(keys, slots, a.dtype, named, spread)
    new = _candidates(bits, a_sel, _FALLBACK_CANDIDATES, rolled=True)
    out = out.at[selected].set(new, mode="drop")
    attempts = attempts.at[selected].add(1, mode="drop")
    still = (out.at[elements].get(mode="fill", fill_value=0) == jnp.inf).any(axis=1)
    return out, pending_blocks.at[blocks].set(still, mode="drop"), attempts


def _dense_round(key, a, out, names, spread):
    """Redraws every element (fused, no compaction); keeps the draws of unaccepted ones.
    Every unaccepted element is redrawn in every round: round ``i`` is its ``i``-th."""
    new = _candidates(_Bits(key, a.shape[0], a.dtype, names, spread), a, _FALLBACK_CANDIDATES)
    return jnp.where(out == jnp.inf, new, out)


def spread_of(num_candidates: int) -> int:
    """Streams per name: candidates and boost, two words each in float64."""
    return 2 * (max(num_candidates, _FALLBACK_CANDIDATES) + 1)


@functools.partial(jax.jit, static_argnames=("dtype", "num_candidates"))
def _loggamma_and_rounds(
    key: jax.Array, a: jax.Array, dtype: np.dtype, num_candidates: int, names=None
) -> tuple[jax.Array, jax.Array]:
    """``(log G, fallback rounds)`` for a flat ``a`` (``names``: see :func:`loggamma`)."""
    a = a.astype(dtype)
    n = a.shape[0]
    names = default_names(n) if names is None else names
    spread = spread_of(num_candidates)
    key_main, key_fallback = jax.random.split(key)
    out = _candidates(_Bits(key_main, n, dtype, names, spread), a, num_candidates)

    # Exact fallback; zero iterations unless some element is still unaccepted. Small
    # arrays (e.g. one vmapped (S, A, S) block) redraw all elements: for up to a few
    # hundred elements that is cheaper than the compaction's gathers and scatters.
    sparse = n > _DENSE_MAX
    slots = _fallback_slots(n, num_candidates)

    def cond(state):
        rounds, out, pending_blocks, _ = state
        pending = pending_blocks if sparse else out == jnp.inf
        return (rounds < _MAX_FALLBACK_ROUNDS) & pending.any()

    def body(state):
        rounds, out, pending_blocks, attempts = state
        if sparse:
            out, pending_blocks, attempts = _fallback_round(
                key_fallback, a, out, pending_blocks, slots, names, spread, attempts
            )
        else:
            out = _dense_round(jax.random.fold_in(key_fallback, rounds), a, out, names, spread)
        return rounds + 1, out, pending_blocks, attempts

    pending_blocks = _pending_blocks(out) if sparse else jnp.zeros((0,), bool)
    # Redraws per element (< _MAX_FALLBACK_ROUNDS = 256: uint8 suffices).
    attempts = jnp.zeros((n if sparse else 0,), jnp.uint8)
    state = (jnp.int32(0), out, pending_blocks, attempts)
    rounds, out, _, _ = lax.while_loop(cond, body, state)
    # Only reachable after _MAX_FALLBACK_ROUNDS: report failure, never a biased value.
    out = jnp.where(out == jnp.inf, jnp.asarray(jnp.nan, dtype), out)
    return out, rounds


def loggamma(
    key: ArrayLike,
    a: ArrayLike,
    *,
    dtype: DTypeLike | None = None,
    num_candidates: int = 2,
    names: tuple[ArrayLike, ArrayLike] | None = None,
) -> jax.Array:
    r"""Samples ``log G`` with ``G ~ Gamma(a, 1)`` element-wise, exactly (the method and why
    it is exact: the module docstring).

    Jit- and vmap-friendly: no Python loops over elements, no global state, static shapes.
    Under ``vmap`` the loop runs while any batch member has unaccepted elements.

    Args:
      key: a single PRNG key (typed, ``jax.random.key``). Random bits come from its own
        implementation; threefry keys are hashed inline (fast path).
      a: shape parameters, any shape, positive. Non-positive or non-finite entries give
        NaN.
      dtype: float32 or float64 (the latter needs ``jax_enable_x64``, else float32 is
        used, as in ``jax.random``). Default: the default float dtype.
      num_candidates: Marsaglia–Tsang candidates drawn per element in the first pass.
        More candidates make the fallback rarer and the first pass dearer
        (``benchmarks/bench_sampling.py`` compares them).
      names: None (each element is named by its position), or ``(i0, i1)``: two arrays of
        non-negative integers shaped like ``a``, distinct pairs for distinct elements, with
        ``i0 < 2**32 / (2·(max(num_candidates, 4) + 1))``. An element's draw depends only
        on the key, its name and its shape: two arrays that name an element alike draw it
        alike, wherever it sits.

    Returns:
      ``log G``, with the shape of ``a`` and dtype ``dtype``.

    Raises:
      ValueError: for a non-float ``dtype``, a batch of keys, ``num_candidates < 1``,
        ``2**31 - 16`` or more elements, or ``names`` not shaped like ``a``.

    References:
      G. Marsaglia and W. W. Tsang, "A simple method for generating gamma variables",
      ACM Transactions on Mathematical Software 26(3):363–372, 2000: the rejection
      method above and, in the same paper, the boost ``Gamma(a) = Gamma(a + 1) U^{1/a}``
      for ``a < 1``.
    """
    key = check_key(key)
    dtype = working_dtype(None if dtype is None else jax.dtypes.canonicalize_dtype(dtype))
    a = jnp.asarray(a)
    if num_candidates < 1:
        raise ValueError(f"num_candidates must be >= 1, got {num_candidates}")
    if a.size >= 2**31 - _BLOCK:
        raise ValueError(f"at most 2**31 - {_BLOCK + 1} elements per call, got {a.size}")
    if a.size == 0:
        return jnp.zeros(a.shape, dtype)
    if names is not None:
        names = tuple(jnp.asarray(x) for x in names)
        if len(names) != 2 or any(x.shape != a.shape for x in names):
            raise ValueError(f"names must be two arrays of shape {a.shape}")
        names = tuple(x.reshape(-1).astype(jnp.uint32) for x in names)
    # Flattened outside the jit: one compilation per size, not per shape.
    out, _ = _loggamma_and_rounds(key, a.reshape(-1), dtype, int(num_candidates), names)
    return out.reshape(a.shape)
