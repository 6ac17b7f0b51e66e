"""The privacy guarantees the commands compute and record, with errors that name the flag."""

from __future__ import annotations

PRIVACY_B = 0.1
PRIVACY_DELTA = 1e-3


def accounting(flag: str, k: float, compute):
    """Runs a privacy computation for one ``k``; its errors name ``flag`` and the value.

    A numerical failure (the library's series may not converge for huge ``k``) becomes a
    ValueError too. Rows with zeros keep their own error, whose message names other flags.
    """
    from ..models._support import ZeroEntryError

    try:
        return compute()
    except ZeroEntryError:
        raise
    except ValueError as e:
        raise ValueError(f"privacy accounting at {flag} {k:g}: {e}") from None
    except (RuntimeError, OverflowError) as e:
        raise ValueError(
            f"privacy accounting at {flag} {k:g} failed ({e}); use a smaller k"
        ) from None


def sweep_guarantees(mdp, ks, *, support=None, b=PRIVACY_B, target_delta=PRIVACY_DELTA) -> dict:
    """The (ε, δ) that each k of a sweep buys, for one-row adjacency (recorded in the JSON)."""
    import numpy as np

    from .. import privacy

    P, mask = np.asarray(mdp.transitions), np.asarray(mdp.action_mask)
    out = {
        "assumptions": (
            f"b = {b}; eta = each row's smallest entry on its support (data-derived: the "
            f"examples are public); target delta = {target_delta}; adjacency = one row "
            "differs (see jaxprivmdp.privacy.mdp_guarantee)"
        ),
        "per_k": [],
    }
    for k in ks:
        g = accounting(
            "--ks",
            k,
            lambda k=k: privacy.mdp_guarantee(
                k, P, b=b, target_delta=target_delta, action_mask=mask, support=support
            ),
        )
        out["per_k"].append({"k": float(k), "epsilon": g.epsilon, "delta": g.delta})
    return out


def command_guarantee(args, mdp, k):
    """The guarantee of privatizing ``mdp`` with ``k`` under the command's privacy options."""
    import numpy as np

    from .. import privacy
    from ..models import SparseMDP

    if isinstance(mdp, SparseMDP):  # successor lists carry their own support and mask
        return accounting(
            "--k",
            k,
            lambda: privacy.mdp_guarantee(
                k, mdp, b=args.b, eta=args.eta, target_delta=args.delta, adjacency=args.adjacency
            ),
        )
    return accounting(
        "--k",
        k,
        lambda: privacy.mdp_guarantee(
            k,
            np.asarray(mdp.transitions),
            b=args.b,
            eta=args.eta,
            target_delta=args.delta,
            action_mask=np.asarray(mdp.action_mask),
            support=args.support,
            smoothing=args.smoothing,
            adjacency=args.adjacency,
        ),
    )
