"""Reading models from files: ``.npz`` (dense or sparse arrays) and the explicit text formats
of PRISM and Storm.

**PRISM** (``prism model.prism -exportmodel model.tra,srew,trew,lab``, or ``model.all``; see
the "Explicit Model Files" appendix of PRISM's manual) writes

- ``.tra``: ``S C T`` (MDP: states, choices, transitions) or ``S T`` (DTMC), then one line
  ``source choice target probability [action]`` (DTMC: ``source target probability
  [action]``) per transition; with ``:rows``, one line ``source p:target p:target ...
  [action]`` per choice (its index is its rank among its state's lines); with ``-exact``,
  values are rationals such as ``2/5``.
- ``.srew``: ``S N``, then ``state reward`` for the ``N`` nonzero state rewards.
- ``.trew``: ``S C N`` (DTMC ``S N``), then ``source choice target reward`` (DTMC ``source
  target reward``), or the rows form ``source r:target ...``.
- ``.lab``: ``0="init" 1="deadlock" 2="goal" ...``, then ``state: label label ...``.

PRISM ≥ 4.8 starts each reward file with ``# Reward structure "name"`` and ``# State rewards``
/ ``# Transition rewards``; its development version starts ``.tra`` files with ``#
Transitions (MDP)`` and ``.lab`` files with ``# Labels``. Every ``#`` line is a comment here.
With several reward structures PRISM writes ``model1.srew``, ``model2.srew``, ... (and
``.trew``).

**Storm** reads its own explicit format (its exports are DRN files, not this format): the
``.tra`` starts with the model type (``dtmc`` or ``mdp``) instead of the counts, the ``.lab``
declares its labels between ``#DECLARATION`` and ``#END`` and lists ``state label label ...``,
and reward files (``--staterew``/``--transrew``) have no header line.

Semantics, as the tools define them: a state's choices ``0 .. n_s − 1`` become actions
``0 .. n_s − 1`` (the action mask marks the rest), a DTMC is an MDP with one action, and the
expected one-step reward of ``(s, a)`` is the state reward of ``s`` plus the transition
reward. For a PRISM MDP the transition reward is one number per choice (PRISM's MDP rewards
are action rewards: it writes the choice's reward on each of its transitions and refuses a
choice whose lines disagree); otherwise (DTMCs, Storm's MDPs) it is ``Σ_t P(s, a, t) r(s, a,
t)``. The model is a :class:`SparseMDP`.
"""

from __future__ import annotations

import dataclasses
import glob
import os
import re
import warnings
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path

import numpy as np

from ..models._dense import TabularMDP, make_mdp
from ..models._sparse import PADDING, SparseMDP, make_sparse_mdp
from ._files import read_npz

# Arrays a release of `jaxprivmdp privatize` stores beside the model.
RELEASE_METADATA = ("k", "epsilon", "delta", "b", "adjacency", "eta")
DENSE = ("transitions",)
SPARSE = ("next_states", "probs")
COMMON = ("rewards", "terminal_reward", "action_mask", "support")
DEADLOCKS = ("error", "self-loop")

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


