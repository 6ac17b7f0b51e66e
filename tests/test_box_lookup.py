"""The Beta box lookup's cell index and the boxes' precomputed capacities.

``_beta.cell`` reads the cell of ``y`` off its bits; the oracle is NumPy's ``frexp`` with the
formula the tables are built on (``STEPS(e − E0) + ⌊2 STEPS (m − 1/2)⌋`` and the fractional
part), in float64 arithmetic on the host. ``RowBox.caps`` (``upper − lower``, computed once
for all rows) must give the robust backup the same bits as the boxes without it.
``_beta.intervals`` (bit tricks in place of ``jnp.nextafter`` and ``jnp.minimum``) must give
the bits of the documented lookup, written in NumPy (``np.frexp``, ``np.nextafter``).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxprivmdp.models._rows import Rows
from jaxprivmdp.planning._kernel import checked_backup
from jaxprivmdp.sets import _beta
from jaxprivmdp.sets._boxes import RowBox


def _points(dtype) -> np.ndarray:
    """Values in ``[FLOOR, 1/2]``: random, at and next to every node, and the ends."""
    rng = np.random.default_rng(0)
    nodes = _beta.x_grid()[: _beta.HALF + 1].astype(dtype)
    y = np.concatenate(
        [
            10.0 ** rng.uniform(-37.9, np.log10(0.5), 20_000),
            nodes,
            np.nextafter(nodes, dtype(1)),
            np.nextafter(nodes, dtype(0)),
            [_beta.FLOOR, 0.5],
        ]
    ).astype(dtype)
    return y[(y >= _beta.FLOOR) & (y <= 0.5)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cell_equals_the_frexp_formula(dtype):
    y = _points(dtype)
    m, e = np.frexp(y.astype(np.float64))
    pos = (m - 0.5) * (2 * _beta.STEPS)
    j = np.floor(pos)
    want_i = (e - _beta.E0) * _beta.STEPS + j.astype(np.int64)
    want_w = pos - j
    assert want_i.min() == 0 and want_i.max() == _beta.HALF
    with jax.enable_x64(dtype == np.float64):
        for fn in (_beta.cell, jax.jit(_beta.cell)):
            i, w = fn(jnp.asarray(y))
            np.testing.assert_array_equal(np.asarray(i), want_i)
            assert np.asarray(w).dtype == dtype
            np.testing.assert_array_equal(np.asarray(w, np.float64), want_w)


def _box(lower, upper, outside, caps: bool) -> RowBox:
    lo, up = jnp.asarray(lower, jnp.float32), jnp.asarray(upper, jnp.float32)
    return RowBox(lo, up, jnp.float32(outside), jnp.float32(0.1), up - lo if caps else None)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("aware", [False, True])
def test_caps_give_the_same_backup(sparse, aware):
    rng = np.random.default_rng(1)
    S, K = 40, 5
    if sparse:
        nxt = np.argsort(rng.random((S, 2, S)), axis=-1)[..., :K]
        nxt[:, :, -1] = -1  # a padding slot
        p = rng.dirichlet(np.ones(K - 1), size=(S, 2))
        p = np.concatenate([p, np.zeros((S, 2, 1))], -1)
        rows = Rows(jnp.asarray(p, jnp.float32), jnp.asarray(nxt, jnp.int32))
    else:
        p = rng.dirichlet(np.ones(S) * 0.3, size=(S, 2))
        p = np.where(p > 1e-3, p, 0)  # a public support: the entries kept
        p /= p.sum(-1, keepdims=True)
        rows = Rows(jnp.asarray(p, jnp.float32), None, jnp.asarray(p > 0))
    lower, upper = np.maximum(p - 0.03, 0), np.minimum(p + 0.05, 1)
    kept = nxt >= 0 if sparse else p > 0  # a set's box is 0 outside (row_box)
    if sparse or aware:
        lower, upper = np.where(kept, lower, 0), np.where(kept, upper, 0)
    v = jnp.asarray(rng.random(S), jnp.float32)
    out = [
        jax.jit(lambda r, b, lo, hi: checked_backup(r, b, lo, hi, width=32, support_aware=aware))(
            rows, _box(lower, upper, 0.05, caps), v, v + 1
        )
        for caps in (False, True)
    ]
    for a, b in zip(*out, strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def _fused(a, s, w, dtype):
    """``a + s·w`` rounded once to ``dtype`` (as an FMA), from exact rationals."""
    from fractions import Fraction

    out = []
    for ai, si, wi in zip(a.tolist(), s.tolist(), w.tolist(), strict=True):
        exact = Fraction(ai) + Fraction(si) * Fraction(wi)
        near = dtype(float(exact))  # within an ulp: the nearest of it and its neighbours
        cands = [np.nextafter(near, dtype(-np.inf)), near, np.nextafter(near, dtype(np.inf))]
        err = [abs(Fraction(float(c)) - exact) for c in cands]
        best = min(err)
        ties = [c for c, e in zip(cands, err, strict=True) if e == best]
        out.append(
            min(ties, key=lambda c: int(c.view(np.int64 if c.itemsize == 8 else np.int32)) & 1)
        )
    return np.asarray(out, dtype)


def _oracle(x, tables, dtype, fused=False):
    """The lookup as documented, in NumPy in ``dtype``: the cell from ``frexp``, ``value +
    step·w`` (two roundings, or one where ``fused``, and so ``1 − u_half``), outward by
    ``1 ± 4 eps``, the mirror ``1 − v`` one ulp out (``np.nextafter``) beyond 1/2, clipped
    to [0, 1] and to hold x (``intervals``' formula, written out independently)."""
    f = np.dtype(dtype).type
    eps = np.finfo(dtype).eps
    upper_t, upper_s, lower_t, lower_s = (np.asarray(t, dtype) for t in tables)

    def look(y, values, steps, up):  # y > 1/2 only where the other branch is taken
        m, e = np.frexp(np.clip(y, _beta.FLOOR, 0.5).astype(np.float64))
        pos = (m - 0.5) * (2 * _beta.STEPS)
        j = np.floor(pos)
        i = (e - _beta.E0) * _beta.STEPS + j.astype(np.int64)
        w = (pos - j).astype(dtype)
        a, s = values[i], steps[i]
        v = _fused(a, s, w, f) if fused else a + s * w
        v = v * f(1 + 4 * eps if up else 1 - 4 * eps)
        return v if up else np.where(y >= _beta.FLOOR, v, f(0))

    x = np.clip(x, f(0), f(1))
    high, low = np.minimum(x * f(1 + 8 * eps), f(1)), x * f(1 - 8 * eps)
    u_half = upper_t[_beta.HALF] * f(1 + 4 * eps)
    one_minus = (
        _fused(
            np.ones(1, dtype),
            -upper_t[_beta.HALF : _beta.HALF + 1],
            np.asarray([1 + 4 * eps], dtype),
            f,
        )[0]
        if fused
        else f(1) - u_half
    )
    l_half = np.nextafter(one_minus, f(-1))
    upper = np.where(
        high > 0.5,
        np.maximum(np.nextafter(1 - look(1 - high, lower_t, lower_s, False), f(2)), u_half),
        look(high, upper_t, upper_s, True),
    )
    lower = np.where(
        low > 0.5,
        np.nextafter(1 - look(1 - low, upper_t, upper_s, True), f(-1)),
        np.minimum(look(low, lower_t, lower_s, False), l_half),
    )
    upper, lower = np.minimum(upper, f(1)), np.maximum(lower, f(0))
    return np.minimum(lower, x), np.maximum(upper, x)


def _releases(dtype) -> np.ndarray:
    """Edge values (0, subnormals, around FLOOR, the nodes, 1/2 and 1) and releases."""
    f = np.dtype(dtype).type
    rng = np.random.default_rng(2)
    tiny = np.finfo(dtype).smallest_subnormal
    edges = [f(0), tiny, 2 * tiny, f(np.finfo(dtype).tiny), f(_beta.FLOOR), f(0.5), f(1)]
    near = []
    for c in edges[3:]:
        lo = hi = c
        for _ in range(20):
            lo, hi = np.nextafter(lo, f(0)), np.nextafter(hi, f(1))
            near += [lo, hi]
    nodes = _beta.x_grid().astype(dtype)
    draws = [rng.dirichlet(np.full(50, k / 50), size=40).ravel() for k in (0.5, 5, 50, 1e4)]
    parts = [edges, near, nodes, np.nextafter(nodes, f(0)), 1 - nodes, *draws]
    parts.append(rng.uniform(0, 1, 2000))
    return np.unique(np.clip(np.concatenate(parts).astype(dtype), 0, 1))


@pytest.mark.integration
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_intervals_are_the_documented_lookup_bit_for_bit(dtype):
    """Eagerly (one XLA op at a time) the same bits as the NumPy oracle. Under ``jit``
    XLA:CPU lets LLVM fuse ``value + step·w`` and ``1 − u_half`` into FMAs (one rounding):
    each entry is the oracle's with two roundings there
    or with one."""
    x = _releases(dtype)
    bits = np.int64 if dtype == np.float64 else np.int32
    with jax.enable_x64(dtype == np.float64):
        for k, level in [(0.5, 1e-3), (5.0, 1e-9), (1e4, 0.05)]:
            tables = _beta.host_tables(k, level, dtype)
            t = _beta.BetaTables(*map(jnp.asarray, tables))
            want = _oracle(x, tables, dtype)
            for fn in (_beta.intervals, jax.jit(_beta.intervals)):
                got = [np.asarray(g) for g in fn(jnp.asarray(x), t)]
                for g, w_plain, side in zip(got, want, (0, 1), strict=True):
                    odd = np.nonzero(g.view(bits) != w_plain.view(bits))[0]
                    if fn is _beta.intervals or odd.size == 0:
                        np.testing.assert_array_equal(g.view(bits), w_plain.view(bits))
                        continue
                    w_fused = _oracle(x[odd], tables, dtype, fused=True)[side]
                    np.testing.assert_array_equal(g[odd].view(bits), w_fused.view(bits))
