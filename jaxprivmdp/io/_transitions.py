"""The ``.tra`` file of an explicit model (PRISM's or Storm's), and its padded `[S, A, K]` layout.

:func:`read_transitions` reads the transitions flat and in file order (PRISM's ``S C T`` /
``S T`` header or Storm's ``dtmc`` / ``mdp`` line, plain or ``:rows`` lines) and refuses
models that are no DTMC or MDP; :func:`fix_deadlocks` handles states without a transition;
:func:`make_layout` places each transition in the arrays of a :class:`SparseMDP` (or, for
rows of very unequal lengths, leaves them as lists for a :class:`RaggedMDP`), and
:func:`layout_model` builds the model.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from ..models.core import (
    LAYOUTS,
    PADDING,
    RaggedMDP,
    SparseMDP,
    is_skewed,
    make_ragged_mdp,
    make_sparse_mdp,
    sparse_mdp_of_owned,
)
from ._columns import head_lines, read_columns
from ._text import (
    data_lines,
    is_rows,
    leading_comments,
    parse_counts,
    parse_int,
    parse_value,
    rows_choice,
    where,
)

# Model types PRISM or Storm may name that are no DTMC or MDP.
_REFUSED = {
    "ctmc": "a CTMC (rates in continuous time)",
    "ctmdp": "a CTMDP (rates in continuous time)",
    "ma": "a Markov automaton (rates in continuous time)",
    "pomdp": "a POMDP (observations)",
    "popta": "a POPTA",
    "pta": "a PTA",
    "lts": "an LTS (no probabilities)",
    "idtmc": "an interval DTMC",
    "imdp": "an interval MDP",
    "smg": "a stochastic game",
    "stpg": "a stochastic game",
    "csg": "a concurrent stochastic game",
}
_UNSUPPORTED = "jaxprivmdp reads DTMCs and MDPs"


@dataclasses.dataclass
class Explicit:
    """A ``.tra`` file's transitions, flat and in file order."""

    path: Path
    flavor: str  # "prism" | "storm"
    kind: str  # "dtmc" | "mdp"
    num_states: int
    src: np.ndarray
    choice: np.ndarray
    tgt: np.ndarray
    prob: np.ndarray
    line: np.ndarray | range  # each transition's line in the file

    @functools.cached_property
    def rows(self) -> _Rows:
        return _Rows(self)


def _declared_type(path: Path) -> str | None:
    """The type in a ``# Transitions (MDP)`` comment, or None; refuses other file types."""
    for number, text in leading_comments(path):
        m = re.fullmatch(r"#\s*Transitions\s*\(\s*([A-Za-z]+)\s*\)\s*", text)
        if m:
            return _check_type(path, number, m.group(1))
        m = re.fullmatch(r"#\s*(Labels|States|Observations|Reward structure.*)\s*", text)
        if m:
            raise ValueError(f"{where(path)} line {number}: {text!r}: this is no transitions file")
    return None


def _check_type(path: Path, number: int, name: str) -> str:
    kind = name.lower()
    if kind in ("dtmc", "mdp"):
        return kind
    what = _REFUSED.get(kind, f"model type {name!r}")
    raise ValueError(f"{where(path)} line {number}: {what}: {_UNSUPPORTED}")


def read_transitions(path: Path) -> Explicit:
    """Reads a ``.tra`` file; its errors name the file and line.

    Raises:
      ValueError: an empty or malformed file, a model that is no DTMC or MDP, a state or
        choice out of range, a header that disagrees with the body.
    """
    declared = _declared_type(path)
    head = head_lines(path, 1)
    if head is None:  # not plain ASCII: Python's own line splitting decides
        head = list(itertools.islice(data_lines(path), 1))
    if not head:
        raise ValueError(f"{where(path)} is empty")
    number, fields = head[0]
    flavor, kind, counts = _read_header(path, number, fields, declared)
    body = _read_columns(path, flavor, kind)
    if body is None:  # not the plain form: line by line, naming the line that fails
        lines = data_lines(path)
        next(lines)
        body = _read_body(path, lines, flavor, kind)
    ex = Explicit(path, flavor, kind, 0, *body)
    if ex.src.size == 0:
        raise ValueError(f"{where(path)} lists no transitions")
    if counts is None:
        ex.num_states = int(max(ex.src.max(), ex.tgt.max())) + 1
    else:
        ex.num_states = counts[0]
    _check_body(ex, counts)
    return ex


