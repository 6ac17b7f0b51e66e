"""The ``privatize`` command: a release of a user's MDP with any mechanism, its parameter
given or calibrated to a target (ε, δ), written with every public field and its guarantee.
"""

from __future__ import annotations

from pathlib import Path

from ..io.core import atomic_path
from ._accounting import private_row_sizes, release_guarantee, release_mechanism
from ._interrupts import guarded
from ._mdp_files import load_user_mdp
from ._objective import structure_choice
from ._terminal import note


def _public_fields(user, mdp) -> dict:
    """Everything public a release carries beside the privatized rows, exactly as given:
    rewards, terminal reward, action mask, initial state, and the horizon and discount the
    flags or the file declared (a model without them is released without them)."""
    import numpy as np

    arrays = user.arrays or {}
    public = {"action_mask": np.asarray(mdp.action_mask), "initial_state": mdp.initial_state}
    # An .npz's own rewards are kept bit for bit; a PRISM model's were read from its files.
    public["rewards"] = arrays.get("rewards", np.asarray(mdp.rewards))
    if "terminal_reward" in arrays:
        public["terminal_reward"] = arrays["terminal_reward"]
    elif user.horizon is not None:
        public["terminal_reward"] = np.asarray(mdp.terminal_reward)
    if user.horizon is not None:
        public["horizon"] = user.horizon
    if user.horizon is not None or user.discount is not None:
        public["discount"] = float(mdp.discount)
    return public


def _key(args):
    """An OS-entropy key; from ``--seed`` a guessable one, for tests and CI only."""
    import jax

    from ..mechanisms import secure_key

    return secure_key() if args.seed is None else jax.random.key(args.seed)


def _private_model(args, mdp, mech):
    """The privatized model (OS-entropy key unless ``--seed``)."""
    from ..mechanisms import privatize
    from ..models import RaggedMDP, SparseMDP

    key = _key(args)
    if isinstance(mdp, RaggedMDP | SparseMDP):  # privatized over their listed successors
        return guarded(privatize, key, mdp, mech)
    return guarded(privatize, key, mdp, mech, support=args.support, smoothing=args.smoothing)


def _private_rows(mdp, private) -> dict:
    """The privatized rows and the public support they were privatized over."""
    import numpy as np

    from ..models import RaggedMDP, SparseMDP
    from ..models.core import transition_lists

    if isinstance(mdp, RaggedMDP):  # its transition lists, as save_mdp writes them
        rid, nxt, p = transition_lists(private)
        return {"row_ids": rid, "next_states": nxt, "probs": p, "support": np.ones(rid.size, bool)}
    if isinstance(mdp, SparseMDP):
        return {
            "next_states": np.asarray(mdp.next_states),
            "probs": np.asarray(private.probs),
            # The lists are the public support: a listed entry the noise set to 0 stays.
            "support": np.asarray(mdp.next_states) >= 0,
        }
    # The support it was privatized over is public structure: the support-aware sets need it.
    return {"transitions": np.asarray(private.transitions), "support": np.asarray(private.support)}


def cmd_privatize(args) -> list[Path]:
    """A release: privatize a user's MDP with OS-entropy randomness; never write the input.

    ``--out`` ending in ``.drn`` or ``.tra``: the released model in Storm's or PRISM's
    explicit format, with the input's labels and the release's metadata in ``<out>.json``;
    any other name: an ``.npz`` holding both.
    """
    user = load_user_mdp(args, validation_only=True)
    mdp = user.mdp
    mech = release_mechanism(args, mdp)
    g = release_guarantee(args, mdp, mech)
    meta = release_metadata(args, g, mech, private_row_sizes(args, mdp))
    private = _private_model(args, mdp, mech)
    public = _public_fields(user, mdp)
    if args.out.suffix in EXPLICIT_SUFFIXES:
        files = _write_explicit_release(args, private, meta, public)
    else:
        files = _write_release(args, meta, _private_rows(mdp, private), public)
    _report(args, g, mech)
    return files


# The formats PRISM and Storm read; a release in one has its metadata in a JSON sidecar.
EXPLICIT_SUFFIXES = (".drn", ".tra")


def release_metadata(args, g, mech, row_sizes: list[list[int]]) -> dict:
    """What a release records beside the model, one dict for the ``.npz`` (an array each)
    and the JSON sidecar: the mechanism and its parameter (under its own name), the (ε, δ)
    it buys, the adjacency (``b``, ``eta``, ``adjacency``), ``support_option`` and
    ``smoothing`` as given, ``private_row_sizes`` (``[[n, count], ...]``, public structure),
    the target ε when calibrated, and ``randomness`` (``"secure"``, or ``"seed"`` with the
    seed: reproducible, not private)."""
    meta = {
        "mechanism": mech.name,
        mech.parameter_name(): float(mech.parameter),
        "epsilon": g.epsilon,
        "delta": g.delta,
        "b": args.b,
        "adjacency": args.adjacency,
        "randomness": "secure" if args.seed is None else "seed",
        "private_row_sizes": row_sizes,
    }
    eta = args.eta if args.eta is not None else args.smoothing
    if eta is not None:
        meta["eta"] = eta
    if args.support is not None:
        meta["support_option"] = args.support
    if args.smoothing is not None:
        meta["smoothing"] = args.smoothing
    if args.epsilon is not None:
        meta["target_epsilon"] = args.epsilon
    if args.seed is not None:  # recorded: this release's noise is reproducible, not private
        meta["seed"] = args.seed
    return meta


def _write_release(args, meta: dict, rows: dict, public: dict) -> list[Path]:
    """The release file: the privatized rows, the public parts and the metadata."""
    import numpy as np

    arrays = dict(meta)
    arrays["private_row_sizes"] = np.asarray(meta["private_row_sizes"], np.int64).reshape(-1, 2)
    with atomic_path(args.out) as tmp, tmp.open("wb") as f:
        np.savez(f, **rows, **public, **arrays)
    return [args.out]


def _write_explicit_release(args, private, meta: dict, public: dict) -> list[Path]:
    """The released model as ``.drn`` or ``.tra`` (with ``.lab``, ``.srew``, ``.trew``),
    the input's labels (public structure) and its reward structure's name, and the
    metadata (with the horizon and discount the formats cannot hold) in ``<out>.json``."""
    from ..io import load_labels, save_mdp
    from ..io.core import reward_structure_name, sidecar_path

    labels = None
    if args.mdp.suffix in EXPLICIT_SUFFIXES:
        labels = {k: v for k, v in load_labels(args.mdp).items() if k != "init"}
    name = reward_structure_name(args.mdp, structure_choice(args))
    scalars = {k: public[k] for k in ("horizon", "discount") if k in public}
    scalars = {k: (int(v) if k == "horizon" else float(v)) for k, v in scalars.items()}
    save_mdp(args.out, private, labels=labels, reward_name=name, metadata={**meta, **scalars})
    files = [args.out, sidecar_path(args.out)]
    if args.out.suffix == ".tra":
        files[1:1] = [args.out.with_suffix(s) for s in (".lab", ".srew", ".trew")]
    return files


def _report(args, g, mech) -> None:
    print(
        f"privatized {g.num_rows} rows with the {mech.name} mechanism, "
        f"{mech.parameter_name()} = {float(mech.parameter):.6g}: ({g.epsilon:.6g}, "
        f"{g.delta:.3g})-DP for {args.adjacency} adjacency, b = {args.b}"
    )
    if args.seed is not None:
        note(f"warning: --seed {args.seed}: reproducible noise, for tests only; not private")
