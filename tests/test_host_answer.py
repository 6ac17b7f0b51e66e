"""``host_answer``, the compiled assembly of a concrete check's answer from its float64
bounds, against plain NumPy (the definitions of ``to_device``, ``relative_width`` and
``summarize``) and, for the error bound, against exact rational arithmetic."""

from fractions import Fraction

import numpy as np
import pytest

from jaxprivmdp.properties._precision import gap_floor, host_answer


def _narrow(lower, upper, dtype):
    lo, up = lower.astype(dtype), upper.astype(dtype)
    lo = np.where(lo > lower, np.nextafter(lo, dtype.type(-np.inf)), lo).astype(dtype)
    up = np.where(up < upper, np.nextafter(up, dtype.type(np.inf)), up).astype(dtype)
    return lo, up


def _reference(lower, upper, dtype, converged, tol):
    """The answer by whole-array NumPy, each step as its definition reads."""
    tiny = np.finfo(dtype).tiny
    with np.errstate(all="ignore"):
        lo, up = _narrow(lower, upper, dtype)
        lo = np.where((lo != 0) & (np.abs(lo) < tiny), np.where(lo > 0, 0.0, -tiny), lo)
        up = np.where((up != 0) & (np.abs(up) < tiny), np.where(up > 0, tiny, 0.0), up)
        lo, up = lo.astype(dtype), up.astype(dtype)
        l64, u64 = lo.astype(np.float64), up.astype(np.float64)
        rel = (u64 - l64) / (np.abs(u64) + np.abs(l64))
        rel = np.where(np.isfinite(u64 - l64), rel, np.inf)
        rel = np.where((l64 == u64) | (u64 - l64 <= gap_floor(dtype)), 0, rel)
        precision = np.max(rel, axis=-1, initial=0)
        conv = np.asarray(converged, bool) & (precision <= tol if tol is not None else True)
        mid = np.minimum(np.maximum(l64 + (u64 - l64) / 2, l64), u64)
        v64 = np.where(l64 == u64, l64, np.where(conv[..., None] & np.isfinite(mid), mid, l64))
        values = v64.astype(dtype)
    return lo, up, values, precision.astype(dtype), conv


def _bounds(rng, n, S):
    """Float64 bounds of every kind: equal, zero, subnormal, tiny, wide, infinite uppers."""
    scale = 10.0 ** rng.integers(-330, 2, (n, S)).astype(float)
    lower = rng.random((n, S)) * scale
    upper = lower + rng.random((n, S)) * scale * 10.0 ** rng.integers(-17, 1, (n, S))
    kind = rng.integers(0, 8, (n, S))
    upper = np.where(kind == 0, lower, upper)
    lower = np.where(kind == 1, 0.0, lower)
    upper = np.where(kind == 2, np.inf, upper)
    lower, upper = np.where(kind == 3, 0.0, lower), np.where(kind == 3, 0.0, upper)
    return lower, np.maximum(upper, lower)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("seed", range(6))
def test_host_answer_agrees_with_numpy_and_bounds_the_error_exactly(dtype, seed):
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    for n, S, tol in [(1, 40, 1e-6), (3, 25, None), (2, 30, 1e-3)]:
        lower, upper = _bounds(rng, n, S)
        if seed % 2:  # some rows meet the precision asked
            upper[0] = np.where(np.isfinite(upper[0]), lower[0] * (1 + 1e-9), upper[0])
        converged = rng.random(n) < 0.8
        if n == 1:  # one model: `[S]` and a scalar flag
            lower, upper, converged = lower[0], upper[0], bool(converged[0])
        want = _reference(lower, upper, dtype, converged, tol)
        lo, up, values, error, precision, conv = host_answer(lower, upper, dtype, converged, tol)
        for got, ref in zip((lo, up, values, precision, conv), want, strict=True):
            assert got.dtype == ref.dtype and got.shape == ref.shape
            np.testing.assert_array_equal(got, ref)
        assert error.dtype == dtype and error.shape == lo.shape
        tiny = np.finfo(dtype).tiny
        for v, a, b, e in zip(values.ravel(), lo.ravel(), up.ravel(), error.ravel(), strict=True):
            if a == b:
                assert e == 0
            elif not np.isfinite(b):
                assert e == np.inf
            else:  # rounded up: the exact largest distance, never below; normal
                v, a, b = float(v), float(a), float(b)
                exact = max(Fraction(v) - Fraction(a), Fraction(b) - Fraction(v))
                assert Fraction(float(e)) >= exact and e >= tiny, (v, a, b, e)
                assert e <= np.nextafter(
                    np.nextafter(dtype.type(float(exact)), np.inf), np.inf
                ) or (e == tiny)


def test_the_float64_error_bound_is_rounded_up():
    """``v − l`` and ``u − v`` round to nearest (below the exact distance about one time in
    five for these bounds): the error bound must still cover the exact distance."""
    rng = np.random.default_rng(7)
    lower = rng.random(2000) * 10.0 ** rng.integers(-20, 0, 2000)
    upper = lower + rng.random(2000) * 10.0 ** rng.integers(-20, 0, 2000)
    lo, up, values, error, _, _ = host_answer(lower, upper, np.float64, True, None)
    short = [
        i
        for i in range(lower.size)
        if Fraction(error[i])
        < max(Fraction(values[i]) - Fraction(lo[i]), Fraction(up[i]) - Fraction(values[i]))
    ]
    assert not short, f"{len(short)} error bounds below the exact distance"


def test_one_flag_for_a_batch_is_every_model_s():
    lower = np.array([[0.1, 0.2], [0.3, 0.4]])
    *_, conv = host_answer(lower, lower * (1 + 1e-9), np.float64, True, 1e-6)
    assert conv.shape == (2,) and conv.all()
    *_, conv = host_answer(lower, lower + 0.1, np.float32, np.array([True, True]), 1e-6)
    assert conv.shape == (2,) and not conv.any()
