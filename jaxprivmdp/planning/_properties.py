"""PRISM properties on the library's models: ``check(mdp, 'Pmax=? [F "goal"]', labels=...)``.

What PRISM and Storm users ask of an MDP (or a DTMC: an MDP with one allowed action per
state), for the subset of PRISM's property language below, solved as those tools solve it:

- ``P{max,min}=? [F φ]``, ``[φ1 U φ2]``, ``[G φ]``: unbounded reachability (until,
  invariance). A graph precomputation on the host finds the states with probability exactly 0
  and 1 (PRISM's ``Prob0E``/``Prob1E`` for max, ``Prob0A``/``Prob1A`` for min), then
  *interval iteration* (Haddad & Monmege 2014; Baier, Klein, Leuschner, Parker, Wunderlich
  2017) iterates a lower bound up from 0 and an upper bound down from 1 until they meet. For
  max, the maximal end components among the remaining states are collapsed first (their
  states share one value, the best exit of the component): without that the upper bound never
  leaves 1 inside a component that can loop forever. For min no component remains (a
  minimizer stays in it forever, so its states have probability 0 and were precomputed).
- ``R{"name"}{max,min}=? [F φ]``: expected reward until φ, PRISM's semantics: ``inf`` where
  the optimizing scheduler does not reach φ with probability 1 (``Rmin``: not ``Prob1E``;
  ``Rmax``: not ``Prob1A``). The states with value 0 are precomputed too; for min, end
  components of zero-reward actions are collapsed (without that the lower bound would stay at
  0 inside them). The upper bound starts from Baier et al.'s bound on expected visiting times
  (``Σ_s max_a r(s, a) / d_s``, ``d_s`` a lower bound on the probability of never returning
  to ``s``): over every scheduler for max, over one proper scheduler (the ``Prob1E``
  attractor) for min.
- ``P{max,min}=? [F<=k φ]``, ``[φ1 U<=k φ2]``, ``[G<=k φ]``, ``[X φ]``, ``R{max,min}=?
  [C<=k]`` (reward accumulated in ``k`` steps): backward induction, exact up to rounding.
- ``P=?``/``R=?``: the same on a DTMC (refused on a model with a choice; PRISM does the same).

φ is a state formula over labels: ``"goal"``, ``true``, ``false``, ``!``, ``&``, ``|``,
``=>``, ``<=>`` and parentheses (PRISM's precedence: ``!`` > ``&`` > ``|`` > ``=>`` >
``<=>``). Not supported (a ValueError naming the position): bounds such as ``P>=0.5`` or
``P<0.1`` (only ``=?`` queries), nested ``P``/``R`` operators, variables (``s=3``) and
constants other than ``T``, time intervals (``F>=k``, ``F[a,b]``), ``W``/``R`` (weak until,
release), ``S``, ``LRA``, ``filter``, multi-objective queries, ``R [I=k]``, ``R [S]``,
``R [F<=k]`` and total reward ``R [C]``.

Why the precomputation runs on the host: it is a handful of graph searches (attractors,
strongly connected components), each a worklist over the transitions in O(transitions)
whose shape depends on the data; written in NumPy/SciPy it is exact (no rounding: only which
probabilities are positive matters) and runs once per property, while the numerical part, the
iteration that dominates the cost, runs jit-compiled on the device (``lax.while_loop``,
``lax.scan``; products at ``precision=HIGHEST``).

The policy. Greedy choices from approximate values can loop forever inside an end component
(a pair that loops back looks as good as the exit it should lead to); the policy keeps the
greedy choice where it leaves the undecided states with positive probability and routes the
states it would trap, along pairs that may be optimal given the error bounds, toward those
that leave (an attractor, as PRISM and Storm fix their schedulers). On the precomputed
states: the ``Prob1E`` attractor (reach with probability 1), a pair that stays where the
probability is 0 (min), a pair toward never reaching the target (``Rmax = inf``).

The exact value. Rows are validated to sum to 1 within 3.1e-5 and never renormalized; the
value bounded here is that of the rows read as the distributions they stand for (each row
divided by its sum), which the graph precomputation assumes too. A stored float32 model's
rows sum to 1 only within a few ulps, and its "value of the rows as stored" would make a
state that reaches the target with probability 1 leak mass each step.

Rounding. Interval iteration in floating point can cross the exact value (Hartmanns 2022),
so each backup is widened: every quantity here is non-negative, so the computed ``r + Σ p v``
is within a relative ``(n + 1) u`` of the exact one (``n`` terms, ``u = eps/2``; Higham 2002,
§3.1) and within a relative ``2 δ`` of the backup of the normalized rows (``δ = max |Σ p −
1|``); the lower bound is multiplied by ``1 − m``, the upper by ``1 + m``, with ``m = (n +
5) u + 2 δ``. The bounds then hold in the working dtype (for dense rows with ``S`` beyond a
few dozen, ``n`` is replaced by ``16 + 2⌈log₂ S⌉``, a heuristic for XLA's blocked summation,
as :mod:`jaxprivmdp.planning._bellman` does). The price is a floor on the reachable precision of
about ``2 m`` times the expected number of steps: in float32 (``m`` about 1e-6) a slowly
mixing model may stop short of ``tol`` (``converged`` False, the bound still sound).
"""

from __future__ import annotations

import functools
import math
import re
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from .._checks import check_count, check_int, check_range, is_concrete
from ..models._rows import Model, Rows, check_model, expect, transition_rows
from ..models._sparse import SparseMDP

# Relative precision asked of unbounded properties by default: PRISM's and Storm's default
# (1e-6, relative) in float64; in float32 rounding alone costs about 1e-6 per expected step.
DEFAULT_TOL = {np.dtype(np.float64): 1e-6, np.dtype(np.float32): 1e-4}
DEFAULT_MAX_ITERATIONS = 100_000


