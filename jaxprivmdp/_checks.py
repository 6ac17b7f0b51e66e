"""One vocabulary of input checks, used by every other module.

The rule (shared/DESIGN.md, "the boundary rule"): a public function checks *values* only
when they are concrete (NumPy arrays, Python numbers, committed device arrays) and checks
only *shapes and dtypes* of traced values, which are known at trace time. A traced argument
is never an error by itself, so every public function works under ``jax.jit``, ``jax.vmap``
and ``jax.grad``; the value checks then belong to whoever calls the transformed function.

Every check raises :class:`ValueError` with a message that names the argument. Checks never
change what the user gave: they return converted copies or nothing.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

# Rows of transition probabilities must sum to 1 within this tolerance, in every dtype.
# It is float32's (256 ulps of 1): a model stored in float32 (e.g. a `privatize` release)
# and computed on in float64 must still be accepted, and nothing is renormalized.
ROW_SUM_TOLERANCE = float(256 * np.finfo(np.float32).eps)

# Entries within this relative distance below a public bound ``η`` count as ``η``
# (``1 − 0.9`` is ``0.09999999999999998`` in float64); about 16 float32 ulps.
ETA_RELATIVE_TOLERANCE = 1e-6


def is_concrete(*xs) -> bool:
    """True when no leaf of ``xs`` is a tracer, so its values can be checked eagerly."""
    return not any(isinstance(x, jax.core.Tracer) for x in jax.tree_util.tree_leaves(xs))


def check_count(name: str, value) -> int:
    """``value`` as an int ``>= 1``, or a ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ValueError(f"{name} must be an int >= 1, got {value!r}")
    return int(value)


