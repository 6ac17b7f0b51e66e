"""PRISM's states file (``.sta``, ``prism -exportstates``): the state variables of each state.

The first line names the variables, ``(x,y,s)``; then one line per state, ``i:(v1,v2,v3)``,
with integer values or ``true``/``false`` (read as 1/0), for every state ``0 .. S-1``.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from .._checks import check_count
from ._text import read_text, where

_NAME = re.compile(r"[A-Za-z_][A-Za-z_0-9]*\Z")
_LINE = re.compile(r"\s*(\d+)\s*:\s*\((.*)\)\s*\Z")
_BOOLS = {"true": 1, "false": 0}


def load_variables(path, *, num_states: int | None = None) -> dict[str, np.ndarray]:
    """Reads PRISM's states file: each state's variables, for atoms such as ``s=2``.

    Example::

        variables = jp.load_variables("model.sta")       # {"x": int[S], "s": int[S]}
        jp.check(mdp, 'Pmax=? [F s=2 & x>3]', variables=variables)

    Args:
      path: a ``.sta`` file (first line ``(x,y,s)``, then ``i:(v1,v2,v3)`` per state; values
        integers or ``true``/``false``), or the ``.tra`` whose ``.sta`` lies beside it.
      num_states: ``S``, checked when given (default: the file's number of states).

    Returns:
      ``{name: int64[S]}`` in the file's order; booleans are 0/1.

    Raises:
      ValueError: naming the file and line: a missing or malformed header, a bad line, a
        value that is neither an integer nor true/false, a state listed twice, a missing
        state (every state ``0 .. S-1`` must have its line), a state ``>= num_states``.
    """
    path = Path(path)
    if path.suffix == ".tra":
        path = path.with_suffix(".sta")
    if num_states is not None:
        num_states = check_count("num_states", num_states)
    lines = [(n, line) for n, line in enumerate(read_text(path).splitlines(), 1) if line.strip()]
    if not lines:
        raise ValueError(f"{where(path)} is empty: expected '(x,y,...)' and a line per state")
    names = _header(path, *lines[0])
    rows: dict[int, tuple[int, list[int]]] = {}
    for number, line in lines[1:]:
        state, values = _state_line(path, number, line, len(names))
        if state in rows:
            first = rows[state][0]
            raise ValueError(
                f"{where(path)} line {number}: state {state} is listed twice (first at line "
                f"{first})"
            )
        if num_states is not None and state >= num_states:
            raise ValueError(
                f"{where(path)} line {number}: state {state} is not a state of the model "
                f"(S = {num_states})"
            )
        rows[state] = (number, values)
    S = num_states if num_states is not None else len(rows)
    missing = sorted(set(range(S)) - set(rows))
    if missing:
        raise ValueError(
            f"{where(path)}: no line for state {missing[0]} ({len(missing)} of {S} states "
            "missing; every state 0 .. S-1 needs one)"
        )
    table = np.array([rows[s][1] for s in range(S)], np.int64).reshape(S, len(names))
    return {name: table[:, j].copy() for j, name in enumerate(names)}


def _header(path: Path, number: int, line: str) -> list[str]:
    text = line.strip()
    if not (text.startswith("(") and text.endswith(")")):
        raise ValueError(
            f"{where(path)} line {number}: expected the variables' names, '(x,y,...)', "
            f"got {text[:40]!r}"
        )
    names = [n.strip() for n in text[1:-1].split(",")]
    for n in names:
        if not _NAME.match(n):
            raise ValueError(f"{where(path)} line {number}: {n!r} is not a variable name")
    if len(set(names)) != len(names):
        twice = next(n for n in names if names.count(n) > 1)
        raise ValueError(f"{where(path)} line {number}: variable {twice!r} is named twice")
    return names


def _state_line(path: Path, number: int, line: str, count: int) -> tuple[int, list[int]]:
    m = _LINE.match(line)
    if m is None:
        raise ValueError(
            f"{where(path)} line {number}: expected 'state:(v1,v2,...)', got {line.strip()[:40]!r}"
        )
    fields = [f.strip() for f in m.group(2).split(",")]
    if len(fields) != count:
        raise ValueError(f"{where(path)} line {number}: {len(fields)} values for {count} variables")
    values = []
    for f in fields:
        if f in _BOOLS:
            values.append(_BOOLS[f])
            continue
        try:
            values.append(int(f))
        except ValueError:
            raise ValueError(
                f"{where(path)} line {number}: {f!r} is neither an integer nor true/false"
            ) from None
    return int(m.group(1)), values
