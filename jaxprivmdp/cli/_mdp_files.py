"""The command line's ``--mdp``: reading and validating the user's model.

Dense ``.npz`` files are read here with the flag in every message; sparse ``.npz`` files and
PRISM ``.tra`` files go through :func:`jaxprivmdp.load_mdp`.
"""

from __future__ import annotations

from pathlib import Path

from ..io._files import read_npz
from ..io._load import RELEASE_METADATA
from ._args import ONE_OVER_N_RTOL


def _read_mdp_arrays(path: Path) -> dict:
    return read_npz(
        path,
        required=("transitions", "rewards"),
        optional=("terminal_reward", "action_mask", "support"),
        ignored=RELEASE_METADATA,
    )


def load_npz_mdp(path: Path, *, horizon, discount, initial_state, dtype, arrays=None):
    """Reads an MDP from ``.npz`` and validates it with :func:`jaxprivmdp.make_mdp`.

    Args:
      path: the file, with arrays ``transitions`` `[S, A, S]`, ``rewards`` `[S, A]` and
        optionally ``terminal_reward`` `[S]`, ``action_mask`` `[S, A]` (and the metadata
        that ``privatize`` writes, which is ignored).
      horizon, discount, initial_state, dtype: as in :func:`jaxprivmdp.make_mdp`.
      arrays: the arrays of ``path`` if already read by :func:`read_npz`.

    Returns:
      The validated :class:`jaxprivmdp.TabularMDP`.

    Raises:
      ValueError: one line naming ``--mdp`` and the file (see :func:`jaxprivmdp.io._files.read_npz`
        for the file checks), or the problem :func:`jaxprivmdp.make_mdp` found.
    """
    from ..models import make_mdp

    if arrays is None:
        arrays = _read_mdp_arrays(path)
    where = f"--mdp {str(path)!r}"
    num_states = arrays["transitions"].shape[0] if arrays["transitions"].ndim else 0
    if initial_state >= num_states > 0:
        raise ValueError(
            f"--initial-state {initial_state} is not a state of {where} (S = {num_states})"
        )
    try:
        return make_mdp(
            arrays["transitions"],
            arrays["rewards"],
            terminal_reward=arrays.get("terminal_reward"),
            action_mask=arrays.get("action_mask"),
            support=arrays.get("support"),
            horizon=horizon,
            discount=discount,
            initial_state=initial_state,
            dtype=dtype,
        )
    except ValueError as e:
        # float16 keeps about 3 significant digits: the likely cause of a row sum that is off.
        half = sorted(n for n, a in arrays.items() if a.dtype.name == "float16")
        note = f" (note: {', '.join(half)} stored as float16)" if half else ""
        raise ValueError(f"{where}: {e}{note}") from None


def _holds_successor_lists(path: Path) -> bool:
    """An ``.npz`` whose members include ``next_states`` (a sparse model)."""
    import zipfile

    try:
        with zipfile.ZipFile(path) as zf:
            return "next_states.npy" in zf.namelist()
    except (OSError, zipfile.BadZipFile):
        return False  # the dense reader reports what is wrong with the file


def _structure(value: str | None) -> int | str | None:
    """``--reward-structure``: an index when it is a number, else a name."""
    return int(value) if value is not None and value.isdigit() else value


def _load_sparse_mdp(args, horizon, discount, validation_only):
    """A sparse model (PRISM/Storm ``.tra`` or successor lists in ``.npz``)."""
    from ..io import load_mdp

    is_tra = args.mdp.suffix == ".tra"
    if validation_only and (args.support is not None or args.smoothing is not None):
        raise ValueError(
            "a sparse --mdp is privatized over its listed successors: --support and "
            "--smoothing do not apply"
        )
    try:
        return load_mdp(
            args.mdp,
            horizon=horizon,
            discount=discount,
            initial_state=args.initial_state,
            reward_structure=_structure(args.reward_structure) if is_tra else None,
            deadlocks=args.deadlocks,
            dtype=getattr(args, "dtype", None),
        )
    except ValueError as e:
        raise ValueError(f"--mdp: {e}") from None


def load_user_mdp(args, *, validation_only: bool = False):
    """``--mdp`` as an MDP; with ``validation_only`` no horizon is needed.

    ``privacy`` and ``privatize`` only privatize transitions: there, without ``--horizon``
    the file is validated as a one-stage MDP, which accepts every terminal reward and
    discount an MDP of any horizon could have.
    """
    horizon = args.horizon
    if validation_only and horizon is None:
        horizon = 1
    discount = args.discount if args.discount is not None else (1.0 if horizon else 0.95)
    if args.mdp.suffix == ".tra" or _holds_successor_lists(args.mdp):
        return _load_sparse_mdp(args, horizon, discount, validation_only), None
    arrays = _read_mdp_arrays(args.mdp)
    mdp = load_npz_mdp(
        args.mdp,
        horizon=horizon,
        discount=discount,
        initial_state=0 if args.initial_state is None else args.initial_state,
        dtype=getattr(args, "dtype", None),
        arrays=arrays,
    )
    smoothing = getattr(args, "smoothing", None)
    if smoothing is not None and smoothing * mdp.num_states > 1 + ONE_OVER_N_RTOL:
        raise ValueError(
            f"--smoothing {smoothing:g} exceeds 1/S = {1 / mdp.num_states:.6g} for the "
            f"S = {mdp.num_states} states of --mdp {str(args.mdp)!r}"
        )
    return mdp, arrays
