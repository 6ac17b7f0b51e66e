"""``privacy RELEASE ...``: several releases of one private MDP and their composition.

Each release file of ``privatize`` records what its accounting needs: the mechanism and its
parameter, the adjacency (``b``, ``eta``, ``adjacency``), the smoothing and the support size
of every private row (``private_row_sizes``): an ``.npz`` as arrays beside the model, a
``.drn``/``.tra`` in its ``<file>.json`` sidecar. The files must be releases of one model
(the same ``S`` and ``A``) under one adjacency (or ``--b``/``--eta``/``--adjacency`` state
one for all); :class:`jaxprivmdp.privacy.Accountant` composes them by Rényi DP.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

from ..io.core import atomic_outputs, json_number
from ._accounting import plot_epsilon
from ._interrupts import writing


class ReleaseFile(NamedTuple):
    """A release read back: its file, record (``metadata``), ``(S, A)`` and rows' sizes."""

    path: Path
    record: dict
    shape: tuple[int, int]
    row_sizes: list[list[int]]


def _npz_row_sizes(arrays: dict) -> list[list[int]]:
    """The rows' sizes of a release written before it recorded them, from its arrays (an
    ``.npz`` keeps the support the rows were privatized over, zeros included)."""
    import numpy as np

    mask = np.asarray(arrays.get("action_mask", np.ones(arrays["rewards"].shape, bool)), bool)
    if "row_ids" in arrays:
        listed = np.asarray(arrays.get("support", np.ones(arrays["row_ids"].shape, bool)), bool)
        n = np.bincount(arrays["row_ids"][listed], minlength=mask.size).reshape(mask.shape)
    elif "transitions" in arrays:
        n = np.asarray(arrays.get("support", arrays["transitions"] > 0), bool).sum(-1)
    else:
        n = (np.asarray(arrays["next_states"]) >= 0).sum(-1)
    sizes, counts = np.unique(n[mask & (n >= 2)], return_counts=True)
    return [[int(a), int(c)] for a, c in zip(sizes, counts, strict=True)]


def read_release(path: Path) -> ReleaseFile:
    """A release file: an ``.npz`` of ``privatize`` (or one whose record is in a sidecar), or
    a ``.drn``/``.tra`` with its ``<file>.json``; its record read by the one reader of
    release records (:func:`jaxprivmdp.io.core.release_record`).

    Raises:
      ValueError: one line naming the file: unreadable, or not a release.
    """
    from ..io.core import read_model_npz, read_sidecar, release_record, sidecar_path

    where = repr(str(path))
    if not path.is_file():
        raise ValueError(f"release {where}: no such file")
    if path.suffix not in (".drn", ".tra"):
        arrays = read_model_npz(path, f"release {where}", metadata=True)
        record = release_record(path, arrays)
        rewards = arrays.get("rewards")
        if rewards is None or rewards.ndim != 2:
            raise ValueError(f"release {where} holds no rewards [S, A]: not a release")
        shape = tuple(int(d) for d in rewards.shape)
        if "private_row_sizes" not in record and "mechanism" in record:
            record["private_row_sizes"] = _npz_row_sizes(arrays)
    else:
        side = read_sidecar(path)
        if side is None:
            raise ValueError(
                f"release {where} has no {str(sidecar_path(path))!r} beside it: its mechanism "
                "is unknown (privatize --out FILE.drn writes one)"
            )
        record = release_record(path)
        model = side.get("model", {})
        shape = (int(model.get("num_states", -1)), int(model.get("num_actions", -1)))
    if "mechanism" not in record:
        raise ValueError(f"release {where} records no mechanism: not a release of privatize")
    sizes = record.get("private_row_sizes")
    if sizes is None:
        raise ValueError(
            f"release {where} records no private_row_sizes ([[n, rows], ...]): its rows' "
            "support cannot be read from the released model, whose zeros hide it"
        )
    return ReleaseFile(path, record, shape, [[int(n), int(c)] for n, c in sizes])


def _release(rf: ReleaseFile):
    """The :class:`~jaxprivmdp.privacy.Release` of a file: its mechanism over its rows."""
    import numpy as np

    from ..mechanisms.core import mechanism_class
    from ..privacy.core import PrivateRows, release_of_rows

    cls = mechanism_class(rf.record["mechanism"])
    name = cls.parameter_name()
    if name not in rf.record:
        raise ValueError(f"release {str(rf.path)!r} records no {name} of its {cls.name} mechanism")
    sizes = np.repeat(
        np.array([n for n, _ in rf.row_sizes], np.int64),
        np.array([c for _, c in rf.row_sizes], np.int64),
    ).astype(np.int64)
    zeros = np.zeros(sizes.size, np.int64)
    # The rows' own entries are not in the file: what is known of them is the eta they were
    # verified against when privatized (none recorded: nothing, and no eta above 0 holds).
    eta = rf.record.get("eta")
    minima = np.full(sizes.size, 0.0 if eta is None else float(eta))
    rows = PrivateRows(zeros, zeros, sizes, minima, rf.shape)
    return release_of_rows(cls(float(rf.record[name])), rows, rf.record.get("smoothing"))


def _one(files: list[ReleaseFile], field: str, flag: str, given):
    """The value every file records for ``field``, or ``given``."""
    if given is not None:
        return given
    seen = {}
    for rf in files:
        seen.setdefault(rf.record.get(field), rf.path)
    if len(seen) > 1:
        (a, pa), (b, pb) = list(seen.items())[:2]
        raise ValueError(
            f"release {str(pa)!r} records {field} {a!r} but {str(pb)!r} records {b!r}: one "
            f"composition holds one adjacency; pass {flag} to account them all under one"
        )
    return next(iter(seen), None)


