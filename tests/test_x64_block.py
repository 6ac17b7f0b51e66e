"""Host callbacks inside a ``jax.enable_x64(True)`` block (found on ragged models, any layout).

JAX can run a callback where the block's x64 setting does not hold and then casts a float64
result to float32: jitted exact/certified sets with a traced ``k`` (the Beta tables) failed with
"Incorrect output dtype". The additive mechanisms' radius (a traced ``β``) goes through the same
helper (:func:`jaxprivmdp._checks.host_callback`); it did not fail here, and is guarded anyway.
Oracle: the same call with concrete parameters (no callback), eagerly.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxprivmdp as jp

pytestmark = pytest.mark.integration

KEY = jax.random.key(3)


# ExactSet slow: both sets take their tables from the same callback.
@pytest.mark.parametrize(
    "cls", [pytest.param(jp.ExactSet, marks=pytest.mark.slow), jp.CertifiedSet]
)
def test_beta_tables_for_a_traced_k_in_an_x64_block(cls):
    with jax.enable_x64(True):
        grid = jp.examples.gridworld(3, 3, horizon=4)
        assert grid.rewards.dtype == jnp.float64

        def cost(k):
            return jp.synthesize(KEY, grid, jp.Dirichlet(k), cls(0.1)).cost

        traced = jax.jit(cost)(jnp.float64(50.0))
        assert traced.dtype == jnp.float64
        # Same tables; a traced k takes the fill width from the table sizes (the eager call
        # from k), so the sums run in another order: rounding-level differences only.
        np.testing.assert_allclose(traced, cost(50.0), rtol=1e-9, atol=1e-9)


def test_an_additive_radius_for_a_traced_beta_in_an_x64_block():
    with jax.enable_x64(True):
        grid = jp.examples.gridworld(2, 3, horizon=3)
        private = jp.privatize(KEY, grid, jp.Gaussian(0.05), support="nonzero")
        policy = jp.solve(private).policy

        def low(beta):
            bound = jp.CertifiedSet(beta, True)
            return jp.cost_of_privacy(private, policy, jp.Gaussian(0.05), bound).lower[0]

        betas = jnp.asarray([0.05, 0.2], jnp.float64)
        traced = jax.jit(jax.vmap(low))(betas)
        assert traced.dtype == jnp.float64
        np.testing.assert_allclose(traced, np.stack([low(float(b)) for b in betas]), rtol=1e-12)
