"""The ``.lab`` file of an explicit model: PRISM's (``0="init" ...``, then ``state: label
...``) or Storm's (``#DECLARATION`` names ``#END``, then ``state label ...``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ._columns import PAD, body_start, head_lines
from ._decimals import digit_runs
from ._text import data_lines, leading_comments, parse_int, read_text, where

# The bytes of PRISM's label lines: digits, ':', ' ' and '\n' (anything else: line by line).
_LABEL_BYTES = np.zeros(256, bool)
_LABEL_BYTES[[*range(ord("0"), ord("9") + 1), ord(":"), ord(" "), ord("\n")]] = True


class LabelLines(NamedTuple):
    """PRISM's ``state: label ...`` lines, read with array operations: each line's state and
    number, and each label index with the line (its index here) it is on."""

    states: np.ndarray
    lines: np.ndarray
    labels: np.ndarray
    owner: np.ndarray


def read_labels(path: Path) -> tuple[list[str], list[tuple[int, int, list[str]]] | LabelLines]:
    """Label names in declaration order, and ``(line, state, names)`` per state line (or, for
    a PRISM file in plain form, the same as :class:`LabelLines`)."""
    fast = _read_prism_labels_in_arrays(path)
    if fast is not None:
        return fast
    text = read_text(path)
    if "#DECLARATION" in text.split():
        return _read_storm_labels(path, text)
    lines = data_lines(path)
    try:
        number, fields = next(lines)
    except StopIteration:
        raise ValueError(f"{where(path)} is empty") from None
    names = _declarations(path, number, fields)
    entries = []
    for number, fields in lines:
        state, colon, rest = " ".join(fields).partition(":")
        try:
            s = int(state)
            indices = [int(x) for x in rest.split()]
        except ValueError:
            s, colon = -1, ""
        if not colon:
            raise ValueError(f"{where(path)} line {number}: expected 'state: label ...'")
        bad = [i for i in indices if not 0 <= i < len(names)]
        if bad:
            raise ValueError(f"{where(path)} line {number}: no label has index {bad[0]}")
        entries.append((number, s, [names[i] for i in indices]))
    return names, entries


def _declarations(path: Path, number: int, fields: list[str]) -> list[str]:
    """The names of PRISM's first line ``0="init" 1="deadlock" ...``."""
    declarations = " ".join(fields)
    found = re.findall(r'(\d+)="([^"]*)"', declarations)
    if not found or re.sub(r'\s*\d+="[^"]*"\s*', "", declarations):
        raise ValueError(
            f"{where(path)} line {number}: expected the label declarations "
            f'(0="init" 1="deadlock" ...), got {declarations!r}'
        )
    names = []
    for index, name in found:
        if int(index) != len(names):
            raise ValueError(
                f"{where(path)} line {number}: label {name!r} has index {index}, not {len(names)}"
            )
        if name in names:
            raise ValueError(f"{where(path)} line {number}: label {name!r} is declared twice")
        names.append(name)
    return names


def _read_prism_labels_in_arrays(path: Path):
    """:func:`read_labels` of a PRISM file whose lines are ``state: index index ...`` in
    ASCII (fields of at most 9 digits); None otherwise (then read line by line)."""
    if any("#DECLARATION" in text.split() for _, text in leading_comments(path)):
        return None
    head = head_lines(path, 1)
    start = body_start(path, 1)
    if not head or start is None:
        return None
    names = _declarations(path, *head[0])
    offset, line = start
    try:
        data = np.fromfile(path, np.uint8, offset=offset)
    except OSError as e:
        raise ValueError(f"cannot read {where(path)}: {e}") from None
    entries = _label_lines(data, line)
    if entries is None:
        return None
    bad = np.flatnonzero(entries.labels >= len(names))
    if bad.size:
        i = bad[0]
        number = entries.lines[entries.owner[i]]
        raise ValueError(f"{where(path)} line {number}: no label has index {entries.labels[i]}")
    return names, entries