def _read_header(
    path: Path, number: int, fields: list[str], declared: str | None
) -> tuple[str, str, list[int] | None]:
    """``(flavor, kind, counts)`` from the first line: Storm's model type or PRISM's counts."""
    if len(fields) == 1 and fields[0][:1].isalpha():  # Storm: the model type, no counts
        return "storm", _check_type(path, number, fields[0]), None
    if len(fields) == 4 and all(f.isdigit() for f in fields):
        raise ValueError(f"{where(path)} line {number}: {_REFUSED['pomdp']}: {_UNSUPPORTED}")
    if len(fields) not in (2, 3):
        raise ValueError(
            f"{where(path)} line {number}: the header must have 2 numbers (DTMC: states "
            f"transitions) or 3 (MDP: states choices transitions), got {' '.join(fields)!r}"
        )
    counts = parse_counts(path, number, fields)
    kind = "dtmc" if len(counts) == 2 else "mdp"
    if declared is not None and declared != kind:
        raise ValueError(
            f"{where(path)} line {number}: the header {' '.join(fields)!r} is not that of "
            f"the {declared.upper()} its '# Transitions' comment declares"
        )
    return "prism", kind, counts


def _read_columns(path: Path, flavor: str, kind: str):
    """The body in plain form, vectorized (:mod:`._columns`): as :func:`_read_body`, or None."""
    mdp = kind == "mdp"
    # Trailing fields: PRISM's action name; Storm reads the first four of an MDP's fields.
    extra = 1 if flavor == "prism" or not mdp else 1 << 16
    cols = read_columns(path, "iiif" if mdp else "iif", skip=1, extra=extra)
    if cols is None:
        return None
    src, *rest, prob = cols.values
    choice, tgt = rest if mdp else (np.zeros_like(src), rest[0])
    return src, choice, tgt, prob, cols.line


def _read_body(path: Path, lines: Iterator[tuple[int, list[str]]], flavor: str, kind: str):
    """The transition lines, flat and in file order: ``src, choice, tgt, prob, line``."""
    src, choice, tgt, prob, line = [], [], [], [], []
    rows = None
    seen: dict[int, int] = {}  # rows format: the choices read so far, per state
    for number, fields in lines:
        if rows is None:
            rows = flavor == "prism" and is_rows(fields)
        if rows:
            mdp = kind == "mdp"
            s, c, entries = rows_choice(path, number, fields, seen, mdp=mdp, action_ok=mdp)
            if not entries:
                raise ValueError(f"{where(path)} line {number}: a choice without transitions")
            for t, p in entries:
                src.append(s), choice.append(c), tgt.append(t), prob.append(p)
                line.append(number)
            continue
        s, c, t, p = _transition_fields(path, number, fields, flavor, kind)
        src.append(parse_int(path, number, s))
        choice.append(parse_int(path, number, c))
        tgt.append(parse_int(path, number, t))
        prob.append(parse_value(path, number, p))
        line.append(number)
    ints = (np.asarray(x, np.int64) for x in (src, choice, tgt))
    return *ints, np.asarray(prob, np.float64), np.asarray(line, np.int64)


def _transition_fields(path: Path, number: int, fields: list[str], flavor: str, kind: str):
    """A plain line's ``source, choice, target, probability`` fields (a DTMC's choice: 0)."""
    if kind == "dtmc":
        if len(fields) not in (3, 4) or ":" in fields[1]:
            raise ValueError(
                f"{where(path)} line {number}: expected 'source target probability [action]', "
                f"got {' '.join(fields)!r}"
            )
        return fields[0], "0", fields[1], fields[2]
    if len(fields) < 4 or (flavor == "prism" and len(fields) > 5) or ":" in fields[1]:
        raise ValueError(
            f"{where(path)} line {number}: expected 'source choice target probability "
            f"[action]', got {' '.join(fields)!r}"
        )
    return tuple(fields[:4])


