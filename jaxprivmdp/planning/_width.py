"""How far the greedy fill reaches: the static width of the robust kernel.

The kernel (:mod:`._kernel`) ranks each value vector once per stage and fills only its
first ``width`` entries. ``width`` sets shapes, so it is static; it must cover every entry a
fill can reach, or the bound would be wrong. It is either

- an ``int`` proven from concrete values (:func:`bounds_width`): every capacity of a box of
  radius ``α`` is at least ``min(α, 1)``, so ``⌈1/α⌉ + 1`` entries hold the mass to pour
  (:func:`fill_width`), plus, for dense support-aware rows (capacities are 0 outside the
  support), the most entries outside a row's public support; or
- a :class:`CheckedWidth` where a value it needs is traced (``k``, ``β``, the support), which
  the kernel checks at run time, recomputing over all ``S`` entries where a fill does not
  complete within it.

The public boundaries derive it from concrete ``k`` and ``β`` also inside another function's
trace, and take a user's ``fill_width`` for a traced ``k``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from .._checks import check_int, is_concrete
from ..models.core import Model, RaggedMDP, SparseMDP


class CheckedWidth(NamedTuple):
    """A static fill width that nothing proves sufficient: checked when it is used.

    The kernel fills over the first ``entries`` values in the shared order and checks that
    every row's fill completed within them (the last of them received nothing, or they hold
    all of the row's capacity, and a support-aware row found its smallest value there); the
    bounds recompute over all ``S`` entries (``lax.cond``) when one did not. Exact either
    way, and as fast as a proven width while the width suffices. Under ``jax.vmap`` the
    condition is batched and both branches run.
    """

    entries: int


def _entries(alpha, extra: int) -> int | None:
    """``⌈1 / min(α, 1)⌉ + 1 + extra`` rounded up to the next of 1, 2, 3, 4, 6, 8, 12, 16,
    24, … (a power of two or three quarters of one); None unless ``alpha`` (its smallest
    entry) is concrete and positive."""
    if not is_concrete(alpha):
        return None
    a = float(np.min(np.asarray(alpha)))
    if not a > 0:
        return None
    need = math.ceil(1.0 / min(a, 1.0)) + 1 + extra
    power = 1 << (need - 1).bit_length()
    # Three quarters of the power when that holds the fill: the window's work grows with
    # its width (64 -> 48 entries: 14 % less CPU for the exact set at S = 1000).
    return power * 3 // 4 if power >= 4 and power * 3 // 4 >= need else power


def fill_width(alpha: ArrayLike, n: int) -> int:
    """How many entries in ``v``-order the greedy fill can reach: a static bound.

    All capacities are ``>= min(α, 1)`` and the mass to pour is ``<= 1``, so at most
    ``⌈1 / min(α, 1)⌉`` entries receive any (one more is kept against rounding). The bound
    is rounded up to a power of two or three quarters of one, so that nearby grids of ``k``
    share one compilation (two widths an octave). For a traced ``alpha`` the width is ``n``
    (always exact).
    """
    entries = _entries(alpha, 0)
    return n if entries is None else min(n, entries)


def _reach(alpha, is_radius_box: bool) -> int | None:
    """How many entries with capacity the fill may need (None: nothing bounds it).

    A box of radius ``α``: :func:`fill_width`. Beta boxes: ``alpha`` bounds the capacity of
    every entry ``<= 1/2``, and a row has at most one entry above 1/2, so one more entry. A
    traced ``alpha``, or one that is not positive (a Beta box of a traced ``k`` says 0),
    bounds nothing.
    """
    return _entries(alpha, 0 if is_radius_box else 1)


@jax.jit
def _most_outside(support: jax.Array, action_mask: jax.Array) -> jax.Array:
    outside = jnp.sum(~support, axis=-1)
    return jnp.max(jnp.where(action_mask, outside, 0))


def _outside_support(mdp: Model, support_aware: bool) -> int | None:
    """The most entries outside an allowed row's support, which the shared value order may
    rank before the row's own: 0 unless the set is support-aware on dense rows; None when
    the support is traced."""
    if not support_aware or isinstance(mdp, SparseMDP | RaggedMDP):
        return 0
    if not is_concrete(mdp.support, mdp.action_mask):
        return None
    with jax.ensure_compile_time_eval():  # a concrete model inside another trace
        return int(_most_outside(mdp.support, mdp.action_mask))


def bounds_width(
    mdp: Model, alpha, support_aware: bool, fill_width: int | None = None, *, is_radius_box: bool
) -> int | CheckedWidth:
    """The static fill width of a set on ``mdp``, ``alpha`` its ``SetParams.alpha`` and
    ``is_radius_box`` its ``SetParams.is_radius_box``.

    Proven (an ``int``, at most ``S``) when ``alpha`` and the support it needs are concrete:
    :func:`_reach` plus :func:`_outside_support`; a given ``fill_width`` must not be below
    it. Otherwise a :class:`CheckedWidth`: the given ``fill_width``, else the reach of a
    concrete ``alpha`` alone (support traced); with neither, all ``S`` entries.
    Support-aware successor lists are filled row by row over their ``K`` entries: ``S``.

    Raises:
      ValueError: for a ``fill_width`` below 1, or below the proven width.
    """
    S = mdp.num_states
    if fill_width is not None:
        fill_width = check_int("fill_width", fill_width, low=1)
    if support_aware and isinstance(mdp, SparseMDP | RaggedMDP):
        return S
    reach, outside = _reach(alpha, is_radius_box), _outside_support(mdp, support_aware)
    if reach is not None and outside is not None:
        proven = min(S, reach + outside)
        if fill_width is None:
            return proven
        if fill_width < proven:
            raise ValueError(
                f"fill_width={fill_width} is below the {proven} entries the fill may reach "
                "with these parameters; pass at least that, or None"
            )
        return min(fill_width, S)
    hint = reach if fill_width is None else fill_width
    return S if hint is None or hint >= S else CheckedWidth(hint)


def at_width(run, width: int | CheckedWidth, num_states: int):
    """``run(entries) -> (out, complete)`` at ``width``: an ``int`` proven sufficient is run
    as is; a :class:`CheckedWidth` is run at its entries and, if any fill of any stage reached
    past them (``complete`` false), once more over all ``S`` entries. One check for the whole
    recursion: a per-stage ``lax.cond`` would cost a copy of the rows."""
    if not isinstance(width, CheckedWidth):
        return run(width)[0]
    out, complete = run(width.entries)
    if width.entries >= num_states:
        return out
    return jax.lax.cond(complete, lambda: out, lambda: run(num_states)[0])
