"""The ``privacy`` command: the (ε, δ) each k buys (a table, a plot, a JSON), or the
composition of release files (``_ledger``); the release command ``privatize`` lives in
``_release``.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..io.core import atomic_outputs
from ._accounting import accounting, command_guarantee, plot_epsilon
from ._args import ONE_OVER_N_RTOL
from ._interrupts import writing
from ._ledger import cmd_privacy_releases
from ._mdp_files import load_user_mdp
from ._terminal import format_table, note


def _one_row(args) -> tuple[list[dict], str, dict]:
    """Guarantees of one row of ``--n`` entries; ``--smoothing`` as in ``mdp_guarantee``."""
    from .. import privacy

    n, smoothing = args.n, args.smoothing
    eta = args.eta if args.eta is not None else smoothing  # smoothing's public lower bound
    # Smoothing mixes p with the uniform row: b-adjacent rows stay adjacent with a smaller b,
    # and at smoothing = 1/n the output no longer depends on the data at all.
    data_free = smoothing is not None and smoothing * n >= 1 - ONE_OVER_N_RTOL
    b = args.b if smoothing is None else max(args.b * (1 - n * smoothing), 0.0)
    if data_free:
        b = 0.0
        note(
            f"note: --smoothing {smoothing:g} = 1/n turns every row into the uniform row: ε = 0 "
            "because the output does not depend on the data (nor tells anything about it)"
        )
    elif eta * n >= 1 - ONE_OVER_N_RTOL:
        eta = 1.0 / n  # 0.333333333333333 means 1/3: its ε is 0, not 2e-14
        note(
            f"note: --eta {eta:g} = 1/n leaves only the uniform row in the domain (entries >= "
            "eta that sum to 1), so there is no other row to protect: the guarantee is "
            "vacuous (ε = 0 trivially)"
        )
    rows = []
    for k in args.k:
        if data_free:
            rows.append({"k": k, "epsilon": 0.0, "delta": 0.0, "log_gamma": None})
            continue
        g = accounting(
            "--k",
            k,
            lambda k=k: privacy.guarantee(
                k, privacy.Adjacency(b, eta), n=n, target_delta=args.delta
            ),
        )
        rows.append({"k": g.k, "epsilon": g.epsilon, "delta": g.delta, "log_gamma": g.log_gamma})
    print(format_table(rows))
    what = f"one row: n = {n}, eta = {eta:g}"
    if smoothing is not None:
        what += f", smoothing = {smoothing:g} (effective b = {b:g})"
    return rows, what, {"effective_b": b, "effective_eta": eta}


def cmd_privacy(args) -> list[Path]:
    """The (ε, δ) each k buys: a table on the terminal, a plot and a JSON in --out; or, given
    release files, their composition (``_ledger``)."""
    if args.releases:
        return cmd_privacy_releases(args)
    extra = {}
    if args.mdp is not None:
        mdp = load_user_mdp(args, validation_only=True).mdp
        rows = []
        for k in args.k:
            g = command_guarantee(args, mdp, k)
            rows.append({"k": k, "epsilon": g.epsilon, "delta": g.delta, "rows": g.num_rows})
        what = f"MDP {args.mdp} ({args.adjacency} adjacency, {rows[0]['rows']} private rows)"
    else:
        rows, what, extra = _one_row(args)
    print(f"\n{what}; b = {args.b}, target delta = {args.delta}")
    print(f"{'k':>10} {'epsilon':>14} {'delta':>12}")
    for r in rows:
        print(f"{r['k']:10g} {r['epsilon']:14.6g} {r['delta']:12.3g}")
    skip = ("out", "mdp", "command", "releases")
    meta = {k: v for k, v in vars(args).items() if k not in skip}
    meta["mdp"] = None if args.mdp is None else str(args.mdp)
    json_path = args.out / "privacy.json"
    plot_path = args.out / "privacy_epsilon.png"
    with atomic_outputs() as stage, writing():
        text = json.dumps({**meta, **extra, "guarantees": rows}, indent=2, allow_nan=False)
        stage(json_path).write_text(text + "\n")
        plot_epsilon(
            [r["k"] for r in rows],
            [r["epsilon"] for r in rows],
            stage(plot_path),
            labels=("$k$ (larger = weaker privacy)", r"$\epsilon$ at the target $\delta$", what),
        )
    return [json_path, plot_path]
