"""A whole MDP's (ε, δ): composition and lifting the per-row guarantee to every row."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Literal, NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from .._checks import ETA_RELATIVE_TOLERANCE, real
from ..models.core import RaggedMDP, host_mechanism_input
from ._private_rows import PrivateRows, ragged_rows, rows_of_input
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
        distinct = self.per_row.num_distinct() if self.per_row else 0
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
    eps, dlt = [], []
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
        eps.append(real(f"guarantees[{i}].epsilon", e, low=0.0))
        dlt.append(real(f"guarantees[{i}].delta", d, low=0.0, high=1.0))
    return Composition(sum_up(eps), min(sum_up(dlt), 1.0), len(eps))


def sum_up(values, counts=None) -> float:
    """``Σ counts_i · values_i`` of floats ≥ 0, exactly, rounded *up* to a float (inf or NaN
    if a term is).

    A guarantee must never be reported below its true value: a float sum of many rows' ε or δ
    can round down (by up to ``n`` ulps for ``n`` terms). The sum is exact over the distinct
    values (``counts`` default: each value once), so it costs one pass over them.
    """
    x = np.asarray(values, np.float64).ravel()
    if counts is None:
        x, counts = np.unique(x, return_counts=True)
    if not np.all(np.isfinite(x[np.asarray(counts) > 0])):  # an infinite (or NaN) term
        return float(np.sum(x[np.asarray(counts) > 0]))
    exact = sum((Fraction(float(v)) * int(c) for v, c in zip(x, counts, strict=True)), Fraction())
    up = float(exact)
    return up if Fraction(up) >= exact else math.nextafter(up, math.inf)


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

    The rows privatized, and how, follow :func:`jaxprivmdp.dirichlet_mechanism` with the same
    ``action_mask``, ``support``, ``smoothing``: every allowed row, of dimension ``n = S`` or
    (``support="nonzero"``, sparse models) the size of its support. Rows with a one-entry
    support are deterministic and cost nothing (the support is public); the rows counted are
    :func:`jaxprivmdp.models._support.private_rows`, as in :func:`jaxprivmdp.frontier`.

    Adjacent MDPs have the same states, actions, action mask and zero pattern, and:

    * ``"row"``: differ in **one** row ``P(s, a)``, b-adjacent. Rows are privatized
      independently, so the MDP guarantee is that of the differing row, which may be any:
      ``ε = max ε_r``, ``δ = max δ_r``, each row meeting ``target_delta`` (ordinary (ε, δ)-DP;
      a probabilistic-DP statement would need ``δ = Σ δ_r``).
    * ``"all"``: **every** row may differ, each pair b-adjacent. Basic composition:
      ``ε = Σ ε_r``, ``δ = Σ δ_r``, each row meeting ``target_delta / num_rows``.

    ``eta`` should be a *public* lower bound on the entries on the support. ``eta=None`` uses
    each row's own minimum: convenient for exploration, but that ε depends on, and leaks, the
    private data, and an adjacent row with a smaller entry is not covered. With
    ``smoothing=η_s`` the input is ``p̃ = (1 − nη_s) p + η_s`` (``eta=η_s`` is the natural
    bound); b-adjacent raw rows give smoothed rows ``(1 − nη_s)·b`` apart, the ``b`` used.

    Args:
      k: the mechanism's parameter, ``> 0``.
      transitions: a :class:`TabularMDP` (its own action mask), a :class:`SparseMDP` or
        :class:`RaggedMDP` (rows over their listed successors; no ``smoothing``; a ragged
        model's buckets are read one by one, never padded, with the padded layout's result)
        or `[S, A, S]` probabilities.
      b: the per-row adjacency bound, in ``(0, 1]``.
      eta: the public lower bound on every (smoothed) entry on the support; None means
        ``smoothing`` when given, else each row's minimum (see above).
      target_delta: the MDP-level δ to meet, in ``(0, 1)``.
      action_mask: `[S, A]` bool, True = allowed (only with an array).
      support: None (rows strictly positive) or ``"nonzero"`` (over the nonzero entries).
      smoothing: ``η_s`` in ``(0, 1/S]``, as in the mechanism; not with ``support``.
      adjacency: ``"row"`` or ``"all"``, see above.

    Returns:
      An :class:`MDPGuarantee` (``ε = δ = 0`` with no privatized row); its ``per_row`` holds
      one :class:`Guarantee` per distinct ``(n, b, η)`` and an index per row.

    Raises:
      ValueError: invalid arguments; a zero entry under ``support=None`` without smoothing;
        an entry below a given ``eta`` (so also ``eta > 1/n``).

    References:
      Gohari, Hale, Topcu, CDC 2020, Algorithm 1 (rows privatized independently).
    """
    k, b = check_k(k), check_b(b)
    target_delta = check_target_delta(target_delta)
    if adjacency not in ("row", "all"):
        raise ValueError(f"adjacency must be 'row' or 'all', got {adjacency!r}")
    rows = model_private_rows(transitions, action_mask, support, smoothing)
    eta = smoothing if eta is None else eta  # smoothing's entries are a public bound
    eta = None if eta is None else real("eta", eta, low=0.0, low_open=True)
    per_row = _per_row(
        rows, k, b=b, eta=eta, smoothing=smoothing, adjacency=adjacency, target_delta=target_delta
    )
    if not per_row:
        return MDPGuarantee(0.0, 0.0, adjacency, 0, per_row)
    if adjacency == "row":
        eps, dlt = per_row.epsilons().max(), per_row.deltas().max()
        return MDPGuarantee(float(eps), float(dlt), adjacency, len(per_row), per_row)
    eps_sum, dlt_sum = per_row.totals()  # exact sums rounded up, as compose()'s
    return MDPGuarantee(eps_sum, min(dlt_sum, 1.0), adjacency, len(per_row), per_row)


