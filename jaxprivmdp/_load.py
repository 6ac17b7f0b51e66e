"""Reading models from files: ``.npz`` (dense or sparse arrays) and PRISM's explicit format.

PRISM and Storm export an MDP as a ``.tra`` file (``S C T`` on the first line, then one line
``source choice target probability [action]`` per transition), rewards as ``.srew`` (state
rewards: ``S N``, then ``state reward``) or ``.trew`` (transition rewards: ``S C T``, then
``source choice target reward``), and labels as ``.lab`` (``0="init" 1="deadlock" ...``, then
``state: label ...``). A state's choices ``0 .. n_s − 1`` become actions ``0 .. n_s − 1``
(the action mask marks the rest); the model is a :class:`SparseMDP`.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ._io import read_npz
from ._mdp import TabularMDP, make_mdp
from ._sparse import PADDING, SparseMDP, make_sparse_mdp

# Arrays a release of `jaxprivmdp privatize` stores beside the model.
RELEASE_METADATA = ("k", "epsilon", "delta", "b", "adjacency", "eta")
DENSE = ("transitions",)
SPARSE = ("next_states", "probs")
COMMON = ("rewards", "terminal_reward", "action_mask", "support")


def load_mdp(
    path,
    *,
    rewards=None,
    horizon: int | None = None,
    discount: float | None = None,
    initial_state: int | None = None,
    dtype=None,
) -> TabularMDP | SparseMDP:
    """Reads and validates a model: ``.npz`` (dense or sparse) or a PRISM ``.tra`` file.

    Args:
      path: an ``.npz`` with ``transitions`` `[S, A, S]` (dense) or ``next_states`` and
        ``probs`` `[S, A, K]` (sparse), ``rewards`` `[S, A]` and optionally
        ``terminal_reward`` `[S]`, ``action_mask`` `[S, A]`, ``support`` (the rows' public
        support, which ``jaxprivmdp privatize`` writes into a release); or a PRISM ``.tra``
        file.
      rewards: PRISM only: a ``.srew`` or ``.trew`` file (default: the one beside ``path``
        with the same stem, if exactly one exists).
      horizon: ``T``, or None for an infinite discounted horizon.
      discount: ``γ`` (default 1 with a horizon, else 0.95).
      initial_state: ``s0`` (default: 0, or for PRISM the state labelled ``init`` in a
        ``.lab`` file beside ``path``).
      dtype: float dtype.

    Returns:
      A :class:`TabularMDP` or :class:`SparseMDP`. For PRISM files the initial state is the
      state labelled ``init`` in a ``.lab`` file beside ``path`` (0 without one).

    Raises:
      ValueError: one line naming the file (and line, for text files): unreadable or
        malformed files, a header that disagrees with the body, indices out of range, a
        reward file for another model, and every check of :func:`make_mdp` /
        :func:`make_sparse_mdp`.
    """
    path = Path(path)
    if discount is None:
        discount = 1.0 if horizon is not None else 0.95
    if path.suffix == ".tra":
        return _load_prism(path, rewards, horizon, discount, initial_state, dtype)
    if rewards is not None:
        raise ValueError("rewards= is for PRISM models; an .npz holds its own rewards")
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


# ----------------------------------------------------------------------------- PRISM


def _lines(path: Path):
    """``(line number, fields)`` of a text file's non-empty lines."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"cannot read {str(path)!r}: {e}") from None
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            yield number, line.split()


def _numbers(path: Path, number: int, fields, kinds: str):
    """The first ``len(kinds)`` fields as ints (``i``) or floats (``f``), or a ValueError."""
    if len(fields) < len(kinds):
        raise ValueError(
            f"{str(path)!r} line {number}: expected {len(kinds)} fields, got {len(fields)}"
        )
    out = []
    for field, kind in zip(fields, kinds, strict=False):
        try:
            out.append(int(field) if kind == "i" else float(field))
        except ValueError:
            what = "an integer" if kind == "i" else "a number"
            raise ValueError(f"{str(path)!r} line {number}: {field!r} is not {what}") from None
    return out


def _header(path: Path, lines, kinds: str):
    try:
        number, fields = next(lines)
    except StopIteration:
        raise ValueError(f"{str(path)!r} is empty") from None
    if len(fields) != len(kinds):
        raise ValueError(
            f"{str(path)!r} line {number}: the header must have {len(kinds)} numbers, got "
            f"{' '.join(fields)!r}"
        )
    return _numbers(path, number, fields, kinds)


def _read_tra(path: Path):
    lines = _lines(path)
    S, C, T = _header(path, lines, "iii")
    rows = []
    for number, fields in lines:
        if len(fields) not in (4, 5):
            raise ValueError(
                f"{str(path)!r} line {number}: expected 'source choice target probability "
                f"[action]', got {' '.join(fields)!r}"
            )
        s, c, t, p = _numbers(path, number, fields, "iiif")
        if not (0 <= s < S and 0 <= t < S) or c < 0:
            raise ValueError(f"{str(path)!r} line {number}: a state or choice is out of range")
        rows.append((s, c, t, p, number))
    if len(rows) != T:
        raise ValueError(
            f"{str(path)!r}: the header declares {T} transitions, the body has {len(rows)}"
        )
    choices = {(s, c) for s, c, *_ in rows}
    if len(choices) != C:
        raise ValueError(
            f"{str(path)!r}: the header declares {C} choices, the body has {len(choices)}"
        )
    return S, rows