def load_mdp(
    path,
    *,
    rewards=None,
    reward_structure: int | str | None = None,
    deadlocks: str = "error",
    horizon: int | None = None,
    discount: float | None = None,
    initial_state: int | None = None,
    dtype=None,
) -> TabularMDP | SparseMDP:
    """Reads and validates a model: ``.npz`` (dense or sparse), or a PRISM or Storm ``.tra``.

    Args:
      path: an ``.npz`` with ``transitions`` `[S, A, S]` (dense) or ``next_states`` and
        ``probs`` `[S, A, K]` (sparse), ``rewards`` `[S, A]` and optionally
        ``terminal_reward`` `[S]`, ``action_mask`` `[S, A]`, ``support`` (the rows' public
        support, which ``jaxprivmdp privatize`` writes into a release); or an explicit
        ``.tra`` file of PRISM or Storm (MDP or DTMC; see the module's documentation).
      rewards: ``.tra`` only: a reward file, or a list of the files of one reward structure
        (a ``.srew`` and a ``.trew``, summed). Default: the structures beside ``path``:
        ``model.srew``/``model.trew``, PRISM's ``model1.srew``, ``model2.srew``, ... and
        ``.trew``, Storm's ``model.state.rew``/``model.trans.rew`` and
        ``model.NAME.state.rew``/``model.NAME.trans.rew``. Without any, every reward is 0
        (with a warning).
      reward_structure: ``.tra`` only: which structure beside ``path`` to use, by name (the
        ``# Reward structure "name"`` header, or Storm's ``NAME``) or by index (in the
        order above); needed when there are several.
      deadlocks: ``.tra`` only: what to do with a state that has no transition: ``"error"``
        (a ValueError naming them) or ``"self-loop"`` (one action that stays, as PRISM's and
        Storm's importers do; it earns the state's reward).
      horizon: ``T``, or None for an infinite discounted horizon.
      discount: ``γ`` (default 1 with a horizon, else 0.95).
      initial_state: ``s0`` (default: 0, or for a ``.tra`` the state labelled ``init`` in the
        ``.lab`` file beside it).
      dtype: float dtype. The files are parsed in float64 (rationals exactly, then rounded
        once), then cast.

    Returns:
      A :class:`TabularMDP` or :class:`SparseMDP`.

    Raises:
      ValueError: one line naming the file (and line, for text files): unreadable or
        malformed files, a header that disagrees with the body, indices out of range, a
        reward file for another model, a model that is no DTMC or MDP, deadlocks (with
        ``deadlocks="error"``), an unknown or ambiguous reward structure, and every check of
        :func:`make_mdp` / :func:`make_sparse_mdp`.
    """
    path = Path(path)
    if discount is None:
        discount = 1.0 if horizon is not None else 0.95
    if path.suffix == ".tra":
        if deadlocks not in DEADLOCKS:
            raise ValueError(f"deadlocks must be one of {DEADLOCKS}, got {deadlocks!r}")
        return _load_explicit(
            path, rewards, reward_structure, deadlocks, horizon, discount, initial_state, dtype
        )
    if rewards is not None or reward_structure is not None:
        raise ValueError(
            "rewards= and reward_structure= are for .tra models; an .npz holds its own rewards"
        )
    arrays = read_npz(
        path, required=(), optional=DENSE + SPARSE + COMMON, ignored=RELEASE_METADATA, flag="path"
    )
    where = f"{str(path)!r}"
    kw = dict(
        terminal_reward=arrays.get("terminal_reward"),
        action_mask=arrays.get("action_mask"),
        support=arrays.get("support"),
        horizon=horizon,
        discount=discount,
        initial_state=0 if initial_state is None else initial_state,
        dtype=dtype,
    )
    if "rewards" not in arrays:
        raise ValueError(f"{where} has no 'rewards' array")
    try:
        if "transitions" in arrays and not set(SPARSE) & set(arrays):
            return make_mdp(arrays["transitions"], arrays["rewards"], **kw)
        if set(SPARSE) <= set(arrays) and "transitions" not in arrays:
            return make_sparse_mdp(arrays["next_states"], arrays["probs"], arrays["rewards"], **kw)
    except ValueError as e:
        raise ValueError(f"{where}: {e}") from None
    raise ValueError(
        f"{where} must hold either 'transitions' (dense) or 'next_states' and 'probs' "
        f"(sparse), got {sorted(arrays)}"
    )


def load_labels(path, *, num_states: int | None = None) -> dict[str, np.ndarray]:
    """The labels of an explicit model: ``{name: bool[S]}``, in the file's order.

    Args:
      path: a PRISM ``.lab`` (``0="init" 1="deadlock" ...``, then ``state: label ...``) or a
        Storm ``.lab`` (``#DECLARATION`` names ``#END``, then ``state label ...``); or the
        ``.tra`` whose ``.lab`` lies beside it (without one: only ``init`` and ``deadlock``).
      num_states: ``S`` (default: read from the ``.tra`` beside the ``.lab``).

    Returns:
      Every label of the file, and always ``"init"`` and ``"deadlock"``: a file without
      ``init`` has state 0 initial (PRISM's rule); without ``deadlock``, the deadlocks are
      the states without a transition in the ``.tra`` (none if there is no ``.tra``).

    Raises:
      ValueError: naming the file and line: malformed lines, an undeclared label, a state
        out of range, and no ``num_states`` without a ``.tra`` beside the file.
    """
    path = Path(path)
    lab = path.with_suffix(".lab") if path.suffix == ".tra" else path
    tra = lab.with_suffix(".tra")
    if path.suffix == ".tra" and not lab.is_file():
        names, entries = [], []  # no .lab: only the initial state and the deadlocks
    else:
        names, entries = _read_labels(lab)
    explicit = None
    if tra.is_file() and (num_states is None or "deadlock" not in names):
        explicit = _read_transitions(tra)
    if num_states is None:
        if explicit is None:
            raise ValueError(
                f"pass num_states= for {str(lab)!r}: no {tra.name!r} beside it gives the number "
                "of states"
            )
        num_states = explicit.num_states
    num_states = int(num_states)
    labels = _label_arrays(lab, names, entries, num_states)
    if "init" not in labels:
        labels["init"] = np.arange(num_states) == 0
    if "deadlock" not in labels:
        dead = np.zeros(num_states, bool)
        if explicit is not None and explicit.num_states == num_states:
            dead[_deadlocks(explicit)] = True
        labels["deadlock"] = dead
    return labels