class RowGuarantees(Mapping):
    """``{(state, action): Guarantee}`` held as arrays: one :class:`Guarantee` per distinct
    ``(n, b, η)`` and, per privatized row in row-major order, its state, action and index."""

    def __init__(self, states, actions, which, distinct, shape):
        self._states, self._actions, self._which, self._distinct = states, actions, which, distinct
        self._index = np.full(shape, -1, np.int64)
        self._index[states, actions] = np.arange(states.size)

    def __getitem__(self, key):
        s, a = key
        S, A = self._index.shape
        i = self._index[s, a] if 0 <= s < S and 0 <= a < A else -1
        if i < 0:
            raise KeyError(key)
        return self._distinct[self._which[i]]

    def __iter__(self):
        return zip(self._states.tolist(), self._actions.tolist(), strict=True)

    def __len__(self) -> int:
        return int(self._states.size)

    def num_distinct(self) -> int:
        return len(self._distinct)

    def epsilons(self) -> np.ndarray:
        return np.array([g.epsilon for g in self._distinct], np.float64)[self._which]

    def deltas(self) -> np.ndarray:
        return np.array([g.delta for g in self._distinct], np.float64)[self._which]

    def totals(self) -> tuple[float, float]:
        """``(Σ ε_r, Σ δ_r)`` over the rows, exact and rounded up (:func:`sum_up`)."""
        counts = np.bincount(self._which, minlength=len(self._distinct))
        eps = [g.epsilon for g in self._distinct]
        return sum_up(eps, counts), sum_up([g.delta for g in self._distinct], counts)


def model_private_rows(transitions, action_mask, support, smoothing) -> PrivateRows:
    """The rows :func:`mdp_guarantee` counts: a :class:`RaggedMDP`'s bucket by bucket (no
    padding), any other model's or array's from its host rows."""
    if isinstance(transitions, RaggedMDP):
        if action_mask is not None:
            raise ValueError("a model carries its own action_mask; do not pass another")
        return ragged_rows(transitions, support, smoothing)
    rows_in = host_mechanism_input(
        transitions, action_mask=action_mask, support=support, smoothing=smoothing
    )
    return rows_of_input(rows_in)


