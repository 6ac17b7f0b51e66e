"""A whole MDP's (ε, δ): composition and lifting the per-row guarantee to every row."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Literal, NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from .._checks import ETA_RELATIVE_TOLERANCE, real
from ..models._support import host_mechanism_input, private_rows
from ._row import Guarantee, check_b, check_k, check_target_delta, guarantee

Adjacency = Literal["row", "all"]


class Composition(NamedTuple):
    """Basic composition of several guarantees.

    Attributes:
      epsilon: the sum of the epsilons.
      delta: the sum of the deltas.
      num_mechanisms: how many guarantees were composed.
    """

    epsilon: float
    delta: float
    num_mechanisms: int


class MDPGuarantee(NamedTuple):
    """The (ε, δ) of privatizing every allowed row of an MDP, see :func:`mdp_guarantee`.

    Attributes:
      epsilon: the MDP-level ε.
      delta: the MDP-level δ.
      adjacency: ``"row"`` or ``"all"``, the notion of adjacent MDPs it refers to.
      num_rows: how many rows are privatized (rows with a one-entry support are not).
      per_row: ``{(state, action): Guarantee}`` for every privatized row.
    """

    epsilon: float
    delta: float
    adjacency: str
    num_rows: int
    per_row: Mapping[tuple[int, int], Guarantee]

    def __repr__(self) -> str:
        # A summary: per_row has one entry per privatized row (10,000 for a 50x50 grid).
        distinct = len({(g.n, g.b, g.eta) for g in self.per_row.values()})
        return (
            f"MDPGuarantee(epsilon={self.epsilon!r}, delta={self.delta!r}, "
            f"adjacency={self.adjacency!r}, num_rows={self.num_rows}, "
            f"per_row=<{len(self.per_row)} rows, {distinct} distinct (n, b, eta)>)"
        )


def compose(guarantees: Iterable) -> Composition:
    """Basic composition: ``Σ ε`` and ``Σ δ`` over independent mechanisms.

    Valid for ordinary and for probabilistic (ε, δ)-DP: on the intersection of the good sets
    the privacy losses add, and a union bound covers the bad sets.

    Args:
      guarantees: objects with ``epsilon`` and ``delta`` attributes (e.g. :class:`Guarantee`)
        or ``(epsilon, delta)`` pairs.

    Returns:
      A :class:`Composition`.

    Raises:
      ValueError: for an item that is neither, or an ε < 0 or δ outside [0, 1].

    References:
      C. Dwork, A. Roth, "The Algorithmic Foundations of Differential Privacy", 2014,
      Theorem 3.16.
    """
    eps, dlt, count = 0.0, 0.0, 0
    for i, g in enumerate(guarantees):
        if hasattr(g, "epsilon") and hasattr(g, "delta"):
            e, d = g.epsilon, g.delta
        elif isinstance(g, tuple | list) and len(g) == 2:
            e, d = g
        else:
            raise ValueError(
                f"guarantees[{i}] must have epsilon and delta attributes or be an "
                f"(epsilon, delta) pair, got {g!r}"
            )
        eps += real(f"guarantees[{i}].epsilon", e, low=0.0)
        dlt += real(f"guarantees[{i}].delta", d, low=0.0, high=1.0)
        count += 1
    return Composition(epsilon=eps, delta=min(dlt, 1.0), num_mechanisms=count)


def mdp_guarantee(
    k: float,
    transitions: ArrayLike,
    *,
    b: float,
    eta: float | None = None,
    target_delta: float,
    action_mask: ArrayLike | None = None,
    support: Literal["nonzero"] | None = None,
    smoothing: float | None = None,
    adjacency: Adjacency = "row",
) -> MDPGuarantee:
    """The (ε, δ) of privatizing every allowed row of an MDP with ``Dirichlet(k·P(s, a))``.

    Which rows are privatized, and how, follows :func:`jaxprivmdp.dirichlet_mechanism` with
    the same ``action_mask``, ``support`` and ``smoothing``: every allowed row ``(s, a)``, of
    dimension ``n = S``, or with ``support="nonzero"`` ``n =`` the size of its nonzero support.
    Rows whose support has one entry are deterministic, not privatized and cost nothing: they
    reveal nothing beyond the support structure, which is public. The rows counted are
    :func:`jaxprivmdp.models._support.private_rows`, the same count as
    :func:`jaxprivmdp.frontier`'s whole-MDP composition.

    Adjacency of two MDPs (same states, actions, action mask and zero pattern):

    * ``"row"``: they differ in **one** row ``P(s, a)``, and that row pair is b-adjacent.
      The rows are privatized independently and all others have identical inputs, so the
      MDP guarantee is the per-row one of the differing row; since it may be any row,
      ``ε = max ε_r`` and ``δ = max δ_r``, each row meeting ``target_delta``. This is ordinary
      (ε, δ)-DP; a *probabilistic* DP statement (one good set for all possible differing rows)
      would need ``δ = Σ δ_r``.
    * ``"all"``: **every** row may differ, each pair b-adjacent. Basic composition over the
      privatized rows: ``ε = Σ ε_r``, ``δ = Σ δ_r``, with ``target_delta`` split equally
      (each row gets ``target_delta / num_rows``), so ``δ <= target_delta``.

    The domain bound ``eta``: the guarantee holds for every pair of rows with entries
    ``>= η`` on the support, so ``eta`` should be a *public* bound, and passing it explicitly
    is the intended use. With ``eta=None`` each row's own minimum entry (after smoothing) is
    used: convenient for exploration, but the resulting ε depends on the private data and
    itself leaks it, and an adjacent row with a smaller entry is not covered.

    With ``smoothing=η_s`` the mechanism's input is ``p̃ = (1 − nη_s) p + η_s`` (entries
    ``>= η_s``; ``eta=η_s`` is then the natural public bound). Adjacency refers to the raw
    rows ``p``: b-adjacent raw rows give smoothed rows differing in the same entries by
    ``(1 − nη_s)·b`` in ℓ1, which is the ``b`` the accounting uses (``ε = 0`` for
    ``η_s = 1/n``, where the output no longer depends on the data).

    Args:
      k: the mechanism's parameter, ``> 0``.
      transitions: the non-private model: a :class:`TabularMDP` (its own action mask;
        ``support`` and ``smoothing`` as for an array), a :class:`SparseMDP` (each row over
        its listed successors, ``n`` = their number; no ``smoothing``), or its `[S, A, S]`
        transition probabilities.
      b: the per-row adjacency bound, in ``(0, 1]``.
      eta: the public lower bound on every (smoothed) entry on the support; None means
        ``smoothing`` when it is given, else each row's minimum (see the caveat above).
      target_delta: the MDP-level δ to meet, in ``(0, 1)``.
      action_mask: `[S, A]` bool, True = allowed; masked rows are not privatized. Only
        with an array (a model carries its own).
      support: None (rows must be strictly positive) or ``"nonzero"`` (the zero pattern is
        public, rows are privatized over their nonzero entries).
      smoothing: ``η_s`` in ``(0, 1/S]``, as in the mechanism; not with ``support``.
      adjacency: ``"row"`` or ``"all"``, see above.

    Returns:
      An :class:`MDPGuarantee`; with no privatized row, ``ε = δ = 0``.

    Raises:
      ValueError: invalid arguments; a row with a zero entry under ``support=None`` and no
        smoothing; a row with an entry below a given ``eta`` (so also ``eta > 1/n``).

    References:
      Gohari, Hale, Topcu, CDC 2020, Algorithm 1 (rows privatized independently).
    """
    k = check_k(k)
    b = check_b(b)
    target_delta = check_target_delta(target_delta)
    if adjacency not in ("row", "all"):
        raise ValueError(f"adjacency must be 'row' or 'all', got {adjacency!r}")
    inp = host_mechanism_input(
        transitions, action_mask=action_mask, support=support, smoothing=smoothing
    )
    if eta is None and smoothing is not None:
        eta = smoothing  # the public bound that smoothing guarantees
    if eta is not None:
        eta = real("eta", eta, low=0.0, low_open=True)
    rows = _privatized_rows(inp, b=b, eta=eta, smoothing=smoothing)
    row_delta = target_delta if adjacency == "row" else target_delta / max(len(rows), 1)
    per_row = _per_row_guarantees(rows, k, row_delta)
    if not per_row:
        return MDPGuarantee(0.0, 0.0, adjacency, 0, per_row)
    if adjacency == "row":
        eps = max(g.epsilon for g in per_row.values())
        dlt = max(g.delta for g in per_row.values())
    else:
        eps, dlt, _ = compose(per_row.values())
    return MDPGuarantee(eps, dlt, adjacency, len(per_row), per_row)


# One privatized row: ((state, action), n, its adjacency bound b, its domain bound η).
_Row = tuple[tuple[int, int], int, float, float]


def _privatized_rows(inp, *, b, eta, smoothing) -> list[_Row]:
    """Every row the mechanism changes (:func:`jaxprivmdp.models._support.private_rows`),
    with its ``n``, ``b``, ``η``.

    Raises:
      ValueError: for a row with an entry below a given ``eta``.
    """
    P, supp = inp.rows, np.asarray(inp.support, bool)
    rows: list[_Row] = []
    for s, a in zip(*np.nonzero(private_rows(inp)), strict=True):
        s, a = int(s), int(a)
        entries = P[s, a][supp[s, a]]
        n = entries.size
        row_min = float(entries.min())
        # Entries a rounding below η count as η (1 − 0.9 is 0.09999999999999998).
        if eta is not None and row_min < eta * (1 - ETA_RELATIVE_TOLERANCE):
            raise ValueError(
                f"transitions row (state {s}, action {a}) has an entry {row_min!r} below "
                f"eta={eta!r}: the row is outside the domain the guarantee covers"
            )
        row_b = b if smoothing is None else (1.0 - n * smoothing) * b
        rows.append(((s, a), n, row_b, row_min if eta is None else eta))
    return rows


def _per_row_guarantees(
    rows: list[_Row], k: float, row_delta: float
) -> dict[tuple[int, int], Guarantee]:
    """``{(state, action): Guarantee}``, computed once per distinct ``(n, b, η)``."""
    cache: dict[tuple[int, float, float], Guarantee] = {}
    per_row: dict[tuple[int, int], Guarantee] = {}
    for key, n, row_b, row_eta in rows:
        cache_key = (n, row_b, row_eta)
        if cache_key not in cache:
            if row_b <= 0:  # smoothing = 1/n: the output is Dirichlet(k/n·1), data-free.
                cache[cache_key] = Guarantee(0.0, 0.0, math.nan, k, 0.0, row_eta, n, math.nan)
            else:
                cache[cache_key] = guarantee(k, b=row_b, eta=row_eta, n=n, target_delta=row_delta)
        per_row[key] = cache[cache_key]
    return per_row
