"""The precision of :func:`jaxprivmdp.check`: float64 inside, the model's dtype outside.

PRISM and Storm answer to 1e-6 relative by default, and so does :func:`check`, in every dtype
mode: a concrete model is checked in float64 (a ``jax.enable_x64(True)`` block, whatever the
user's global switch; float32 rounding alone would cost about 1e-6 per expected step), and the
answer is narrowed to the model's dtype with its interval rounded *outward* (lower down, upper
up), so that the reported ``[lower, upper]`` still contains the exact value. A traced model
(a step-bounded property under ``jax.jit``) is checked in its own dtype.

This module holds the default precision, the float64 copy of a model, and the assembly of the
solvers' ``(lower, upper, policy, iterations, converged)`` into the reported numbers:
``values``, ``error_bound`` and ``precision``, defined from ``lower`` and ``upper`` alone.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import is_concrete
from ..models.core import Model, RaggedRows, transition_rows, with_probs
from ._kernels import compiled
from ._parse import Property, property_error

# Relative precision asked of unbounded properties by default: PRISM's and Storm's.
DEFAULT_TOL = 1e-6


def tracing() -> bool:
    """Whether this call runs inside a ``jax.jit`` trace (every operation is staged there,
    even on a concrete model closed over: nothing can come back to the host)."""
    if _at_top_level is not None and _at_top_level():  # (no trace at all: the common case)
        return False
    return isinstance(jnp.zeros(()), jax.core.Tracer)  # (an eager op: ~0.1 ms)


def refuse_traced(prop_: Property, model, analysis: str) -> None:
    """The error for an unbounded property of a traced model (or any model under
    ``jax.jit``): its ``analysis`` runs on the host."""
    if tracing() or not is_concrete(model):
        raise property_error(
            prop_.text,
            prop_.positions["path"],
            f"unbounded properties need a concrete model (the {analysis} runs on the host); "
            "under jax.jit use a step-bounded one",
        )


# JAX has no public "is anything tracing?": its private trace context answers the common case
# (no trace) without the eager op above, which costs a tenth of a small model's check. Where
# a JAX version lacks it, only that time is lost.
try:
    from jax._src.core import trace_ctx as _trace_ctx

    _at_top_level = _trace_ctx.is_top_level
except (ImportError, AttributeError):  # pragma: no cover (another JAX version)
    _at_top_level = None


def underflow(n: int, dtype) -> float:
    """The absolute error a computed backup ``r + Σ p v`` of ``n`` terms may carry beyond its
    relative rounding (which holds only for results of at least ``finfo(dtype).tiny``, the
    smallest normal number), ``(2 n + 8) · tiny``: each of its at most ``2 n + 4``
    operations (``n`` products, ``n`` sums, the reward's addition, the widening's product, a
    division; four more to spare) may lose a result below ``tiny`` whole, since XLA flushes
    subnormal numbers to zero on CPU (and float32 on GPU); IEEE arithmetic (NumPy, Numba)
    loses at most ``tiny · eps / 2`` each. Every widened bound adds it, so a value in the
    subnormal range stays inside its interval."""
    return (2 * n + 8) * float(np.finfo(dtype).tiny)


def gap_floor(dtype) -> float:
    """A gap ``upper − lower`` at most this counts as met whatever the relative ``tol``:
    ``tiny / eps``, below which one ``tiny`` of :func:`underflow` is more than the dtype's
    relative precision (about 1e-292 in float64, 1e-31 in float32), so the bounds of a value
    that small cannot be made relatively tight."""
    info = np.finfo(dtype)
    return float(info.tiny) / float(info.eps)


def to_device(lower: np.ndarray, upper: np.ndarray, dtype=np.float64):
    """Host bounds in ``dtype`` made safe for the device, which reads subnormal numbers as
    zero: each subnormal bound moves outward to 0 or ``± tiny``."""
    tiny = np.finfo(dtype).tiny
    lower = np.where((lower != 0) & (np.abs(lower) < tiny), np.where(lower > 0, 0.0, -tiny), lower)
    return lower, normal_upper(upper, dtype)


def normal_upper(upper: np.ndarray, dtype=np.float64) -> np.ndarray:
    """Upper bounds in ``dtype`` as the device reads them: a subnormal one raised to ``tiny``
    (a positive one) or to 0 (a negative one)."""
    tiny = np.finfo(dtype).tiny
    return np.where((upper != 0) & (np.abs(upper) < tiny), np.where(upper > 0, tiny, 0.0), upper)


def working_tol(tol: float, dtype) -> float:
    """The precision the float64 iteration aims at, so that ``tol`` still holds after the
    outward rounding to ``dtype`` (up to one ulp of ``dtype`` on each side)."""
    eps = float(np.finfo(dtype).eps)
    if eps <= float(np.finfo(np.float64).eps):
        return tol
    return max(tol - 2 * eps, tol / 2)


def as_float64(mdp: Model) -> Model:
    """The model with its arrays on the host (NumPy), the floating ones in float64, and each
    row divided by its sum: the value :func:`check` bounds is that of the rows read as
    the distributions they stand for, and a float32 row's distance from a sum of 1 (a few
    1e-8) would otherwise enter every backup's error bound."""

    def widen(x):
        if not hasattr(x, "dtype"):
            return x
        return np.asarray(x, np.float64 if jnp.issubdtype(x.dtype, jnp.floating) else None)

    def normalize(p):
        if p.size == 0:
            return p.copy()
        rows = np.ascontiguousarray(p).reshape(-1, p.shape[-1])
        sums = rows.sum(axis=-1)  # (NumPy's own summation: the bits of every earlier check)
        out, low = _divided(rows, sums, float(np.finfo(np.float64).tiny))
        if low:  # (the device would read it as 0)
            raise ValueError(
                "a transition probability divided by its row's sum falls below the smallest "
                "normal float64 number (2.2e-308), which XLA flushes to zero: give it as 0 "
                "or as at least 2.2e-308 in a row that sums to at most 1"
            )
        return out.reshape(p.shape)

    wide = jax.tree_util.tree_map(widen, mdp)
    rows = transition_rows(wide)
    if isinstance(rows, RaggedRows):
        probs = tuple(normalize(b.probs) for b in rows.blocks)
    else:
        probs = normalize(rows.probs)
    # Host arrays: the graph precomputation and the guess read them on the host (a device
    # copy would come straight back); a device loop transfers what it uses once per call.
    return with_probs(wide, probs)


