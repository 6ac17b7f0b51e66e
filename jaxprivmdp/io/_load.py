"""The public readers :func:`load_mdp` and :func:`load_labels`, which dispatch by suffix:
an ``.npz`` (dense or sparse arrays, read here), or the explicit text formats of PRISM and
Storm (``_text``, ``_transitions``, ``_rewards`` and ``_labels`` read those files), or
Storm's DRN (``_drn``, which describes it); PRISM's interval models (``s c t [l,u]``
lines) are read by ``_interval_files``.

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
and reward files (``--staterew``/``--transrew``) have no header line. Storm writes its
models as DRN files (``--exportbuild model.drn``; stormpy's ``export_to_drn``).

Semantics, as the tools define them: a state's choices ``0 .. n_s − 1`` become actions
``0 .. n_s − 1`` (the action mask marks the rest), a DTMC is an MDP with one action, and the
expected one-step reward of ``(s, a)`` is the state reward of ``s`` plus the transition
reward. For a PRISM MDP the transition reward is one number per choice (PRISM's MDP rewards
are action rewards: it writes the choice's reward on each of its transitions and refuses a
choice whose lines disagree); otherwise (DTMCs, Storm's MDPs) it is ``Σ_t P(s, a, t) r(s, a,
t)``. The model is a :class:`SparseMDP`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..models.core import (
    IntervalMDP,
    RaggedIntervalMDP,
    RaggedMDP,
    SparseMDP,
    TabularMDP,
    make_mdp,
    make_sparse_mdp,
    resolve_discount,
)
from ._drn import read_drn
from ._drn_model import drn_initial_state, drn_labels, drn_rewards
from ._files import read_npz
from ._interval_files import declared_interval, load_interval, read_explicit
from ._labels import initial_state as labelled_initial_state
from ._labels import label_arrays, read_labels
from ._record import RELEASE_METADATA, read_sidecar, record_from_arrays
from ._rewards import pick_structure, read_rewards
from ._save import ragged_model
from ._text import where
from ._transitions import (
    deadlock_states,
    fix_deadlocks,
    layout_model,
    make_layout,
    read_transitions,
)

DENSE = ("transitions",)
SPARSE = ("next_states", "probs")
RAGGED = ("row_ids",)  # with 1-D next_states and probs: a RaggedMDP's transition lists
COMMON = ("rewards", "terminal_reward", "action_mask", "support")
# The model's public scalars (a release stores them): defaults that arguments override.
MODEL_SCALARS = ("horizon", "discount", "initial_state")
NPZ_ARRAYS = DENSE + SPARSE + RAGGED + COMMON + MODEL_SCALARS
DEADLOCKS = ("error", "self-loop")


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
    layout: str = "auto",
) -> TabularMDP | SparseMDP | RaggedMDP | IntervalMDP | RaggedIntervalMDP:
    """Reads and validates a model: ``.npz`` (dense or sparse), a PRISM or Storm ``.tra``, or
    Storm's DRN (``.drn``).

    Args:
      path: an ``.npz`` with ``transitions`` `[S, A, S]` (dense) or ``next_states`` and
        ``probs`` `[S, A, K]` (sparse), ``rewards`` `[S, A]` and optionally
        ``terminal_reward`` `[S]`, ``action_mask`` `[S, A]`, ``support`` (the rows' public
        support, which ``jaxprivmdp privatize`` writes into a release); or an explicit
        ``.tra`` file of PRISM or Storm (MDP or DTMC; see the module's documentation; PRISM's
        interval models, ``s c t [lower,upper]``, give an :class:`IntervalMDP`); or a
        ``.drn`` (DTMC or MDP, as ``storm --exportbuild`` and ``stormpy.export_to_drn``
        write it: its reward models and labels inside; its choice labels are read and
        dropped, a model has no place for them).
      rewards: ``.tra`` only: a reward file, or a list of the files of one reward structure
        (a ``.srew`` and a ``.trew``, summed). Default: the structures beside ``path``:
        ``model.srew``/``model.trew``, PRISM's ``model1.srew``, ``model2.srew``, ... and
        ``.trew``, Storm's ``model.state.rew``/``model.trans.rew`` and
        ``model.NAME.state.rew``/``model.NAME.trans.rew``. Without any, every reward is 0
        (with a warning).
      reward_structure: ``.tra``: which structure beside ``path`` to use, by name (the
        ``# Reward structure "name"`` header, or Storm's ``NAME``) or by index (in the
        order above); ``.drn``: which of its ``@reward_models``, by name or index. Needed
        when there are several.
      deadlocks: ``.tra`` and ``.drn``: what to do with a state that has no transition: ``"error"``
        (a ValueError naming them) or ``"self-loop"`` (one action that stays, as PRISM's and
        Storm's importers do; it earns the state's reward).
      horizon: ``T``, or None for an infinite discounted horizon (default: an ``.npz``'s
        own ``horizon`` array, as a release of ``jaxprivmdp privatize`` stores it).
      discount: ``γ`` (default: an ``.npz``'s ``discount`` array, else 1 with a horizon,
        else 0.95).
      initial_state: ``s0`` (default: an ``.npz``'s ``initial_state`` array, or for a
        ``.tra`` the state labelled ``init`` in the ``.lab`` file beside it, else 0; for a
        ``.drn`` its state labelled ``init``).
      dtype: float dtype. The files are parsed in float64 (rationals exactly, then rounded
        once), then cast.
      layout: ``.tra`` and ``.drn``: ``"padded"`` (a :class:`SparseMDP` `[S, A, K]`, ``K`` the
        longest row), ``"ragged"`` (a :class:`RaggedMDP`: rows bucketed by length, memory
        O(transitions)), or ``"auto"``: ragged where padding would exceed twice the
        transitions plus rows (one state with many successors), else padded (an interval
        ``.tra`` alike: an :class:`IntervalMDP` or a :class:`RaggedIntervalMDP`). An ``.npz``
        holds its own layout (``row_ids`` and 1-D lists: ragged, see :func:`save_mdp`).

    Returns:
      A :class:`TabularMDP`, :class:`SparseMDP` or :class:`RaggedMDP`; for an interval
      ``.tra``, an :class:`IntervalMDP` over successor lists (padded) or a
      :class:`RaggedIntervalMDP` (ragged), as ``layout`` says.

    Raises:
      ValueError: one line naming the file (and line, for text files): unreadable or
        malformed files, a header that disagrees with the body, indices out of range, a
        reward file for another model, a model that is no DTMC or MDP, deadlocks (with
        ``deadlocks="error"``), an unknown or ambiguous reward structure, and every check of
        :func:`make_mdp` / :func:`make_sparse_mdp` (:func:`make_interval_mdp`: an interval
        outside ``[0, 1]`` or reversed, a row whose bounds hold no distribution, each named
        by its line).
    """
    path = Path(path)
    if path.suffix in (".tra", ".drn"):
        return _load_explicit(
            path, rewards, reward_structure, deadlocks, horizon, discount, initial_state, dtype,
            layout,
        )  # fmt: skip
    if rewards is not None or reward_structure is not None:
        raise ValueError(
            "rewards= and reward_structure= are for .tra/.drn files; an .npz has its rewards"
        )
    return _load_npz(path, horizon, discount, initial_state, dtype)


def load_labels(path, *, num_states: int | None = None) -> dict[str, np.ndarray]:
    """The labels of an explicit model: ``{name: bool[S]}``, in the file's order.

    Args:
      path: a PRISM ``.lab`` (``0="init" 1="deadlock" ...``, then ``state: label ...``) or a
        Storm ``.lab`` (``#DECLARATION`` names ``#END``, then ``state label ...``); or the
        ``.tra`` whose ``.lab`` lies beside it (without one: only ``init`` and ``deadlock``);
        or a ``.drn`` (its labels, in order of appearance; ``num_states`` is not used).
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
    if path.suffix == ".drn":
        return drn_labels(read_drn(path))
    lab = path.with_suffix(".lab") if path.suffix == ".tra" else path
    tra = lab.with_suffix(".tra")
    if path.suffix == ".tra" and not lab.is_file():
        names, entries = [], []  # no .lab: only the initial state and the deadlocks
    else:
        names, entries = read_labels(lab)
    explicit = None
    if tra.is_file() and (num_states is None or "deadlock" not in names):
        explicit = read_explicit(tra)
    if num_states is None:
        if explicit is None:
            raise ValueError(
                f"pass num_states= for {str(lab)!r}: no {tra.name!r} beside it gives the number "
                "of states"
            )
        num_states = explicit.num_states
    num_states = int(num_states)
    labels = label_arrays(lab, names, entries, num_states)
    if "init" not in labels:
        labels["init"] = np.arange(num_states) == 0
    if "deadlock" not in labels:
        dead = np.zeros(num_states, bool)
        if explicit is not None and explicit.num_states == num_states:
            dead[deadlock_states(explicit)] = True
        labels["deadlock"] = dead
    return labels


def read_model_npz(path: Path, flag: str = "path", *, metadata: bool = False) -> dict:
    """The model arrays of an ``.npz``; a release's metadata is checked, and loaded only with
    ``metadata``."""
    return read_npz(
        path,
        required=(),
        optional=NPZ_ARRAYS,
        ignored=RELEASE_METADATA,
        flag=flag,
        load_ignored=metadata,
    )


def release_record(path, arrays: dict | None = None) -> dict:
    """What a release of ``jaxprivmdp privatize`` records about itself: an ``.npz``'s
    record arrays, else the ``"metadata"`` of its sidecar ``<path>.json`` (a ``.drn`` or
    ``.tra`` release's, with the horizon and discount those formats cannot hold).

    Args:
      path: the model file.
      arrays: an ``.npz``'s arrays as ``read_model_npz(path, metadata=True)`` returned
        them (read here when None).

    Returns:
      The record (JSON values), ``{}`` for a file that is not a release.

    Raises:
      ValueError: an unreadable file or sidecar.
    """
    path = Path(path)
    record = {}
    if path.suffix not in (".drn", ".tra"):
        if arrays is None:
            arrays = read_model_npz(path, metadata=True)
        record = record_from_arrays(arrays)
        if "mechanism" in record:
            return record
    side = read_sidecar(path)
    return record if side is None else dict(side["metadata"])


def stored_scalars(arrays: dict, where_: str) -> dict:
    """The ``horizon``, ``discount`` and ``initial_state`` an ``.npz`` stores, as Python
    numbers (only those present).

    Raises:
      ValueError: one that is not a scalar, or an integer field that is not an integer.
    """
    out = {}
    for name in MODEL_SCALARS:
        if name not in arrays:
            continue
        a = arrays[name]
        kinds = "iuf" if name == "discount" else "iu"
        if a.ndim != 0 or a.dtype.kind not in kinds:
            what = "a number" if name == "discount" else "an integer"
            raise ValueError(
                f"{where_}: array {name!r} must be {what} (a 0-d array), got {a.dtype.name} of "
                f"shape {a.shape}"
            )
        out[name] = float(a) if name == "discount" else int(a)
    return out


def resolve_scalars(stored: dict, *, horizon, discount, initial_state) -> dict:
    """The model's ``horizon``, ``discount`` and ``initial_state``: each argument that is
    given, else the file's, else the default (no horizon; the discount of
    :func:`jaxprivmdp.models._dense.resolve_discount`; state 0)."""
    if horizon is None:
        horizon = stored.get("horizon")
    discount = resolve_discount(
        horizon, discount if discount is not None else stored.get("discount")
    )
    if initial_state is None:
        initial_state = stored.get("initial_state", 0)
    return dict(horizon=horizon, discount=discount, initial_state=initial_state)


def model_from_arrays(arrays: dict, where_: str, **fields) -> TabularMDP | SparseMDP:
    """A dense (``transitions``) or sparse (``next_states``, ``probs``) model from the
    arrays of an ``.npz``; ``fields``: ``horizon``, ``discount``, ``initial_state``,
    ``dtype`` (resolved). Errors start with ``where_``."""
    sparse = bool(set(SPARSE) & set(arrays))
    if sparse and "transitions" in arrays:
        raise ValueError(
            f"{where_} must hold either 'transitions' (dense) or 'next_states' and 'probs' "
            f"(sparse), got {sorted(arrays)}"
        )
    need = {"rewards", *(SPARSE if sparse else DENSE)}
    missing = need - set(arrays)
    if missing:
        raise ValueError(
            f"{where_} lacks array(s) {sorted(missing)}; it has {sorted(arrays)} (a model needs "
            "'transitions' and 'rewards', or 'next_states', 'probs' and 'rewards')"
        )
    kw = dict(
        terminal_reward=arrays.get("terminal_reward"),
        action_mask=arrays.get("action_mask"),
        support=arrays.get("support"),
        **fields,
    )
    try:
        if "row_ids" in arrays:
            return ragged_model(arrays, **kw)
        if sparse:
            return make_sparse_mdp(arrays["next_states"], arrays["probs"], arrays["rewards"], **kw)
        return make_mdp(arrays["transitions"], arrays["rewards"], **kw)
    except ValueError as e:
        raise ValueError(f"{where_}: {e}") from None


def _load_npz(path: Path, horizon, discount, initial_state, dtype) -> TabularMDP | SparseMDP:
    """A dense or sparse model in an ``.npz``, with the scalars it stores as defaults."""
    arrays = read_model_npz(path)
    fields = resolve_scalars(
        stored_scalars(arrays, where(path)),
        horizon=horizon,
        discount=discount,
        initial_state=initial_state,
    )
    return model_from_arrays(arrays, where(path), dtype=dtype, **fields)


def _load_explicit(
    path: Path,
    rewards,
    reward_structure,
    deadlocks,
    horizon,
    discount,
    initial_state,
    dtype,
    layout,
) -> SparseMDP | RaggedMDP | IntervalMDP | RaggedIntervalMDP:
    """A PRISM or Storm ``.tra``, its reward structure and (for ``s0``) the ``.lab`` beside it;
    or a DRN file (the arguments of :func:`load_mdp`, checked here)."""
    discount = resolve_discount(horizon, discount)
    if deadlocks not in DEADLOCKS:
        raise ValueError(f"deadlocks must be one of {DEADLOCKS}, got {deadlocks!r}")
    if path.suffix == ".drn" and rewards is not None:
        raise ValueError("rewards= is for .tra models; a .drn holds its own reward models")
    if path.suffix == ".drn":
        drn = read_drn(path)
        ex = fix_deadlocks(drn.explicit, deadlocks)
        layout = make_layout(ex, layout)
        r = drn_rewards(drn, reward_structure, layout.mask)
        if initial_state is None:
            initial_state = drn_initial_state(drn)
    else:
        kind = declared_interval(path)
        if kind is not None:  # PRISM's interval models (IMDPs, interval DTMCs)
            fields = dict(horizon=horizon, discount=discount, initial_state=initial_state)
            reward_files = (rewards, reward_structure)
            return load_interval(path, kind, reward_files, deadlocks, layout, dtype=dtype, **fields)
        ex = fix_deadlocks(read_transitions(path), deadlocks)
        layout = make_layout(ex, layout)
        r = read_rewards(ex, layout, pick_structure(path, rewards, reward_structure))
    try:
        return layout_model(
            layout,
            r,
            horizon=horizon,
            discount=discount,
            initial_state=(
                labelled_initial_state(path, ex.num_states)
                if initial_state is None
                else initial_state
            ),
            dtype=dtype,
        )
    except ValueError as e:
        raise ValueError(f"{where(path)}: {e}") from None
