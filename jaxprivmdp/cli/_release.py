"""The ``privatize`` command: a release of a user's MDP with any mechanism, its parameter
given or calibrated to a target (ε, δ), written with every public field and its guarantee.
"""

from __future__ import annotations

from pathlib import Path

from ..io.core import atomic_path
from ._accounting import release_guarantee, release_mechanism
from ._interrupts import guarded
from ._mdp_files import load_user_mdp
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


def _private_rows(args, mdp, mech) -> dict:
    """The privatized rows (OS-entropy key unless ``--seed``) and the public support they
    were privatized over."""
    import numpy as np

    from ..mechanisms import privatize
    from ..models import RaggedMDP, SparseMDP
    from ..models.core import transition_lists

    key = _key(args)
    if isinstance(mdp, RaggedMDP):  # its transition lists, as save_mdp writes them
        rid, nxt, p = transition_lists(guarded(privatize, key, mdp, mech))
        return {"row_ids": rid, "next_states": nxt, "probs": p, "support": np.ones(rid.size, bool)}
    if isinstance(mdp, SparseMDP):
        private = guarded(privatize, key, mdp, mech)
        return {
            "next_states": np.asarray(mdp.next_states),
            "probs": np.asarray(private.probs),
            # The lists are the public support: a listed entry the noise set to 0 stays.
            "support": np.asarray(mdp.next_states) >= 0,
        }
    private = guarded(privatize, key, mdp, mech, support=args.support, smoothing=args.smoothing)
    # The support it was privatized over is public structure: the support-aware sets need it.
    return {"transitions": np.asarray(private.transitions), "support": np.asarray(private.support)}


def cmd_privatize(args) -> list[Path]:
    """A release: privatize a user's MDP with OS-entropy randomness; never write the input."""
    user = load_user_mdp(args, validation_only=True)
    mdp = user.mdp
    mech = release_mechanism(args, mdp)
    g = release_guarantee(args, mdp, mech)
    rows = _private_rows(args, mdp, mech)
    return _write_release(args, g, mech, rows, _public_fields(user, mdp))


def _write_release(args, g, mech, rows: dict, public: dict) -> list[Path]:
    """The release file: the privatized rows, the public parts and the guarantee."""
    import numpy as np

    meta = {
        "mechanism": mech.name,
        mech.parameter_name(): float(mech.parameter),
        "epsilon": g.epsilon,
        "delta": g.delta,
        "b": args.b,
        "adjacency": args.adjacency,
    }
    eta = args.eta if args.eta is not None else args.smoothing
    if eta is not None:
        meta["eta"] = eta
    if args.epsilon is not None:
        meta["target_epsilon"] = args.epsilon
    if args.seed is not None:  # recorded: this release's noise is reproducible, not private
        meta["seed"] = args.seed
    with atomic_path(args.out) as tmp, tmp.open("wb") as f:
        np.savez(f, **rows, **public, **meta)
    print(
        f"privatized {g.num_rows} rows with the {mech.name} mechanism, "
        f"{mech.parameter_name()} = {float(mech.parameter):.6g}: ({g.epsilon:.6g}, "
        f"{g.delta:.3g})-DP for {args.adjacency} adjacency, b = {args.b}"
    )
    if args.seed is not None:
        note(f"warning: --seed {args.seed}: reproducible noise, for tests only; not private")
    return [args.out]
