"""The Beta intervals of ``_beta`` against the exact inversion.

Oracle: ``{p : c <= F_p(x) <= 1 − c}`` with ``F_p`` the CDF of Beta(kp, k(1 − p)), each end
by ``brentq`` on ``scipy.special.betainc`` / ``betaincc`` (the library solves on a grid of
``x`` and interpolates). The device interval must contain the exact one for every draw the
lookup stands for (``x`` within 8 ulps; below the smallest normal number for ``x = 0``) and
be at most 1 % wider, up to a few ulps of the dtype (in float32 near 1, the spacing of the
floats is itself a sizeable part of the width at large ``k``).
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.special import betainc, betaincc

from jaxprivmdp.sets import _beta

KS = [1e-2, 1.0, 100.0, 1e4, 1e6, 1e8]
LEVELS = [0.05, 1e-4, 1e-12]
DTYPES = [np.float32, np.float64]


def exact_upper(x, k, c):
    """``U(x) = sup{p : F_p(x) >= c}``."""

    def f(p):
        return betainc(k * p, k * (1 - p), x) - c

    lo, hi = 1e-300, 1 - 1e-16
    if f(hi) >= 0:
        return 1.0
    return brentq(f, lo, hi, xtol=1e-300, rtol=1e-15, maxiter=500) if f(lo) >= 0 else 0.0


def exact_lower(x, k, c):
    """``L(x) = sup{p : 1 − F_p(x) < c}`` (0 at ``x = 0``)."""
    if x <= 0:
        return 0.0

    def f(p):
        return c - betaincc(k * p, k * (1 - p), x)

    lo, hi = 1e-300, 1 - 1e-16
    if f(lo) <= 0:
        return 0.0
    return 1.0 if f(hi) > 0 else brentq(f, lo, hi, xtol=1e-300, rtol=1e-15, maxiter=500)


def exact_box(x, k, c, dtype):
    """The hull of the exact intervals of every draw ``x`` stands for, and ``x`` itself."""
    eps = float(np.finfo(dtype).eps)
    x_high = min(max(x * (1 + 8 * eps), 2.0**-126), 1.0)
    lower = exact_lower(max(x * (1 - 8 * eps), 0.0), k, c)
    return min(lower, x), max(exact_upper(x_high, k, c), x)


@functools.cache
def tables(k, c, dtype):
    return _beta.BetaTables(*map(jnp.asarray, _beta.host_tables(k, c, dtype)))


intervals = jax.jit(_beta.intervals)


def device_box(x, k, c, dtype):
    """The device's ``(lower, upper)`` at ``x`` (padded to a multiple of 256: one compile)."""
    n = np.size(x)
    padded = np.pad(np.asarray(x, dtype), (0, -n % 256), mode="edge")
    lower, upper = intervals(jnp.asarray(padded), tables(k, c, dtype))
    return np.asarray(lower, np.float64)[:n], np.asarray(upper, np.float64)[:n]


def sample_points(k, dtype, seed=0, draws=3):
    """Edge values, releases around several ``p``, and the middle of their grid cells."""
    eps = float(np.finfo(dtype).eps)
    tiny = float(np.finfo(dtype).tiny)
    one_minus = [1 - eps / 2, 1 - 8 * eps, 1 - 1e-7, 1 - 1e-12]
    fixed = [0.0, 1e-45, 1e-30, tiny, 1e-12, 1e-7, 0.5 - eps / 4, 0.5, 0.5 + eps / 2, 1.0]
    rng = np.random.default_rng(seed)
    ps = [1e-6, 1e-3, 0.02, 0.3, 0.77, 0.999]
    draws = np.concatenate(
        [rng.beta(max(k * p, 1e-3), max(k * (1 - p), 1e-3), size=draws) for p in ps]
    )
    nodes = _beta.x_grid()
    mirror = np.minimum(draws, 1 - draws)
    j = np.clip(np.searchsorted(nodes, mirror) - 1, 0, nodes.size - 2)
    mid = (nodes[j] + nodes[j + 1]) / 2
    mids = np.where(draws > 0.5, 1 - mid, mid)
    x = np.concatenate([fixed, one_minus, draws, mids]).astype(dtype)
    return np.unique(np.clip(x, 0, 1))


def check(k, c, dtype, x):
    """Containment, and the width against the exact inversion (1 % plus 3 ulps of the
    dtype); returns the worst ratio of the widths, the 3 ulps taken off."""
    lower, upper = device_box(x, k, c, dtype)
    worst = 1.0
    for xi, lo, up in zip(x.astype(np.float64), lower, upper, strict=True):
        want_lo, want_up = exact_box(xi, k, c, dtype)
        assert lo <= want_lo * (1 + 1e-13), (k, c, xi, lo, want_lo)
        assert up >= want_up * (1 - 1e-13), (k, c, xi, up, want_up)
        assert 0 <= lo and up <= 1
        ulp = float(np.spacing(dtype(max(want_up, 0.5 if xi > 0.5 else 0.0))))
        width = want_up - want_lo
        assert up - lo <= 1.01 * width + 3 * ulp, (k, c, xi, (up - lo) / width)
        if width > 0:
            worst = max(worst, (up - lo - 3 * ulp) / width)
    return worst