# ----------------------------------------------------------------------------- text


def _where(path: Path) -> str:
    return repr(str(path))


def _read_text(path: Path) -> str:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"cannot read {_where(path)}: {e}") from None


def _lines(path: Path) -> Iterator[tuple[int, list[str]]]:
    """``(line number, fields)`` of a text file's lines that are neither blank nor ``#``."""
    for number, line in enumerate(_read_text(path).splitlines(), start=1):
        fields = line.split()
        if fields and not fields[0].startswith("#"):
            yield number, fields


def _comments(path: Path) -> list[tuple[int, str]]:
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
        raise ValueError(f"cannot read {_where(path)}: {e}") from None
    return out


def _int(path: Path, number: int, field: str) -> int:
    try:
        return int(field)
    except ValueError:
        raise ValueError(f"{_where(path)} line {number}: {field!r} is not an integer") from None


def _value(path: Path, number: int, field: str) -> float:
    """A decimal or (``-exact``) rational number, rounded once to float64."""
    try:
        return float(Fraction(field)) if "/" in field else float(field)
    except (ValueError, ZeroDivisionError):
        hint = " (interval models are not supported)" if field.startswith("[") else ""
        raise ValueError(f"{_where(path)} line {number}: {field!r} is not a number{hint}") from None


def _header(path: Path, number: int, fields: list[str]) -> list[int]:
    return [_int(path, number, f) for f in fields]


def _is_rows(fields: list[str]) -> bool:
    """A line of PRISM's rows format: ``source value:target ...``, or a bare ``source``."""
    return len(fields) == 1 or ":" in fields[1]


def _entries(path: Path, number: int, fields: list[str], action_ok: bool):
    """``(target, value)`` of a rows-format line's ``value:target`` fields."""
    out = []
    for k, field in enumerate(fields):
        value, colon, target = field.rpartition(":")
        if not colon:
            if action_ok and k == len(fields) - 1 and k > 0:
                break  # the choice's action name
            raise ValueError(
                f"{_where(path)} line {number}: expected 'value:target', got {field!r}"
            )
        out.append((_int(path, number, target), _value(path, number, value)))
    return out


# ----------------------------------------------------------------------------- transitions


@dataclasses.dataclass
class _Explicit:
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
    for number, text in _comments(path):
        m = re.fullmatch(r"#\s*Transitions\s*\(\s*([A-Za-z]+)\s*\)\s*", text)
        if m:
            return _check_type(path, number, m.group(1))
        m = re.fullmatch(r"#\s*(Labels|States|Observations|Reward structure.*)\s*", text)
        if m:
            raise ValueError(f"{_where(path)} line {number}: {text!r}: this is no transitions file")
    return None


def _check_type(path: Path, number: int, name: str) -> str:
    kind = name.lower()
    if kind in ("dtmc", "mdp"):
        return kind
    what = _REFUSED.get(kind, f"model type {name!r}")
    raise ValueError(f"{_where(path)} line {number}: {what}: {_UNSUPPORTED}")