class CheckResult(NamedTuple):
    """The answer to a property, per state.

    Attributes:
      values: `[S]` the value of the property in each state (probabilities; expected rewards,
        ``inf`` where PRISM reports infinity). Unbounded properties: the midpoint of the
        interval iteration's final lower and upper bounds.
      policy: the optimizing deterministic policy, int32: `[S]` for unbounded properties,
        `[k, S]` (``policy[t]`` at step ``t``, ``t = 0`` first) for bounded ones. Never a
        masked action. For ``P=?``/``R=?`` on a DTMC, its only action.
      error_bound: `[S]` a bound on ``|values − exact|`` in the working dtype, ``exact``
        being the value of the model's rows read as distributions (see the module): half the
        final interval (unbounded), the accumulated rounding (bounded), 0 where the
        precomputation decided the value; ``inf`` where no upper bound could be found (see
        :func:`check`).
      value_at_initial: scalar ``values[model.initial_state]``.
      converged: scalar bool: every state's interval met ``tol`` (always True for bounded
        properties).
      iterations: scalar int: interval iterations (or the step bound ``k``).
    """

    values: jax.Array
    policy: jax.Array
    error_bound: jax.Array
    value_at_initial: jax.Array
    converged: jax.Array
    iterations: jax.Array


# ============================================================================= parser


class Formula(NamedTuple):
    """A state formula: ``op`` is ``label`` (``name``), ``true``, ``false``, ``not``, ``and``,
    ``or``, ``implies`` or ``iff``; ``pos`` is where it starts in the property."""

    op: str
    args: tuple = ()
    pos: int = 0
    name: str | None = None


class Property(NamedTuple):
    """A parsed query.

    Attributes:
      kind: ``"P"`` or ``"R"``.
      opt: ``"max"``, ``"min"`` or None (``P=?``/``R=?``).
      reward: ``R{"name"}`` (str), ``R{i}`` (int) or None.
      path: ``"F"``, ``"U"``, ``"G"``, ``"X"`` or ``"C"``.
      left, right: the state formulas (``left`` only for ``U``).
      bound: the step bound ``k`` (int), ``"T"`` (the horizon constant) or None.
      text: the property as given; ``positions``: where each part starts (for messages).
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
                raise property_error(
                    text, i, "unterminated label (a '\"' without its closing '\"')"
                )
            raise property_error(text, i, f"unexpected character {text[i]!r}")
        tokens.append(_Token(m.lastgroup, m.group(), i))
        i = m.end()


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.tokens = _tokenize(text)
        self.i = 0

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
            if self.peek().kind == "id" and self.peek().text in ("max", "min"):
                opt = self.next().text
        q = self.peek()
        positions["query"] = q.pos
        if q.text in ("<", "<=", ">", ">=", "=", "!="):
            raise self.fail(
                q,
                "only numerical queries ('=?') are supported, not bounds such as "
                f"'{kind}>=0.5 [...]'",
            )
        self.expect("=?", "'=?'")
        self.expect("[")
        path, left, right, bound = self.path(kind, positions)
        self.expect("]", "']'")
        end = self.peek()
        if end.kind != "end":
            raise self.fail(end, f"unexpected {self.show(end)} after the property")
        return Property(kind, opt, reward, path, left, right, bound, self.text, positions)

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
                if self.peek().text not in ("<=", "<"):
                    raise self.fail(
                        self.peek(), "total reward R [C] is not supported; give a bound: C<=k"
                    )
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
        if t.kind == "id" and t.text in ("true", "false"):
            return Formula(t.text, (), t.pos)
        if t.text == "(":
            inner = self.formula()
            self.expect(")", "')'")
            return inner
        if t.kind == "id" and (t.text in _P_OPERATORS or t.text in _R_OPERATORS):
            raise self.fail(t, f"nested {t.text} operators are not supported")
        if t.kind == "id":
            raise self.fail(
                t,
                f'unsupported atom {t.text!r}: only quoted labels ("goal"), true and false '
                "(no variables or constants)",
            )
        raise self.fail(
            t, f'expected a state formula (a "label", true, false, !, (), got {self.show(t)}'
        )


def parse_property(text: str) -> Property:
    """Parses a PRISM property of the supported subset (see the module); ValueError otherwise."""
    if not isinstance(text, str):
        raise ValueError(f"the property must be a string, got {type(text).__name__}")
    if not text.strip():
        raise ValueError("the property is empty")
    return _Parser(text).query()


def _satisfying(text: str, f: Formula, labels: dict, xp):
    """`[S]` bool: the states where ``f`` holds (NumPy or jax.numpy, by ``xp``)."""
    if f.op == "label":
        if f.name not in labels:
            known = ", ".join(repr(k) for k in labels) or "none"
            hint = (
                " (jp.load_labels gives 'init' and 'deadlock')"
                if f.name in ("deadlock", "init")
                else ""
            )
            raise property_error(text, f.pos, f"no label {f.name!r} (labels: {known}){hint}")
        return labels[f.name]
    S = next(iter(labels.values())).shape[0]
    if f.op in ("true", "false"):
        return xp.full(S, f.op == "true")
    parts = [_satisfying(text, g, labels, xp) for g in f.args]
    if f.op == "not":
        return ~parts[0]
    a, b = parts
    return {"and": a & b, "or": a | b, "implies": ~a | b, "iff": a == b}[f.op]


# ============================================================================= inputs


def _check_labels(mdp: Model, labels, concrete: bool) -> dict:
    """``{name: bool[S]}`` (NumPy when ``concrete``), with ``"init"`` from the model if absent."""
    S = mdp.num_states
    out = {}
    for name, value in (labels or {}).items():
        if not isinstance(name, str):
            raise ValueError(f"labels must be keyed by name (str), got {name!r}")
        if isinstance(value, jax.core.Tracer):
            if concrete:
                raise ValueError(
                    f"label {name!r} is traced; unbounded properties need concrete labels"
                )
            if value.shape != (S,):
                raise ValueError(f"label {name!r} must have shape [S] = ({S},), got {value.shape}")
            out[name] = value.astype(bool)
            continue
        arr = np.asarray(value)
        if arr.shape != (S,):
            raise ValueError(f"label {name!r} must have shape [S] = ({S},), got {arr.shape}")
        if arr.dtype != np.bool_:
            if not np.all(np.isin(arr, (0, 1))):
                raise ValueError(f"label {name!r} must be boolean")
            arr = arr.astype(bool)
        out[name] = arr
    if "init" not in out:
        out["init"] = np.arange(S) == mdp.initial_state
    if not concrete:
        out = {k: jnp.asarray(v) for k, v in out.items()}
    return out


def _default_tol(dtype) -> float:
    return DEFAULT_TOL[np.dtype(dtype)]


def _margin(mdp: Model) -> float:
    """The rounding of one backup ``r + Σ p v`` relative to its value, ``(n + 5) u``; the cores
    add the rows' distance from sums of 1 (:func:`_host_widening`, :func:`_widening`)."""
    n = mdp.max_successors if isinstance(mdp, SparseMDP) else mdp.num_states
    ulps = min(n + 5, 2 * (16 + 2 * math.ceil(math.log2(max(n, 2)))))  # units of eps/2
    return ulps * float(np.finfo(mdp.rewards.dtype).eps) / 2


