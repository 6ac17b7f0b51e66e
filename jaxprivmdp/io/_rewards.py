"""The reward structures of an explicit model: which files, and the rewards they give.

:func:`pick_structure` finds the reward files beside a ``.tra`` (PRISM's ``.srew``/``.trew``,
``model1.srew``, ...; Storm's ``.state.rew``/``.trans.rew``) or takes the user's;
:func:`read_rewards` sums a structure's state and transition rewards into `[S, A]`.
"""

from __future__ import annotations

import dataclasses
import glob
import os
import re
import warnings
from pathlib import Path

import numpy as np

from ._columns import head_lines, read_columns
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
from ._transitions import Explicit, Layout

# ----------------------------------------------------------------------------- structures


@dataclasses.dataclass
class Structure:
    """One reward structure: its name (None if unnamed) and its files."""

    name: str | None
    files: list[Path]

    def describe(self, index: int) -> str:
        files = ", ".join(p.name for p in self.files)
        name = "unnamed" if self.name is None else repr(self.name)
        return f"{index}: {name} ({files})"


def _reward_kind(path: Path) -> str:
    """``"state"`` or ``"transition"``: from the name, else the ``# ... rewards`` comment."""
    name = path.name
    if name.endswith((".srew", ".state.rew")):
        return "state"
    if name.endswith((".trew", ".trans.rew")):
        return "transition"
    for _, text in leading_comments(path):
        if re.fullmatch(r"#\s*State rewards\s*", text):
            return "state"
        if re.fullmatch(r"#\s*Transition rewards\s*", text):
            return "transition"
    raise ValueError(
        f"rewards must be a .srew or .trew file (or Storm's .state.rew/.trans.rew), got "
        f"{str(path)!r}"
    )


def _structure_name(path: Path) -> str | None:
    """The name in a ``# Reward structure "name"`` header, or None."""
    for _, text in leading_comments(path):
        m = re.fullmatch(r'#\s*Reward structure:?\s*(?:"([^"]*)")?\s*', text)
        if m and m.group(1):
            return m.group(1)
    return None


def _make_structure(files: list[Path], fallback: str | None = None) -> Structure:
    names = {n for n in (_structure_name(p) for p in files) if n is not None}
    if len(names) > 1:
        raise ValueError(
            f"{', '.join(repr(str(p)) for p in files)} name different reward structures: "
            f"{sorted(names)}"
        )
    return Structure(names.pop() if names else fallback, files)


def _structures_beside(path: Path) -> list[Structure]:
    """The reward structures whose files lie beside ``path`` (see :func:`load_mdp`)."""
    folder, stem = path.parent, path.stem

    def existing(*names: str) -> list[Path]:
        return [folder / n for n in names if (folder / n).is_file()]

    found = []
    plain = existing(f"{stem}.srew", f"{stem}.trew")
    if plain:
        found.append(_make_structure(plain))
    n = 1  # PRISM's model1.srew, model2.srew, ... (unless model1.tra is another model)
    while not (folder / f"{stem}{n}.tra").exists():
        files = existing(f"{stem}{n}.srew", f"{stem}{n}.trew")
        if not files:
            break
        found.append(_make_structure(files))
        n += 1
    storm = existing(f"{stem}.state.rew", f"{stem}.trans.rew")
    if storm:
        found.append(_make_structure(storm))
    named: dict[str, list[Path]] = {}
    for suffix in (".state.rew", ".trans.rew"):
        for p in sorted(folder.glob(f"{glob.escape(stem)}.*{suffix}")):
            middle = p.name[len(stem) + 1 : -len(suffix)]
            if middle and p.is_file():
                named.setdefault(middle, []).append(p)
    found += [_make_structure(files, middle) for middle, files in sorted(named.items())]
    return found


