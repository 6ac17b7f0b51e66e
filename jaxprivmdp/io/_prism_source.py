"""Models straight from PRISM and JANI sources: ``load_prism("model.prism", constants="N=4")``.

Storm builds the explicit model (through stormpy, its Python bindings: the optional extra
``pip install "jaxprivmdp[storm]"``); this module turns what it built into the library's
arrays: the transitions into a :class:`SparseMDP` (or a :class:`TabularMDP`), every label into
a boolean array over the states, and every reward structure into the expected one-step
rewards `[S, A]` (state reward plus state-action reward plus ``Σ_t P(s, a, t) r(s, a, t)``, as
:func:`load_mdp` reads an explicit model). Storm, like PRISM, gives each deadlock state a
self-loop and the label ``deadlock``; here a deadlock is an error unless
``deadlocks="self-loop"`` accepts those loops, as for explicit files. The matrix comes back
as arrays through Storm's own binary export (UMB: its CSR arrays and float64 values, read
with NumPy), not entry by entry through the bindings.

The explicit-file readers (:func:`load_mdp`, :func:`load_labels`) need no stormpy; only this
module does, and only when it is called.
"""

from __future__ import annotations

import importlib
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ..models.core import RaggedMDP, SparseMDP, TabularMDP, resolve_discount, to_dense, to_padded
from ._interval_files import interval_layout, interval_model
from ._prism_source_interval import build, interval_rewards, is_interval
from ._tar import read_tar
from ._text import where
from ._transitions import Explicit, layout_model, make_layout, with_rows

JANI = (".jani",)
DEADLOCKS = ("error", "self-loop")
EXTRA = "pip install 'jaxprivmdp[storm]'"


class PrismModel(NamedTuple):
    """What :func:`load_prism` builds.

    Attributes:
      model: the model, its rewards those of the chosen reward structure (an
        :class:`IntervalMDP` for a source with interval updates).
      labels: ``{name: bool[S]}``: every label of the source, ``"init"`` and ``"deadlock"``
        first.
      rewards: ``{name: [S, A]}``: every reward structure (Storm names an unnamed one
        ``""``), 0 where an action is masked.
    """

    model: TabularMDP | SparseMDP | RaggedMDP  # or an IntervalMDP
    labels: dict[str, np.ndarray]
    rewards: dict[str, np.ndarray]


def load_prism(
    path,
    *,
    constants: str | Mapping | None = None,
    reward_structure: int | str | None = None,
    deadlocks: str = "error",
    dense: bool = False,
    horizon: int | None = None,
    discount: float | None = None,
    initial_state: int | None = None,
    dtype=None,
) -> PrismModel:
    """Builds a PRISM (``.prism``, ``.pm``, ``.nm``, ...) or JANI (``.jani``) model with Storm.

    A source with interval updates (PRISM's ``[0.1, 0.3] : (s'=1)``) is built with Storm's
    interval values and becomes an :class:`IntervalMDP` (an interval DTMC: one action);
    its reward structures must be numbers per state and action (no transition rewards).

    Args:
      path: the source file: a DTMC or an MDP, or their interval forms.
      constants: values of the source's undefined constants: ``"N=4,p=0.5"`` or
        ``{"N": 4, "p": 0.5}`` (PRISM's ``-const``, Storm's ``--constants``).
      reward_structure: the structure that becomes the model's rewards, by name or by index
        (in the source's order); needed when there are several. Without any, the rewards
        are 0.
      deadlocks: ``"error"`` (a ValueError naming the states without a transition) or
        ``"self-loop"`` (the self-loop Storm adds, as PRISM does).
      dense: a :class:`TabularMDP` instead of a :class:`SparseMDP` (dense bounds `[S, A, S]`
        for an interval model).
      horizon: ``T``, or None for an infinite discounted horizon.
      discount: ``γ`` (default 1 with a horizon, else 0.95).
      initial_state: ``s0`` (default: the source's initial state).
      dtype: float dtype of the model (Storm computes in float64).

    Returns:
      A :class:`PrismModel`: the model, its labels and every reward structure.

    Raises:
      ImportError: stormpy is not installed (``pip install "jaxprivmdp[storm]"``).
      ValueError: one line naming the file: Storm's parse or build errors, undefined
        constants, a model that is no DTMC or MDP, deadlocks (with ``deadlocks="error"``),
        several initial states, an unknown or ambiguous reward structure, and every check
        of :func:`make_sparse_mdp` (of :func:`make_interval_mdp`; for an interval model,
        also transition rewards and rewards that are intervals).
    """
    stormpy = _stormpy()
    path = Path(path)
    if deadlocks not in DEADLOCKS:
        raise ValueError(f"deadlocks must be one of {DEADLOCKS}, got {deadlocks!r}")
    built, order = _build(stormpy, path, constants)
    kind = _kind(path, built)
    csr = _csr(stormpy, path, built)
    ex = _explicit(path, built, kind, csr)
    if csr.upper is None:
        layout = make_layout(ex)
    else:  # an interval model: Storm's values are intervals
        layout, bounds = interval_layout(ex, csr.upper)
    mask = layout.mask
    labels = _labels(built, ex.num_states)
    if deadlocks == "error":
        _refuse_deadlocks(path, labels["deadlock"])
    rewards = _reward_structures(path, built, csr, order, mask)
    chosen = _choose(path, rewards, reward_structure, mask.shape)
    if initial_state is None:
        initial_state = _initial_state(path, built)
    discount = resolve_discount(horizon, discount)
    fields = dict(horizon=horizon, discount=discount, initial_state=initial_state, dtype=dtype)
    if csr.upper is not None:
        model = interval_model(path, layout, bounds, chosen, **fields)
        return PrismModel(to_dense(model) if dense else model, labels, rewards)
    try:
        model = layout_model(layout, chosen, **fields)
        if dense:
            model = to_dense(to_padded(model) if isinstance(model, RaggedMDP) else model)
        return PrismModel(model, labels, rewards)
    except ValueError as e:
        raise ValueError(f"{where(path)}: {e}") from None


