"""The property grammar of :func:`jaxprivmdp.check`: PRISM's ``P``/``R`` queries, parsed.

A tokenizer and a recursive-descent parser for the supported subset of PRISM's property
language (listed in :mod:`jaxprivmdp.properties._check`), into a :class:`Property`
whose state formulas are :class:`Formula` trees. Anything outside the subset is a
``ValueError`` that names its position in the string (:func:`property_error`).
"""

from __future__ import annotations

import functools
import re
from typing import NamedTuple


class Formula(NamedTuple):
    """A state formula: ``op`` is ``label`` (``name``), ``true``, ``false``, ``not``, ``and``,
    ``or``, ``implies``, ``iff`` or ``cmp`` (a comparison of state variables: ``name`` is the
    operator, ``args`` the two sides as :data:`Term` tuples); ``pos`` is where it starts."""

    op: str
    args: tuple = ()
    pos: int = 0
    name: str | None = None


# A term of a state-variable comparison: ("var", name, pos), ("int", value, pos) or
# ("+"/"-", left, right).
Term = tuple


class Property(NamedTuple):
    """A parsed query.

    Attributes:
      kind: ``"P"`` or ``"R"``.
      opt: ``"max"``, ``"min"`` or None (``P=?``/``R=?``): the policy's optimum.
      nature: on an interval model, nature's optimum (``"max"`` or ``"min"``), the second
        word of PRISM's two quantifiers (``Pmaxmin=?``: the best policy against the worst
        nature); for an interval DTMC the only one (``Pmin=?``: nature minimizes, ``opt``
        None). None on a point model.
      reward: ``R{"name"}`` (str), ``R{i}`` (int) or None.
      path: ``"F"``, ``"U"``, ``"G"``, ``"X"`` or ``"C"``.
      left, right: the state formulas (``left`` only for ``U``).
      bound: the step bound ``k`` (int), ``"T"`` (the horizon constant) or None.
      text: the property as given; ``positions``: where each part starts (for messages).
      comparison, threshold: a boolean query's ``>=``/``>``/``<=``/``<`` and bound
        (``P>=0.9 [...]``; :mod:`~jaxprivmdp.properties._query`); None for ``=?``.
    """

    kind: str
    opt: str | None
    reward: str | int | None
    path: str
    left: Formula | None
    right: Formula | None
    bound: int | str | None
    text: str
    positions: dict
    comparison: str | None = None
    threshold: float | None = None
    nature: str | None = None


_COMPARISONS = ("=", "!=", "<", "<=", ">", ">=")


class _Token(NamedTuple):
    kind: str  # "str", "num", "id", "op", "end"
    text: str
    pos: int


_TOKEN = re.compile(
    r"""(?P<str>"[^"\n]*")
      | (?P<num>\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)
      | (?P<id>[A-Za-z_][A-Za-z_0-9]*)
      | (?P<op><=>|=>|<=|>=|=\?|!=|[\[\]{}()!&|<>=?+\-*/,:;'])""",
    re.VERBOSE,
)

_P_OPERATORS = {"P": None, "Pmax": "max", "Pmin": "min"}
_R_OPERATORS = {"R": None, "Rmax": "max", "Rmin": "min"}
# PRISM's two quantifiers of interval models: the policy's optimum, then nature's.
_QUANTIFIERS = {f"{a}{b}": (a, b) for a in ("max", "min") for b in ("max", "min")}
_P_OPERATORS.update({f"P{q}": q for q in _QUANTIFIERS})
_R_OPERATORS.update({f"R{q}": q for q in _QUANTIFIERS})


def property_error(text: str, pos: int, message: str) -> ValueError:
    """A one-line ValueError: the property, the message and the 0-based position."""
    where = "the end" if pos >= len(text) else f"position {pos} ({text[pos : pos + 12]!r})"
    return ValueError(f"property {text!r}: {message} at {where}")


def _tokenize(text: str) -> list[_Token]:
    tokens, i = [], 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i == len(text):
            tokens.append(_Token("end", "", i))
            return tokens
        m = _TOKEN.match(text, i)
        if m is None:
            if text[i] == '"':
                why = "unterminated label (a '\"' without its closing '\"')"
                raise property_error(text, i, why)
            raise property_error(text, i, f"unexpected character {text[i]!r}")
        tokens.append(_Token(m.lastgroup, m.group(), i))
        i = m.end()


