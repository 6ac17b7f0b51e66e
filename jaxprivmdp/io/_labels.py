"""The ``.lab`` file of an explicit model: PRISM's (``0="init" ...``, then ``state: label
...``) or Storm's (``#DECLARATION`` names ``#END``, then ``state label ...``).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ._text import data_lines, parse_int, read_text, where


def read_labels(path: Path) -> tuple[list[str], list[tuple[int, int, list[str]]]]:
    """Label names in declaration order and ``(line, state, names)`` per state line."""
    text = read_text(path)
    if "#DECLARATION" in text.split():
        return _read_storm_labels(path, text)
    lines = data_lines(path)
    try:
        number, fields = next(lines)
    except StopIteration:
        raise ValueError(f"{where(path)} is empty") from None
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
    for number, s, which in entries:
        if not 0 <= s < num_states:
            raise ValueError(
                f"{where(path)} line {number}: state {s} is out of range (the model has "
                f"{num_states} states)"
            )
        for name in which:
            labels[name][s] = True
    return labels


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
