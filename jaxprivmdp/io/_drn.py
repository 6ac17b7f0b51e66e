"""Storm's explicit format DRN (``storm --exportbuild model.drn``, ``stormpy.export_to_drn``).

A DRN file is a header of ``@`` sections, then the model, state by state::

    // comment
    @type: MDP                      (or DTMC)
    @value_type: double             (or rational: values such as 1/3)
    @parameters
                                    (the parameters of a parametric model: none here)
    @reward_models
    cost gain                       (names; Storm writes an unnamed structure as "")
    @nr_states
    5
    @nr_choices
    8
    @model
    state 0 [0, 0.5] init goal      (state rewards, one per reward model; labels)
        action safe [0, 1]          (the choice's label, or its index, or __NOLABEL__;
            1 : 1                    its action rewards; then "target : probability")

A state's choices become actions ``0 .. n_s − 1`` in file order, and the one-step reward of
``(s, a)`` for a reward model is the state's reward plus the action's. The choice labels
(action names) are read and kept in :class:`Drn`; the models have no field for them, so
:func:`jaxprivmdp.load_mdp` drops them. Values are parsed as the other explicit readers
parse them (decimals correctly rounded to float64, rationals exactly, then rounded once).
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np

from .._checks import ROW_SUM_TOLERANCE
from ._text import parse_int, parse_value, read_text, where
from ._transitions import Explicit

_TYPES = {
    "ctmc": "a CTMC (rates in continuous time)",
    "ma": "a Markov automaton (rates in continuous time)",
    "pomdp": "a POMDP (observations)",
    "smg": "a stochastic game",
}
_UNSUPPORTED = "jaxprivmdp reads DTMCs and MDPs"
_VALUE_TYPES = ("double", "rational")
_NO_LABEL = "__NOLABEL__"  # Storm's name for a choice without a label
_STATE = re.compile(r"state\s+(\S+)\s*(\[[^\]]*\])?\s*(.*)")
_ACTION = re.compile(r"action\s+(.*?)\s*(\[[^\]]*\])?\s*")
_LABEL = re.compile(r'"([^"]*)"|(\S+)')


@dataclasses.dataclass
class Drn:
    """A DRN file's model: its transitions flat and in file order (``explicit``), its
    reward models (``state_rewards`` `[S, R]`, ``action_rewards`` `[C, R]` per choice in file
    order), each choice's state and index there, its choice labels (None: unlabelled) and
    its state labels in order of appearance."""

    explicit: Explicit
    choice_state: np.ndarray
    choice_local: np.ndarray
    reward_names: list[str | None]
    state_rewards: np.ndarray
    action_rewards: np.ndarray
    choice_labels: list[str | None]
    labels: dict[str, list[int]]


class _Body:
    """What the ``@model`` section's lines give, as lists while they are read (per
    transition: its choice, target, probability and line; per choice: its state, line, label
    and rewards; per state: its rewards; each label's states)."""

    def __init__(self):
        self.choice, self.tgt, self.prob, self.line = [], [], [], []
        self.choice_state, self.choice_line, self.choice_labels = [], [], []
        self.state_rewards, self.action_rewards, self.state_line = [], [], []
        self.labels: dict[str, list[int]] = {}
        self.reward_count = None  # entries of the first reward bracket


def _fail(path: Path, number: int, what: str):
    raise ValueError(f"{where(path)} line {number}: {what}")


def read_drn(path: Path) -> Drn:
    """Reads a DRN file; errors name the file and line.

    Raises:
      ValueError: a missing section, a model that is no DTMC or MDP (a CTMC, a Markov
        automaton, a POMDP, a game, a parametric or interval model), malformed lines, states
        not numbered ``0, 1, ...`` in order, a target out of range or listed twice in a
        choice, a probability outside [0, 1], a choice whose probabilities do not sum to 1,
        a choice without transitions beside other choices of its state (alone, as Storm
        writes a deadlock, it is dropped: the state has no transition), counts that disagree
        with ``@nr_states`` / ``@nr_choices`` (which may count a deadlock as Storm does).
    """
    lines = read_text(path).splitlines()
    header, start = _read_header(path, lines)
    kind, S = header["type"], header["nr_states"]
    body = _Body()
    choice = -1  # the choice the transition lines belong to (none after a state line)
    choices, targets, values, numbers = body.choice, body.tgt, body.prob, body.line
    for number, text in enumerate(lines[start:], start + 1):
        text = text.strip()
        if not text or text.startswith("//"):
            continue
        if text[0].isdigit():  # "target : probability", most lines: parsed in bulk below
            target, colon, value = text.partition(":")
            if not colon or choice < 0:
                _bad_transition(path, number, text, colon)
            choices.append(choice), targets.append(target), values.append(value)
            numbers.append(number)
        elif text.startswith("state"):
            _state(path, number, text, body)
            choice = -1
        elif text.startswith("action"):
            _action(path, number, text, body, kind)
            choice = len(body.choice_state) - 1
        else:
            what = "'state', 'action' or 'target : probability'"
            _fail(path, number, f"expected {what}, got {text!r}")
    return _finish(path, header, body, kind, S)


