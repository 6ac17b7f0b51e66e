"""The privacy guarantees the commands compute and record, with errors that name the flag."""

from __future__ import annotations

from typing import NamedTuple

PRIVACY_B = 0.1
PRIVACY_DELTA = 1e-3


def accounting(flag: str, k: float, compute):
    """Runs a privacy computation for one ``k``; its errors name ``flag`` and the value.

    A numerical failure (the library's series may not converge for huge ``k``) becomes a
    ValueError too. Rows with zeros keep their own error, whose message names other flags.
    """
    from ..models.core import ZeroEntryError

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


def sweep_guarantees(
    mdp,
    ks,
    *,
    mechanism: str = "dirichlet",
    support=None,
    b=PRIVACY_B,
    target_delta=PRIVACY_DELTA,
) -> dict:
    """The (ε, δ) that each grid value of a sweep buys, for one-row adjacency (recorded in the
    JSON): the Dirichlet mechanism's over the model's rows, the additive ones' per row."""

    from .. import privacy
    from ..mechanisms.core import mechanism_class
    from ..privacy import Adjacency

    cls = mechanism_class(mechanism)
    if cls.name != "dirichlet":
        per_k = []
        for k in ks:
            g = accounting(
                "--ks", k, lambda k=k: cls(k).guarantee(Adjacency(b), delta=target_delta)
            )
            per_k.append({"k": float(k), "epsilon": g.epsilon, "delta": g.delta})
        return {
            "assumptions": (
                f"b = {b}; the {cls.name} mechanism with {cls.parameter_name()} = k; target "
                f"delta = {target_delta}; adjacency = one row differs"
            ),
            "per_k": per_k,
        }
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
                k, mdp, Adjacency(b), target_delta=target_delta, support=support
            ),
        )
        out["per_k"].append({"k": float(k), "epsilon": g.epsilon, "delta": g.delta})
    return out


def command_guarantee(args, mdp, k):
    """The guarantee of privatizing ``mdp`` with ``k`` under the command's privacy options."""

    from .. import privacy
    from ..models import RaggedMDP, SparseMDP
    from ..privacy import Adjacency

    adjacency = Adjacency(args.b, args.eta, args.adjacency)
    if isinstance(mdp, SparseMDP | RaggedMDP):  # successor lists carry their own support
        return accounting(
            "--k",
            k,
            lambda: privacy.mdp_guarantee(k, mdp, adjacency, target_delta=args.delta),
        )
    return accounting(
        "--k",
        k,
        lambda: privacy.mdp_guarantee(
            k,
            mdp,
            adjacency,
            target_delta=args.delta,
            support=args.support,
            smoothing=args.smoothing,
        ),
    )


# --------------------------------------------------------------------------- releases


class ReleaseGuarantee(NamedTuple):
    """A release's (ε, δ) for its adjacency, over its ``num_rows`` privatized rows."""

    epsilon: float
    delta: float
    num_rows: int


def _privatized_rows(args, mdp) -> tuple[int, list[int]]:
    """``(R, dims)``: the rows the mechanism changes (the library's one count,
    :func:`jaxprivmdp.models._support.private_rows`; a ragged model's bucket by bucket) and
    their sizes."""
    import numpy as np

    from ..models import RaggedMDP
    from ..models.core import model_mechanism_input, private_rows
    from ..privacy.core import ragged_rows

    support, smoothing = getattr(args, "support", None), getattr(args, "smoothing", None)
    if isinstance(mdp, RaggedMDP):
        sizes = ragged_rows(mdp, support, smoothing).sizes
    else:
        rows_in = model_mechanism_input(mdp, support, smoothing, interior=False)
        sizes = np.asarray(rows_in.support).sum(-1)[private_rows(rows_in)]
    return int(sizes.size), sorted({int(n) for n in sizes})


def release_mechanism(args, mdp):
    """The mechanism of a release: its parameter as given, or the least-noise one meeting
    ``--epsilon``/``--delta`` (per row; with ``--adjacency all``, ``(ε/R, δ/R)`` per row,
    so that basic composition over the ``R`` rows meets the target)."""
    from ..mechanisms.core import mechanism_class
    from ..privacy import Adjacency

    cls = mechanism_class(args.mechanism)
    if args.epsilon is None:
        return cls(getattr(args, cls.parameter_name()))
    num_rows, dims = _privatized_rows(args, mdp)
    if num_rows == 0:
        raise ValueError(
            f"--epsilon: --mdp {str(args.mdp)!r} has no row with two or more entries to "
            "privatize, so there is nothing to calibrate"
        )
    split = num_rows if args.adjacency == "all" else 1
    eps, delta = args.epsilon / split, args.delta / split
    eta = args.eta if args.eta is not None else args.smoothing
    try:
        if cls.name == "dirichlet":  # the largest k that meets the target for every size
            ks = [cls.calibrate(eps, delta, Adjacency(args.b, eta), n=n).k for n in dims]
            return cls(min(ks))
        return cls.calibrate(eps, delta, Adjacency(args.b))
    except ValueError as e:
        why = str(e)
        if cls.name == "dirichlet":  # its ε has a floor as k -> 0: say where it lies
            floor = max(cls.floor(delta, Adjacency(args.b, eta), n=n) for n in dims) * split
            why = f"the smallest ε it reaches here is about {floor:.4g}"
        rows = f" over {num_rows} rows" if split > 1 else ""
        raise ValueError(
            f"--epsilon {args.epsilon:g} at --delta {args.delta:g} cannot be reached by the "
            f"{cls.name} mechanism for {args.adjacency} adjacency{rows} ({why}); try a larger "
            "--epsilon or another --mechanism"
        ) from None


def release_guarantee(args, mdp, mech) -> ReleaseGuarantee:
    """The release's (ε, δ) for ``--adjacency``: the Dirichlet mechanism's from
    :func:`jaxprivmdp.privacy.mdp_guarantee`; an additive one's per row, or by basic
    composition over the privatized rows (each at ``δ/R``) for ``all``.

    Raises:
      ValueError: a calibrated mechanism whose guarantee misses ``--epsilon``.
    """
    from ..privacy import Adjacency

    if mech.name == "dirichlet":
        g = command_guarantee(args, mdp, float(mech.k))
        out = ReleaseGuarantee(g.epsilon, g.delta, g.num_rows)
    else:
        num_rows, _ = _privatized_rows(args, mdp)
        split = max(num_rows, 1) if args.adjacency == "all" else 1
        g = mech.guarantee(Adjacency(args.b), delta=args.delta / split)
        rows = split if args.adjacency == "all" else 1
        out = ReleaseGuarantee(rows * g.epsilon, rows * g.delta, num_rows)
        if num_rows == 0:
            out = ReleaseGuarantee(0.0, 0.0, 0)
    if args.epsilon is not None and out.epsilon > args.epsilon * (1 + 1e-9):
        raise ValueError(
            f"--epsilon {args.epsilon:g}: the calibrated {mech.name} mechanism gives "
            f"ε = {out.epsilon:.6g}; not released"
        )
    return out