def pick_structure(path: Path, rewards, reward_structure) -> Structure | None:
    """The structure ``rewards=`` / ``reward_structure=`` of :func:`load_mdp` choose.

    None (with a warning, attributed to ``load_mdp``'s caller) when there is none.
    """
    if rewards is not None:
        if reward_structure is not None:
            raise ValueError("pass rewards= (files) or reward_structure= (a name), not both")
        single = isinstance(rewards, (str, os.PathLike))
        files = [Path(rewards)] if single else [Path(p) for p in rewards]
        kinds = [_reward_kind(p) for p in files]
        for kind in ("state", "transition"):
            if kinds.count(kind) > 1:
                raise ValueError(
                    f"rewards= holds {kinds.count(kind)} {kind} reward files: one structure has "
                    "at most one .srew and one .trew (choose a structure with reward_structure=)"
                )
        return _make_structure(files)
    found = _structures_beside(path)
    listing = "; ".join(s.describe(i) for i, s in enumerate(found)) or "none"
    if reward_structure is None:
        if len(found) > 1:
            raise ValueError(
                f"{where(path)} has {len(found)} reward structures beside it ({listing}): "
                "pass reward_structure= a name or an index"
            )
        if not found:
            stem = path.stem
            warnings.warn(
                f"{where(path)}: no reward file beside it ({stem}.srew, {stem}.trew, "
                f"{stem}1.srew, ..., {stem}.state.rew, {stem}.trans.rew): every reward is 0 "
                "(pass rewards= to give one)",
                stacklevel=4,  # pick_structure <- _load_explicit <- load_mdp <- the caller
            )
            return None
        return found[0]
    if isinstance(reward_structure, (bool, np.bool_)):
        raise ValueError(f"reward_structure must be a name or an index, got {reward_structure!r}")
    if isinstance(reward_structure, (int, np.integer)):
        if 0 <= reward_structure < len(found):
            return found[int(reward_structure)]
    else:
        match = [s for s in found if s.name == reward_structure]
        if match:
            return match[0]
    raise ValueError(
        f"{where(path)}: no reward structure {reward_structure!r} beside it; available: {listing}"
    )


# ----------------------------------------------------------------------------- values


def read_rewards(ex: Explicit, layout: Layout, structure: Structure | None) -> np.ndarray:
    """The one-step rewards `[S, A]`: state reward plus transition reward (0 if masked)."""
    S, A = layout.mask.shape
    r = np.zeros((S, A))
    if structure is None:
        return r
    for file in structure.files:
        if _reward_kind(file) == "state":
            r += _read_state_rewards(file, ex)[:, None]
        else:
            r += _read_transition_rewards(file, ex, layout)
    return np.where(layout.mask, r, 0.0)


def _reward_header(path: Path, kind: str) -> None:
    """Checks the ``# State rewards`` / ``# Transition rewards`` comment, if any."""
    for number, text in leading_comments(path):
        m = re.fullmatch(r"#\s*(State|Transition) rewards\s*", text)
        if m and m.group(1).lower() != kind:
            raise ValueError(
                f"{where(path)} line {number}: {text!r}, but it is read as the {kind} rewards"
            )
        if re.fullmatch(r"#\s*(Transitions\b.*|Labels|States)\s*", text):
            raise ValueError(f"{where(path)} line {number}: {text!r}: this is no reward file")


def _read_state_rewards(path: Path, ex: Explicit) -> np.ndarray:
    S = ex.num_states
    _reward_header(path, "state")
    fast = _state_rewards_in_columns(path, ex)
    if fast is not None:
        return fast
    lines = list(data_lines(path))
    declared = _state_reward_header(path, ex, lines)
    r = np.zeros(S)
    for number, fields in lines:
        if len(fields) != 2:
            raise ValueError(
                f"{where(path)} line {number}: expected 'state reward', got {' '.join(fields)!r}"
            )
        s, value = parse_int(path, number, fields[0]), parse_value(path, number, fields[1])
        if not 0 <= s < S:
            raise ValueError(f"{where(path)} line {number}: state {s} is out of range")
        r[s] = value
    _check_count(path, declared, len(lines))
    return r


