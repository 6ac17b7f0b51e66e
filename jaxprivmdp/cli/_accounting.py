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


def plot_epsilon(x, y, path, *, labels: tuple[str, str, str]) -> object:
    """The ε of each ``x`` (a grid of k, or the releases composed so far) as a PNG at
    ``path``; ``labels``: the x axis's, the y axis's and the title. A None in ``y`` (no
    finite ε) leaves a gap."""
    import math

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.6), constrained_layout=True)
    ax.plot(x, [math.nan if v is None else v for v in y], marker="o")
    if all(isinstance(v, int) for v in x):  # a count: integer ticks
        ax.set_xticks(x)
    ax.set_xlabel(labels[0])
    ax.set_ylabel(labels[1])
    ax.set_title(labels[2], fontsize=8)
    ax.grid(alpha=0.3)
    try:
        fig.savefig(path, dpi=150, format="png")
    finally:
        plt.close(fig)
    return path


# --------------------------------------------------------------------------- releases


class ReleaseGuarantee(NamedTuple):
    """A release's (ε, δ) for its adjacency, over its ``num_rows`` privatized rows."""

    epsilon: float
    delta: float
    num_rows: int


def _row_sizes(args, mdp):
    """`[R]` the support size of each row the mechanism changes: the rows the library's
    accounting reads (:func:`jaxprivmdp.privacy.core.model_rows`), so that a release's
    record and its :class:`~jaxprivmdp.privacy.Release` count the same rows."""
    import numpy as np

    from ..privacy.core import model_rows

    support, smoothing = getattr(args, "support", None), getattr(args, "smoothing", None)
    return np.asarray(model_rows(mdp, support, smoothing).sizes)


def _privatized_rows(args, mdp) -> tuple[int, list[int]]:
    """``(R, dims)``: how many rows the mechanism changes and their distinct sizes."""
    sizes = _row_sizes(args, mdp)
    return int(sizes.size), sorted({int(n) for n in sizes})


def private_row_sizes(args, mdp) -> list[list[int]]:
    """``[[n, count], ...]``: how many private rows hold ``n`` entries, ascending in ``n``:
    the public structure a ledger needs to account a release later (its released rows'
    zeros, which the noise can set, no longer show it)."""
    import numpy as np

    n, counts = np.unique(_row_sizes(args, mdp), return_counts=True)
    return [[int(a), int(c)] for a, c in zip(n, counts, strict=True)]


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