def _read_header(path: Path, lines: list[str]) -> tuple[dict, int]:
    """The ``@`` sections before ``@model``, and the index of the ``@model`` line."""
    header: dict = {"placeholders": {}}
    i = 0
    while i < len(lines):
        text = lines[i].strip()
        number = i + 1
        i += 1
        if not text or text.startswith("//"):
            continue
        if not text.startswith("@"):
            what = "a section (@type, @nr_states, ..., @model)"
            _fail(path, number, f"expected {what}, got {text!r}")
        name, _, rest = text[1:].partition(":")
        name, rest = name.strip(), rest.strip()
        if name == "model":
            break
        value = rest
        if name in ("parameters", "reward_models", "nr_states", "nr_choices"):
            value, i = _next_value(lines, i)
        elif name == "placeholders":
            while i < len(lines) and lines[i].strip().startswith("$"):
                key, _, v = lines[i].strip().partition(":")
                header["placeholders"][key.strip()] = parse_value(path, i + 1, v.strip())
                i += 1
            continue
        _header_field(path, number, name, value, header)
    else:
        missing = [f"@{s}" for s in ("type", "nr_states") if s not in header] + ["@model"]
        raise ValueError(f"{where(path)}: no section {', '.join(missing)}: this is no DRN model")
    for section in ("type", "nr_states"):
        if section not in header:
            raise ValueError(f"{where(path)}: no section @{section} before @model")
    return header, i


def _next_value(lines: list[str], i: int) -> tuple[str, int]:
    """The line after a section's name (its value; may be blank), unless it is a section."""
    if i < len(lines) and not lines[i].strip().startswith("@"):
        return lines[i].strip("\r\n"), i + 1
    return "", i


def _header_field(path: Path, number: int, name: str, value: str, header: dict) -> None:
    if name == "type":
        kind = value.lower()
        if kind not in ("dtmc", "mdp"):
            what = _TYPES.get(kind, f"model type {value!r}")
            _fail(path, number, f"@type: {value}: {what}: {_UNSUPPORTED}")
        header["type"] = kind
    elif name == "value_type":
        if value.lower() not in _VALUE_TYPES:
            what = "a parametric model" if value.lower() == "parametric" else "values"
            _fail(path, number, f"@value_type: {value}: {what}: {_UNSUPPORTED} with numbers")
    elif name == "parameters":
        if value.split():
            what = f"parameters {value.strip()!r}: a parametric model"
            _fail(path, number + 1, f"{what}: {_UNSUPPORTED} with numbers (instantiate it)")
    elif name == "reward_models":
        header["reward_models"] = value
    elif name in ("nr_states", "nr_choices"):
        header[name] = parse_int(path, number + 1, value.strip())
        if header[name] < 0 or (name == "nr_states" and header[name] == 0):
            _fail(path, number + 1, f"@{name} must be positive, got {header[name]}")
    else:
        _fail(path, number, f"unknown section @{name}")


def _rewards(path: Path, number: int, bracket: str | None, body: _Body) -> list[str]:
    """The fields of a reward bracket ``[r1, r2, ...]`` (none: no fields)."""
    if bracket is None:
        return []
    inner = bracket[1:-1].strip()
    values = inner.split(",") if inner else []
    if body.reward_count is None:
        body.reward_count = len(values)
    elif len(values) != body.reward_count:
        _fail(path, number, f"{len(values)} rewards, but earlier lines have {body.reward_count}")
    return values