def _read_transitions(path: Path) -> _Explicit:
    where = _where(path)
    declared = _declared_type(path)
    lines = _lines(path)
    try:
        number, fields = next(lines)
    except StopIteration:
        raise ValueError(f"{where} is empty") from None
    counts = None
    if len(fields) == 1 and fields[0][:1].isalpha():  # Storm: the model type, no counts
        flavor, kind = "storm", _check_type(path, number, fields[0])
    else:
        flavor = "prism"
        if len(fields) == 4 and all(f.isdigit() for f in fields):
            raise ValueError(f"{where} line {number}: {_REFUSED['pomdp']}: {_UNSUPPORTED}")
        if len(fields) not in (2, 3):
            raise ValueError(
                f"{where} line {number}: the header must have 2 numbers (DTMC: states "
                f"transitions) or 3 (MDP: states choices transitions), got {' '.join(fields)!r}"
            )
        counts = _header(path, number, fields)
        kind = "dtmc" if len(counts) == 2 else "mdp"
        if declared is not None and declared != kind:
            raise ValueError(
                f"{where} line {number}: the header {' '.join(fields)!r} is not that of "
                f"the {declared.upper()} its '# Transitions' comment declares"
            )
    src, choice, tgt, prob, line = [], [], [], [], []
    rows = None
    seen: dict[int, int] = {}  # rows format: the choices read so far, per state
    for number, fields in lines:
        if rows is None:
            rows = flavor == "prism" and _is_rows(fields)
        if rows:
            s = _int(path, number, fields[0])
            entries = _entries(path, number, fields[1:], action_ok=kind == "mdp")
            if not entries:
                raise ValueError(f"{where} line {number}: a choice without transitions")
            c = seen.get(s, 0) if kind == "mdp" else 0
            seen[s] = c + 1
            for t, p in entries:
                src.append(s), choice.append(c), tgt.append(t), prob.append(p)
                line.append(number)
            continue
        if kind == "dtmc":
            if len(fields) not in (3, 4) or ":" in fields[1]:
                raise ValueError(
                    f"{where} line {number}: expected 'source target probability [action]', "
                    f"got {' '.join(fields)!r}"
                )
            s, c, t, p = fields[0], "0", fields[1], fields[2]
        else:
            if len(fields) < 4 or (flavor == "prism" and len(fields) > 5) or ":" in fields[1]:
                raise ValueError(
                    f"{where} line {number}: expected 'source choice target probability "
                    f"[action]', got {' '.join(fields)!r}"
                )
            s, c, t, p = fields[:4]
        src.append(_int(path, number, s))
        choice.append(_int(path, number, c))
        tgt.append(_int(path, number, t))
        prob.append(_value(path, number, p))
        line.append(number)
    ex = _Explicit(
        path,
        flavor,
        kind,
        0,
        np.asarray(src, np.int64),
        np.asarray(choice, np.int64),
        np.asarray(tgt, np.int64),
        np.asarray(prob, np.float64),
        np.asarray(line, np.int64),
    )
    if ex.src.size == 0:
        raise ValueError(f"{where} lists no transitions")
    if counts is None:
        ex.num_states = int(max(ex.src.max(), ex.tgt.max())) + 1
    else:
        ex.num_states = counts[0]
    S = ex.num_states
    bad = np.flatnonzero(
        (ex.src < 0) | (ex.src >= S) | (ex.tgt < 0) | (ex.tgt >= S) | (ex.choice < 0)
    )
    if bad.size:
        raise ValueError(f"{where} line {ex.line[bad[0]]}: a state or choice is out of range")
    if kind == "dtmc":
        rate = np.flatnonzero(ex.prob > 1)
        if rate.size:
            raise ValueError(
                f"{where} line {ex.line[rate[0]]}: probability {ex.prob[rate[0]]:g} > 1: a "
                f"CTMC's rates? {_UNSUPPORTED}"
            )
    if counts is not None:
        T = counts[-1]
        if ex.src.size != T:
            raise ValueError(
                f"{where}: the header declares {T} transitions, the body has {ex.src.size}"
            )
        if kind == "mdp":
            n = np.unique(ex.src * (ex.choice.max() + 1) + ex.choice).size
            if n != counts[1]:
                raise ValueError(
                    f"{where}: the header declares {counts[1]} choices, the body has {n}"
                )
    return ex


def _deadlocks(ex: _Explicit) -> np.ndarray:
    """The states without a transition."""
    has = np.zeros(ex.num_states, bool)
    has[ex.src] = True
    return np.flatnonzero(~has)