def _check_eta(rf: ReleaseFile, given: float | None) -> None:
    """Refuses an η the Dirichlet release ``rf`` was not verified at.

    ``privatize`` checked the true rows against the recorded ``eta`` (no entry below it);
    the file does not hold those rows, so no larger η can be checked now, and a guarantee
    at one would be claimed for rows that may lie outside its domain.
    """
    recorded, where = rf.record.get("eta"), repr(str(rf.path))
    if recorded is None:
        raise ValueError(
            f"release {where} records no eta (the public lower bound its rows were verified "
            "against when privatized), and the file does not hold the true rows to verify "
            "one now (privatize --eta ETA records one; privacy --mdp TRUE --k K --eta ETA "
            "accounts one release from the true model)"
        )
    if given is not None and given > float(recorded):
        raise ValueError(
            f"--eta {given:g} is above the eta {float(recorded):g} that release {where} "
            f"records: its rows were verified to have no entry below {float(recorded):g} "
            "when privatized, and the file does not hold them to verify a larger one; give "
            f"--eta <= {float(recorded):g}, or none"
        )


def _adjacency(args, files: list[ReleaseFile]):
    from ..privacy import Adjacency

    b = _one(files, "b", "--b", args.b)
    scope = _one(files, "adjacency", "--adjacency", args.adjacency)
    dirichlet = [rf for rf in files if rf.record["mechanism"] == "dirichlet"]
    for rf in dirichlet:
        _check_eta(rf, args.eta)
    eta = _one(dirichlet, "eta", "--eta", args.eta)
    shapes = {rf.shape: rf.path for rf in files}
    if len(shapes) > 1:
        (a, pa), (c, pc) = list(shapes.items())[:2]
        raise ValueError(
            f"release {str(pa)!r} is of a model of (S, A) = {a} but {str(pc)!r} of {c}: a "
            "composition is about releases of one model"
        )
    return Adjacency(0.1 if b is None else float(b), eta, "row" if scope is None else scope)


def cmd_privacy_releases(args) -> list[Path]:
    """The composition of ``args.releases``: a table per release and one (ε, δ) for all."""
    from ..privacy import Accountant

    files = [read_release(p) for p in args.releases]
    adjacency = _adjacency(args, files)
    ledger = Accountant(adjacency)
    rows = []
    for rf in files:
        try:
            release = _release(rf)
            alone = Accountant(adjacency).compose(release).get_epsilon(args.delta)
            ledger.compose(release)
        except ValueError as e:
            raise ValueError(f"release {str(rf.path)!r}: {e}") from None
        mech = release.mechanism
        rows.append(
            {
                "file": str(rf.path),
                "mechanism": mech.name,
                mech.parameter_name(): float(mech.parameter),
                "recorded_epsilon": rf.record.get("epsilon"),
                "recorded_delta": rf.record.get("delta"),
                "epsilon": alone,
                "composed_epsilon": ledger.get_epsilon(args.delta),
            }
        )
    total = rows[-1]["composed_epsilon"]
    _print(rows, adjacency, args.delta, total)
    summary = {
        "releases": rows,
        "adjacency": {"b": adjacency.b, "eta": adjacency.eta, "scope": adjacency.scope},
        "delta": args.delta,
        "epsilon": json_number(total),
        "num_releases": len(rows),
        "method": "Rényi-DP composition (jaxprivmdp.privacy.Accountant)",
    }
    for r in rows:
        for field in ("epsilon", "composed_epsilon"):
            r[field] = json_number(r[field])
    json_path, plot_path = args.out / "privacy.json", args.out / "privacy_epsilon.png"
    with atomic_outputs() as stage, writing():
        text = json.dumps(summary, indent=2, allow_nan=False)
        stage(json_path).write_text(text + "\n")
        plot_epsilon(
            list(range(1, len(rows) + 1)),
            [r["composed_epsilon"] for r in rows],
            stage(plot_path),
            labels=(
                "releases composed",
                rf"$\epsilon$ at $\delta$ = {args.delta:g}",
                f"composition, {adjacency.scope} adjacency, b = {adjacency.b:g}",
            ),
        )
    return [json_path, plot_path]


def _print(rows, adjacency, delta: float, total: float) -> None:
    def parameter(r):
        name = next(k for k in ("k", "sigma", "scale") if k in r)
        return f"{name} = {r[name]:.6g}"

    def recorded(r):
        e, d = r["recorded_epsilon"], r["recorded_delta"]
        return "-" if e is None else f"({e:.4g}, {d:.3g})"

    print(f"at δ = {delta:g} (--delta): each release alone, and composed with those above")
    print(
        f"{'release':<24} {'mechanism':<10} {'parameter':<14} {'recorded (ε, δ)':<18} "
        f"{'ε alone':>10} {'ε composed':>11}"
    )
    for r in rows:
        print(
            f"{Path(r['file']).name:<24} {r['mechanism']:<10} {parameter(r):<14} "
            f"{recorded(r):<18} {r['epsilon']:>10.5g} {r['composed_epsilon']:>11.5g}"
        )
    eta = "" if adjacency.eta is None else f", eta = {adjacency.eta:g}"
    print(
        f"\n{len(rows)} release(s), {adjacency.scope} adjacency, b = {adjacency.b:g}{eta}: "
        f"(ε, δ) = ({total:.6g}, {delta:g}) for all of them (Rényi-DP composition)"
    )