def _refuse_deadlocks(path: Path, deadlock: np.ndarray) -> None:
    """A ValueError naming the states without a transition (``deadlocks="error"``)."""
    dead = np.flatnonzero(deadlock)
    if dead.size:
        shown = ", ".join(str(s) for s in dead[:10]) + (f" ({dead.size} in all)" * (dead.size > 10))
        raise ValueError(
            f"{where(path)}: state{'s' * (dead.size > 1)} {shown} "
            f"{'have' if dead.size > 1 else 'has'} no transition (deadlock); pass "
            "deadlocks='self-loop' to keep the self-loop Storm gives each"
        )


def _reward_structures(path: Path, built, csr, order, mask) -> dict:
    """``{name: rewards}`` of every reward structure in ``order`` (intervals' for an
    interval model)."""
    cells = _cells(csr, mask.shape[1]) if order else None
    if csr.upper is None:
        return {name: _rewards(built, name, cells, mask) for name in order}
    return {name: interval_rewards(path, built, name, cells, mask) for name in order}


def _stormpy():
    try:
        return importlib.import_module("stormpy")
    except ImportError as e:
        raise ImportError(
            f"load_prism needs stormpy, Storm's Python bindings (the optional extra): {EXTRA} ({e})"
        ) from None


def _one_line(e: Exception) -> str:
    return " ".join(str(e).split())


def _build(stormpy, path: Path, constants):
    """Storm's explicit model of the source, and its reward structures' names in order."""
    if not path.is_file():
        raise ValueError(f"no such file: {where(path)}")
    try:
        if path.suffix in JANI:
            source, _ = stormpy.parse_jani_model(str(path))
        else:
            source = stormpy.parse_prism_program(str(path), prism_compatibility=True)
        if constants:
            source, _ = stormpy.instantiate_constants(source, constants)
    except Exception as e:  # stormpy raises its own exception types
        raise ValueError(f"{where(path)}: Storm refuses it: {_one_line(e)}") from None
    if source.has_undefined_constants:
        names = ", ".join(sorted(str(c.name) for c in source.constants if not c.defined))
        raise ValueError(f"{where(path)}: undefined constants {names}: pass constants='NAME=...'")
    try:
        built = build(stormpy, source)
    except Exception as e:
        raise ValueError(f"{where(path)}: Storm cannot build it: {_one_line(e)}") from None
    in_source = [r.name for r in getattr(source, "reward_models", [])]
    order = [n for n in in_source if n in built.reward_models]
    order += [n for n in built.reward_models if n not in order]
    return built, order