class _Parser:
    def __init__(self, text: str):
        self.text, self.tokens, self.i = text, _tokenize(text), 0

    # -- helpers
    def peek(self, ahead: int = 0) -> _Token:
        return self.tokens[min(self.i + ahead, len(self.tokens) - 1)]

    def next(self) -> _Token:
        t = self.peek()
        self.i = min(self.i + 1, len(self.tokens) - 1)
        return t

    def fail(self, token: _Token, message: str) -> ValueError:
        return property_error(self.text, token.pos, message)

    @staticmethod
    def show(t: _Token) -> str:
        return "the end of the property" if t.kind == "end" else repr(t.text)

    def expect(self, text: str, what: str | None = None) -> _Token:
        t = self.peek()
        if t.text != text or t.kind == "str":
            raise self.fail(t, f"expected {what or repr(text)}, got {self.show(t)}")
        return self.next()

    # -- query := (P | Pmax | Pmin | R{..}? (max|min)? | Rmax | Rmin) '=?' '[' path ']'
    def query(self) -> Property:
        t = self.next()
        positions = {"operator": t.pos}
        if t.kind != "id":
            raise self.fail(t, f"expected a P or R operator, got {self.show(t)}")
        reward = None
        if t.text in _P_OPERATORS:
            kind, opt = "P", _P_OPERATORS[t.text]
        elif t.text in _R_OPERATORS:
            kind, opt = "R", _R_OPERATORS[t.text]
        elif t.text in ("S", "L", "LRA", "E", "filter", "multi", "Q"):
            raise self.fail(
                t, f"unsupported operator {t.text!r} (supported: P, Pmax, Pmin, R, Rmax, Rmin)"
            )
        else:
            raise self.fail(t, f"expected a P or R operator, got {t.text!r}")
        if self.peek().text == "{":
            brace = self.next()
            if kind == "P":
                raise self.fail(brace, "P takes no '{...}'; reward structures go with R")
            if opt is not None:
                raise self.fail(brace, 'write the structure before max/min: R{"name"}max=?')
            r = self.next()
            positions["reward"] = r.pos
            if r.kind == "str":
                reward = r.text[1:-1]
            elif r.kind == "num" and r.text.isdigit():
                reward = int(r.text)
            else:
                raise self.fail(
                    r, f'expected a reward structure "name" or index, got {self.show(r)}'
                )
            self.expect("}")
            if self.peek().kind == "id" and self.peek().text in ("max", "min", *_QUANTIFIERS):
                opt = self.next().text
        q = self.peek()
        positions["query"] = q.pos
        comparison, threshold = None, None
        if q.text in _COMPARISONS:
            comparison, threshold = self.comparison(kind, q)
        else:
            self.expect("=?", "'=?'")
        positions["query_end"] = self.peek().pos
        self.expect("[")
        path, left, right, bound = self.path(kind, positions)
        self.expect("]", "']'")
        opt, nature = _QUANTIFIERS.get(opt, (opt, None))
        return Property(
            kind,
            opt,
            reward,
            path,
            left,
            right,
            bound,
            self.text,
            positions,
            comparison,
            threshold,
            nature,
        )

    def comparison(self, kind: str, q: _Token) -> tuple[str, float]:
        """A bound ``>=p`` after the operator: only :func:`jaxprivmdp.check_all` takes them."""
        raise self.fail(
            q,
            "only numerical queries ('=?') are supported by check; boolean queries such as "
            f"'{kind}>=0.5 [...]' by jp.check_all",
        )

    def end(self) -> None:
        end = self.peek()
        if end.kind != "end":
            raise self.fail(end, f"unexpected {self.show(end)} after the property")

    def path(self, kind: str, positions: dict):
        t = self.peek()
        positions["path"] = t.pos
        if kind == "R":
            if t.kind == "id" and t.text == "F":
                self.next()
                if self.peek().text in ("<=", "<", ">", ">=", "["):
                    raise self.fail(
                        self.peek(),
                        "step-bounded reachability rewards (R [F<=k ...]) are not supported; "
                        "use R [C<=k] for the reward of k steps",
                    )
                return "F", None, self.formula(), None
            if t.kind == "id" and t.text == "C":
                self.next()
                if self.peek().text not in ("<=", "<"):  # total reward: no bound
                    return "C", None, None, None
                return "C", None, None, self.bound(positions)
            if t.kind == "id" and t.text in ("I", "S"):
                what = "instantaneous" if t.text == "I" else "steady-state"
                raise self.fail(t, f"{what} rewards (R [{t.text}...]) are not supported")
            raise self.fail(t, f"expected F or C<=k in a reward property, got {self.show(t)}")
        if t.kind == "id" and t.text in ("F", "G"):
            self.next()
            bound = (
                self.bound(positions) if self.peek().text in ("<=", "<", ">", ">=", "[") else None
            )
            return t.text, None, self.formula(), bound
        if t.kind == "id" and t.text == "X":
            self.next()
            return "X", None, self.formula(), None
        if t.kind == "id" and t.text in ("U", "W", "R", "C", "I"):
            raise self.fail(t, f"expected F, G, X or a state formula before U, got {t.text!r}")
        left = self.formula()
        u = self.peek()
        positions["until"] = u.pos
        if u.kind == "id" and u.text in ("W", "R"):
            name = "weak until" if u.text == "W" else "release"
            raise self.fail(u, f"{name} ({u.text}) is not supported; use U, F or G")
        if not (u.kind == "id" and u.text == "U"):
            raise self.fail(u, f"expected U after a state formula, got {self.show(u)}")
        self.next()
        bound = self.bound(positions) if self.peek().text in ("<=", "<", ">", ">=", "[") else None
        return "U", left, self.formula(), bound

    def bound(self, positions: dict) -> int | str:
        op = self.next()
        positions["bound"] = op.pos
        if op.text not in ("<=", "<"):
            raise self.fail(
                op, "only upper step bounds (<=k, <k) are supported, not time intervals"
            )
        k = self.next()
        if k.kind == "id":
            if k.text != "T":
                raise self.fail(
                    k,
                    f"unknown constant {k.text!r} in a step bound (only T, the horizon: "
                    "horizon= or the model's own)",
                )
            if op.text == "<":
                raise self.fail(op, "write the horizon bound as <=T")
            return "T"
        if k.kind != "num" or not k.text.isdigit():
            raise self.fail(k, f"a step bound must be a non-negative integer, got {self.show(k)}")
        value = int(k.text)
        if op.text == "<":
            if value == 0:
                raise self.fail(k, "the bound <0 admits no step; use <=0 or a bound >= 1")
            value -= 1
        return value

    # -- state formulas, PRISM's precedence: ! > & > | > => > <=>
    def formula(self) -> Formula:
        left = self.implies()
        while self.peek().text == "<=>":
            t = self.next()
            left = Formula("iff", (left, self.implies()), t.pos)
        return left

    def implies(self) -> Formula:
        left = self.disjunction()
        if self.peek().text == "=>":
            t = self.next()
            return Formula("implies", (left, self.implies()), t.pos)
        return left

    def disjunction(self) -> Formula:
        left = self.conjunction()
        while self.peek().text == "|":
            t = self.next()
            left = Formula("or", (left, self.conjunction()), t.pos)
        return left

    def conjunction(self) -> Formula:
        left = self.unary()
        while self.peek().text == "&":
            t = self.next()
            left = Formula("and", (left, self.unary()), t.pos)
        return left

    def unary(self) -> Formula:
        t = self.peek()
        if t.text == "!":
            self.next()
            return Formula("not", (self.unary(),), t.pos)
        return self.atom()

    def atom(self) -> Formula:
        t = self.next()
        if t.kind == "str":
            name = t.text[1:-1]
            if not name:
                raise self.fail(t, 'an empty label ""')
            return Formula("label", (), t.pos, name)
        if t.text == "(":
            inner = self.formula()
            self.expect(")", "')'")
            return inner
        if t.kind == "id" and (t.text in _P_OPERATORS or t.text in _R_OPERATORS):
            raise self.fail(t, f"nested {t.text} operators are not supported")
        if t.kind in ("id", "num") or t.text == "-":
            return self.variable_comparison(t)
        raise self.fail(
            t, f'expected a state formula (a "label", true, false, !, (), got {self.show(t)}'
        )

    # -- comparisons of state variables: sum OP sum, sum := term (('+'|'-') term)*
    def variable_comparison(self, first: _Token) -> Formula:
        self.i -= 1  # atom() took the first token
        left = self.sum()
        op = self.peek()
        if op.text not in _COMPARISONS:
            if left[0] == "int" and first.text in ("true", "false"):
                return Formula(first.text, (), first.pos)
            if left[0] == "var":  # a boolean variable: true where it is not 0
                return Formula("cmp", (left, ("int", 0, first.pos)), first.pos, "!=")
            raise self.fail(
                first,
                f'unsupported atom {first.text!r}: quoted labels ("goal"), true, false or a '
                "comparison of state variables (s=2, x>y)",
            )
        self.next()
        return Formula("cmp", (left, self.sum()), first.pos, op.text)

    def sum(self) -> Term:
        left = self.term()
        while self.peek().text in ("+", "-"):
            op = self.next()
            left = (op.text, left, self.term())
        return left

    def term(self) -> Term:
        t = self.next()
        if t.text == "-" and self.peek().kind == "num":
            value = self.term()
            return ("int", -value[1], t.pos)
        if t.kind == "num":
            if not t.text.isdigit():
                raise self.fail(t, f"state variables are integers: expected one, got {t.text!r}")
            return ("int", int(t.text), t.pos)
        if t.kind == "id" and t.text in ("true", "false"):
            return ("int", int(t.text == "true"), t.pos)
        if t.kind == "id" and t.text not in _P_OPERATORS and t.text not in _R_OPERATORS:
            return ("var", t.text, t.pos)
        raise self.fail(t, f"expected a state variable or an integer, got {self.show(t)}")


def parse_property(text: str) -> Property:
    """Parses a PRISM property of the supported subset (see
    :mod:`jaxprivmdp.properties._check`); ValueError otherwise."""
    if not isinstance(text, str):
        raise ValueError(f"the property must be a string, got {type(text).__name__}")
    if not text.strip():
        raise ValueError("the property is empty")
    prop = _parsed(text)  # (its own positions: the cached one stays as it is)
    return prop._replace(positions=dict(prop.positions))


@functools.lru_cache(maxsize=256)  # (some 75 µs of a 10³-state model's 0.8 ms check)
def _parsed(text: str) -> Property:
    parser = _Parser(text)
    prop, _ = parser.query(), parser.end()
    return prop