@pytest.mark.parametrize("dtype", DTYPES)
def test_intervals_contain_the_exact_inversion_and_are_within_one_percent(dtype):
    with jax.enable_x64(dtype == np.float64):
        for k in KS:
            x = sample_points(k, dtype)
            for c in LEVELS:
                assert check(k, c, dtype, x) <= 1.01


def test_float64_width_against_the_inversion_at_x_itself():
    """In float64 the 8-ulp widening is negligible: within 1 % of the interval of ``x``
    itself (above 2^-125: below, the lookup stands for every draw under 2^-126)."""
    with jax.enable_x64(True):
        for k in [1e-2, 1e4, 1e8]:
            x = sample_points(k, np.float64, seed=1, draws=2)
            x = x[(x > 2.0**-125) & (x < 1 - 1e-9)]
            for c in [0.05, 1e-12]:
                lower, upper = device_box(x, k, c, np.float64)
                for xi, lo, up in zip(x, lower, upper, strict=True):
                    want = min(exact_lower(xi, k, c), xi), max(exact_upper(xi, k, c), xi)
                    assert up - lo <= 1.01 * (want[1] - want[0]), (k, c, xi)


def dense_x(dtype):
    """Sorted: log-spaced, uniform, every node and its float neighbours, near 1/2 and 1."""
    nodes = _beta.x_grid()
    x = np.concatenate(
        [
            [0.0],
            np.geomspace(1e-44, 0.5, 3000),
            np.linspace(0, 1, 3001),
            nodes,
            1 - nodes,
            1 - np.geomspace(1e-15, 0.5, 1000),
        ]
    ).astype(dtype)
    x = np.concatenate([x, np.nextafter(x, dtype(0)), np.nextafter(x, dtype(1))])
    return np.unique(np.clip(x, 0, 1))


@pytest.mark.parametrize("dtype", DTYPES)
def test_intervals_never_decrease_with_x(dtype):
    with jax.enable_x64(dtype == np.float64):
        x = dense_x(dtype)
        for k in [1e-2, 3.0, 1e4, 1e8]:
            for c in [0.05, 1e-12]:
                lower, upper = device_box(x, k, c, dtype)
                assert np.all(np.diff(lower) >= 0), (k, c)
                assert np.all(np.diff(upper) >= 0), (k, c)
                assert np.all(lower <= x) and np.all(x <= upper)


@pytest.mark.parametrize("dtype", DTYPES)
def test_smallest_width_bounds_every_width_up_to_one_half(dtype):
    with jax.enable_x64(dtype == np.float64):
        x = dense_x(dtype)
        x = x[x <= 0.5]
        for k in [1e-2, 1.0, 50.0, 1e4, 1e8]:
            for c in [0.05, 1e-12]:
                lower, upper = device_box(x, k, c, dtype)
                width = _beta.smallest_width(k, c, np.dtype(dtype).name)
                assert 0 < width <= np.min(upper - lower), (k, c)
                assert width >= 0.999 * np.min(upper - lower), (k, c)  # and tight


def test_tables_have_a_fixed_size_and_the_traced_path_matches():
    """The size depends on nothing (static shapes for the callback); same values traced."""
    x = jnp.asarray(sample_points(1e3, np.float32), jnp.float32)
    ks = jnp.asarray([0.5, 1e3, 1e7], jnp.float32)
    for k in ks:
        host = _beta.host_tables(float(k), 1e-3, np.float32)
        assert all(t.shape == (_beta.NODES,) and t.dtype == np.float32 for t in host)

    @jax.jit
    @jax.vmap
    def traced(k):
        t = _beta.BetaTables(*_beta.device_tables(k, jnp.float32(1e-3), jnp.float32))
        return _beta.intervals(x, t)

    got = traced(ks)
    for i, k in enumerate(ks):
        # The level goes through float32 in the callback: the same tables, up to that.
        want = device_box(np.asarray(x), float(k), float(np.float32(1e-3)), np.float32)
        np.testing.assert_array_equal(got[0][i], want[0])
        np.testing.assert_array_equal(got[1][i], want[1])


@pytest.mark.slow
@pytest.mark.parametrize("dtype", DTYPES)
def test_scan_of_k_levels_and_releases(dtype):
    """Log-spaced k from 1e-2 to 1e8, levels from 1e-12 to 0.05, random releases."""
    with jax.enable_x64(dtype == np.float64):
        for i, k in enumerate(np.geomspace(1e-2, 1e8, 21)):
            x = sample_points(float(k), dtype, seed=i, draws=4)
            for c in [0.05, 1e-3, 1e-6, 1e-9, 1e-12]:
                assert check(float(k), c, dtype, x) <= 1.01