def _check_body(ex: Explicit, counts: list[int] | None) -> None:
    """Ranges, a DTMC's probabilities, and the header's counts against the body."""
    S = ex.num_states
    inside = min(ex.src.min(), ex.tgt.min(), ex.choice.min()) >= 0  # reductions: no copies
    if not (inside and max(ex.src.max(), ex.tgt.max()) < S):
        out = (ex.src < 0) | (ex.src >= S) | (ex.tgt < 0) | (ex.tgt >= S) | (ex.choice < 0)
        i = np.flatnonzero(out)[0]
        raise ValueError(f"{where(ex.path)} line {ex.line[i]}: a state or choice is out of range")
    if ex.kind == "dtmc":
        rate = np.flatnonzero(ex.prob > 1)
        if rate.size:
            raise ValueError(
                f"{where(ex.path)} line {ex.line[rate[0]]}: probability {ex.prob[rate[0]]:g} > 1: "
                f"a CTMC's rates? {_UNSUPPORTED}"
            )
    if counts is None:
        return
    T = counts[-1]
    if ex.src.size != T:
        raise ValueError(
            f"{where(ex.path)}: the header declares {T} transitions, the body has {ex.src.size}"
        )
    if ex.kind == "mdp":
        n = ex.rows.starts.size
        if n != counts[1]:
            raise ValueError(
                f"{where(ex.path)}: the header declares {counts[1]} choices, the body has {n}"
            )


class _Rows:
    """The transitions grouped by row ``(source, choice)``: ``order`` (None where the file
    lists them row by row already, as PRISM and Storm write them; else a stable sort by
    row), the first position of each row in that order, and its ``source · A + choice``."""

    def __init__(self, ex: Explicit):
        src, choice = ex.src, ex.choice
        self.A = int(choice.max()) + 1
        same = src[1:] == src[:-1]
        in_order = ((src[1:] > src[:-1]) | (same & (choice[1:] >= choice[:-1]))).all()
        if in_order:
            self.order = None
            new = ~same | (choice[1:] != choice[:-1])
        else:
            row = src.astype(np.int64) * self.A + choice
            self.order = np.argsort(row, kind="stable")
            row = row[self.order]
            new = row[1:] != row[:-1]
        self.starts = np.flatnonzero(np.concatenate([[True], new]))
        first = self.starts if self.order is None else self.order[self.starts]
        self.pairs = src[first].astype(np.int64) * self.A + choice[first]


def with_rows(ex: Explicit, A: int, starts: np.ndarray, pairs: np.ndarray) -> Explicit:
    """``ex`` with its rows given (transitions grouped by row in order, every row non-empty:
    a CSR matrix's): ``starts`` each row's first transition, ``pairs`` its ``s · A + c``."""
    ex.rows = rows = _Rows.__new__(_Rows)  # (not found from the transitions)
    rows.A, rows.order, rows.starts, rows.pairs = A, None, starts, pairs
    return ex


def _nondecreasing(x: np.ndarray) -> bool:
    return bool((x[1:] >= x[:-1]).all())


def deadlock_states(ex: Explicit) -> np.ndarray:
    """The states without a transition."""
    has = np.zeros(ex.num_states, bool)
    has[ex.src] = True
    return np.flatnonzero(~has)


def fix_deadlocks(ex: Explicit, deadlocks: str) -> Explicit:
    """``ex`` with a self-loop on each deadlock (``"self-loop"``), or a ValueError naming them."""
    dead = deadlock_states(ex)
    if not dead.size:
        return ex
    if deadlocks != "self-loop":
        shown = ", ".join(str(s) for s in dead[:10])
        more = f" ({dead.size} in all)" if dead.size > 10 else ""
        raise ValueError(
            f"{where(ex.path)}: state{'s' if dead.size > 1 else ''} {shown}{more} "
            f"{'have' if dead.size > 1 else 'has'} no transition (deadlock); pass "
            "deadlocks='self-loop' to give each a self-loop, as PRISM's and Storm's importers do"
        )
    return dataclasses.replace(
        ex,
        src=np.concatenate([ex.src, dead]),
        choice=np.concatenate([ex.choice, np.zeros_like(dead)]),
        tgt=np.concatenate([ex.tgt, dead]),
        prob=np.concatenate([ex.prob, np.ones(dead.size)]),
        line=np.concatenate([ex.line, np.zeros_like(dead)]),
    )


@dataclasses.dataclass
class Layout:
    """The padded `[S, A, K]` arrays (None for a ragged layout), and where each flat
    transition went; ``fresh``: the arrays are the layout's own (not the transitions')."""

    ex: Explicit
    next_states: np.ndarray | None
    probs: np.ndarray | None
    mask: np.ndarray
    fresh: bool = False

    @functools.cached_property
    def lookup(self) -> tuple[np.ndarray, np.ndarray | None]:
        """``(keys, order)``: the sorted ``(source · A + choice) · S + target`` keys of the
        flat transitions and the flat index of each (None: the identity)."""
        ex, A = self.ex, self.mask.shape[1]
        keys = (ex.src.astype(np.int64) * A + ex.choice) * ex.num_states + ex.tgt
        if _nondecreasing(keys):
            return keys, None
        order = np.argsort(keys, kind="stable")
        return keys[order], order