def _load_prism(path: Path, rewards, horizon, discount, initial_state, dtype) -> SparseMDP:
    S, rows = _read_tra(path)
    A = 1 + max(c for _, c, *_ in rows)
    counts: dict[tuple[int, int], int] = {}
    for s, c, *_ in rows:
        counts[(s, c)] = counts.get((s, c), 0) + 1
    K = max(counts.values())
    next_states = np.full((S, A, K), PADDING, np.int64)
    probs = np.zeros((S, A, K))
    mask = np.zeros((S, A), bool)
    slot: dict[tuple[int, int], int] = {}
    for s, c, t, p, _ in rows:
        j = slot.get((s, c), 0)
        next_states[s, c, j], probs[s, c, j] = t, p
        slot[(s, c)] = j + 1
        mask[s, c] = True
    for s in range(S):
        if not mask[s].any():
            raise ValueError(f"{str(path)!r}: state {s} has no choice (PRISM lists a self-loop)")
        n = int(mask[s].sum())
        if not mask[s, :n].all():
            raise ValueError(f"{str(path)!r}: the choices of state {s} are not 0..{n - 1}")
    reward_file = _reward_file(path, rewards)
    if reward_file.suffix == ".srew":
        r = _read_srew(reward_file, S)[:, None] * np.ones((1, A))
    elif reward_file.suffix == ".trew":
        r = _read_trew(reward_file, S, next_states, probs)
    else:
        raise ValueError(f"rewards must be a .srew or .trew file, got {str(reward_file)!r}")
    try:
        return make_sparse_mdp(
            next_states,
            probs,
            np.where(mask, r, 0.0),
            action_mask=mask,
            horizon=horizon,
            discount=discount,
            initial_state=_initial_state(path, S) if initial_state is None else initial_state,
            dtype=dtype,
        )
    except ValueError as e:
        raise ValueError(f"{str(path)!r}: {e}") from None


def _reward_file(path: Path, rewards) -> Path:
    if rewards is not None:
        return Path(rewards)
    found = [p for p in (path.with_suffix(".srew"), path.with_suffix(".trew")) if p.is_file()]
    if len(found) != 1:
        raise ValueError(
            f"pass rewards= (a .srew or .trew file) for {str(path)!r}: found {len(found)} "
            "reward files beside it"
        )
    return found[0]


def _read_srew(path: Path, S: int) -> np.ndarray:
    lines = _lines(path)
    states, n = _header(path, lines, "ii")
    if states != S:
        raise ValueError(f"{str(path)!r} is for a model of {states} states, not {S}")
    r = np.zeros(S)
    count = 0
    for number, fields in lines:
        s, value = _numbers(path, number, fields, "if")
        if not 0 <= s < S:
            raise ValueError(f"{str(path)!r} line {number}: state {s} is out of range")
        r[s] = value
        count += 1
    if count != n:
        raise ValueError(f"{str(path)!r}: the header declares {n} rewards, the body has {count}")
    return r


def _read_trew(path: Path, S: int, next_states, probs) -> np.ndarray:
    """Expected transition rewards ``r(s, a) = Σ_t P(t | s, a) r(s, a, t)``."""
    lines = _lines(path)
    states, _, n = _header(path, lines, "iii")
    if states != S:
        raise ValueError(f"{str(path)!r} is for a model of {states} states, not {S}")
    r = np.zeros(next_states.shape[:2])
    count = 0
    for number, fields in lines:
        s, c, t, value = _numbers(path, number, fields, "iiif")
        hit = (0 <= s < S and 0 <= c < next_states.shape[1]) and np.flatnonzero(
            next_states[s, c] == t
        ).size
        if not hit:
            raise ValueError(
                f"{str(path)!r} line {number}: ({s}, {c}, {t}) is not a transition of the model"
            )
        j = int(np.flatnonzero(next_states[s, c] == t)[0])
        r[s, c] += probs[s, c, j] * value
        count += 1
    if count != n:
        raise ValueError(f"{str(path)!r}: the header declares {n} rewards, the body has {count}")
    return r


def _initial_state(path: Path, S: int) -> int:
    """The state labelled ``init`` in the ``.lab`` file beside ``path`` (0 without one)."""
    lab = path.with_suffix(".lab")
    if not lab.is_file():
        return 0
    lines = _lines(lab)
    try:
        number, fields = next(lines)
    except StopIteration:
        raise ValueError(f"{str(lab)!r} is empty") from None
    names = dict(re.findall(r'(\d+)="([^"]*)"', " ".join(fields)))
    init = [int(i) for i, name in names.items() if name == "init"]
    if not init:
        raise ValueError(f"{str(lab)!r} line {number}: no label 'init' in the header")
    starts = []
    for number, fields in lines:
        state = fields[0].rstrip(":")
        try:
            s, labels = int(state), {int(x) for x in fields[1:]}
        except ValueError:
            raise ValueError(f"{str(lab)!r} line {number}: expected 'state: label ...'") from None
        if init[0] in labels:
            starts.append(s)
    if len(starts) != 1 or not 0 <= starts[0] < S:
        raise ValueError(f"{str(lab)!r}: expected one initial state, found {starts}")
    return starts[0]