def _per_row(rows: PrivateRows, k, *, b, eta, smoothing, adjacency, target_delta):
    """Every row the mechanism changes (:class:`PrivateRows`) with its guarantee (a
    :class:`RowGuarantees`), computed once per distinct ``(n, b, η)``.

    Raises:
      ValueError: for a row with an entry below a given ``eta``.
    """
    states, actions, n = rows.states, rows.actions, rows.sizes
    first, which, row_b, row_eta = row_domain(rows, b=b, eta=eta, smoothing=smoothing)
    row_delta = target_delta if adjacency == "row" else share(target_delta, states.size)
    distinct = [
        _guarantee(k, int(n[i]), float(row_b[i]), float(row_eta[i]), row_delta) for i in first
    ]
    return RowGuarantees(states, actions, which, distinct, rows.shape)


def row_domain(rows: PrivateRows, *, b, eta, smoothing):
    """``(first, which, row_b, row_eta)``: per private row its adjacency bound (smoothing
    shrinks ``b`` to ``(1 − nη_s)·b``) and its ``η`` (a public one, else the row's minimum),
    grouped by distinct ``(n, b, η)`` as :func:`_distinct` groups them.

    Raises:
      ValueError: for a row with an entry below a given ``eta``.
    """
    states, actions, n, row_min = rows.states, rows.actions, rows.sizes, rows.minima
    # Entries a rounding below η count as η (1 − 0.9 is 0.09999999999999998).
    if eta is not None and (row_min < eta * (1 - ETA_RELATIVE_TOLERANCE)).any():
        i = int(np.argmax(row_min < eta * (1 - ETA_RELATIVE_TOLERANCE)))
        raise ValueError(
            f"transitions row (state {states[i]}, action {actions[i]}) has an entry "
            f"{float(row_min[i])!r} below eta={eta!r}: the row is outside the domain the "
            "guarantee covers"
        )
    row_b = np.full(n.shape, b) if smoothing is None else (1.0 - n * smoothing) * b
    row_eta = row_min if eta is None else np.full(n.shape, eta)
    first, which = _distinct(n, row_b, row_eta)
    return first, which, row_b, row_eta


def share(target_delta: float, n: int) -> float:
    """The largest float ``d <= target_delta / n`` with ``n·d <= target_delta`` exactly, so
    that ``n`` rows meeting ``d`` sum to at most ``target_delta``."""
    d = target_delta / max(n, 1)
    while Fraction(d) * n > Fraction(target_delta):
        d = math.nextafter(d, 0.0)
    return d


def _distinct(*columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(first, which)``: a row index per distinct tuple of the columns' entries and, per
    row, the number of its tuple (``columns[c][first[which]] == columns[c]``)."""
    which = np.zeros(columns[0].size, np.int64)
    for col in columns:  # a code per column (1-D sorts), combined into one integer per row
        if col.size and col.min() < col.max():
            values, inverse = np.unique(col, return_inverse=True)
            which = which * values.size + inverse.reshape(-1)
            if which.any():  # renumber: the codes stay below the row count
                which = np.unique(which, return_inverse=True)[1].reshape(-1)
    first = np.zeros(which.max(initial=-1) + 1, np.int64)
    first[which[::-1]] = np.arange(which.size)[::-1]  # the last write wins: the first row
    return first, which


def _guarantee(k, n, row_b, row_eta, row_delta) -> Guarantee:
    if row_b <= 0:  # smoothing = 1/n: the output is Dirichlet(k/n·1), data-free.
        return Guarantee(0.0, 0.0, math.nan, k, 0.0, row_eta, n, math.nan)
    return guarantee(k, b=row_b, eta=row_eta, n=n, target_delta=row_delta)