def _host_widening(mdp: Model, g: _Graph) -> float:
    """``m`` for :func:`interval_iteration`: ``(n + 5) u + 2 δ`` with ``δ`` the largest
    ``|Σ p − 1|`` over allowed rows, summed exactly enough in float64 on the host (a row
    ``s`` times a distribution changes ``Σ p v`` by the factor ``s``: relative ``δ/(1 − δ)
    <= 2 δ``)."""
    delta = float(np.max(np.abs(g.row_sums[g.allowed] - 1), initial=0)) + 1e-15
    return _margin(mdp) + 2 * delta


def _widening(rows: Rows, usable: jax.Array, rounding: jax.Array) -> jax.Array:
    """``m``: a relative bound on how far a computed backup ``r + Σ p v`` (all terms ≥ 0) is
    from the exact backup with each row divided by its sum, ``δ = max |Σ p − 1|`` over the
    usable rows (rows are validated within 3.1e-5 of 1 and never renormalized; the values
    here are those of the rows read as the distributions they stand for):
    ``rounding + 2 (δ̂ + rounding)``, the computed sum ``δ̂`` being itself rounded."""
    sums = jnp.sum(rows.probs, axis=-1)
    delta = jnp.max(jnp.where(usable, jnp.abs(sums - 1), 0))
    return 3 * rounding + 2 * delta


# ============================================================================= host graphs


def _distinct(x: np.ndarray) -> np.ndarray:
    """The distinct values of an int array, sorted (a sort: faster here than ``np.unique``)."""
    x = np.sort(x)
    keep = np.ones(x.size, bool)
    keep[1:] = x[1:] != x[:-1]
    return x[keep]