def _fix_deadlocks(ex: _Explicit, deadlocks: str) -> _Explicit:
    dead = _deadlocks(ex)
    if not dead.size:
        return ex
    if deadlocks != "self-loop":
        shown = ", ".join(str(s) for s in dead[:10])
        more = f" ({dead.size} in all)" if dead.size > 10 else ""
        raise ValueError(
            f"{_where(ex.path)}: state{'s' if dead.size > 1 else ''} {shown}{more} "
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
class _Layout:
    """Where each flat transition goes in the padded `[S, A, K]` arrays."""

    next_states: np.ndarray
    probs: np.ndarray
    mask: np.ndarray
    slot: np.ndarray  # per flat transition
    keys: np.ndarray  # sorted (source, choice, target) keys of the flat transitions
    order: np.ndarray  # flat index of each sorted key


def _layout(ex: _Explicit) -> _Layout:
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
            f"{_where(ex.path)}: the choices of state {s} are not 0..{n_choices[s] - 1}"
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
    return _Layout(next_states, probs, mask, slot, keys[key_order], key_order)


# ----------------------------------------------------------------------------- rewards


@dataclasses.dataclass
class _Structure:
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
    for _, text in _comments(path):
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
    for _, text in _comments(path):
        m = re.fullmatch(r'#\s*Reward structure:?\s*(?:"([^"]*)")?\s*', text)
        if m and m.group(1):
            return m.group(1)
    return None


def _make_structure(files: list[Path], fallback: str | None = None) -> _Structure:
    names = {n for n in (_structure_name(p) for p in files) if n is not None}
    if len(names) > 1:
        raise ValueError(
            f"{', '.join(repr(str(p)) for p in files)} name different reward structures: "
            f"{sorted(names)}"
        )
    return _Structure(names.pop() if names else fallback, files)


def _structures_beside(path: Path) -> list[_Structure]:
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


def _pick_structure(path: Path, rewards, reward_structure) -> _Structure | None:
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
                f"{_where(path)} has {len(found)} reward structures beside it ({listing}): "
                "pass reward_structure= a name or an index"
            )
        if not found:
            stem = path.stem
            warnings.warn(
                f"{_where(path)}: no reward file beside it ({stem}.srew, {stem}.trew, "
                f"{stem}1.srew, ..., {stem}.state.rew, {stem}.trans.rew): every reward is 0 "
                "(pass rewards= to give one)",
                stacklevel=4,
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
        f"{_where(path)}: no reward structure {reward_structure!r} beside it; available: {listing}"
    )


def _reward_header(path: Path, kind: str) -> None:
    """Checks the ``# State rewards`` / ``# Transition rewards`` comment, if any."""
    for number, text in _comments(path):
        m = re.fullmatch(r"#\s*(State|Transition) rewards\s*", text)
        if m and m.group(1).lower() != kind:
            raise ValueError(
                f"{_where(path)} line {number}: {text!r}, but it is read as the {kind} rewards"
            )
        if re.fullmatch(r"#\s*(Transitions\b.*|Labels|States)\s*", text):
            raise ValueError(f"{_where(path)} line {number}: {text!r}: this is no reward file")


def _read_state_rewards(path: Path, ex: _Explicit) -> np.ndarray:
    where, S = _where(path), ex.num_states
    _reward_header(path, "state")
    lines = list(_lines(path))
    declared = None
    # PRISM's header "S N"; Storm's files have none (their first line is "state reward").
    if lines and (ex.flavor == "prism" or _comments(path)):
        number, fields = lines.pop(0)
        if len(fields) != 2:
            raise ValueError(
                f"{where} line {number}: the header must have 2 numbers (states rewards), got "
                f"{' '.join(fields)!r}"
            )
        states, declared = _header(path, number, fields)
        if states != S:
            raise ValueError(f"{where} is for a model of {states} states, not {S}")
    elif lines and len(lines[0][1]) == 2 and lines[0][1][0] == str(S):
        number, fields = lines.pop(0)  # a header in a Storm model's file
        declared = _header(path, number, fields)[1]
    r = np.zeros(S)
    for number, fields in lines:
        if len(fields) != 2:
            raise ValueError(
                f"{where} line {number}: expected 'state reward', got {' '.join(fields)!r}"
            )
        s, value = _int(path, number, fields[0]), _value(path, number, fields[1])
        if not 0 <= s < S:
            raise ValueError(f"{where} line {number}: state {s} is out of range")
        r[s] = value
    if declared is not None and declared != len(lines):
        raise ValueError(
            f"{where}: the header declares {declared} rewards, the body has {len(lines)}"
        )
    return r