@compiled()
def _divided(rows, sums, tiny):
    """``(rows / sums, low)``: each row (`[R, K]`) divided by its sum (`[R]`; a row summing
    to 0 is all zeros, left so), and whether a positive quotient fell below ``tiny``. One
    pass: NumPy's division and test wrote and read three arrays of the padded rows (200 ms
    for 32 releases of a 49,504-state model)."""
    out = np.empty(rows.shape)  # (float64, as ``rows``: np.empty_like compiles 0.05 s more)
    low = False
    for r in range(rows.shape[0]):
        d = sums[r] if sums[r] > 0 else 1.0
        for k in range(rows.shape[1]):
            out[r, k] = rows[r, k] / d
            low |= 0 < out[r, k] < tiny
    return out, low


def outward(lower, upper, xp):
    """``[lower, upper]`` widened by one ulp on each side where they differ (a computed
    bound's own rounding; equal bounds are exact values), infinities kept."""
    equal = lower == upper
    return (
        xp.where(equal, lower, xp.nextafter(lower, -xp.inf)),
        xp.where(equal, upper, xp.nextafter(upper, xp.inf)),
    )


def complement(lower, upper, xp):
    """``[1 − upper, 1 − lower]`` rounded outward: one ulp where the bounds differ
    (:func:`outward`), and where ``1 − x`` was rounded (a bound below ``eps / 2`` makes the
    complements equal, 1, though the value is below 1): tested exactly, as ``1 − (1 − x)`` is
    exact for ``1 − x`` in ``[0.5, 1]`` (Sterbenz) and ``1 − x`` is itself exact below."""
    lo, up = outward(1 - upper, 1 - lower, xp)
    lo = xp.where(1 - lo < upper, xp.nextafter(lo, -xp.inf), lo)
    up = xp.where(1 - up > lower, xp.nextafter(up, xp.inf), up)
    return lo, up


def _narrow(lower: np.ndarray, upper: np.ndarray, dtype) -> tuple[np.ndarray, np.ndarray]:
    """float64 bounds in ``dtype``, rounded outward (the narrow interval contains the wide)."""
    if dtype == np.float64:
        return lower, upper
    with np.errstate(invalid="ignore", over="ignore"):  # beyond the dtype: inf, outward
        lo, up = lower.astype(dtype), upper.astype(dtype)
        lo = np.where(lo > lower, np.nextafter(lo, dtype.type(-np.inf)), lo).astype(dtype)
        up = np.where(up < upper, np.nextafter(up, dtype.type(np.inf)), up).astype(dtype)
    return lo, up


def relative_width(lower, upper, xp):
    """``precision`` (per model: the maximum over the last axis, the states):
    ``max_s (upper − lower) / (|upper| + |lower|)``, the relative
    half-width of the tol test ``upper − lower <= tol · (upper + lower)``; 0 where the
    bounds are equal (infinities included) or within :func:`gap_floor` (which meets any
    ``tol``; of the bounds' dtype), inf where only ``upper`` is infinite. (A concrete
    check's answer computes the same in :func:`_answer_rows`.)"""
    floor = gap_floor(upper.dtype)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        rel = (upper - lower) / (xp.abs(upper) + xp.abs(lower))
        rel = xp.where(xp.isfinite(upper - lower), rel, xp.inf)
        rel = xp.where((lower == upper) | (upper - lower <= floor), 0, rel)
    return xp.max(rel, axis=-1, initial=0)


