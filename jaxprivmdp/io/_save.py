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

from pathlib import Path

import numpy as np

from .._checks import working_dtype
from ..models.core import (
    RaggedMDP,
    TabularMDP,
    check_mask,
    check_model,
    ragged_from_lists,
    transition_lists,
    validate_model_fields,
)
from ._export import write_explicit
from ._files import atomic_path


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


def save_mdp(path, mdp, *, labels=None, reward_name=None) -> Path:
    """Writes ``mdp`` (dense, sparse or ragged) to ``path``, atomically (all files or none).

    ``.drn``: Storm's DRN; ``.tra``: PRISM's explicit files, the ``.tra`` and beside it the
    ``.lab``, ``.srew`` and ``.trew`` of the same stem (see :mod:`jaxprivmdp.io._export` for
    what these formats hold: not the discount, horizon or terminal reward). Any other name:
    an ``.npz`` with the model's scalars. ``load_mdp(path)`` returns the same model (from a
    ``.tra`` or ``.drn``: the same values as a sparse model).

    Args:
      labels: ``.drn``/``.tra`` only: ``{name: bool[S]}`` to write (e.g. from
        :func:`load_labels`); ``init`` is always the model's initial state.
      reward_name: ``.drn``/``.tra`` only: the name of the reward structure written.

    Returns the path.
    """
    path = Path(path)
    if path.suffix in (".drn", ".tra"):
        return write_explicit(path, mdp, labels, reward_name)
    if labels is not None or reward_name is not None:
        raise ValueError("labels= and reward_name= are for .drn and .tra files")
    arrays = model_arrays(mdp)
    with atomic_path(path) as tmp, tmp.open("wb") as f:
        np.savez(f, **arrays)
    return path


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