def _read_transition_rewards(path: Path, ex: _Explicit, layout: _Layout) -> np.ndarray:
    """The expected transition reward of each `(s, a)` (PRISM MDPs: the choice's reward)."""
    where, S = _where(path), ex.num_states
    A = layout.mask.shape[1]
    mdp = ex.kind == "mdp"
    _reward_header(path, "transition")
    lines = list(_lines(path))
    header = 3 if mdp else 2
    declared = None
    if lines and (ex.flavor == "prism" or _comments(path) or len(lines[0][1]) == header):
        number, fields = lines.pop(0)
        if len(fields) != header:
            raise ValueError(
                f"{where} line {number}: the header must have {header} numbers, got "
                f"{' '.join(fields)!r}"
            )
        counts = _header(path, number, fields)
        if counts[0] != S:
            raise ValueError(f"{where} is for a model of {counts[0]} states, not {S}")
        declared = counts[-1]
    src, choice, tgt, val, line = [], [], [], [], []
    rows = None
    seen: dict[int, int] = {}
    for number, fields in lines:
        if rows is None:
            rows = ex.flavor == "prism" and _is_rows(fields)
        if rows:
            s = _int(path, number, fields[0])
            c = seen.get(s, 0) if mdp else 0
            seen[s] = c + 1
            for t, v in _entries(path, number, fields[1:], action_ok=False):
                src.append(s), choice.append(c), tgt.append(t), val.append(v)
                line.append(number)
            continue
        n = 4 if mdp else 3
        if len(fields) != n:
            what = "source choice target reward" if mdp else "source target reward"
            raise ValueError(f"{where} line {number}: expected '{what}', got {' '.join(fields)!r}")
        ints = [_int(path, number, f) for f in fields[:-1]]
        s, c, t = ints if mdp else (ints[0], 0, ints[1])
        src.append(s), choice.append(c), tgt.append(t), line.append(number)
        val.append(_value(path, number, fields[-1]))
    src, choice, tgt = (np.asarray(x, np.int64) for x in (src, choice, tgt))
    val, line = np.asarray(val, np.float64), np.asarray(line, np.int64)
    if declared is not None and declared != val.size:
        raise ValueError(
            f"{where}: the header declares {declared} rewards, the body has {val.size}"
        )
    r = np.zeros((S, A))
    if not val.size:
        return r
    # Find each line's transition: (source, choice, target) in range and in the model.
    inside = (src >= 0) & (src < S) & (choice >= 0) & (choice < A) & (tgt >= 0) & (tgt < S)
    keys = np.where(inside, (src * A + choice) * S + tgt, -1)
    pos = np.minimum(np.searchsorted(layout.keys, keys), layout.keys.size - 1)
    missing = np.flatnonzero(~inside | (layout.keys[pos] != keys))
    if missing.size:
        i = missing[0]
        what = f"({src[i]}, {choice[i]}, {tgt[i]})" if mdp else f"({src[i]}, {tgt[i]})"
        raise ValueError(f"{where} line {line[i]}: {what} is not a transition of the model")
    flat = layout.order[pos]  # index of each line's transition in the flat arrays
    twice = np.flatnonzero(np.bincount(flat, minlength=ex.src.size)[flat] > 1)
    if twice.size:
        i = twice[-1]
        raise ValueError(f"{where} line {line[i]}: this transition's reward is listed twice")
    if mdp and ex.flavor == "prism":
        # PRISM: one reward per choice, written on each of its transitions.
        row = src * A + choice
        first = np.full(S * A, np.nan)
        order = np.argsort(row, kind="stable")
        uniq, start = np.unique(row[order], return_index=True)
        first[uniq] = val[order][start]
        off = np.flatnonzero(val != first[row])
        if off.size:
            i = off[0]
            raise ValueError(
                f"{where} line {line[i]}: choice {choice[i]} of state {src[i]} has transition "
                f"rewards {first[row[i]]:g} and {val[i]:g}; PRISM's MDP transition rewards are "
                "one per choice"
            )
        r.reshape(-1)[uniq] = first[uniq]
        return r
    np.add.at(r, (src, choice), ex.prob[flat] * val)
    return r