def check_int(name: str, value, *, low: int, high: int | None = None) -> int:
    """``value`` as an int in ``[low, high)``, or a ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if high is None and value < low:
        raise ValueError(f"{name} must be >= {low}, got {value}")
    if high is not None and not low <= value < high:
        raise ValueError(f"{name} must lie in [{low}, {high}), got {value}")
    return int(value)


def working_dtype(dtype=None) -> np.dtype:
    """float32 or float64 (default: JAX's default float); anything else is refused.

    float64 needs ``jax_enable_x64``: without it JAX would silently compute in float32.
    """
    if dtype is None:  # (no array: a first jnp.zeros would compile, 40 ms)
        return np.dtype(jax.dtypes.canonicalize_dtype(np.float64))
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        raise ValueError(f"dtype must be float32 or float64, got {dtype!r}") from None
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"dtype must be float32 or float64, got {dtype}")
    if dtype == np.float64 and not jax.config.jax_enable_x64:
        raise ValueError(
            "dtype float64 needs 64-bit JAX: run jax.config.update('jax_enable_x64', True) "
            "(or set JAX_ENABLE_X64=1) before creating arrays; without it JAX computes in "
            "float32"
        )
    return dtype


def as_numpy(name: str, x) -> np.ndarray:
    """``np.asarray(x)`` of a concrete value, with a ValueError naming ``name``."""
    if isinstance(x, jax.core.Tracer):  # a caller bug: values of tracers are unknown
        raise TypeError(f"{name} is traced; check values only of concrete inputs")
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError) as e:  # ragged nested lists, odd objects
        raise ValueError(f"{name} could not be converted to an array: {e}") from None
    if arr.dtype == object:
        raise ValueError(f"{name} must be numeric, got {type(x).__name__} of Python objects")
    return arr


def check_numeric_dtype(name: str, dtype) -> None:
    """Real numbers or bools only: complex input would lose its imaginary part."""
    dtype = np.dtype(dtype)
    if np.issubdtype(dtype, np.complexfloating):
        raise ValueError(f"{name} must be real, got complex dtype {dtype}")
    if not (np.issubdtype(dtype, np.number) or np.issubdtype(dtype, np.bool_)):
        raise ValueError(f"{name} must be numeric, got dtype {dtype}")


def float_array(name: str, x, dtype, *, copy: bool = True, normal: bool = False) -> np.ndarray:
    """A finite float NumPy copy of a concrete ``x`` in ``dtype`` (``x`` itself where it is
    such an array already and not ``copy``), or a ValueError. ``normal``: nonzero entries
    below ``dtype``'s ``tiny`` are refused too (:func:`refuse_subnormal`)."""
    arr = as_numpy(name, x)
    check_numeric_dtype(name, arr.dtype)
    out = arr.astype(dtype, copy=copy)
    bad = ~np.isfinite(out)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        if not np.isfinite(arr[idx]):
            raise ValueError(f"{name} has a non-finite entry {arr[idx]} at index {idx}")
        raise ValueError(f"{name} has an entry {arr[idx]} at index {idx} that overflows {dtype}")
    if normal:
        refuse_subnormal(name, arr, dtype)
    return out


def refuse_subnormal(name: str, given, dtype, *, allowed=None) -> None:
    """A ValueError for the first entry of a concrete ``given`` that is nonzero but whose
    magnitude in ``dtype`` is below ``np.finfo(dtype).tiny``: subnormal there, or 0 after
    the cast.

    XLA flushes subnormal numbers to zero on CPU (and float32 on GPU), inputs and results
    alike, so such an entry is not what the device computes with: a probability would leave
    the support (reachability changes) and bounds computed from it would not hold. Model
    constructors refuse it rather than change it silently. ``given`` is the user's data (any real
    dtype; integers are never subnormal), ``dtype`` the model's dtype. ``allowed``: a bool
    array broadcastable to ``given``'s shape; entries outside it (masked rows, never read)
    are not checked.
    """
    x = np.asarray(given)
    if x.dtype.kind != "f" or x.size == 0:
        return
    dtype = np.dtype(dtype)
    tiny = np.finfo(dtype).tiny
    small = np.abs(x) < tiny
    small &= x != 0
    if allowed is not None:
        small &= allowed
    if not small.any():
        return
    found = np.argwhere(small)
    # A value just below ``tiny`` of a wider input may round up to ``tiny`` in ``dtype``.
    cast = np.abs(x[small].astype(dtype))
    found = found[cast < tiny]
    if not found.size:
        return
    idx = tuple(int(i) for i in found[0])
    value = float(x[idx])
    short = np.float32(value)  # the shorter text where the value is a float32 number
    shown = str(short if float(short) == value else np.float64(value))
    count = f"{len(found)} such entr{'y' if len(found) == 1 else 'ies'}"
    wider = ""
    if dtype == np.float32 and abs(value) >= np.finfo(np.float64).tiny:
        wider = ", or a float64 model (dtype=np.float64, with jax_enable_x64), which holds it"
    raise ValueError(
        f"{name} has an entry {shown} at index {idx}, nonzero but below {tiny:.9g}, the "
        f"smallest normal {dtype} number ({count}): XLA flushes subnormal numbers to zero on "
        "CPU (and float32 on GPU), so the model computed with would not be the one given. "
        f"Use 0 or a number of magnitude at least {tiny:.9g} there{wider}; nothing is "
        "changed silently"
    )


def check_range(
    name: str,
    value,
    *,
    low=None,
    high=None,
    low_open=False,
    high_open=False,
    scalar=False,
    dtype=None,
) -> None:
    """Every entry of ``value`` in the interval; with ``scalar=True`` also a single number.

    Traced values get the trace-time part only (the scalar shape and a real dtype). With
    ``dtype``, concrete values must also stay finite when cast to it (a ``k`` of ``1e39``
    overflows float32).
    """
    if type(value) in (float, int):  # the common case, without NumPy's overhead
        v = float(value)
        _check_scalar(name, v, low, high, low_open, high_open)
        if dtype is not None and abs(v) > float(np.finfo(dtype).max):
            raise ValueError(f"{name} = {value!r} overflows {np.dtype(dtype)}")
        return
    if isinstance(value, jax.core.Tracer):
        check_numeric_dtype(name, value.dtype)
        if scalar and value.ndim != 0:
            raise ValueError(f"{name} must be a scalar, got shape {value.shape}")
        return
    arr = as_numpy(name, value)
    check_numeric_dtype(name, arr.dtype)
    arr = arr.astype(np.float64)
    if scalar and arr.ndim != 0:
        raise ValueError(f"{name} must be a scalar, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if dtype is not None:
        with np.errstate(over="ignore"):
            if not np.all(np.isfinite(arr.astype(dtype))):
                raise ValueError(f"{name} = {value!r} overflows {np.dtype(dtype)}")
    bad = np.zeros(arr.shape, bool)
    if low is not None:
        bad |= arr <= low if low_open else arr < low
    if high is not None:
        bad |= arr >= high if high_open else arr > high
    if np.any(bad):
        got = arr[bad].ravel()[:5].tolist() if arr.ndim else float(arr)
        if high is None:
            raise ValueError(f"{name} must be {'>' if low_open else '>='} {low:g}, got {got}")
        if low is None:
            raise ValueError(f"{name} must be {'<' if high_open else '<='} {high:g}, got {got}")
        lo, hi = "(" if low_open else "[", ")" if high_open else "]"
        raise ValueError(f"{name} must lie in {lo}{low:g}, {high:g}{hi}, got {got}")


def _check_scalar(name, v: float, low, high, low_open, high_open) -> None:
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {v!r}")
    if (low is not None and (v < low or (low_open and v == low))) or (
        high is not None and (v > high or (high_open and v == high))
    ):
        check_range(name, np.float64(v), low=low, high=high, low_open=low_open, high_open=high_open)


def real(name: str, value, **interval) -> float:
    """A concrete real scalar in the interval of :func:`check_range`, as a Python float."""
    check_range(name, value, scalar=True, **interval)
    return float(value)


def check_probability(name: str, value) -> None:
    """A scalar in the open interval ``(0, 1)`` (β, δ)."""
    check_range(name, value, low=0.0, high=1.0, low_open=True, high_open=True, scalar=True)


def check_positive(name: str, value, *, dtype=None, scalar=True) -> None:
    """``> 0`` and finite (in ``dtype`` when given): the mechanism's ``k``."""
    check_range(name, value, low=0.0, low_open=True, scalar=scalar, dtype=dtype)


def check_key(key) -> jax.Array:
    """A single typed PRNG key (traced or not), or a ValueError that says how to make one.

    A legacy ``jax.random.PRNGKey`` (``uint32[2]``) is wrapped; an int seed is refused: a
    seed belongs at the user boundary (the CLI), and a small one is guessable.
    """
    if isinstance(key, jax.Array) and jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        if key.ndim != 0:
            raise ValueError(f"key must be a single PRNG key, got shape {key.shape}")
        return key
    if isinstance(key, jax.Array | np.ndarray) and key.shape == (2,) and key.dtype == np.uint32:
        return jax.random.wrap_key_data(jnp.asarray(key))
    raise ValueError(
        f"key must be a JAX PRNG key such as jax.random.key(seed) or secure_key(), got {key!r}"
    )


def check_shape(name: str, x, shape: tuple, dims: str) -> None:
    """``x.shape == shape`` (trace-time), naming the dimensions, e.g. ``[S, A]``."""
    if tuple(np.shape(x)) != tuple(shape):
        raise ValueError(f"{name} must have shape {dims} = {tuple(shape)}, got {np.shape(x)}")


def round_up(value, dtype) -> np.ndarray:
    """The smallest ``dtype`` numbers ``>= value`` (a radius rounded outwards stays valid)."""
    value = np.asarray(value, np.float64)
    out = np.asarray(value, dtype)
    below = out.astype(np.float64) < value
    return np.where(below, np.nextafter(out, np.asarray(math.inf, dtype)), out).astype(dtype)


def host_scalar(x, dtype):
    """A concrete scalar as a NumPy scalar of ``dtype`` (a jitted call transfers it with its
    arguments, cheaper than a ``device_put`` each); a traced one as a JAX array."""
    return np.asarray(x, dtype) if is_concrete(x) else jnp.asarray(x, dtype)


def host_callback(fn, shape: tuple, dtype, *args, **kwargs) -> jax.Array:
    """``jax.pure_callback(fn, (shape, dtype), *args)`` that also works inside a
    ``jax.enable_x64(True)`` block: the callback runs on another thread, where the block's
    setting does not hold, and JAX would cast a float64 result to float32 there and fail
    ("Incorrect output dtype"). A 64-bit result therefore crosses as ``uint32`` pairs (its bits,
    never cast) and is bitcast back here."""
    dtype = np.dtype(dtype)
    if dtype.itemsize != 8:
        return jax.pure_callback(fn, jax.ShapeDtypeStruct(shape, dtype), *args, **kwargs)

    def bits(*xs):
        out = np.array(fn(*xs), dtype, order="C")
        return out.reshape(-1).view(np.uint32).reshape(out.shape + (2,))

    spec = jax.ShapeDtypeStruct(tuple(shape) + (2,), np.uint32)
    return jax.lax.bitcast_convert_type(jax.pure_callback(bits, spec, *args, **kwargs), dtype)
