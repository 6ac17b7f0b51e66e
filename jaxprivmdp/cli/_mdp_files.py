"""The command line's ``--mdp``: reading and validating the user's model.

``.npz`` files (dense or sparse, and releases with the scalars they store) are read here with
the flag in every message; PRISM/Storm ``.tra`` and Storm ``.drn`` files go through
:func:`jaxprivmdp.load_mdp`.

The planning horizon is never guessed (one rule for every command that plans): ``--horizon
T`` (γ = 1 unless ``--discount``) or ``--discount γ < 1`` (an infinite horizon), each taken
from the ``.npz`` when it records them (a release does) and the flag is not given.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from ..io.core import model_from_arrays, read_model_npz, release_record, stored_scalars
from ._args import ONE_OVER_N_RTOL
from ._objective import structure_choice


class UserModel(NamedTuple):
    """The ``--mdp`` model.

    Attributes:
      mdp: the validated model.
      arrays: an ``.npz``'s arrays as stored (None for a ``.tra`` or ``.drn``).
      horizon, discount: what the flags or the file declare (None where neither does); a
        command that only privatizes validates the model with placeholders for them.
    """

    mdp: object
    arrays: dict | None
    horizon: int | None
    discount: float | None


def _where(path: Path) -> str:
    return f"--mdp {str(path)!r}"


def _num_states(arrays: dict) -> int:
    for name in ("transitions", "next_states", "rewards"):
        if name in arrays and arrays[name].ndim:
            return arrays[name].shape[0]
    return 0


def load_npz_mdp(path: Path, *, horizon, discount, initial_state, dtype, arrays=None):
    """Reads an MDP from ``.npz`` and validates it with :func:`jaxprivmdp.make_mdp` (or
    :func:`jaxprivmdp.make_sparse_mdp` for successor lists).

    Args:
      path: the file, with arrays ``transitions`` `[S, A, S]` (or ``next_states`` and
        ``probs`` `[S, A, K]`), ``rewards`` `[S, A]` and optionally ``terminal_reward``
        `[S]`, ``action_mask`` `[S, A]`, ``support``, and the scalars and metadata that
        ``privatize`` writes.
      horizon, discount, initial_state, dtype: resolved, as in :func:`jaxprivmdp.make_mdp`.
      arrays: the arrays of ``path`` if already read.

    Returns:
      The validated model.

    Raises:
      ValueError: one line naming ``--mdp`` and the file (see
        :func:`jaxprivmdp.io._files.read_npz` for the file checks), or the problem the model's
        constructor found.
    """
    if arrays is None:
        arrays = read_model_npz(path, "--mdp")
    num_states = _num_states(arrays)
    if initial_state >= num_states > 0:
        raise ValueError(
            f"--initial-state {initial_state} is not a state of {_where(path)} (S = {num_states})"
        )
    try:
        return model_from_arrays(
            arrays,
            _where(path),
            horizon=horizon,
            discount=discount,
            initial_state=initial_state,
            dtype=dtype,
        )
    except ValueError as e:
        # float16 keeps about 3 significant digits: the likely cause of a row sum that is off.
        half = sorted(n for n, a in arrays.items() if a.dtype.name == "float16")
        note = f" (note: {', '.join(half)} stored as float16)" if half else ""
        raise ValueError(f"{e}{note}") from None


def _load_explicit(args, horizon, discount, validation_only):
    """A PRISM/Storm ``.tra`` (its ``.lab``'s init is ``s0`` unless ``--initial-state``) or a
    Storm ``.drn`` (its ``init`` label)."""
    from ..io import load_mdp

    try:
        return load_mdp(
            args.mdp,
            horizon=horizon,
            discount=discount,
            initial_state=args.initial_state,
            reward_structure=structure_choice(args),
            deadlocks=args.deadlocks,
            dtype=getattr(args, "dtype", None),
        )
    except ValueError as e:
        raise ValueError(f"--mdp: {e}") from None


def _planning_horizon(args, horizon, discount) -> None:
    """The one rule: a command that plans needs a declared horizon or a discount < 1."""
    if horizon is None and discount is None:
        raise ValueError(
            f"give --horizon T (a finite horizon; γ = 1 unless --discount) or --discount γ < 1 "
            f"(an infinite horizon): --mdp {str(args.mdp)!r} records neither"
        )
    if horizon is None and discount >= 1:
        raise ValueError(
            f"--mdp {str(args.mdp)!r} records discount {discount:g} without a horizon: give "
            "--horizon T, or --discount γ < 1"
        )


def _sidecar_scalars(path: Path) -> dict:
    """The horizon and discount a ``.drn``/``.tra`` release's sidecar records (``{}`` for a
    file that is no release)."""
    record = release_record(path)
    if "mechanism" not in record:
        return {}
    kinds = {"horizon": int, "discount": float}
    return {k: cast(record[k]) for k, cast in kinds.items() if record.get(k) is not None}


def load_user_mdp(args, *, validation_only: bool = False, metadata: bool = False) -> UserModel:
    """``--mdp`` as a :class:`UserModel`; with ``validation_only`` no horizon is needed.

    ``privacy`` and ``privatize`` only privatize transitions: there, without a declared
    horizon the file is validated as a one-stage MDP, which accepts every terminal reward
    and discount an MDP of any horizon could have. With ``metadata``, an ``.npz``'s arrays
    include a release's record of its mechanism and guarantee.

    Raises:
      ValueError: one line naming the flag: the file's problems, an ``--initial-state`` out
        of range, no declared horizon or discount (commands that plan), a ``--smoothing``
        above ``1/S``.
    """
    path = args.mdp
    arrays, stored = None, {}
    if path.suffix not in (".tra", ".drn"):
        arrays = read_model_npz(path, "--mdp", metadata=metadata)
        stored = stored_scalars(arrays, _where(path))
    else:  # a release's sidecar holds the horizon and discount the format cannot
        stored = _sidecar_scalars(path)
    sparse = arrays is None or "next_states" in arrays
    options = (getattr(args, "support", None), getattr(args, "smoothing", None))
    if validation_only and sparse and options != (None, None):
        raise ValueError(
            "a sparse --mdp is privatized over its listed successors: --support and "
            "--smoothing do not apply"
        )
    horizon = args.horizon if args.horizon is not None else stored.get("horizon")
    discount = args.discount if args.discount is not None else stored.get("discount")
    declared = UserModel(None, arrays, horizon, discount)
    if validation_only:
        horizon = 1 if horizon is None else horizon
    else:
        _planning_horizon(args, horizon, discount)
    if discount is None:
        discount = 1.0  # with a horizon (the rule above): undiscounted
    if arrays is None:
        mdp = _load_explicit(args, horizon, discount, validation_only)
    else:
        s0 = args.initial_state if args.initial_state is not None else stored.get("initial_state")
        mdp = load_npz_mdp(
            path,
            horizon=horizon,
            discount=discount,
            initial_state=0 if s0 is None else s0,
            dtype=getattr(args, "dtype", None),
            arrays=arrays,
        )
    smoothing = getattr(args, "smoothing", None)
    if smoothing is not None and smoothing * mdp.num_states > 1 + ONE_OVER_N_RTOL:
        raise ValueError(
            f"--smoothing {smoothing:g} exceeds 1/S = {1 / mdp.num_states:.6g} for the "
            f"S = {mdp.num_states} states of --mdp {str(path)!r}"
        )
    return declared._replace(mdp=mdp)


def model_fields(mdp) -> dict:
    """What a model's numbers are about, resolved: recorded in every output JSON."""
    return {
        "num_states": mdp.num_states,
        "num_actions": mdp.num_actions,
        "horizon": mdp.horizon,
        "discount": float(mdp.discount),
        "initial_state": mdp.initial_state,
    }
