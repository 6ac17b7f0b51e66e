"""PRISM's properties file (``.props``): the properties, with their constants substituted.

One property per line, or several on a line separated by ``;`` (a property does not span
lines); ``//`` comments; ``const int N = 10;``, ``const double p = 0.5;``, ``const bool b =
true;`` (``const N = 10;`` is an int) declare constants used by the later properties; a
property may start with its name, ``"name": P=? [...]``.
"""

from __future__ import annotations

import re
from pathlib import Path

from .._statements import split_statements
from ._text import read_text, where

_CONST = re.compile(
    r"const\s+(?:(int|double|bool)\s+)?([A-Za-z_][A-Za-z_0-9]*)\s*(?:=\s*(.*?))?\s*\Z", re.S
)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\Z")


def load_properties(path, *, constants: dict | None = None) -> list[str]:
    """Reads a PRISM properties file: its properties, ready for :func:`check_all`.

    Example::

        # model.props:  const int T = 10;
        #               "reach": P>=0.9 [F<=T "goal"];  // a boolean query
        #               filter(max, Pmax=? [F "goal"], s<3)
        jp.check_all(mdp, jp.load_properties("model.props"), labels=labels)

    Args:
      path: the ``.props`` file (see the module for its form).
      constants: ``{name: value}`` for constants the file declares without a value
        (``const int N;``), or to override the file's (PRISM's ``-const``; the CLI's
        ``check --const``). Each must be declared in the file.

    Returns:
      The properties in order, each a string with its constants replaced by their values
      and its ``"name": `` prefix kept.

    Raises:
      ValueError: naming the file and line: a constant without a value, a value that is not
        a number (or true/false for a bool), a constant declared twice, a ``label`` or
        ``formula`` declaration (not supported), a file without properties; a name in
        ``constants`` that the file does not declare.
    """
    path = Path(path)
    given = dict(constants or {})
    values: dict[str, str] = {}
    out = []
    for number, line in enumerate(read_text(path).splitlines(), start=1):
        for part in filter(None, split_statements(_strip_comment(line))):
            if part.startswith("const ") or part.startswith("const\t"):
                name, value = _constant(path, number, part, given)
                if name in values:
                    raise ValueError(
                        f"{where(path)} line {number}: constant {name!r} declared twice"
                    )
                values[name] = value
            elif re.match(r"(label|formula)\s", part):
                raise ValueError(
                    f"{where(path)} line {number}: {part.split()[0]} declarations are not "
                    "supported (give labels with --labels / labels=)"
                )
            else:
                out.append(_substitute(part, values))
    unknown = sorted(set(given) - set(values))
    if unknown:
        declared = ", ".join(values) or "none"
        raise ValueError(
            f"{where(path)} declares no constant {unknown[0]!r} given a value (its constants: "
            f"{declared})"
        )
    if not out:
        raise ValueError(f"{where(path)} has no property")
    return out


def _strip_comment(line: str) -> str:
    """``line`` without a ``//`` comment outside quotes."""
    quoted = False
    for i, ch in enumerate(line):
        if ch == '"':
            quoted = not quoted
        elif not quoted and line.startswith("//", i):
            return line[:i]
    return line


def _constant(path: Path, number: int, text: str, given: dict) -> tuple[str, str]:
    m = _CONST.match(text)
    if m is None:
        raise ValueError(
            f"{where(path)} line {number}: expected 'const int NAME = value', got {text!r}"
        )
    kind, name, value = m.group(1) or "int", m.group(2), m.group(3)
    if name in given:
        value = str(given[name]).lower() if isinstance(given[name], bool) else str(given[name])
    if value is None or not value.strip():
        raise ValueError(
            f"{where(path)} line {number}: constant {name!r} has no value (give it in the file, "
            "or with constants= / the command line's --const NAME=VALUE)"
        )
    value = value.strip()
    if kind == "bool":
        if value not in ("true", "false"):
            raise ValueError(f"{where(path)} line {number}: bool {name!r} = {value!r}")
        return name, value
    if not _NUMBER.match(value) or (kind == "int" and not re.fullmatch(r"[+-]?\d+", value)):
        raise ValueError(
            f"{where(path)} line {number}: {kind} {name!r} = {value!r} is not a number "
            "(expressions are not supported)"
        )
    return name, value


def _substitute(text: str, values: dict) -> str:
    """``text`` with each constant (outside quotes) replaced by its value."""
    pieces = re.split(r'("[^"]*")', text)
    for i in range(0, len(pieces), 2):
        pieces[i] = _IDENT.sub(lambda m: values.get(m.group(), m.group()), pieces[i])
    return "".join(pieces)