def _label_lines(data: np.ndarray, first_line: int) -> LabelLines | None:
    """The lines ``state: index ...`` of ``data`` (after line ``first_line``), or None."""
    b = np.zeros(data.size + 2 * PAD, np.uint8)
    b[PAD : PAD + data.size] = data
    if not _LABEL_BYTES[data].all():
        return None
    field = np.zeros(b.size + 1, bool)
    field[1:] = (b != ord(" ")) & (b != ord("\n")) & (b != 0)
    edges = np.flatnonzero(field[1:] != field[:-1])  # each field's start, then its end
    starts, ends = edges[0::2], edges[1::2]
    line_of = np.searchsorted(np.flatnonzero(b == ord("\n")), starts)
    first = np.concatenate([[True], line_of[1:] != line_of[:-1]])[: starts.size]
    colon = b[ends - 1] == ord(":")
    if (colon != first).any() or np.count_nonzero(data == ord(":")) != first.sum():
        return None  # each line's first field, and only it, ends with its ':'
    length = ends - starts - first
    if length.size and (length.min() < 1 or length.max() > 9):
        return None
    values, ok = digit_runs(b, ends - first, length)
    if not ok.all():
        return None
    values = values.astype(np.int64)
    owner = np.cumsum(first) - 1
    lines = first_line + 1 + line_of[first]
    return LabelLines(values[first], lines, values[~first], owner[~first])


def _read_storm_labels(path: Path, text: str):
    names: list[str] = []
    entries = []
    part = "before"
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if part == "before":
            if "#DECLARATION" in fields:
                part, fields = "names", fields[fields.index("#DECLARATION") + 1 :]
            else:
                continue
        if part == "names":
            if "#END" in fields:
                fields, part = fields[: fields.index("#END")], "states"
            for name in fields:
                if name in names:
                    raise ValueError(
                        f"{where(path)} line {number}: label {name!r} is declared twice"
                    )
                names.append(name)
            continue
        if not fields:
            continue
        s = parse_int(path, number, fields[0].rstrip(":"))
        unknown = [n for n in fields[1:] if n not in names]
        if unknown:
            raise ValueError(f"{where(path)} line {number}: label {unknown[0]!r} is not declared")
        entries.append((number, s, fields[1:]))
    if part != "states":
        raise ValueError(f"{where(path)}: '#DECLARATION' without '#END'")
    return names, entries


def label_arrays(path: Path, names, entries, num_states: int) -> dict[str, np.ndarray]:
    """``{name: bool[S]}`` from :func:`read_labels`' output; refuses states out of range."""
    labels = {name: np.zeros(num_states, bool) for name in names}
    if isinstance(entries, LabelLines):
        bad = np.flatnonzero((entries.states < 0) | (entries.states >= num_states))
        if bad.size:
            _out_of_range(path, entries.lines[bad[0]], entries.states[bad[0]], num_states)
        states = entries.states[entries.owner]
        for i, name in enumerate(names):
            labels[name][states[entries.labels == i]] = True
        return labels
    for number, s, which in entries:
        if not 0 <= s < num_states:
            _out_of_range(path, number, s, num_states)
        for name in which:
            labels[name][s] = True
    return labels


def _out_of_range(path: Path, number, s, num_states: int):
    raise ValueError(
        f"{where(path)} line {number}: state {s} is out of range (the model has "
        f"{num_states} states)"
    )


def initial_state(path: Path, num_states: int) -> int:
    """The state labelled ``init`` in the ``.lab`` file beside ``path`` (0 without one)."""
    lab = path.with_suffix(".lab")
    if not lab.is_file():
        return 0
    names, entries = read_labels(lab)
    if "init" not in names:
        declared = ", ".join(repr(n) for n in names) or "none"
        raise ValueError(
            f"{where(lab)} declares no label 'init' (its labels: {declared}); pass initial_state="
        )
    starts = np.flatnonzero(label_arrays(lab, names, entries, num_states)["init"])
    if starts.size != 1:
        raise ValueError(
            f"{where(lab)}: {starts.size} states are labelled 'init' "
            f"({', '.join(str(s) for s in starts[:10])}); pass initial_state= to pick one"
        )
    return int(starts[0])