def make_layout(ex: Explicit, layout: str = "auto") -> Layout:
    """The padded arrays; a state's choices must be ``0 .. n_s − 1``.

    ``layout``: ``"padded"``, ``"ragged"`` (no padded arrays: ``next_states`` and ``probs``
    None, the model is built from the flat lists by :func:`layout_model`), or ``"auto"``:
    ragged where padding would exceed twice the transitions (:func:`is_skewed`).
    """
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    S = ex.num_states
    rows = ex.rows
    A = rows.A
    state = rows.pairs // A
    n_choices = np.bincount(state, minlength=S)
    # The pairs are sorted: a state's last one has its largest choice.
    last = np.flatnonzero(np.concatenate([state[1:] != state[:-1], [True]]))
    top = np.full(S, -1)
    top[state[last]] = rows.pairs[last] - state[last] * A
    bad = np.flatnonzero((n_choices > 0) & (top != n_choices - 1))
    if bad.size:
        s = int(bad[0])
        raise ValueError(
            f"{where(ex.path)}: the choices of state {s} are not 0..{n_choices[s] - 1}"
        )
    counts = np.diff(np.append(rows.starts, ex.src.size))
    K = int(counts.max())
    mask = np.zeros(S * A, bool)
    mask[rows.pairs] = True
    if layout == "ragged" or (layout == "auto" and is_skewed(S * A, K, ex.src.size)):
        return Layout(ex, None, None, mask.reshape(S, A))
    index = np.int32 if S <= np.iinfo(np.int32).max else np.int64
    fresh = not (rows.order is None and rows.pairs.size == S * A and counts.min() == K)
    if not fresh:  # every row present, full and in order: the columns are the arrays
        next_states, probs = ex.tgt.astype(index, copy=False), ex.prob
    else:
        next_states, probs = _scatter(ex, rows, counts, (S, A, K), index)
    shape = (S, A, K)
    return Layout(ex, next_states.reshape(shape), probs.reshape(shape), mask.reshape(S, A), fresh)


def _scatter(ex: Explicit, rows: _Rows, counts: np.ndarray, shape, index):
    """The padded `[S·A·K]` successors and probabilities of the transitions."""
    S, A, K = shape
    # Each transition's place in [S, A, K] (in row order): its row's, plus its rank there,
    # as a running sum of steps (one array: fresh memory is what costs most here).
    flat = np.ones(ex.src.size, np.int32 if S * A * K <= np.iinfo(np.int32).max else np.int64)
    previous = np.concatenate([[0], rows.pairs[:-1] * K + counts[:-1] - 1])  # a row's last
    flat[rows.starts] = rows.pairs * K - previous
    np.cumsum(flat, out=flat)
    if rows.order is not None:
        flat[rows.order] = flat.copy()
    next_states = np.full(S * A * K, PADDING, index)
    probs = np.zeros(S * A * K)
    next_states[flat] = ex.tgt
    probs[flat] = ex.prob
    return next_states, probs


def layout_model(layout: Layout, rewards: np.ndarray, **fields) -> SparseMDP | RaggedMDP:
    """The validated model of a layout: :func:`make_sparse_mdp` of the padded arrays, or
    :func:`make_ragged_mdp` of the flat lists; ``fields``: their keyword arguments."""
    if layout.next_states is not None:
        make = sparse_mdp_of_owned if layout.fresh else make_sparse_mdp  # (no copies of ours)
        return make(layout.next_states, layout.probs, rewards, action_mask=layout.mask, **fields)
    ex, A = layout.ex, layout.mask.shape[1]
    if ex.rows.order is None:  # the transitions grouped by row: each one's row, repeated
        row_ids = np.repeat(ex.rows.pairs, np.diff(np.append(ex.rows.starts, ex.src.size)))
    else:
        row_ids = ex.src.astype(np.int64) * A + ex.choice
    return make_ragged_mdp(row_ids, ex.tgt, ex.prob, rewards, action_mask=layout.mask, **fields)