class _Graph:
    """The positive-probability edges of the allowed actions, on the host (NumPy).

    Pairs ``(s, a)`` are numbered ``s * A + a``. Every search below is a worklist that
    touches each edge a bounded number of times (O(transitions) per search).
    """

    def __init__(self, mdp: Model):
        rows = transition_rows(mdp)
        mask = np.asarray(mdp.action_mask, bool)
        probs = np.asarray(rows.probs, np.float64)
        S, A = mask.shape
        if rows.next_states is None:
            s, a, t = np.nonzero((probs > 0) & mask[:, :, None])
            p = probs[s, a, t]
        else:
            nxt = np.asarray(rows.next_states)
            s, a, k = np.nonzero((nxt >= 0) & (probs > 0) & mask[:, :, None])
            t, p = nxt[s, a, k], probs[s, a, k]
        self.S, self.A = S, A
        self.mask = mask
        self.allowed = mask.reshape(-1)
        self.pair = (s * A + a).astype(np.int64)
        self.succ = t.astype(np.int64)
        sums = np.bincount(self.pair, weights=p, minlength=S * A)
        self.row_sums = sums
        self.prob = p / sums[self.pair]  # each row read as the distribution it stands for
        order = np.argsort(self.succ, kind="stable")
        self.by_succ = order
        self.succ_ptr = np.searchsorted(self.succ[order], np.arange(S + 1))
        self.degree = int(np.bincount(self.pair, minlength=1).max()) if self.pair.size else 1
        self.first_allowed = np.argmax(mask, axis=1).astype(np.int32)

    def edges_into(self, states: np.ndarray) -> np.ndarray:
        """Edge indices whose successor is in ``states`` (int array)."""
        starts, ends = self.succ_ptr[states], self.succ_ptr[states + 1]
        counts = ends - starts
        total = int(counts.sum())
        if total == 0:
            return np.zeros(0, np.int64)
        shift = np.repeat(starts - (np.cumsum(counts) - counts), counts)
        return self.by_succ[shift + np.arange(total)]

    def pairs_within(self, inside: np.ndarray) -> np.ndarray:
        """`[S*A]` bool: allowed pairs all of whose successors lie in ``inside``."""
        bad = np.zeros(self.S * self.A, bool)
        bad[self.pair[~inside[self.succ]]] = True
        return self.allowed & ~bad

    def reach_exists(self, target, through, pair_ok):
        """Least ``R ⊇ target`` with every ``s ∈ through`` that has a pair in ``pair_ok``
        with a successor in ``R``. Returns ``R`` and each added state's witness action (the
        lowest that put it in; -1 elsewhere)."""
        reached = target.copy()
        witness = np.full(self.S, -1, np.int32)
        new = np.flatnonzero(target)
        while new.size:
            pid = self.pair[self.edges_into(new)]
            pid = pid[pair_ok[pid]]
            pid = pid[through[pid // self.A] & ~reached[pid // self.A]]
            pid.sort()
            s = pid // self.A
            first = np.ones(s.size, bool)
            first[1:] = s[1:] != s[:-1]  # each state's lowest pair
            new = s[first]
            witness[new] = pid[first] % self.A
            reached[new] = True
        return reached, witness

    def reach_all(self, target, through):
        """Least ``R ⊇ target`` with every ``s ∈ through`` all of whose allowed pairs have a
        successor in ``R`` (the states where every scheduler reaches ``target`` with positive
        probability)."""
        n_allowed = self.mask.sum(axis=1)
        hit = np.zeros(self.S * self.A, bool)
        count = np.zeros(self.S, np.int64)
        reached = target.copy()
        new = np.flatnonzero(target)
        while new.size:
            pid = _distinct(self.pair[self.edges_into(new)])
            pid = pid[~hit[pid]]
            hit[pid] = True
            s = pid // self.A
            np.add.at(count, s, 1)
            cand = _distinct(s)
            new = cand[through[cand] & ~reached[cand] & (count[cand] == n_allowed[cand])]
            reached[new] = True
        return reached

    def prob1e(self, target, through, pair_ok=None):
        """States with a scheduler reaching ``target`` with probability 1 while staying in
        ``through`` (PRISM's ``Prob1E``), using only pairs in ``pair_ok``; with the
        scheduler's attractor actions (each moves toward ``target`` and stays in the set)."""
        if pair_ok is None:
            pair_ok = self.allowed
        u, _ = self.reach_exists(target, through, pair_ok)
        while True:
            v, witness = self.reach_exists(target, through & u, pair_ok & self.pairs_within(u))
            if np.array_equal(u, v):
                return v, witness
            u = v

    def end_components(self, states, pair_ok):
        """Maximal end components inside ``states`` using pairs in ``pair_ok``.

        Returns ``group`` (each state's component, as its lowest state; -1 outside any) and
        the pairs internal to a component (all successors in it). The classic refinement:
        strongly connected components, drop pairs that leave theirs, drop states left
        without a pair, repeat.
        """
        S, A = self.S, self.A
        cur = states.copy()
        pairs = pair_ok & np.repeat(cur, A) & self.pairs_within(cur)
        while True:
            e = pairs[self.pair]
            src, dst = self.pair[e] // A, self.succ[e]
            graph = csr_matrix((np.ones(src.size, np.int8), (src, dst)), shape=(S, S))
            _, comp = connected_components(graph, directed=True, connection="strong")
            leaving = np.zeros(S * A, bool)
            leaving[self.pair[e][comp[src] != comp[dst]]] = True
            new_pairs = pairs & ~leaving
            has = np.zeros(S, bool)
            has[np.flatnonzero(new_pairs) // A] = True
            new_cur = cur & has
            new_pairs &= np.repeat(new_cur, A) & self.pairs_within(new_cur)
            if np.array_equal(new_cur, cur) and np.array_equal(new_pairs, pairs):
                break
            cur, pairs = new_cur, new_pairs
        group = np.full(S, -1, np.int64)
        members = np.flatnonzero(cur)
        if members.size:
            lowest = np.full(S, S, np.int64)
            np.minimum.at(lowest, comp[members], members)
            group[members] = lowest[comp[members]]
        return group, pairs

    def visit_bound(self, maybe, pairs, rmax):
        """Baier et al. (CAV 2017, §4): an upper bound on the expected reward collected in
        ``maybe`` under every scheduler using ``pairs``, ``Σ_s rmax_s / d_s``; inf if none.

        ``d_s`` is a lower bound on the probability, from ``s``'s next step on, of never
        visiting a state of ``s``'s strongly connected component that was not processed
        before ``s`` (hence of never returning to ``s``): mass leaving ``maybe`` or the
        component counts 1, mass on a processed state ``t`` counts ``d_t``, the minimum over
        ``s``'s pairs. States are processed in rounds, each using the rounds before it, so
        ``1/d_s`` bounds the expected number of visits of ``s``. Needs no end component in
        ``maybe`` (otherwise some state is never processed and the bound is inf).
        """
        S, A = self.S, self.A
        eps = np.finfo(np.float64).eps
        shrink = 1 - 2 * (self.degree + 3) * eps  # the rounding of each d_s, downward
        src_pair = self.pair
        src = src_pair // A
        use = pairs[src_pair] & maybe[src]
        inside = use & maybe[self.succ]
        graph = csr_matrix(
            (np.ones(int(inside.sum()), np.int8), (src[inside], self.succ[inside])), shape=(S, S)
        )
        _, comp = connected_components(graph, directed=True, connection="strong")
        same = inside & (comp[src] == comp[self.succ])
        acc = np.zeros(S * A)
        out = use & ~same
        np.add.at(acc, src_pair[out], self.prob[out])
        n_pairs = (pairs.reshape(S, A) & maybe[:, None]).sum(axis=1)
        valid = np.zeros(S, np.int64)
        np.add.at(valid, np.flatnonzero(pairs & (acc > 0)) // A, 1)
        # Edges within a component, grouped by successor, for the incremental updates.
        e_same = np.flatnonzero(same)
        order = e_same[np.argsort(self.succ[e_same], kind="stable")]
        ptr = np.searchsorted(self.succ[order], np.arange(S + 1))
        d = np.zeros(S)
        done = np.zeros(S, bool)
        pairs2 = pairs.reshape(S, A)
        new = np.flatnonzero(maybe & (valid == n_pairs))
        while new.size:
            vals = np.where(pairs2[new], acc.reshape(S, A)[new], np.inf).min(axis=1)
            d[new] = vals * shrink
            done[new] = True
            counts = ptr[new + 1] - ptr[new]
            total = int(counts.sum())
            shift = np.repeat(ptr[new] - (np.cumsum(counts) - counts), counts)
            e = order[shift + np.arange(total)]
            e = e[~done[src[e]]]
            pid = src_pair[e]
            upid = _distinct(pid)
            before = acc[upid] > 0
            np.add.at(acc, pid, self.prob[e] * d[self.succ[e]])
            np.add.at(valid, upid[~before & (acc[upid] > 0)] // A, 1)
            cand = _distinct(upid // A)
            new = cand[maybe[cand] & ~done[cand] & (valid[cand] == n_pairs[cand])]
        if not np.all(done[maybe]) or np.any(d[maybe] <= 0):
            return np.inf
        n = int(maybe.sum())
        with np.errstate(over="ignore"):
            total = float(np.sum(rmax[maybe] / d[maybe]))
        return total * (1 + 2 * (n + 2) * eps)


# ============================================================================= device cores


@jax.jit
def interval_iteration(
    rows: Rows,
    rewards: jax.Array,
    usable: jax.Array,
    group: jax.Array,
    fixed: jax.Array,
    fixed_value: jax.Array,
    upper0: jax.Array,
    has_upper: jax.Array,
    sign: jax.Array,
    margin: jax.Array,
    tol: jax.Array,
    max_iterations: jax.Array,
):
    """Interval iteration of ``v(s) = opt_{a usable} r(s, a) + Σ p v`` on the unfixed states.

    Args:
      rows, rewards: the model's rows and `[S, A]` rewards (zeros for probabilities).
      usable: `[S, A]` the pairs the optimum ranges over (allowed, not internal to a
        collapsed end component, not leading to an infinite state).
      group: `[S]` int: states of one collapsed end component share the optimum over its
        members (``group`` is the identity elsewhere).
      fixed, fixed_value: `[S]` the precomputed states and their values.
      upper0: `[S]` an upper bound on the unfixed states (used when ``has_upper``).
      sign: ``1`` to maximize, ``-1`` to minimize (traced: one compilation for both).
      margin: ``m``, a bound on the relative error of a computed backup (its rounding and
        the rows' distance from sums of 1: :func:`_host_widening`); tol: relative precision;
        max_iterations: a cap on iterations.

    Returns:
      ``(lower, upper, iterations, converged)``.
    """
    S = fixed.shape[0]
    dtype = rewards.dtype
    low = jnp.asarray(-jnp.inf, dtype)

    def q_values(v):  # sign · Q, so that the optimum is always a max
        return jnp.where(usable, sign * (rewards + expect(rows, v)), low)

    def backup(v):
        w = jnp.max(q_values(v), axis=-1)
        return sign * jax.ops.segment_max(w, group, num_segments=S)[group]

    widen = jnp.stack([1 - margin, 1 + margin])[:, None]
    bounds0 = jnp.stack(
        [
            jnp.where(fixed, fixed_value, 0),
            jnp.where(fixed, fixed_value, jnp.where(has_upper, upper0, 0)),
        ]
    )

    def met(b):
        return has_upper & jnp.all(b[1] - b[0] <= tol * (b[1] + b[0]))

    def cond(carry):
        _, it, done = carry
        return (~done) & (it < max_iterations)

    def body(carry):
        b, it, _ = carry
        new = jnp.stack([backup(b[0]), backup(b[1])]) * widen  # (vmap: a slower gather)
        new = jnp.stack([jnp.maximum(b[0], new[0]), jnp.minimum(b[1], new[1])])
        new = jnp.where(fixed, fixed_value, new)
        new = new.at[1].set(jnp.where(has_upper, new[1], b[1]))
        return new, it + 1, met(new) | jnp.all(new == b)

    b, it, _ = lax.while_loop(cond, body, (bounds0, jnp.zeros((), jnp.int32), met(bounds0)))
    return b[0], b[1], it, met(b)


@functools.partial(jax.jit, static_argnames=("steps",))
def bounded_iteration(
    rows: Rows,
    rewards: jax.Array,
    usable: jax.Array,
    fixed: jax.Array,
    fixed_value: jax.Array,
    init: jax.Array,
    sign: jax.Array,
    margin: jax.Array,
    *,
    steps: int,
):
    """``steps`` backups ``v ← opt_a r + Σ p v`` (fixed states kept) from ``init``.

    ``sign`` is ``1`` to maximize, ``-1`` to minimize. Returns ``(values, error, policy)``:
    `[S]` values, `[S]` a bound on their rounding error (each backup's rounding
    ``m (max|r| + max|v|)``, propagated through the rows), and the optimizing actions
    `[steps, S]`, first step first.
    """
    dtype = rewards.dtype
    low = jnp.asarray(-jnp.inf, dtype)
    r_abs = jnp.max(jnp.abs(jnp.where(usable, rewards, 0)))
    margin = _widening(rows, usable, margin)

    def step(carry, _):
        v, e = carry
        q = jnp.where(usable, sign * (rewards + expect(rows, v)), low)
        v_new = jnp.where(fixed, fixed_value, sign * jnp.max(q, axis=-1))
        spread = jnp.max(jnp.where(usable, expect(rows, e), 0), axis=-1)
        e_new = jnp.where(fixed, 0, spread + margin * (r_abs + jnp.max(jnp.abs(v))))
        return (v_new, e_new), jnp.argmax(q, axis=-1).astype(jnp.int32)

    (v, e), policy = lax.scan(step, (init, jnp.zeros_like(init)), None, length=steps)
    return v, e, policy[::-1]


# ============================================================================= properties


def _rows(mdp: Model) -> Rows:
    rows = transition_rows(mdp)
    return Rows(rows.probs, rows.next_states)


def _sign(minimize: bool, dtype) -> jax.Array:
    return jnp.asarray(-1 if minimize else 1, dtype)


def _policy(g: _Graph, rewards, values, error, candidate, maybe, minimize, dtype):
    """An optimizing policy on ``maybe`` from the final values, that leaves ``maybe``.

    Greedy choices alone can be wrong: inside an end component (collapsed or not) a pair that
    loops back has, up to the precision of the values, the same value as the exit it should
    lead to, and choosing it forever never reaches the target. So the greedy choice is kept
    where it leaves ``maybe`` with positive probability, and the states it would trap take,
    by an attractor, a pair that may be optimal given the error bounds (``q(s, a) = r + Σ p
    v`` is within ``e(s, a) = Σ p error`` of its exact value: a pair is kept unless its
    interval lies wholly on the wrong side of another pair's) with a successor closer to
    the states that leave. Under the result ``maybe`` is left with probability 1 (a proper
    policy), and with exact values its value is optimal.
    """
    S, A = g.S, g.A
    v = np.asarray(values, np.float64)
    err = np.where(np.isfinite(error), np.asarray(error, np.float64), 0)  # inf: greedy
    q = np.asarray(rewards, np.float64).reshape(-1).copy()
    inside = candidate & np.repeat(maybe, A)
    e = inside[g.pair]
    pair, succ, prob = g.pair[e], g.succ[e], g.prob[e]
    with np.errstate(invalid="ignore"):
        q += np.bincount(pair, weights=prob * v[succ], minlength=S * A)
    spread = np.bincount(pair, weights=prob * err[succ], minlength=S * A)
    q = q.reshape(S, A)
    spread = spread.reshape(S, A) + 16 * np.finfo(dtype).eps * np.abs(q)
    inside = inside.reshape(S, A)
    if minimize:
        q = np.where(inside, q, np.inf)
        greedy = np.argmin(q, axis=1)
        with np.errstate(invalid="ignore"):
            near = q - spread <= np.min(q + spread, axis=1, keepdims=True)
    else:
        q = np.where(inside, q, -np.inf)
        greedy = np.argmax(q, axis=1)
        with np.errstate(invalid="ignore"):
            near = q + spread >= np.max(q - spread, axis=1, keepdims=True)
    near = (near & inside).reshape(-1)
    # Keep the greedy choice wherever it leaves `maybe` with positive probability; the
    # states it traps move along possibly-optimal pairs toward those that leave.
    chosen = np.zeros((S, A), bool)
    chosen[np.arange(S), greedy] = True
    leaves, _ = g.reach_exists(~maybe, maybe, chosen.reshape(-1))
    reached, witness = g.reach_exists(leaves, maybe, near)
    fix = reached & ~leaves
    return np.where(fix, witness, greedy).astype(np.int32)


def _iterate(
    g,
    mdp,
    rewards,
    usable,
    group,
    candidate,
    maybe,
    fixed_value,
    upper,
    minimize,
    tol,
    max_iterations,
    policy,
    infinite=None,
):
    """Runs :func:`interval_iteration` on the unfixed states ``maybe`` and assembles the
    answer on the host: values (midpoints), error bounds, the policy, iterations, converged.
    ``candidate``: the pairs a policy may use on ``maybe`` (see :func:`_policy`).
    """
    S = g.S
    dtype = np.dtype(mdp.rewards.dtype)
    has_upper = upper is not None
    if not maybe.any():  # the precomputation decided every state: nothing to iterate
        values = np.asarray(fixed_value, dtype)
        if infinite is not None:
            values = np.where(infinite, np.inf, values).astype(dtype)
        return values, np.zeros(S, dtype), policy.astype(np.int32), 0, True
    lo, up, it, conv = interval_iteration(
        _rows(mdp),
        jnp.asarray(rewards, dtype),
        jnp.asarray(usable),
        jnp.asarray(np.where(group >= 0, group, np.arange(S)).astype(np.int32)),
        jnp.asarray(~maybe),
        jnp.asarray(fixed_value, dtype),
        jnp.full(S, upper if has_upper else 0, dtype),
        jnp.asarray(has_upper),
        _sign(minimize, dtype),
        jnp.asarray(_host_widening(mdp, g) * (1 + 1e-6), dtype),  # rounded up
        jnp.asarray(tol, dtype),
        jnp.asarray(max_iterations, jnp.int32),
    )
    lo, up = np.asarray(lo), np.asarray(up)
    eps = np.finfo(dtype).eps
    if has_upper:
        values = lo + (up - lo) / 2
        error = np.where(maybe, (up - lo) / 2 + eps * up, 0).astype(dtype)
    else:  # the lower bound, with no bound on its error
        values = lo
        error = np.where(maybe, np.inf, 0).astype(dtype)
    best = _policy(g, rewards, values, error, candidate, maybe, minimize, dtype)
    policy[maybe] = best[maybe]
    if infinite is not None:
        values = np.where(infinite, np.inf, values).astype(dtype)
    return values, error, policy.astype(np.int32), int(it), bool(conv)


def _probability(g: _Graph, mdp: Model, target, avoid, minimize, tol, max_iterations):
    """Unbounded ``P{min,max} [¬avoid U target]``: values, error, policy, iterations, conv."""
    S, A = g.S, g.A
    policy = g.first_allowed.copy()
    through = ~avoid & ~target
    group = np.full(S, -1, np.int64)
    internal = np.zeros(S * A, bool)
    if minimize:
        positive = g.reach_all(target, through)  # Pmin > 0
        no = ~positive
        stay = g.pairs_within(no).reshape(S, A)
        has_stay = no & stay.any(axis=1)
        policy[has_stay] = np.argmax(stay, axis=1)[has_stay]  # never leave Pmin = 0
        reach_no, _ = g.reach_exists(no, ~target, g.allowed)
        yes = ~reach_no  # Prob1A
        maybe = ~yes & ~no  # no end component left: its states would have Pmin = 0
    else:
        can, _ = g.reach_exists(target, through, g.allowed)
        no = ~can  # Pmax = 0
        yes, witness = g.prob1e(target, through)
        attract = yes & ~target
        policy[attract] = witness[attract]
        maybe = ~yes & ~no
        group, internal = g.end_components(maybe, g.allowed)
    usable = g.mask & ~internal.reshape(S, A)
    return _iterate(
        g,
        mdp,
        np.zeros((S, A)),
        usable,
        group,
        g.allowed,
        maybe,
        yes.astype(float),
        1.0,
        minimize,
        tol,
        max_iterations,
        policy,
    )


def _reward(g: _Graph, mdp: Model, target, minimize, tol, max_iterations):
    """Unbounded ``R{min,max} [F target]`` with PRISM's infinities."""
    S, A = g.S, g.A
    dtype = mdp.rewards.dtype
    R = np.asarray(mdp.rewards, np.float64)
    policy = g.first_allowed.copy()
    not_target = ~target
    if minimize:
        finite, witness = g.prob1e(target, not_target)  # Rmin < inf
        infinite = ~finite
        usable = g.mask & g.pairs_within(finite).reshape(S, A)
        candidate = usable.reshape(-1).copy()
        zero_pairs = (g.allowed & (R.reshape(-1) == 0)) & candidate
        zero, zero_witness = g.prob1e(target, not_target & finite, zero_pairs)
        on = zero & ~target
        policy[on] = zero_witness[on]
        maybe = finite & ~zero
        group, internal = g.end_components(maybe, zero_pairs)
        usable &= ~internal.reshape(S, A)
        # An upper bound: the expected reward of the Prob1E attractor scheduler (proper).
        sigma = np.zeros((S, A), bool)
        idx = np.flatnonzero(maybe)
        sigma[idx, witness[idx]] = True
        rmax = np.where(maybe, R[np.arange(S), np.maximum(witness, 0)], 0)
        bound = g.visit_bound(maybe, sigma.reshape(-1), rmax)
        policy[maybe] = witness[maybe]
    else:
        positive = g.reach_all(target, not_target)
        no = ~positive  # Pmin = 0: some scheduler never reaches the target
        stay = g.pairs_within(no).reshape(S, A)
        has_stay = no & stay.any(axis=1)
        policy[has_stay] = np.argmax(stay, axis=1)[has_stay]
        infinite, toward = g.reach_exists(no, not_target, g.allowed)  # not Prob1A
        on = infinite & ~no
        policy[on] = toward[on]
        finite = ~infinite
        earning = np.any(g.mask & (R > 0), axis=1) & finite & not_target
        earns, _ = g.reach_exists(earning, finite & not_target, g.allowed)
        maybe = earns & finite & not_target
        usable = g.mask.copy()
        candidate = g.allowed
        group = np.full(S, -1, np.int64)
        rmax = np.where(maybe, np.max(np.where(g.mask, R, 0), axis=1), 0)
        bound = g.visit_bound(maybe, g.allowed, rmax)
    big = float(np.finfo(dtype).max) / 16
    upper = None
    if np.isfinite(bound) and bound <= big:
        upper = float(np.nextafter(np.asarray(bound, dtype), np.asarray(np.inf, dtype)))
    return _iterate(
        g,
        mdp,
        np.where(g.mask, R, 0),
        usable,
        group,
        candidate,
        maybe,
        np.zeros(S),
        upper,
        minimize,
        tol,
        max_iterations,
        policy,
        infinite,
    )


def _bounded(mdp: Model, rewards, fixed, fixed_value, init, steps, minimize):
    v, e, policy = bounded_iteration(
        _rows(mdp),
        rewards,
        mdp.action_mask,
        fixed,
        fixed_value,
        init,
        _sign(minimize, mdp.rewards.dtype),
        jnp.asarray(_margin(mdp), mdp.rewards.dtype),
        steps=steps,
    )
    return v, e, policy, steps, True


def check(
    mdp: Model,
    prop: str,
    *,
    labels: dict | None = None,
    reward_name: str | None = None,
    horizon: int | None = None,
    tol: float | None = None,
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
) -> CheckResult:
    """Checks a PRISM property on a model, as PRISM and Storm do (see the module).

    Example::

        labels = jp.load_labels("model.lab")
        res = jp.check(mdp, 'Pmax=? [F "goal"]', labels=labels)
        res.value_at_initial, res.error_bound[mdp.initial_state], res.policy

    Args:
      mdp: a :class:`TabularMDP` or :class:`SparseMDP`. Its ``rewards`` `[S, A]` are the
        reward structure of ``R`` properties (a state reward plus the action's expected
        transition reward, as :func:`load_mdp` builds them); its ``discount``, ``horizon``
        (except as ``T``) and ``terminal_reward`` are not used: PRISM's properties are
        undiscounted. Masked actions are never chosen.
      prop: the property, e.g. ``'Pmin=? [!"fail" U<=10 "done"]'`` or
        ``'R{"time"}min=? [F "done"]'``.
      labels: ``{name: bool[S]}``, e.g. :func:`load_labels`'s; ``"init"`` defaults to the
        model's initial state. ``"deadlock"`` and every other label must be given.
      reward_name: the name of the model's reward structure: ``R{"name"}`` must match it
        (``R{1}`` always does). None: any name is accepted (the model has one structure).
      horizon: the value of the constant ``T`` in step bounds (``F<=T``, ``C<=T``);
        default: the model's ``horizon``.
      tol: relative precision of unbounded properties: iterate until every state's interval
        ``[lower, upper]`` has ``upper − lower <= tol · (upper + lower)``, i.e. ``values``
        within ``tol`` (relative) of the exact value. Default 1e-6 in float64 (PRISM's and
        Storm's), 1e-4 in float32.
      max_iterations: a cap on interval iterations (then ``converged`` is False; the bound
        still holds).

    Returns:
      A :class:`CheckResult`. Unbounded properties: ``values`` are the midpoints of the final
      intervals and ``error_bound`` their half-widths (0 on precomputed states); an
      expected-reward property whose upper bound would overflow the dtype reports the lower
      bound with ``error_bound`` inf. Bounded properties: backward induction, exact up to the
      rounding ``error_bound`` reports.

    Raises:
      ValueError: a property outside the supported subset or malformed (naming the position
        in the string), an unknown label or reward structure, ``P=?``/``R=?`` on a model with
        a choice, negative rewards in ``R [F ...]``, a traced model for an unbounded property
        (its precomputation runs on the host; bounded properties work under ``jax.jit``).
    """
    mdp = check_model(mdp)
    prop_ = parse_property(prop)
    text = prop_.text
    pos = prop_.positions
    if tol is not None:
        check_range("tol", tol, low=0.0, low_open=True, scalar=True)
    max_iterations = min(check_count("max_iterations", max_iterations), 2**31 - 1)
    dtype = np.dtype(mdp.rewards.dtype)
    tol = _default_tol(dtype) if tol is None else float(tol)
    S = mdp.num_states

    # The reward structure.
    if prop_.kind == "R":
        if isinstance(prop_.reward, int) and prop_.reward != 1:
            raise property_error(
                text, pos["reward"], f"no reward structure {prop_.reward} (the model has one: 1)"
            )
        if isinstance(prop_.reward, str) and reward_name is not None:
            if prop_.reward != reward_name:
                raise property_error(
                    text,
                    pos["reward"],
                    f"no reward structure {prop_.reward!r} (the model's is {reward_name!r})",
                )

    # The step bound.
    bound = prop_.bound
    if bound == "T":
        bound = horizon if horizon is not None else mdp.horizon
        if bound is None:
            raise property_error(text, pos["bound"], "T needs horizon= (the model has no horizon)")
        bound = check_int("horizon", bound, low=0)
    unbounded = bound is None and prop_.path in ("F", "U", "G")

    # P=? / R=? need a DTMC (not checked on a traced mask: computed as the max).
    if prop_.opt is None and is_concrete(mdp.action_mask):
        if np.any(np.asarray(mdp.action_mask).sum(axis=1) != 1):
            raise property_error(
                text,
                pos["operator"],
                f"{prop_.kind}=? needs a DTMC (one allowed action per state); this model has "
                f"choices: use {prop_.kind}max=? or {prop_.kind}min=?",
            )
    minimize = prop_.opt == "min"

    concrete = unbounded or is_concrete(labels)
    if unbounded and not is_concrete(mdp):
        raise property_error(
            text,
            pos["path"],
            "unbounded properties need a concrete model (the graph precomputation runs on the "
            "host); under jax.jit use a step-bounded one",
        )
    lab = _check_labels(mdp, labels, concrete)
    xp = np if concrete else jnp
    sat = functools.partial(_satisfying, text, labels=lab, xp=xp)
    right = sat(prop_.right) if prop_.right is not None else None
    left = sat(prop_.left) if prop_.left is not None else None

    if prop_.kind == "R" and prop_.path == "F":
        R = np.asarray(mdp.rewards)
        neg = np.argwhere((R < 0) & np.asarray(mdp.action_mask))
        if neg.size:
            s, a = (int(i) for i in neg[0])
            raise property_error(
                text,
                pos["operator"],
                f"R [F ...] needs non-negative rewards (PRISM's rule); reward {R[s, a]:.9g} at "
                f"(state {s}, action {a})",
            )
        out = _reward(_Graph(mdp), mdp, np.asarray(right), minimize, tol, max_iterations)
    elif prop_.kind == "R":  # C<=k
        zeros = np.zeros(S, dtype)
        out = _bounded(mdp, mdp.rewards, np.zeros(S, bool), zeros, zeros, bound, minimize)
    else:
        # P: reachability of `target` while avoiding `avoid` (G: of the complement, negated).
        no_rewards = np.zeros((S, mdp.num_actions), dtype)
        negate = prop_.path == "G"
        nothing = xp.zeros(S, bool)
        if negate:  # P[G φ] = 1 − P[F ¬φ], the optimum swapped
            target, avoid, minimize = ~right, nothing, not minimize
        elif prop_.path in ("F", "X"):
            target, avoid = right, nothing
        else:
            target, avoid = right, ~left & ~right
        if prop_.path == "X":
            init = target.astype(dtype)
            out = _bounded(mdp, no_rewards, nothing, init, init, 1, minimize)
        elif unbounded:
            g = _Graph(mdp)
            out = _probability(
                g, mdp, np.asarray(target), np.asarray(avoid), minimize, tol, max_iterations
            )
        else:
            fixed = target | avoid
            init = target.astype(dtype)
            out = _bounded(mdp, no_rewards, fixed, init, init, bound, minimize)
        if negate:
            v, e, policy, it, conv = out
            out = (1 - v, e + np.finfo(dtype).eps * (e > 0), policy, it, conv)
    values, error, policy, it, conv = out
    if isinstance(values, np.ndarray):  # host results: transfers, no eager device ops
        initial = jnp.asarray(values[mdp.initial_state])
    else:
        initial = values[mdp.initial_state]
    return CheckResult(
        values=jnp.asarray(values),
        policy=jnp.asarray(policy),
        error_bound=jnp.asarray(error),
        value_at_initial=initial,
        converged=jnp.asarray(conv),
        iterations=jnp.asarray(it, jnp.int32),
    )
