"""Planning's row work on a :class:`~jaxprivmdp.models._ragged.RaggedMDP`, block by block.

The per-row code of the padded layout runs on each `[n_b, K_b]` block and the results are
scattered into `[S, A]` (:func:`~jaxprivmdp.models._ragged.map_blocks`); here what needs
more than :func:`~jaxprivmdp.models._rows.expect`: the twice-precise residual of policy
evaluation (``_evaluation``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ..models.core import RaggedRows, map_blocks, successors
from ._error_free import exact_product, ff_sum


def ragged_products(
    rows: RaggedRows, weights: jax.Array, r: jax.Array, v: jax.Array, deterministic: bool
) -> tuple[list[jax.Array], list[jax.Array]]:
    """``(pv, wr)`` of ``_accurate_residual`` for ragged rows: ``pv`` one `[S, A, 2]` array,
    each row's ``π(a|s) Σ_s' p v`` as an unevaluated pair (0 for unused rows); ``wr`` the
    exact ``π(a|s) r(s, a)`` terms. ``deterministic``: ``weights`` is a one-hot `[S, A]`.
    """
    used = weights > 0
    w = jnp.where(used, weights, 0)
    flat_w, flat_used = w.reshape(-1), used.reshape(-1)

    def row(block, ids):
        vals = v[successors(block)]
        p = jnp.where(flat_used[ids][:, None], block.probs, 0)
        if deterministic:
            pv = exact_product(p, vals)
        else:  # π(a|s) p(s'|s, a) as an unevaluated pair, then times v(s')
            wp_hi, wp_lo = ff_sum(jnp.stack(exact_product(flat_w[ids][:, None], p), axis=-1))
            pv = exact_product(wp_hi, vals) + exact_product(wp_lo, vals)
        return jnp.stack(ff_sum(jnp.stack(pv, axis=-1).reshape(p.shape[0], -1)), axis=-1)

    pv = map_blocks(row, rows, rows.ids)
    return [pv], ([r] if deterministic else exact_product(w, r))