def _rewards(ex: _Explicit, layout: _Layout, structure: _Structure | None) -> np.ndarray:
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


# ----------------------------------------------------------------------------- labels


def _read_labels(path: Path) -> tuple[list[str], list[tuple[int, int, list[str]]]]:
    """Label names in declaration order and ``(line, state, names)`` per state line."""
    text = _read_text(path)
    if "#DECLARATION" in text.split():
        return _read_storm_labels(path, text)
    lines = _lines(path)
    try:
        number, fields = next(lines)
    except StopIteration:
        raise ValueError(f"{_where(path)} is empty") from None
    declarations = " ".join(fields)
    found = re.findall(r'(\d+)="([^"]*)"', declarations)
    if not found or re.sub(r'\s*\d+="[^"]*"\s*', "", declarations):
        raise ValueError(
            f"{_where(path)} line {number}: expected the label declarations "
            f'(0="init" 1="deadlock" ...), got {declarations!r}'
        )
    names = []
    for index, name in found:
        if int(index) != len(names):
            raise ValueError(
                f"{_where(path)} line {number}: label {name!r} has index {index}, not {len(names)}"
            )
        if name in names:
            raise ValueError(f"{_where(path)} line {number}: label {name!r} is declared twice")
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
            raise ValueError(f"{_where(path)} line {number}: expected 'state: label ...'")
        bad = [i for i in indices if not 0 <= i < len(names)]
        if bad:
            raise ValueError(f"{_where(path)} line {number}: no label has index {bad[0]}")
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
                        f"{_where(path)} line {number}: label {name!r} is declared twice"
                    )
                names.append(name)
            continue
        if not fields:
            continue
        s = _int(path, number, fields[0].rstrip(":"))
        unknown = [n for n in fields[1:] if n not in names]
        if unknown:
            raise ValueError(f"{_where(path)} line {number}: label {unknown[0]!r} is not declared")
        entries.append((number, s, fields[1:]))
    if part != "states":
        raise ValueError(f"{_where(path)}: '#DECLARATION' without '#END'")
    return names, entries


def _label_arrays(path: Path, names, entries, num_states: int) -> dict[str, np.ndarray]:
    labels = {name: np.zeros(num_states, bool) for name in names}
    for number, s, which in entries:
        if not 0 <= s < num_states:
            raise ValueError(
                f"{_where(path)} line {number}: state {s} is out of range (the model has "
                f"{num_states} states)"
            )
        for name in which:
            labels[name][s] = True
    return labels


def _initial_state(path: Path, num_states: int) -> int:
    """The state labelled ``init`` in the ``.lab`` file beside ``path`` (0 without one)."""
    lab = path.with_suffix(".lab")
    if not lab.is_file():
        return 0
    names, entries = _read_labels(lab)
    if "init" not in names:
        declared = ", ".join(repr(n) for n in names) or "none"
        raise ValueError(
            f"{_where(lab)} declares no label 'init' (its labels: {declared}); pass initial_state="
        )
    starts = np.flatnonzero(_label_arrays(lab, names, entries, num_states)["init"])
    if starts.size != 1:
        raise ValueError(
            f"{_where(lab)}: {starts.size} states are labelled 'init' "
            f"({', '.join(str(s) for s in starts[:10])}); pass initial_state= to pick one"
        )
    return int(starts[0])


# ----------------------------------------------------------------------------- model


def _load_explicit(
    path: Path, rewards, reward_structure, deadlocks, horizon, discount, initial_state, dtype
) -> SparseMDP:
    ex = _fix_deadlocks(_read_transitions(path), deadlocks)
    layout = _layout(ex)
    r = _rewards(ex, layout, _pick_structure(path, rewards, reward_structure))
    try:
        return make_sparse_mdp(
            layout.next_states,
            layout.probs,
            r,
            action_mask=layout.mask,
            horizon=horizon,
            discount=discount,
            initial_state=(
                _initial_state(path, ex.num_states) if initial_state is None else initial_state
            ),
            dtype=dtype,
        )
    except ValueError as e:
        raise ValueError(f"{_where(path)}: {e}") from None
