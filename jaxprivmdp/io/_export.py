"""Writing a model in the explicit formats PRISM and Storm read: Storm's DRN, and PRISM's
``.tra`` with its ``.lab``, ``.srew`` and ``.trew`` (see :mod:`._load` and :mod:`._drn`).

What the formats hold: the transitions of the allowed actions, one reward structure (the
model's ``rewards``: for a DTMC as state rewards, for an MDP as action rewards, so that
reading them back gives the same `[S, A]` values), the initial state (label ``init``) and the
labels given. Not the discount, the horizon, the terminal reward nor a dense model's public
support (the listed transitions are its support, or the nonzero entries without one): PRISM's
and Storm's properties do not use them; pass them to ``load_mdp`` again. A state's allowed
actions become its choices ``0 .. n_s − 1`` in order (a mask with gaps is renumbered, with a
warning). Numbers are written as Python's ``repr`` of the float64 value (a float32 value
exactly), so reading them back gives the same values. An interval model is written as PRISM's
interval ``.tra`` (``[lower,upper]`` for each probability; see :mod:`._interval_files`), not
as DRN.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ..models.core import INTERVAL_MODELS, TabularMDP, check_model, transition_lists
from ._files import atomic_outputs, sidecar_path
from ._interval_files import interval_lists

_NAME = re.compile(r'[^\s"\[\],]+')  # a label or reward model name both formats can hold


class Flat(NamedTuple):
    """A model's allowed rows ``s·A + a`` (ascending), each one's index among its state's
    choices, its transitions ``tgt[bounds[i]:bounds[i+1]]`` and ``prob`` (float64), and
    its one-step reward; an interval model's ``prob`` is its lower bounds, ``upper`` its
    upper bounds (None for a point model)."""

    num_states: int
    rows: np.ndarray
    local: np.ndarray
    bounds: np.ndarray
    tgt: np.ndarray
    prob: np.ndarray
    rewards: np.ndarray
    dtmc: bool
    upper: np.ndarray | None = None


def flat_model(mdp) -> Flat:
    """The transitions of ``mdp``'s allowed actions, by row; a DTMC if ``A == 1``."""
    if not isinstance(mdp, INTERVAL_MODELS):
        check_model(mdp)
    mask = np.asarray(mdp.action_mask)
    S, A = mask.shape
    upper = None
    if isinstance(mdp, INTERVAL_MODELS):
        rid, tgt, p, upper = interval_lists(mdp)
    elif isinstance(mdp, TabularMDP):
        P = np.asarray(mdp.transitions)
        listed = P != 0
        if mdp.support is not None:
            listed |= np.asarray(mdp.support)
        s, a, tgt = np.nonzero(listed)
        rid, p = s * A + a, P[s, a, tgt]
    else:
        rid, tgt, p = transition_lists(mdp)
    keep = mask.reshape(-1)[rid]
    rid, tgt, p = rid[keep], tgt[keep], p[keep].astype(np.float64)
    upper = None if upper is None else upper[keep]
    rows = np.flatnonzero(mask.reshape(-1))
    bounds = np.searchsorted(rid, np.append(rows, S * A))
    empty = np.flatnonzero(bounds[1:] == bounds[:-1])
    if empty.size:
        s, a = divmod(int(rows[empty[0]]), A)
        raise ValueError(f"action {a} of state {s} has no transition listed")
    local = (np.cumsum(mask, axis=1) - 1).reshape(-1)[rows]
    if (local != rows % A).any():
        s = int(rows[np.flatnonzero(local != rows % A)[0]] // A)
        warnings.warn(
            f"the allowed actions of state {s} (and maybe others) are not 0 .. n-1: the file "
            "numbers each state's choices 0 .. n-1 in order",
            stacklevel=3,
        )
    rewards = np.asarray(mdp.rewards, np.float64).reshape(-1)[rows]
    return Flat(S, rows, local, bounds, tgt, p, rewards, A == 1, upper)


def _label_sets(labels, S: int, initial_state: int) -> dict[str, np.ndarray]:
    """``{name: states}``: ``init`` (the model's initial state), then the other labels."""
    out = {"init": np.array([initial_state])}
    for name, states in (labels or {}).items():
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ValueError(
                f"label {name!r} cannot be written: a label is a name without spaces, quotes, "
                "brackets or commas"
            )
        states = np.asarray(states)
        if states.shape != (S,) or states.dtype != np.bool_:
            raise ValueError(
                f"label {name!r} must be a bool array of shape [S] = ({S},), got "
                f"{states.dtype} of shape {states.shape}"
            )
        if name != "init":  # the model's own initial state is the one written
            out[name] = np.flatnonzero(states)
    return out


def _reward_name(name) -> str | None:
    if name is not None and (not isinstance(name, str) or not _NAME.fullmatch(name)):
        raise ValueError(
            f"reward_name {name!r} cannot be written: a name without spaces, quotes, brackets "
            "or commas"
        )
    return name


def _numbers(x: np.ndarray) -> list[str]:
    return [repr(v) for v in x.tolist()]


# ----------------------------------------------------------------------------- DRN


def drn_text(mdp, labels=None, reward_name=None) -> str:
    """The DRN file of ``mdp`` (see the module)."""
    if isinstance(mdp, INTERVAL_MODELS):
        raise ValueError("an interval model is written as PRISM's explicit files: give a .tra")
    f = flat_model(mdp)
    name = _reward_name(reward_name)
    S, A = f.num_states, np.asarray(mdp.action_mask).shape[1]
    state_labels: list[list[str]] = [[] for _ in range(S)]
    for label, states in _label_sets(labels, S, mdp.initial_state).items():
        for s in states.tolist():
            state_labels[s].append(label)
    state_r = np.zeros(S)
    action_r = f.rewards
    if f.dtmc:
        state_r, action_r = f.rewards, np.zeros(f.rows.size)
    state_r, action_r = _numbers(state_r), _numbers(action_r)
    probs, targets = _numbers(f.prob), f.tgt.tolist()
    out = [
        "// Exported by jaxprivmdp",
        f"@type: {'DTMC' if f.dtmc else 'MDP'}",
        "@value_type: double",
        "@parameters",
        "",
        "@reward_models",
        f"{name or ''} ",
        "@nr_states",
        str(S),
        "@nr_choices",
        str(f.rows.size),
        "@model",
    ]
    bounds = f.bounds.tolist()
    row_state = (f.rows // A).tolist()
    i = 0
    for s in range(S):
        out.append(" ".join([f"state {s} [{state_r[s]}]", *state_labels[s]]))
        while i < len(row_state) and row_state[i] == s:
            out.append(f"\taction {int(f.local[i])} [{action_r[i]}]")
            out += [f"\t\t{targets[j]} : {probs[j]}" for j in range(bounds[i], bounds[i + 1])]
            i += 1
    return "\n".join(out) + "\n"


# ----------------------------------------------------------------------------- PRISM


def prism_files(mdp, labels=None, reward_name=None) -> dict[str, str]:
    """``{suffix: text}`` of PRISM's ``.tra``, ``.lab``, ``.srew`` and ``.trew`` for
    ``mdp`` (both reward files, one of them empty, so that stale ones are replaced)."""
    f = flat_model(mdp)
    name = _reward_name(reward_name)
    S, A = f.num_states, np.asarray(mdp.action_mask).shape[1]
    n_rows = np.diff(f.bounds)
    src = np.repeat(f.rows // A, n_rows).tolist()
    choice = np.repeat(f.local, n_rows).tolist()
    targets, probs = f.tgt.tolist(), _numbers(f.prob)
    if f.upper is not None:  # PRISM's interval form, no blank inside
        probs = [f"[{lo},{hi}]" for lo, hi in zip(probs, _numbers(f.upper), strict=True)]
    T = len(targets)
    if f.dtmc:
        tra = [f"{S} {T}"] + [f"{s} {t} {p}" for s, t, p in zip(src, targets, probs, strict=True)]
    else:
        tra = [f"{S} {f.rows.size} {T}"]
        tra += [f"{s} {c} {t} {p}" for s, c, t, p in zip(src, choice, targets, probs, strict=True)]
    sets = _label_sets(labels, S, mdp.initial_state)
    sets.setdefault("deadlock", np.zeros(0, int))
    names = ["init", "deadlock"] + [n for n in sets if n not in ("init", "deadlock")]
    per_state: dict[int, list[int]] = {}
    for k, label in enumerate(names):
        for s in sets[label].tolist():
            per_state.setdefault(s, []).append(k)
    lab = [" ".join(f'{k}="{n}"' for k, n in enumerate(names))]
    lab += [f"{s}: {' '.join(map(str, ks))}" for s, ks in sorted(per_state.items())]
    head = ["# Reward structure" + (f' "{name}"' if name else "")]
    srew = [*head, "# State rewards"]
    trew = [*head, "# Transition rewards"]
    nonzero = np.flatnonzero(f.rewards)
    values = _numbers(f.rewards[nonzero])
    if f.dtmc:
        srew.append(f"{S} {nonzero.size}")
        srew += [f"{int(f.rows[i])} {v}" for i, v in zip(nonzero, values, strict=True)]
        trew.append(f"{S} 0")
    else:
        srew.append(f"{S} 0")
        # PRISM's MDP transition rewards are per choice: the value on each of its transitions.
        body = [
            f"{int(f.rows[i]) // A} {int(f.local[i])} {t} {v}"
            for i, v in zip(nonzero, values, strict=True)
            for t in f.tgt[f.bounds[i] : f.bounds[i + 1]].tolist()
        ]
        trew += [f"{S} {f.rows.size} {len(body)}", *body]
    texts = {".tra": tra, ".lab": lab, ".srew": srew, ".trew": trew}
    return {suffix: "\n".join(lines) + "\n" for suffix, lines in texts.items()}


def write_explicit(path: Path, mdp, labels=None, reward_name=None, sidecar=None) -> Path:
    """Writes ``mdp`` to ``path`` (``.drn``, or ``.tra`` with the files beside it) and the
    ``sidecar`` text (its metadata) to ``<path>.json`` when given, all files or none."""
    if path.suffix == ".drn":
        texts = {".drn": drn_text(mdp, labels, reward_name)}
    else:
        texts = prism_files(mdp, labels, reward_name)
    with atomic_outputs() as stage:
        for suffix, text in texts.items():
            stage(path.with_suffix(suffix)).write_text(text)
        if sidecar is not None:
            stage(sidecar_path(path)).write_text(sidecar)
    return path