def _state(path: Path, number: int, text: str, body: _Body) -> None:
    m = _STATE.fullmatch(text)
    if not m:
        _fail(path, number, f"expected 'state index [rewards] labels', got {text!r}")
    s = parse_int(path, number, m.group(1))
    if s != len(body.state_rewards):
        what = f"state {s} where state {len(body.state_rewards)} is expected"
        _fail(path, number, f"{what} (states are listed in order, from 0)")
    body.state_rewards.append(_rewards(path, number, m.group(2), body))
    body.state_line.append(number)
    for quoted, plain in _LABEL.findall(m.group(3)):
        name = quoted or plain
        if name.startswith(("!", "{")):
            _fail(path, number, f"{name!r}: an exit rate or observation: {_UNSUPPORTED}")
        body.labels.setdefault(name, []).append(s)


def _action(path: Path, number: int, text: str, body: _Body, kind: str) -> None:
    m = _ACTION.fullmatch(text)
    if not m or not m.group(1):
        _fail(path, number, f"expected 'action name [rewards]', got {text!r}")
    if not body.state_rewards:
        _fail(path, number, "an action before the first state")
    s = len(body.state_rewards) - 1
    if kind == "dtmc" and body.choice_state and body.choice_state[-1] == s:
        _fail(path, number, f"a second action of state {s}: a DTMC has one per state")
    body.choice_state.append(s)
    body.choice_line.append(number)
    name = m.group(1)
    body.choice_labels.append(None if name == _NO_LABEL else name)
    body.action_rewards.append(_rewards(path, number, m.group(2), body))


def _bad_transition(path: Path, number: int, text: str, colon: str):
    if not colon:
        _fail(path, number, f"expected 'target : probability', got {text!r}")
    _fail(path, number, "a transition before its state's first action")


def _numbers(path: Path, fields: list[str], line: np.ndarray, kind, placeholders=None):
    """The fields as integers (``kind`` int) or values (float: decimals correctly rounded,
    rationals exactly and rounded once, ``@placeholders``' names), in bulk where they are
    plain; the first that is none names its line."""
    try:
        return np.array(fields, dtype=str).astype(np.int64 if kind is int else np.float64)
    except ValueError:
        pass
    out = np.empty(len(fields), np.int64 if kind is int else np.float64)
    for i, field in enumerate(fields):
        field = field.strip()
        if kind is int:
            out[i] = parse_int(path, line[i], field)
        elif placeholders and field in placeholders:
            out[i] = placeholders[field]
        else:
            out[i] = parse_value(path, line[i], field)
    return out


def _finish(path: Path, header: dict, body: _Body, kind: str, S: int) -> Drn:
    """The checked model of the lines read."""
    if len(body.state_rewards) != S:
        raise ValueError(
            f"{where(path)}: @nr_states declares {S} states, the model lists "
            f"{len(body.state_rewards)}"
        )
    C = len(body.choice_state)
    # Storm counts a state without an action line as one (empty) choice.
    storm_count = C + S - np.unique(body.choice_state).size
    if header.get("nr_choices", C) not in (C, storm_count):
        raise ValueError(
            f"{where(path)}: @nr_choices declares {header['nr_choices']} choices, the model "
            f"lists {C}"
        )
    _drop_empty_choices(path, body)
    C = len(body.choice_state)
    names = _reward_names(path, header.get("reward_models", ""), body.reward_count)
    R = len(names)
    state_r = _reward_values(path, body.state_rewards, body.state_line, R)
    action_r = _reward_values(path, body.action_rewards, body.choice_line, R)
    choice_state = np.asarray(body.choice_state, np.int64)
    # A choice's index among its state's choices: its rank since its state's first one.
    starts = np.flatnonzero(np.concatenate([[True], choice_state[1:] != choice_state[:-1]]))
    local = np.arange(C) - np.repeat(starts, np.diff(np.append(starts, C)))
    choice = np.asarray(body.choice, np.int64)
    line = np.asarray(body.line, np.int64)
    tgt = _numbers(path, body.tgt, line, int)
    prob = _numbers(path, body.prob, line, float, header["placeholders"])
    _check_rows(path, S, choice, tgt, prob, line, np.asarray(body.choice_line, np.int64))
    ex = Explicit(path, "storm", kind, S, choice_state[choice], local[choice], tgt, prob, line)
    return Drn(ex, choice_state, local, names, state_r, action_r, body.choice_labels, body.labels)