def _kind(path: Path, built) -> str:
    name = str(built.model_type).split(".")[-1]  # ModelType.DTMC, ...
    if name not in ("DTMC", "MDP"):
        raise ValueError(f"{where(path)} is a {name}: jaxprivmdp reads DTMCs and MDPs")
    return name.lower()


def _explicit(path: Path, built, kind: str, csr: _Csr) -> Explicit:
    """The transitions, flat: a state's choices (rows of its row group) are 0, 1, ...; the
    rows are the matrix's (no pass over the transitions to find them)."""
    S, counts, sizes = built.nr_states, np.diff(csr.choices), np.diff(csr.groups)
    A = int(sizes.max()) if sizes.size else 0
    if A == 1 and sizes.min() == 1:  # one row per state (a DTMC): row r is state r's choice 0
        state = np.arange(S)
        src, choice, pairs = np.repeat(state, counts), np.zeros(counts.sum(), np.int64), state
    else:
        state = np.repeat(np.arange(S), sizes)
        local = np.arange(state.size) - csr.groups[state]
        src, choice, pairs = np.repeat(state, counts), np.repeat(local, counts), state * A + local
    lines = range(src.size)
    ex = Explicit(path, "storm", kind, S, src, choice, csr.targets, csr.probs, lines)
    if counts.size and counts.min() > 0 and sizes.min() > 0:
        ex = with_rows(ex, A, csr.choices[:-1], pairs)  # else found from the transitions
    return ex


class _Csr(NamedTuple):
    """Storm's sparse matrix as arrays: row groups (states), rows (choices), entries."""

    groups: np.ndarray  # [S + 1]: each state's first row
    choices: np.ndarray  # [rows + 1]: each row's first entry
    targets: np.ndarray  # [entries]: the column (successor state)
    probs: np.ndarray  # [entries]: float64, as Storm holds it (an interval's lower bound)
    upper: np.ndarray | None = None  # [entries]: an interval model's upper bounds

    @property
    def state_of_row(self) -> np.ndarray:
        return np.repeat(np.arange(self.groups.size - 1), np.diff(self.groups))


_UMB = ("state-to-choices.bin", "choice-to-branches.bin", "branch-to-target.bin")
_UMB_PROBS = "branch-to-probability.bin"


def _csr(stormpy, path: Path, built) -> _Csr:
    """The transition matrix through Storm's binary export (UMB: its CSR arrays, float64).

    Reading the arrays back costs milliseconds where a Python loop over stormpy's entries
    costs seconds per million: the bindings give no bulk access to the matrix itself. The
    archive is read in one piece and the arrays are views of it (no copies).
    """
    options = stormpy.io.UmbExportOptions()
    interval = is_interval(built)  # (each value: its lower and upper bound, interleaved)
    kind = "DOUBLE_INTERVAL" if interval else "DOUBLE"  # Storm's own doubles, no rounding
    options.value_type = getattr(stormpy.io.UmbExportValueType, kind)
    options.compression = stormpy.io.CompressionMode.NO_COMPRESSION
    matrix = built.transition_matrix
    S, rows, entries = built.nr_states, matrix.nr_rows, matrix.nr_entries
    scratch = _scratch(24 * entries + 16 * rows + 64 * S + (1 << 20))
    with tempfile.TemporaryDirectory(dir=scratch) as folder:
        archive_path = Path(folder) / "model.umb"
        try:
            stormpy.io.export_to_umb(built, archive_path, options=options)
        except Exception as e:
            raise ValueError(f"{where(path)}: Storm cannot export it: {_one_line(e)}") from None
        data = read_tar(archive_path, (*_UMB, _UMB_PROBS))
    trivial = np.arange(S + 1, dtype=np.int64)  # a DTMC's export leaves out its row groups
    empty = np.zeros(0, np.uint8)
    groups = _view(data.get(_UMB[0]), np.int64) if _UMB[0] in data else trivial
    choices = _view(data.get(_UMB[1], empty), np.int64)  # uint64 in the file, below 2⁶³
    targets = _view(data.get(_UMB[2], empty), np.int64)
    probs, upper = _view(data.get(_UMB_PROBS, empty), np.float64), None
    if interval and probs is not None and probs.size % 2 == 0:
        probs, upper = probs[0::2], probs[1::2]
    sizes = tuple(-1 if x is None else x.size for x in (groups, choices, targets, probs))
    if sizes != (S + 1, rows + 1, entries, entries) or groups[-1] != rows:
        raise ValueError(
            f"{where(path)}: Storm's export does not match its model ({S} states, {rows} "
            f"choices, {entries} transitions; arrays of {sizes})"
        )
    return _Csr(groups, choices, targets, probs, upper)


