"""The sparse robust kernel's elementwise paths for few successors:
the unrolled pairwise fill (support-aware successor lists) and the unrolled placement of a
list in the shared window, against a NumPy greedy fill over sorted entries."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import equations

from jaxprivmdp.models._rows import Rows
from jaxprivmdp.planning._kernel import UNROLLED_MAX_SUCCESSORS, checked_backup
from jaxprivmdp.sets._boxes import RowBox

S, ROWS = 40, 60


def _case(K, seed):
    rng = np.random.default_rng(seed)
    nxt = np.stack([rng.choice(S, K, replace=False) for _ in range(ROWS)])
    nxt[::5, -1] = -1  # padding
    p = rng.dirichlet(np.ones(K), ROWS) * (nxt >= 0)
    p[1::7, 0] = 0.0  # a listed zero: on the support (the list is public)
    p /= p.sum(-1, keepdims=True)
    alpha = 0.07
    lower, upper = np.maximum(p - alpha, 0) * (nxt >= 0), np.minimum(p + alpha, 1) * (nxt >= 0)
    v = np.round(rng.uniform(0, 1, S), 1)  # ties
    return nxt, p, lower, upper, alpha, v


def _on_device(nxt, p, lower, upper, alpha, v):
    """``(rows, box, values)``: a case as the kernel takes it (float32, mixture 0.1)."""
    rows = Rows(jnp.asarray(p, jnp.float32), jnp.asarray(nxt, jnp.int32))
    box = RowBox(
        jnp.asarray(lower, jnp.float32), jnp.asarray(upper, jnp.float32), jnp.float32(alpha), 0.1
    )
    return rows, box, jnp.asarray(v, jnp.float32)


def _oracle(nxt, p, lower, upper, outside, v, beta, aware):
    """min over the row's set of x·v: β·min v + (1 − β)·(l·v + the greedy fill)."""
    out = []
    for r in range(ROWS):
        lo, hi = np.zeros(S), np.full(S, outside)
        keep = np.ones(S, bool)
        if aware:
            keep[:] = False
        for j, s in enumerate(nxt[r]):
            if s >= 0:
                lo[s], hi[s] = lower[r, j], upper[r, j]
                keep[s] = True  # the support: the listed successors
        lo, hi = np.where(keep, lo, 0), np.where(keep, hi, 0)
        order = np.argsort(np.where(keep, v, np.inf), kind="stable")
        slack, fill = max(1 - lo.sum(), 0.0), 0.0
        for s in order:
            if keep[s]:
                take = min(slack, hi[s] - lo[s])
                fill, slack = fill + take * v[s], slack - take
        out.append(beta * v[keep].min() + (1 - beta) * (lo @ v + fill))
    return np.array(out)


@pytest.mark.parametrize("K", [3, UNROLLED_MAX_SUCCESSORS, 12])
@pytest.mark.parametrize("aware", [True, False])
def test_sparse_fill_against_numpy(K, aware):
    nxt, p, lower, upper, alpha, v = _case(K, K)
    rows, box, vj = _on_device(nxt, p, lower, upper, alpha, v)
    fn = jax.jit(lambda r, b, lo, hi: checked_backup(r, b, lo, hi, width=24, support_aware=aware))
    low, high, complete = fn(rows, box, vj, vj)
    low_all = _oracle(nxt, p, lower, upper, alpha, v, 0.1, aware)
    high_all = -_oracle(nxt, p, lower, upper, alpha, -v, 0.1, aware)
    done = np.asarray(complete)
    assert done.mean() > 0.5
    np.testing.assert_allclose(np.asarray(low)[done], low_all[done], atol=2e-6)
    np.testing.assert_allclose(np.asarray(high)[done], high_all[done], atol=2e-6)


@pytest.mark.parametrize("K", [3, UNROLLED_MAX_SUCCESSORS, 12])
def test_short_lists_are_placed_in_the_window_without_a_scatter(K):
    """Up to UNROLLED_MAX_SUCCESSORS successors, a list is placed in the shared window by
    comparing its states with the window's (no scatter of the window's states, no gather of
    them at the successors: faster than the scatter on a CPU); longer lists still use the
    scatter."""
    nxt, p, lower, upper, alpha, v = _case(K, K)
    rows, box, vj = _on_device(nxt, p, lower, upper, alpha, v)
    jaxpr = jax.make_jaxpr(
        lambda r, b, lo, hi: checked_backup(r, b, lo, hi, width=24, support_aware=False)
    )(rows, box, vj, vj).jaxpr
    scatters = {e.primitive.name for e in equations(jaxpr) if "scatter" in e.primitive.name}
    assert bool(scatters) == (K > UNROLLED_MAX_SUCCESSORS), scatters