def summarize(lower, upper, converged, xp):
    """``(values, error_bound)`` from the final bounds (any dtype, NumPy or JAX).

    ``values``: the midpoint of ``[lower, upper]`` where ``converged`` (and the bounds are
    finite), else ``lower``: a sound value that does not depend on an upper bound that may
    be far off or infinite. Equal bounds (infinities included) give that value.
    ``error_bound``: ``max(values − lower, upper − values)`` rounded up, so ``|values −
    exact| <= error_bound`` (0 where the bounds are equal; inf where only ``upper`` is).
    """
    equal = lower == upper
    with np.errstate(invalid="ignore", over="ignore"):
        mid = xp.minimum(xp.maximum(lower + (upper - lower) / 2, lower), upper)
        values = xp.where(equal, lower, xp.where(converged & xp.isfinite(mid), mid, lower))
        error = xp.maximum(values - lower, upper - values)
        error = xp.where(equal, 0, xp.nextafter(error, xp.inf)).astype(values.dtype)
    return values, error


def host_answer(lower, upper, dtype, converged, tol: float | None):
    """The host's float64 bounds (`[S]`, or `[n, S]` for a batch, ``converged`` then `[n]`)
    narrowed to ``dtype`` and summarized: ``(lower, upper, values, error_bound, precision,
    converged)``, NumPy, ``precision`` and ``error_bound`` from the narrowed bounds, as
    :func:`to_device`, :func:`relative_width` and :func:`summarize` define them (one
    compiled pass, :func:`_answer_rows`). ``converged`` (unbounded properties, ``tol``
    given) is also False where the narrowed bounds miss ``tol``."""
    dtype = np.dtype(dtype)
    lo, up = _narrow(np.asarray(lower, np.float64), np.asarray(upper, np.float64), dtype)
    shape = lo.shape
    lo, up = (np.array(x, dtype, ndmin=2) for x in (lo, up))  # (copies: written in place)
    conv = np.broadcast_to(np.asarray(converged, bool), (len(lo),)).copy()  # (one a model)
    values, error, precision = np.empty_like(lo), np.empty_like(lo), np.empty(len(lo))
    tiny, floor = float(np.finfo(dtype).tiny), gap_floor(dtype)
    check = -1.0 if tol is None else float(tol)
    top = dtype.type(np.inf)  # (the dtype's own, for its nextafter)
    _answer_rows(lo, up, conv, (check, tiny, floor, top), values, error, precision)
    lo, up, values, error = (x.reshape(shape) for x in (lo, up, values, error))
    conv, precision = conv.reshape(shape[:-1]), precision.reshape(shape[:-1])
    return lo, up, values, error, precision.astype(dtype), conv


@compiled(error_model="numpy")
def _answer_rows(lo, up, conv, limits, values, error, precision):
    """:func:`host_answer`'s pass over each row (a model) of ``lo``, ``up`` (`[n, S]`, the
    model's dtype, made normal in place as :func:`to_device` does), computed in float64 and
    stored rounded to the dtype: ``precision`` (:func:`relative_width`), ``conv`` (and
    ``precision <= tol`` where ``tol >= 0``), ``values`` and ``error`` (:func:`summarize`'s,
    the error rounded up from float64 to the dtype and to a normal number: ``v − l`` and
    ``u − v`` round to nearest, so each is raised one ulp before it is narrowed).
    ``limits``: ``(tol, tiny, floor, top)``, ``top`` the dtype's infinity."""
    tol, tiny, floor, top = limits
    n, S = lo.shape
    for i in range(n):
        worst = 0.0
        for s in range(S):
            if lo[i, s] != 0 and abs(lo[i, s]) < tiny:  # (the device reads them as 0)
                lo[i, s] = 0.0 if lo[i, s] > 0 else -tiny
            if up[i, s] != 0 and abs(up[i, s]) < tiny:
                up[i, s] = tiny if up[i, s] > 0 else 0.0
            a, b = np.float64(lo[i, s]), np.float64(up[i, s])
            gap, rel = b - a, np.inf
            if a == b or gap <= floor:
                rel = 0.0
            elif np.isfinite(gap):
                rel = gap / (abs(b) + abs(a))
            if worst == worst and not rel <= worst:  # (a NaN kept, as NumPy's max)
                worst = rel
        precision[i] = worst
        conv[i] = conv[i] and (tol < 0 or worst <= tol)
        for s in range(S):
            a, b = np.float64(lo[i, s]), np.float64(up[i, s])
            if a == b:
                values[i, s], error[i, s] = a, 0.0
                continue
            mid = min(max(a + (b - a) / 2, a), b)
            values[i, s] = mid if conv[i] and np.isfinite(mid) else a  # (monotone rounding)
            v = np.float64(values[i, s])
            e = np.nextafter(max(v - a, b - v), np.inf)
            error[i, s] = e
            if np.float64(error[i, s]) < e:
                error[i, s] = np.nextafter(error[i, s], top)
            if error[i, s] < tiny:
                error[i, s] = tiny