def _state_reward_header(path: Path, ex: Explicit, lines: list) -> int | None:
    """Pops the header line (PRISM's ``S N``) if any; returns its ``N``."""
    S = ex.num_states
    # PRISM's header "S N"; Storm's files have none (their first line is "state reward").
    if lines and (ex.flavor == "prism" or leading_comments(path)):
        number, fields = lines.pop(0)
        if len(fields) != 2:
            raise ValueError(
                f"{where(path)} line {number}: the header must have 2 numbers (states rewards), "
                f"got {' '.join(fields)!r}"
            )
        states, declared = parse_counts(path, number, fields)
        if states != S:
            raise ValueError(f"{where(path)} is for a model of {states} states, not {S}")
        return declared
    if lines and len(lines[0][1]) == 2 and lines[0][1][0] == str(S):
        number, fields = lines.pop(0)  # a header in a Storm model's file
        return parse_counts(path, number, fields)[1]
    return None


def _state_rewards_in_columns(path: Path, ex: Explicit) -> np.ndarray | None:
    """:func:`_read_state_rewards` of a file in plain form (:mod:`._columns`), else None."""
    head = head_lines(path, 1)
    if head is None:
        return None
    declared = _state_reward_header(path, ex, head)
    cols = read_columns(path, "if", skip=1 - len(head))
    if cols is None:
        return None
    (s, value), S = cols.values, ex.num_states
    bad = np.flatnonzero((s < 0) | (s >= S))
    if bad.size:
        i = bad[0]
        raise ValueError(f"{where(path)} line {cols.line[i]}: state {s[i]} is out of range")
    _check_count(path, declared, s.size)
    r = np.zeros(S)
    if s.size and np.bincount(s, minlength=S).max() > 1:  # a state listed twice: its last
        last = np.full(S, -1)
        np.maximum.at(last, s, np.arange(s.size))
        s, value = np.flatnonzero(last >= 0), value[last[last >= 0]]
    r[s] = value
    return r


def _check_count(path: Path, declared: int | None, n: int) -> None:
    if declared is not None and declared != n:
        raise ValueError(f"{where(path)}: the header declares {declared} rewards, the body has {n}")


def _read_transition_rewards(path: Path, ex: Explicit, layout: Layout) -> np.ndarray:
    """The expected transition reward of each `(s, a)` (PRISM MDPs: the choice's reward)."""
    S = ex.num_states
    A = layout.mask.shape[1]
    _reward_header(path, "transition")
    declared, body = _transition_rewards_in_columns(path, ex)
    if body is None:
        lines = list(data_lines(path))
        declared = _transition_reward_header(path, ex, lines)
        body = _transition_reward_lines(path, ex, lines)
    src, choice, tgt, val, line = body
    _check_count(path, declared, val.size)
    r = np.zeros((S, A))
    if not val.size:
        return r
    flat = _find_transitions(path, ex, layout, src, choice, tgt, line)
    if ex.kind == "mdp" and ex.flavor == "prism":
        return _choice_rewards(path, r, src, choice, val, line)
    np.add.at(r, (src, choice), ex.prob[flat] * val)
    return r


def _transition_reward_header(path: Path, ex: Explicit, lines: list) -> int | None:
    """Pops the header line (``S C N``, DTMC ``S N``) if any; returns its ``N``."""
    header = 3 if ex.kind == "mdp" else 2
    if not (
        lines and (ex.flavor == "prism" or leading_comments(path) or len(lines[0][1]) == header)
    ):
        return None
    number, fields = lines.pop(0)
    if len(fields) != header:
        raise ValueError(
            f"{where(path)} line {number}: the header must have {header} numbers, got "
            f"{' '.join(fields)!r}"
        )
    counts = parse_counts(path, number, fields)
    if counts[0] != ex.num_states:
        raise ValueError(f"{where(path)} is for a model of {counts[0]} states, not {ex.num_states}")
    return counts[-1]