def _drop_empty_choices(path: Path, body: _Body) -> None:
    """Drops the choices without transitions (Storm writes one for a deadlock state: the
    state has no transition then); refuses one beside other choices of its state."""
    C = len(body.choice_state)
    n = np.bincount(np.asarray(body.choice, np.int64), minlength=C)
    if n.all():
        return
    state = np.asarray(body.choice_state, np.int64)
    empty = np.flatnonzero(n == 0)
    shared = np.flatnonzero(np.bincount(state, minlength=state[-1] + 1)[state[empty]] > 1)
    if shared.size:
        _fail(path, body.choice_line[empty[shared[0]]], "a choice without transitions")
    keep = (n > 0).tolist()
    new = np.cumsum(keep) - 1
    body.choice = new[np.asarray(body.choice, np.int64)].tolist()
    for name in ("choice_state", "choice_line", "choice_labels", "action_rewards"):
        setattr(body, name, [x for x, k in zip(getattr(body, name), keep, strict=True) if k])


def _reward_values(path: Path, brackets: list[list[str]], lines: list[int], R: int):
    """`[n, R]`: the values of ``n`` reward brackets (a missing one: zeros)."""
    fields = [f for b in brackets for f in (b or ["0"] * R)]
    return _numbers(path, fields, np.repeat(lines, R), float).reshape(len(brackets), R)


def reward_model_names(path: Path) -> list[str | None]:
    """The names :func:`read_drn` gives the file's reward models (None: unnamed), read from
    the header and the first reward bracket only (its number of fields tells how to split
    ``@reward_models``: the same rule, without parsing the transitions)."""
    lines = read_text(path).splitlines()
    header, start = _read_header(path, lines)
    count = None
    for text in lines[start:]:
        text = text.strip()
        m = (_STATE if text.startswith("state") else _ACTION).fullmatch(text)
        if m is not None and m.group(2) is not None:
            inner = m.group(2)[1:-1].strip()
            count = len(inner.split(",")) if inner else 0
            break
    return _reward_names(path, header.get("reward_models", ""), count)


def _reward_names(path: Path, line: str, count: int | None) -> list[str | None]:
    """The reward models' names: ``@reward_models``' fields, or (where those disagree with
    the reward brackets) its single-space-separated names, as Storm writes them ("" for an
    unnamed structure: None)."""
    count = count or 0
    plain = line.split()
    if len(plain) == count:
        return list(plain)
    exact = line.split(" ")
    if line.endswith(" "):
        exact = exact[:-1]
    if len(exact) == count:
        return [n or None for n in exact]
    raise ValueError(
        f"{where(path)}: @reward_models names {len(plain)} reward models "
        f"({' '.join(plain) or 'none'}), but the reward brackets have {count} values"
    )


def _check_rows(path: Path, S: int, choice_of, tgt, prob, line, choice_line) -> None:
    """Targets in range, probabilities in [0, 1], no target twice in a choice, sums of 1."""
    bad = np.flatnonzero((tgt < 0) | (tgt >= S))
    if bad.size:
        i = bad[0]
        _fail(path, line[i], f"target {tgt[i]} is out of range (the model has {S} states)")
    bad = np.flatnonzero(~((prob >= 0) & (prob <= 1)))
    if bad.size:
        i = bad[0]
        _fail(path, line[i], f"probability {prob[i]:g} is not in [0, 1]")
    if not tgt.size:
        return
    keys = choice_of * S + tgt
    order = np.argsort(keys, kind="stable")
    twice = np.flatnonzero(keys[order][1:] == keys[order][:-1])
    if twice.size:
        i = order[twice[0] + 1]
        _fail(path, line[i], f"target {tgt[i]} is listed twice in this choice")
    sums = np.bincount(choice_of, weights=prob, minlength=choice_line.size)
    off = np.flatnonzero(np.abs(sums - 1) > ROW_SUM_TOLERANCE)
    if off.size:
        c = off[0]
        _fail(path, choice_line[c], f"the choice's probabilities sum to {sums[c]:.10g}, not 1")
