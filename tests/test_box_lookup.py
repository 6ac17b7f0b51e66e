"""The Beta box lookup's cell index and the boxes' precomputed capacities (issue 15).

``_beta.cell`` reads the cell of ``y`` off its bits; the oracle is NumPy's ``frexp`` with the
formula the tables are built on (``STEPS(e − E0) + ⌊2 STEPS (m − 1/2)⌋`` and the fractional
part), in float64 arithmetic on the host. ``RowBox.caps`` (``upper − lower``, computed once
for all rows) must give the robust backup the same bits as the boxes without it.
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
