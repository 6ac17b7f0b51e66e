"""PRISM's explicit files of interval models (IMDPs and interval DTMCs), read and written.

PRISM (4.8 and later) exports an interval model as it exports a point model (see
:mod:`._load`), each probability replaced by its interval ``[lower,upper]`` (no blank
inside), and its development version starts the ``.tra`` with ``# Transitions (IMDP)`` or
``# Transitions (IDTMC)``::

    3 4 6
    0 0 1 [0.1,0.3]
    0 0 2 [0.7,0.9] a
    ...

(an interval DTMC: ``source target [lower,upper] [action]``). A file is an interval file
when its ``# Transitions`` comment says so, or when its first transition's probability is
an interval (as PRISM's importer guesses the type); then every probability of it must be an
interval or a number ``p`` (read as ``[p,p]``). The ``.lab``, ``.srew`` and ``.trew`` beside
it are those of a point model; a transition reward whose expectation depends on the
distribution nature picks (a DTMC's rewards that differ by successor) is refused, since an
:class:`IntervalMDP` holds one reward per (state, action).

A file in plain form (one ``[l,u]`` field per line, no comment or plain number in the body) is
read with the array operations of :mod:`._columns` (each interval's brackets dropped after
checking its place, about 10⁶ lines a second); any other is read line by line, and every
error names its line.

Written files carry no ``#`` comment (IntervalMDP.jl's reader takes the counts from the
first line; PRISM recognizes the intervals) and list the entries of the successor lists
(dense bounds: the entries with ``upper > 0``), each bound as Python's ``repr`` of its
float64 value, so that reading the files back gives the same numbers.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import re
from pathlib import Path

import numpy as np

from .._checks import ROW_SUM_TOLERANCE, working_dtype
from ..models.core import (
    IntervalMDP,
    RaggedIntervalMDP,
    check_mask,
    make_interval_mdp,
    ragged_interval_from_lists,
    validate_model_fields,
)
from ..models.core import interval_lists as model_interval_lists
from ._columns import _body_start, _read_blocks, head_lines
from ._labels import initial_state as labelled_initial_state
from ._rewards import pick_structure, read_rewards
from ._text import data_lines, leading_comments, parse_int, parse_value, where
from ._transitions import (
    Explicit,
    Layout,
    _check_body,
    _read_header,
    deadlock_states,
    fix_deadlocks,
    make_layout,
    read_transitions,
)

# The ``# Transitions (...)`` names of PRISM's interval models, and their point kinds.
INTERVAL_TYPES = {"imdp": "mdp", "idtmc": "dtmc"}


@dataclasses.dataclass
class IntervalTransitions:
    """An interval ``.tra`` file: its transitions with the lower bounds as ``ex.prob``, and
    the upper bounds in the same order."""

    ex: Explicit
    upper: np.ndarray


def declared_interval(path: Path) -> str | None:
    """``"mdp"`` or ``"dtmc"`` for a ``.tra`` of an interval model, else None."""
    for _, text in leading_comments(path):
        m = re.fullmatch(r"#\s*Transitions\s*\(\s*([A-Za-z]+)\s*\)\s*", text)
        if m:
            return INTERVAL_TYPES.get(m.group(1).lower())
    head = head_lines(path, 2)
    if head is None:  # not plain ASCII: Python's own line splitting decides
        head = list(itertools.islice(data_lines(path), 2))
    if len(head) < 2 or len(head[0][1]) not in (2, 3):
        return None
    fields = head[1][1]
    if not any(f.startswith("[") for f in fields[1:]):
        return None
    return "mdp" if len(head[0][1]) == 3 else "dtmc"


def read_explicit(path: Path) -> Explicit:
    """The transitions of a point or interval ``.tra`` (an interval file's lower bounds)."""
    kind = declared_interval(path)
    return read_transitions(path) if kind is None else read_interval_transitions(path, kind).ex


def read_interval_transitions(path: Path, kind: str) -> IntervalTransitions:
    """Reads an interval ``.tra`` of the given kind (``"mdp"``, ``"dtmc"``), line by line.

    Raises:
      ValueError: naming the file and line: a malformed line or interval, a bound outside
        ``[0, 1]`` or a lower bound above its upper bound, a row whose bounds hold no
        distribution, and the errors of :func:`read_transitions`.
    """
    head = head_lines(path, 1)
    if head is None:  # not plain ASCII: Python's own line splitting decides
        head = list(itertools.islice(data_lines(path), 1))
    if not head:
        raise ValueError(f"{where(path)} is empty")
    flavor, kind, counts = _read_header(path, *head[0], kind)
    if flavor != "prism":
        raise ValueError(
            f"{where(path)} line {head[0][0]}: Storm's explicit format has no intervals; an "
            "interval model's .tra starts with PRISM's counts ('states choices transitions')"
        )
    mdp = kind == "mdp"
    body = _body_in_columns(path, mdp)
    if body is None:  # not the plain form: line by line, naming the line that fails
        lines = data_lines(path)
        next(lines)
        body = _body_lines(path, lines, mdp)
    src, choice, tgt, lower, upper, line = body
    ex = Explicit(path, "prism", kind, 0, src, choice, tgt, lower, line)
    if not src.size:
        raise ValueError(f"{where(path)} lists no transitions")
    ex.num_states = counts[0]
    _check_body(ex, counts)
    _check_row_sums(ex, upper)
    return IntervalTransitions(ex, upper)


def _body_lines(path: Path, lines, mdp: bool):
    """The transition lines, flat: ``src, choice, tgt, lower, upper, line``."""
    columns: list[list] = [[], [], [], [], [], []]
    for number, fields in lines:
        s, c, t, lo, hi = _line(path, number, fields, mdp)
        for column, value in zip(columns, (s, c, t, lo, hi, number), strict=True):
            column.append(value)
    src, choice, tgt = (np.asarray(x, np.int64) for x in columns[:3])
    lower, upper = (np.asarray(x, np.float64) for x in columns[3:5])
    return src, choice, tgt, lower, upper, np.asarray(columns[5], np.int64)


def _body_in_columns(path: Path, mdp: bool):
    """The body in plain form (every line ``s c t [l,u] [action]``, bounds in ``[0, 1]``),
    read by :func:`read_columns`' machinery with each ``[l,u]`` as two fields; else None."""
    kinds = "iiiff" if mdp else "iiff"
    try:
        with path.open("rb") as f:
            start = _body_start(f, 1)
            if start is None:
                return None
            offset, line = start
            rows = (os.fstat(f.fileno()).st_size - offset) // (2 * len(kinds)) + 1
            cols = _read_blocks(_PlainIntervals(f, len(kinds) - 2), kinds, 1, rows, line)
    except _NotPlain:
        return None
    except OSError as e:
        raise ValueError(f"cannot read {where(path)}: {e}") from None
    if cols is None:
        return None
    src, *rest, lower, upper = cols.values
    choice, tgt = rest if mdp else (np.zeros_like(src), rest[0])
    if not ((lower >= 0) & (lower <= upper) & (upper <= 1)).all():  # (the lines name it)
        return None
    return src, choice, tgt, lower, upper, cols.line


class _NotPlain(Exception):
    """A line whose interval is not one ``[l,u]`` field in its place."""


class _PlainIntervals:
    """A binary file read with each line's ``[l,u]`` as ``l u`` (brackets dropped, the comma
    a blank), after checking that every line holds one interval, as its field ``n + 1``."""

    def __init__(self, f, n: int):
        self.f, self.n, self.tail, self.ready, self.at, self.done = f, n, b"", b"", 0, False

    def readinto(self, buf) -> int:
        while len(self.ready) - self.at < len(buf) and not self.done:
            raw = self.f.read(1 << 22)
            if raw:
                data = self.tail + raw
                cut = data.rfind(b"\n") + 1
                whole, self.tail = data[:cut], data[cut:]
            else:  # the end: the last line, without its newline
                whole, self.tail, self.done = self.tail, b"", True
            self.ready = self.ready[self.at :] + _plain(whole, self.n)
            self.at = 0
        n = min(len(buf), len(self.ready) - self.at)
        buf[:n] = self.ready[self.at : self.at + n]
        self.at += n
        return n


_COMMA_BLANK = bytes.maketrans(b",", b" ")
_BLANK = np.zeros(256, bool)
_BLANK[[ord(" "), ord("\t"), ord("\r"), ord("\n")]] = True


def _plain(raw: bytes, n: int) -> bytes:
    """``raw`` (whole lines) with each ``[l,u]`` as ``l u``; :class:`_NotPlain` unless every
    line that is not blank holds exactly one, as its field ``n + 1``, with no blank inside."""
    b = np.frombuffer(raw, np.uint8)
    if not b.size:
        return raw
    opens, commas, closes = (np.flatnonzero(b == ord(c)) for c in "[,]")
    newlines = np.flatnonzero(b == ord("\n"))
    if not opens.size == commas.size == closes.size:
        raise _NotPlain
    blank = _BLANK[b]
    fields = np.flatnonzero(~blank & np.concatenate([[True], blank[:-1]]))  # where each starts
    starts = np.concatenate([[0], newlines + 1])
    ends = np.searchsorted(fields, np.append(starts, b.size))
    line = np.searchsorted(newlines, opens)  # each interval's line
    before = np.searchsorted(fields, opens, "right")  # its field's number, and the line's
    after = np.minimum(closes + 1, b.size - 1)
    ok = (
        opens.size == np.count_nonzero(np.diff(ends) > 0)  # one on each line that is not blank
        and (np.diff(line) > 0).all()
        and ((opens < commas) & (commas < closes)).all()
        and (np.searchsorted(fields, closes, "right") == before).all()  # one field, no blank
        and (before - ends[line] == n + 1).all()
        and ((closes + 1 == b.size) | blank[after]).all()
    )
    if not ok:
        raise _NotPlain
    return raw.translate(_COMMA_BLANK, b"[]")


def _line(path: Path, number: int, fields: list[str], mdp: bool):
    """``(source, choice, target, lower, upper)`` of a transition line."""
    n = 3 if mdp else 2  # the fields before the interval
    fields = _joined(fields, n)
    if len(fields) not in (n + 1, n + 2) or ":" in fields[1]:
        what = "source choice target" if mdp else "source target"
        raise ValueError(
            f"{where(path)} line {number}: expected '{what} [lower,upper] [action]', got "
            f"{' '.join(fields)!r}"
        )
    ints = [parse_int(path, number, f) for f in fields[:n]]
    s, c, t = ints if mdp else (ints[0], 0, ints[1])
    lo, hi = _interval(path, number, fields[n])
    return s, c, t, lo, hi


def _joined(fields: list[str], n: int) -> list[str]:
    """``fields`` with an interval written with blanks (``[0.1, 0.3]``) as one field."""
    if len(fields) <= n or not fields[n].startswith("[") or fields[n].endswith("]"):
        return fields
    for end in range(n + 1, len(fields)):
        if fields[end].endswith("]"):
            return [*fields[:n], "".join(fields[n : end + 1]), *fields[end + 1 :]]
    return fields


def _interval(path: Path, number: int, field: str) -> tuple[float, float]:
    """An interval ``[lower,upper]`` (or a number ``p``: ``[p,p]``) with ``0 <= l <= u <= 1``."""
    if not field.startswith("[") and not field.endswith("]") and "," not in field:
        lo = hi = parse_value(path, number, field)
    else:
        inner = field[1:-1].split(",") if field[:1] + field[-1:] == "[]" else []
        if len(inner) != 2:
            raise ValueError(
                f"{where(path)} line {number}: expected an interval '[lower,upper]', got {field!r}"
            )
        lo, hi = (parse_value(path, number, x) for x in inner)
    if not 0 <= lo <= hi <= 1:  # (NaN fails too)
        why = "lower bound exceeds upper bound" if lo > hi else "bounds must lie in [0, 1]"
        raise ValueError(f"{where(path)} line {number}: interval {field!r}: {why}")
    return lo, hi


def _check_row_sums(ex: Explicit, upper: np.ndarray) -> None:
    """``Σ lower <= 1 <= Σ upper`` on each row (within the row-sum tolerance)."""
    rows = ex.rows
    order = np.arange(ex.src.size) if rows.order is None else rows.order
    low = np.add.reduceat(ex.prob[order], rows.starts)
    high = np.add.reduceat(upper[order], rows.starts)
    bad = np.flatnonzero((low > 1 + ROW_SUM_TOLERANCE) | (high < 1 - ROW_SUM_TOLERANCE))
    if bad.size:
        i = bad[0]
        first = order[rows.starts[i]]
        s, c = int(ex.src[first]), int(ex.choice[first])
        what = f"lower bounds sum to {low[i]:.9g} > 1"
        if low[i] <= 1 + ROW_SUM_TOLERANCE:
            what = f"upper bounds sum to {high[i]:.9g} < 1"
        row = f"choice {c} of state {s}" if ex.kind == "mdp" else f"state {s}"
        raise ValueError(
            f"{where(ex.path)} line {ex.line[first]}: the {row} has {what}: no distribution "
            f"lies between its bounds ({bad.size} such row{'s' * (bad.size > 1)})"
        )


def load_interval(
    path: Path, kind: str, reward_files, deadlocks: str, layout: str, **fields
) -> IntervalMDP | RaggedIntervalMDP:
    """The interval model of an interval ``.tra``: an :class:`IntervalMDP` over `[S, A, K]`
    lists, or a :class:`RaggedIntervalMDP` (``layout="ragged"``, or ``"auto"`` where
    padding would exceed twice the transitions plus rows); ``reward_files``: ``load_mdp``'s
    ``(rewards, reward_structure)``; ``fields``: ``horizon``, ``discount``,
    ``initial_state`` (None: the ``.lab``'s), ``dtype`` of :func:`make_interval_mdp`."""
    read = read_interval_transitions(path, kind)
    dead = deadlock_states(read.ex)
    ex = fix_deadlocks(read.ex, deadlocks)
    upper = np.concatenate([read.upper, np.ones(dead.size)])
    if fields.get("initial_state") is None:
        fields["initial_state"] = labelled_initial_state(path, ex.num_states)
    slots, bounds = interval_layout(ex, upper, layout)
    rewards = _rewards(ex, upper, slots, pick_structure(path, *reward_files))
    return interval_model(path, slots, bounds, rewards, **fields)


def interval_layout(ex: Explicit, upper: np.ndarray, layout: str = "padded"):
    """The layout of an interval model's transitions (``ex.prob``: the lower bounds) and its
    `[S, A, K]` ``(lower, upper)``; a ragged layout's: the flat ``(lower, upper)``."""
    # The layout of the transitions' positions places both bounds alike.
    positions = np.arange(ex.src.size, dtype=np.float64)
    slots = make_layout(dataclasses.replace(ex, prob=positions), layout)
    if slots.next_states is None:
        return slots, (ex.prob, upper)
    listed = slots.next_states >= 0
    at = np.where(listed, slots.probs, 0).astype(np.int64)
    return slots, (np.where(listed, ex.prob[at], 0.0), np.where(listed, upper[at], 0.0))


def interval_model(path: Path, slots: Layout, bounds, rewards, **fields):
    """:func:`make_interval_mdp` of a layout (a ragged one's transition lists: a
    :class:`RaggedIntervalMDP`); its errors name ``path``."""
    try:
        if slots.next_states is None:
            return _ragged_model(slots, bounds, rewards, **fields)
        return make_interval_mdp(
            *bounds, rewards, next_states=slots.next_states, action_mask=slots.mask, **fields
        )
    except ValueError as e:
        raise ValueError(f"{where(path)}: {e}") from None


def _ragged_model(slots: Layout, bounds, rewards, *, horizon, discount, initial_state, dtype):
    """The :class:`RaggedIntervalMDP` of a ragged layout's flat lists."""
    ex, mask = slots.ex, slots.mask
    S, A = mask.shape
    mask = check_mask(mask, S, A)
    fields = validate_model_fields(
        S, A, rewards, None, horizon, discount, initial_state, working_dtype(dtype)
    )
    row_ids = ex.src.astype(np.int64) * A + ex.choice
    return ragged_interval_from_lists(row_ids, ex.tgt, *bounds, mask, fields)


def _rewards(ex: Explicit, upper: np.ndarray, slots: Layout, structure) -> np.ndarray:
    """The one-step rewards `[S, A]`; refused where they depend on nature's choice."""
    r = read_rewards(ex, slots, structure)
    if structure is None or ex.kind == "mdp":  # PRISM's MDP transition rewards: per choice
        return r
    high = read_rewards(dataclasses.replace(ex, prob=upper), slots, structure)
    differ = np.argwhere(r != high)
    if differ.size:
        s = int(differ[0][0])
        raise ValueError(
            f"{where(ex.path)}: the expected transition reward of state {s} lies between "
            f"{r[s, 0]:g} and {high[s, 0]:g} as nature picks its distribution; an interval "
            "model holds one reward per (state, action): give state rewards, or transition "
            "rewards equal over each state's successors"
        )
    return r


def interval_lists(mdp: IntervalMDP | RaggedIntervalMDP):
    """The listed entries of an interval model, row by row: ``(row, target, lower,
    upper)`` with ``row = s·A + a`` (dense bounds: the entries with ``upper > 0``), the
    bounds in float64."""
    rid, tgt, lo, hi = model_interval_lists(mdp)
    return rid, tgt, lo.astype(np.float64), hi.astype(np.float64)
