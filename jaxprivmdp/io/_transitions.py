"""The ``.tra`` file of an explicit model (PRISM's or Storm's), and its padded `[S, A, K]` layout.

:func:`read_transitions` reads the transitions flat and in file order (PRISM's ``S C T`` /
``S T`` header or Storm's ``dtmc`` / ``mdp`` line, plain or ``:rows`` lines) and refuses
models that are no DTMC or MDP; :func:`fix_deadlocks` handles states without a transition;
:func:`make_layout` places each transition in the arrays of a :class:`SparseMDP`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from ..models._sparse import PADDING
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
    line: np.ndarray


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
    lines = data_lines(path)
    try:
        number, fields = next(lines)
    except StopIteration:
        raise ValueError(f"{where(path)} is empty") from None
    flavor, kind, counts = _read_header(path, number, fields, declared)
    ex = Explicit(path, flavor, kind, 0, *_read_body(path, lines, flavor, kind))
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
    bad = np.flatnonzero(
        (ex.src < 0) | (ex.src >= S) | (ex.tgt < 0) | (ex.tgt >= S) | (ex.choice < 0)
    )
    if bad.size:
        raise ValueError(
            f"{where(ex.path)} line {ex.line[bad[0]]}: a state or choice is out of range"
        )
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
        n = np.unique(ex.src * (ex.choice.max() + 1) + ex.choice).size
        if n != counts[1]:
            raise ValueError(
                f"{where(ex.path)}: the header declares {counts[1]} choices, the body has {n}"
            )


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
    """Where each flat transition goes in the padded `[S, A, K]` arrays."""

    next_states: np.ndarray
    probs: np.ndarray
    mask: np.ndarray
    slot: np.ndarray  # per flat transition
    keys: np.ndarray  # sorted (source, choice, target) keys of the flat transitions
    order: np.ndarray  # flat index of each sorted key


def make_layout(ex: Explicit) -> Layout:
    """The padded arrays; a state's choices must be ``0 .. n_s − 1``."""
    S = ex.num_states
    A = int(ex.choice.max()) + 1
    row = ex.src * A + ex.choice
    # Each state's choices must be 0 .. n_s - 1.
    pairs = np.unique(row)
    n_choices = np.bincount(pairs // A, minlength=S)
    top = np.full(S, -1)
    np.maximum.at(top, pairs // A, pairs % A)
    bad = np.flatnonzero((n_choices > 0) & (top != n_choices - 1))
    if bad.size:
        s = int(bad[0])
        raise ValueError(
            f"{where(ex.path)}: the choices of state {s} are not 0..{n_choices[s] - 1}"
        )
    order = np.argsort(row, kind="stable")
    sorted_rows = row[order]
    starts = np.flatnonzero(np.r_[True, sorted_rows[1:] != sorted_rows[:-1]])
    counts = np.diff(np.r_[starts, row.size])
    slot = np.empty(row.size, np.int64)
    slot[order] = np.arange(row.size) - np.repeat(starts, counts)
    K = int(counts.max())
    next_states = np.full((S, A, K), PADDING, np.int64)
    probs = np.zeros((S, A, K))
    next_states[ex.src, ex.choice, slot] = ex.tgt
    probs[ex.src, ex.choice, slot] = ex.prob
    mask = np.zeros((S, A), bool)
    mask[ex.src, ex.choice] = True
    keys = row * S + ex.tgt
    key_order = np.argsort(keys, kind="stable")
    return Layout(next_states, probs, mask, slot, keys[key_order], key_order)
