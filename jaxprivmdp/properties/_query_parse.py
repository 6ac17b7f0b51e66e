"""The grammar :func:`jaxprivmdp.check_all` adds to :func:`jaxprivmdp.check`'s.

A property of ``check_all`` is, optionally named (``"name": ...``, as in a PRISM properties
file), one of: a numerical query (``Pmax=? [...]``, :func:`~._parse.parse_property`'s), a
boolean query (``P>=0.9 [...]``, ``Pmax<0.1 [...]``, ``R{"time"}<=5 [...]``) or a filter
``filter(op, prop[, states])`` whose ``prop`` is a query or a state formula and ``states`` a
state formula (default ``true``). Several properties in one string are separated by ``;``
(:func:`split_properties`). Errors name the position in the whole string, as
:func:`~._parse.property_error` does.
"""

from __future__ import annotations

from typing import NamedTuple

from .._statements import split_statements
from ._parse import _P_OPERATORS, _R_OPERATORS, Formula, Property, _Parser

# PRISM's filter operators (``print``: the values of the states; ``range``: [min, max]).
FILTER_OPS = (
    "forall",
    "exists",
    "count",
    "min",
    "max",
    "sum",
    "avg",
    "range",
    "argmin",
    "argmax",
    "state",
    "first",
    "print",
)


class Filter(NamedTuple):
    """``filter(op, inner[, states])``.

    Attributes:
      op: one of :data:`FILTER_OPS`.
      inner: a query (:class:`~._parse.Property`) or a state formula (:class:`~._parse.Formula`).
      inner_text: ``inner`` as written (the numerical query :func:`check` answers is built
        from it).
      inner_start: where ``inner`` starts in the whole property.
      states: the states formula, or None (all states).
      pos: where ``filter`` starts; ``text``: the whole property.
    """

    op: str
    inner: Property | Formula
    inner_text: str
    inner_start: int
    states: Formula | None
    pos: int
    text: str


class Query(NamedTuple):
    """One property of :func:`check_all`: its ``name`` (or None), its ``text`` without the
    name, its ``body``, a :class:`~._parse.Property` or a :class:`Filter`, and ``start``,
    where ``text`` starts in the string parsed (``body.text``; positions such as
    ``body.positions`` are in that string)."""

    name: str | None
    text: str
    body: Property | Filter
    start: int


class _QueryParser(_Parser):
    def comparison(self, kind: str, q) -> tuple[str, float]:
        op = self.next()
        if op.text not in (">=", ">", "<=", "<"):
            raise self.fail(op, f"a bound is >=, >, <= or <, got {op.text!r}")
        t = self.next()
        if t.kind != "num":
            raise self.fail(t, f"expected a number after {op.text!r}, got {self.show(t)}")
        value = float(t.text)
        if kind == "P" and not 0.0 <= value <= 1.0:
            raise self.fail(t, f"a probability bound must lie in [0, 1], got {t.text}")
        return op.text, value

    def top(self) -> tuple[str | None, int, Property | Filter]:
        name = None
        if self.peek().kind == "str" and self.peek(1).text == ":":
            name = self.next().text[1:-1]
            self.next()
        start = self.peek().pos
        body = self.filter() if self.peek().text == "filter" else self.query()
        self.end()
        return name, start, body

    def filter(self) -> Filter:
        f = self.next()
        self.expect("(", "'(' after filter")
        op = self.next()
        if op.kind != "id" or op.text not in FILTER_OPS:
            raise self.fail(
                op, f"unknown filter operator {self.show(op)} (supported: {', '.join(FILTER_OPS)})"
            )
        self.expect(",", "',' after the filter operator")
        t = self.peek()
        if t.text == "filter":
            raise self.fail(t, "nested filters are not supported")
        is_query = t.kind == "id" and (t.text in _P_OPERATORS or t.text in _R_OPERATORS)
        inner = self.query() if is_query else self.formula()
        inner_text = self.text[t.pos : self.peek().pos].rstrip()
        states = None
        if self.peek().text == ",":
            self.next()
            states = self.formula()
        self.expect(")", "')' closing the filter")
        return Filter(op.text, inner, inner_text, t.pos, states, f.pos, self.text)


def parse_query(text: str) -> Query:
    """Parses one property of :func:`check_all` (see the module); ValueError otherwise."""
    if not isinstance(text, str):
        raise ValueError(f"a property must be a string, got {type(text).__name__}")
    if not text.strip():
        raise ValueError("the property is empty")
    name, start, body = _QueryParser(text).top()
    return Query(name, text[start:].strip(), body, start)


def split_properties(text: str) -> list[str]:
    """``a; b`` as ``["a", "b"]`` (a ``;`` inside a quoted label does not split)."""
    parts = split_statements(text)
    if parts and not parts[-1]:
        parts.pop()  # a trailing ';'
    for p in parts:
        if not p:
            raise ValueError(f"properties {text!r}: an empty property between two ';'")
    return parts


def numerical_text(prop: Property, start: int, end: int, opt: str | None) -> str:
    """The ``=?`` query whose value decides the boolean query ``prop`` (``P>=0.9 [...]`` ->
    ``Pmin=? [...]``), from ``prop.text[start:end]``; ``opt`` is the optimum to add (None
    when the query names one, or on a DTMC)."""
    text, pos = prop.text, prop.positions
    return text[start : pos["query"]] + f"{opt or ''}=? " + text[pos["query_end"] : end]