def _transition_rewards_in_columns(path: Path, ex: Explicit):
    """``(declared, (src, choice, tgt, val, line))`` of a file in plain form, else
    ``(None, None)``."""
    head = head_lines(path, 1)
    if head is None:
        return None, None
    declared = _transition_reward_header(path, ex, head)
    mdp = ex.kind == "mdp"
    cols = read_columns(path, "iiif" if mdp else "iif", skip=1 - len(head))
    if cols is None:
        return None, None
    src, *rest, val = cols.values
    choice, tgt = rest if mdp else (np.zeros_like(src), rest[0])
    return declared, (src, choice, tgt, val, cols.line)


def _transition_reward_lines(path: Path, ex: Explicit, lines: list):
    """The reward lines, flat: ``src, choice, tgt, val, line`` (plain or rows format)."""
    mdp = ex.kind == "mdp"
    src, choice, tgt, val, line = [], [], [], [], []
    rows = None
    seen: dict[int, int] = {}
    for number, fields in lines:
        if rows is None:
            rows = ex.flavor == "prism" and is_rows(fields)
        if rows:
            s, c, entries = rows_choice(path, number, fields, seen, mdp=mdp, action_ok=False)
            for t, v in entries:
                src.append(s), choice.append(c), tgt.append(t), val.append(v)
                line.append(number)
            continue
        n = 4 if mdp else 3
        if len(fields) != n:
            what = "source choice target reward" if mdp else "source target reward"
            raise ValueError(
                f"{where(path)} line {number}: expected '{what}', got {' '.join(fields)!r}"
            )
        ints = [parse_int(path, number, f) for f in fields[:-1]]
        s, c, t = ints if mdp else (ints[0], 0, ints[1])
        src.append(s), choice.append(c), tgt.append(t), line.append(number)
        val.append(parse_value(path, number, fields[-1]))
    src, choice, tgt = (np.asarray(x, np.int64) for x in (src, choice, tgt))
    return src, choice, tgt, np.asarray(val, np.float64), np.asarray(line, np.int64)


def _find_transitions(path: Path, ex: Explicit, layout: Layout, src, choice, tgt, line):
    """Each reward line's transition (its index in the flat arrays); each at most once."""
    S, A = ex.num_states, layout.mask.shape[1]
    # (source, choice, target) must be in range and in the model.
    inside = (src >= 0) & (src < S) & (choice >= 0) & (choice < A) & (tgt >= 0) & (tgt < S)
    keys = np.where(inside, (src.astype(np.int64) * A + choice) * S + tgt, -1)
    model_keys, order = layout.lookup
    pos = np.minimum(np.searchsorted(model_keys, keys), model_keys.size - 1)
    missing = np.flatnonzero(~inside | (model_keys[pos] != keys))
    if missing.size:
        i = missing[0]
        mdp = ex.kind == "mdp"
        what = f"({src[i]}, {choice[i]}, {tgt[i]})" if mdp else f"({src[i]}, {tgt[i]})"
        raise ValueError(f"{where(path)} line {line[i]}: {what} is not a transition of the model")
    flat = pos if order is None else order[pos]  # each line's transition in the flat arrays
    twice = np.flatnonzero(np.bincount(flat, minlength=ex.src.size)[flat] > 1)
    if twice.size:
        i = twice[-1]
        raise ValueError(f"{where(path)} line {line[i]}: this transition's reward is listed twice")
    return flat


def _choice_rewards(path: Path, r: np.ndarray, src, choice, val, line) -> np.ndarray:
    """PRISM's MDP rewards: one per choice, written on each of its transitions."""
    S, A = r.shape
    row = src.astype(np.int64) * A + choice
    first = np.full(S * A, np.nan)
    order = np.argsort(row, kind="stable")
    uniq, start = np.unique(row[order], return_index=True)
    first[uniq] = val[order][start]
    off = np.flatnonzero(val != first[row])
    if off.size:
        i = off[0]
        raise ValueError(
            f"{where(path)} line {line[i]}: choice {choice[i]} of state {src[i]} has transition "
            f"rewards {first[row[i]]:g} and {val[i]:g}; PRISM's MDP transition rewards are "
            "one per choice"
        )
    r.reshape(-1)[uniq] = first[uniq]
    return r
