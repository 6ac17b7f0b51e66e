"""Writing a model to an ``.npz`` that :func:`~jaxprivmdp.io.load_mdp` reads back (or, by
its suffix, to PRISM's explicit files or Storm's DRN: :mod:`._export`).

Dense models store ``transitions`` `[S, A, S]`, padded sparse ones ``next_states`` and
``probs`` `[S, A, K]`, ragged ones (:class:`~jaxprivmdp.models._ragged.RaggedMDP`) their
transition lists: ``row_ids`` (``s·A + a``), ``next_states`` and ``probs``, all `[N]`, and
``support`` `[N]` (every listed entry, so that a release's zeros stay listed). Each stores
``rewards``, ``terminal_reward``, ``action_mask``, ``support`` where the model has one, and
its ``horizon`` (when finite), ``discount`` and ``initial_state``.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from .._checks import working_dtype
from .._version import __version__
from ..models.core import (
    INTERVAL_MODELS,
    RaggedMDP,
    TabularMDP,
    check_mask,
    check_model,
    ragged_from_lists,
    transition_lists,
    validate_model_fields,
)
from ._export import write_explicit
from ._files import atomic_outputs, sidecar_path


def model_arrays(mdp) -> dict[str, np.ndarray]:
    """The arrays :func:`save_mdp` writes for ``mdp``."""
    check_model(mdp)
    if isinstance(mdp, RaggedMDP):
        rid, nxt, p = transition_lists(mdp)
        out = dict(row_ids=rid, next_states=nxt, probs=p, support=np.ones(rid.size, bool))
    elif isinstance(mdp, TabularMDP):
        out = dict(transitions=np.asarray(mdp.transitions))
        if mdp.support is not None:
            out["support"] = np.asarray(mdp.support)
    else:
        out = dict(next_states=np.asarray(mdp.next_states), probs=np.asarray(mdp.probs))
        out["support"] = out["next_states"] >= 0
    out.update(
        rewards=np.asarray(mdp.rewards),
        terminal_reward=np.asarray(mdp.terminal_reward),
        action_mask=np.asarray(mdp.action_mask),
        discount=np.asarray(mdp.discount),
        initial_state=np.asarray(mdp.initial_state),
    )
    if mdp.horizon is not None:
        out["horizon"] = np.asarray(mdp.horizon)
    return out


def save_mdp(path, mdp, *, labels=None, reward_name=None, metadata=None) -> Path:
    """Writes ``mdp`` (dense, sparse or ragged) to ``path``, atomically (all files or none).

    ``.drn``: Storm's DRN; ``.tra``: PRISM's explicit files, the ``.tra`` and beside it the
    ``.lab``, ``.srew`` and ``.trew`` of the same stem (see :mod:`jaxprivmdp.io._export` for
    what these formats hold: not the discount, horizon or terminal reward). Any other name:
    an ``.npz`` with the model's scalars. ``load_mdp(path)`` returns the same model (from a
    ``.tra`` or ``.drn``: the same values as a sparse model). An :class:`IntervalMDP` or a
    :class:`RaggedIntervalMDP` is written as PRISM's explicit interval files only (``.tra``:
    ``s c t [lower,upper]`` lines, an interval DTMC's ``s t [lower,upper]`` where ``A ==
    1``; see :mod:`jaxprivmdp.io._interval_files`); ``load_mdp`` reads back the same bounds.

    With ``metadata`` (e.g. a release's mechanism, parameter and guarantee), a JSON sidecar
    ``<path>.json`` (``release.drn.json``) is written with the model's files: an object
    with ``"metadata"`` (the dict as given), ``"model"`` (its layout, ``num_states``,
    ``num_actions`` and ``initial_state``), ``"file"``, ``"jaxprivmdp"`` (the library's
    version) and ``"written"`` (UTC, ISO 8601). ``jaxprivmdp privacy`` reads a release's
    sidecar to account it.

    Args:
      path: the file to write; its suffix picks the format.
      mdp: a :class:`TabularMDP`, :class:`SparseMDP`, :class:`RaggedMDP` or (``.tra``
        only) :class:`IntervalMDP` or :class:`RaggedIntervalMDP`.
      labels: ``.drn``/``.tra`` only: ``{name: bool[S]}`` to write (e.g. from
        :func:`load_labels`); ``init`` is always the model's initial state.
      reward_name: ``.drn``/``.tra`` only: the name of the reward structure written.
      metadata: a dict of JSON values (strings, finite numbers, booleans, None, lists,
        dicts; NumPy scalars and arrays are converted) to write beside the model.

    Returns:
      The path.

    Raises:
      TypeError: ``metadata`` that is not a dict of JSON values.
      ValueError: a model, label or name the format cannot hold (an interval model in any
        file but a ``.tra``); ``labels``/``reward_name`` for an ``.npz``; a non-finite
        number in ``metadata``.
    """
    path = Path(path)
    if isinstance(mdp, INTERVAL_MODELS) and path.suffix != ".tra":
        raise ValueError(
            f"{str(path)!r}: an interval model is written as PRISM's explicit files (an "
            "IMDP or interval DTMC .tra with its .lab, .srew and .trew): give a .tra path"
        )
    sidecar = None if metadata is None else _sidecar_text(path, mdp, metadata)
    if path.suffix in (".drn", ".tra"):
        return write_explicit(path, mdp, labels, reward_name, sidecar)
    if labels is not None or reward_name is not None:
        raise ValueError("labels= and reward_name= are for .drn and .tra files")
    arrays = model_arrays(mdp)
    with atomic_outputs() as stage:
        with stage(path).open("wb") as f:
            np.savez(f, **arrays)
        if sidecar is not None:
            stage(sidecar_path(path)).write_text(sidecar)
    return path


def _json_value(x):
    if isinstance(x, np.ndarray | np.generic):
        return x.tolist()
    raise TypeError(f"{type(x).__name__} is not a JSON value")


def _sidecar_text(path: Path, mdp, metadata) -> str:
    """The JSON sidecar of :func:`save_mdp`."""
    if not isinstance(metadata, Mapping):
        raise TypeError(f"metadata must be a dict, got {type(metadata).__name__}")
    if not isinstance(mdp, INTERVAL_MODELS):
        check_model(mdp)
    body = {
        "file": path.name,
        "jaxprivmdp": __version__,
        "written": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "model": {
            "layout": type(mdp).__name__,
            "num_states": int(mdp.num_states),
            "num_actions": int(mdp.num_actions),
            "initial_state": int(mdp.initial_state),
        },
        "metadata": dict(metadata),
    }
    try:
        return json.dumps(body, indent=2, allow_nan=False, default=_json_value) + "\n"
    except TypeError as e:
        raise TypeError(f"metadata must hold JSON values: {e}") from None
    except ValueError as e:  # NaN or infinity: not JSON
        raise ValueError(f"metadata must hold finite numbers: {e}") from None


def ragged_model(arrays: dict, *, terminal_reward, action_mask, support, **fields) -> RaggedMDP:
    """The :class:`RaggedMDP` of an ``.npz``'s ``row_ids``, ``next_states``, ``probs`` (`[N]`)
    and ``rewards``; ``fields``: ``horizon``, ``discount``, ``initial_state``, ``dtype``."""
    missing = {"next_states", "probs", "rewards"} - set(arrays)
    if missing:
        raise ValueError(f"row_ids (a ragged model) needs array(s) {sorted(missing)} too")
    r = np.asarray(arrays["rewards"])
    if r.ndim != 2:
        raise ValueError(f"rewards must have shape [S, A], got {r.shape}")
    mask = check_mask(action_mask, *r.shape)
    checked = validate_model_fields(
        *r.shape,
        r,
        terminal_reward,
        fields["horizon"],
        fields["discount"],
        fields["initial_state"],
        working_dtype(fields["dtype"]),
    )
    return ragged_from_lists(
        arrays["row_ids"], arrays["next_states"], arrays["probs"], mask, checked, support
    )
