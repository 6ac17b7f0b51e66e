"""The tokens of PRISM's and Storm's explicit text files, with errors that name file and line.

Lines and ``#`` comments, integers, decimal or ``-exact`` rational values (``2/5``), header
counts, and the ``value:target`` entries of PRISM's ``:rows`` format. The formats themselves
are described in :mod:`jaxprivmdp.io._load`.
"""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path


def where(path: Path) -> str:
    """How an error message names ``path``."""
    return repr(str(path))


def read_text(path: Path) -> str:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"cannot read {where(path)}: {e}") from None


def data_lines(path: Path) -> Iterator[tuple[int, list[str]]]:
    """``(line number, fields)`` of a text file's lines that are neither blank nor ``#``."""
    for number, line in enumerate(read_text(path).splitlines(), start=1):
        fields = line.split()
        if fields and not fields[0].startswith("#"):
            yield number, fields


def leading_comments(path: Path) -> list[tuple[int, str]]:
    """The ``#`` lines before the first data line: ``(line number, text)``."""
    out = []
    try:
        with path.open() as f:
            for number, line in enumerate(f, start=1):
                text = line.strip()
                if not text:
                    continue
                if not text.startswith("#"):
                    break
                out.append((number, text))
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"cannot read {where(path)}: {e}") from None
    return out


def parse_int(path: Path, number: int, field: str) -> int:
    try:
        return int(field)
    except ValueError:
        raise ValueError(f"{where(path)} line {number}: {field!r} is not an integer") from None


def parse_value(path: Path, number: int, field: str) -> float:
    """A decimal or (``-exact``) rational number, rounded once to float64."""
    try:
        return float(Fraction(field)) if "/" in field else float(field)
    except (ValueError, ZeroDivisionError):
        hint = (
            " (an interval: a file is an interval model's where its first transition's "
            "probability is an interval, or its '# Transitions (IMDP)' comment says so)"
        )
        hint = hint if field.startswith("[") else ""
        raise ValueError(f"{where(path)} line {number}: {field!r} is not a number{hint}") from None


def parse_counts(path: Path, number: int, fields: list[str]) -> list[int]:
    """A header line's counts (``S C T``, ``S N``, ...)."""
    return [parse_int(path, number, f) for f in fields]


def is_rows(fields: list[str]) -> bool:
    """A line of PRISM's rows format: ``source value:target ...``, or a bare ``source``."""
    return len(fields) == 1 or ":" in fields[1]


def rows_entries(path: Path, number: int, fields: list[str], action_ok: bool):
    """``(target, value)`` of a rows-format line's ``value:target`` fields."""
    out = []
    for k, field in enumerate(fields):
        value, colon, target = field.rpartition(":")
        if not colon:
            if action_ok and k == len(fields) - 1 and k > 0:
                break  # the choice's action name
            raise ValueError(f"{where(path)} line {number}: expected 'value:target', got {field!r}")
        out.append((parse_int(path, number, target), parse_value(path, number, value)))
    return out


def rows_choice(
    path: Path, number: int, fields: list[str], seen: dict[int, int], *, mdp: bool, action_ok: bool
):
    """A rows-format line ``source value:target ... [action]``: ``(source, choice, entries)``.

    The choice is the line's rank among its source's lines (always 0 unless ``mdp``);
    ``seen`` counts each source's lines so far. With ``action_ok``, the line may end in the
    choice's action name.
    """
    s = parse_int(path, number, fields[0])
    entries = rows_entries(path, number, fields[1:], action_ok=action_ok)
    c = seen.get(s, 0) if mdp else 0
    seen[s] = c + 1
    return s, c, entries