def _scratch(size: int) -> str | None:
    """A memory-backed folder for the export where there is one with room (no disk writes),
    else None: the default temporary folder."""
    folder = "/dev/shm"
    try:
        stat = os.statvfs(folder)
    except (OSError, AttributeError):  # no such folder, or no statvfs (Windows)
        return None
    room = stat.f_bavail * stat.f_frsize
    return folder if room > 2 * size and os.access(folder, os.W_OK) else None


def _view(raw: np.ndarray, dtype) -> np.ndarray | None:
    """Little-endian values in the bytes ``raw`` (None if they are no whole number of them)."""
    dtype = np.dtype(dtype).newbyteorder("<")
    return raw.view(dtype) if raw.size % dtype.itemsize == 0 else None


def _labels(built, num_states: int) -> dict[str, np.ndarray]:
    names = sorted(built.labeling.get_labels(), key=lambda n: (n != "init", n != "deadlock", n))
    labels = {name: _bits(built.labeling.get_states(name), num_states) for name in names}
    labels.setdefault("deadlock", np.zeros(num_states, bool))
    return labels


def _bits(states, num_states: int) -> np.ndarray:
    """A Storm bit vector as ``bool[S]``, from its words (``store_as_string``: the size,
    then 64-bit words in decimal, bit ``i`` the ``i % 64``-th most significant of word
    ``i // 64``), not bit by bit through the bindings."""
    fields = states.store_as_string().split()
    words = -(-num_states // 64)
    if len(fields) == words + 1 and fields[0] == str(num_states):
        packed = np.array(fields[1:], np.uint64).astype(">u8").view(np.uint8)
        return np.unpackbits(packed, count=num_states).astype(bool)
    out = np.zeros(num_states, bool)  # another layout: the set bits one by one
    out[list(states)] = True
    return out


def _cells(csr: _Csr, A: int) -> np.ndarray:
    """Each row's cell ``s · A + c`` of `[S, A]` (state ``s``, its ``c``-th row)."""
    src = csr.state_of_row
    return src * A + (np.arange(src.size) - csr.groups[src])


def _rewards(built, name: str, cells: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """A structure's expected one-step reward of each (state, action) `[S, A]`."""
    reward = built.reward_models[name]
    S, A = mask.shape
    r = np.zeros((S, A))
    if reward.has_state_rewards:  # (a list of floats: np.array with a dtype reads it fastest)
        r += np.array(reward.state_rewards, np.float64)[:, None]
    if reward.has_state_action_rewards:
        r.reshape(-1)[cells] += np.array(reward.state_action_rewards, np.float64)
    if reward.has_transition_rewards:  # not from PRISM sources (their rewards are per action)
        values, matrix = reward.transition_rewards, built.transition_matrix
        for row, (s, c) in enumerate(zip(*np.divmod(cells, A), strict=True)):
            for entry, p in zip(values.get_row(row), matrix.get_row(row), strict=True):
                r[s, c] += p.value * entry.value
    return np.where(mask, r, 0.0)


def _choose(path: Path, rewards: dict, reward_structure, shape) -> np.ndarray:
    names = list(rewards)
    listing = "; ".join(f"{i}: {n!r}" for i, n in enumerate(names)) or "none"
    if reward_structure is None:
        if len(names) > 1:
            raise ValueError(
                f"{where(path)} has {len(names)} reward structures ({listing}): pass "
                "reward_structure= a name or an index"
            )
        return rewards[names[0]] if names else np.zeros(shape)
    if isinstance(reward_structure, (int, np.integer)) and not isinstance(reward_structure, bool):
        if 0 <= reward_structure < len(names):
            return rewards[names[int(reward_structure)]]
    elif reward_structure in rewards:
        return rewards[reward_structure]
    raise ValueError(
        f"{where(path)}: no reward structure {reward_structure!r}; available: {listing}"
    )


def _initial_state(path: Path, built) -> int:
    starts = list(built.initial_states)
    if len(starts) != 1:
        raise ValueError(
            f"{where(path)}: {len(starts)} initial states ({', '.join(map(str, starts[:10]))}); "
            "pass initial_state= to pick one"
        )
    return int(starts[0])
