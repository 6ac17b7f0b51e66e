"""Command-line interface: ``jaxprivmdp reproduce | sweep | privacy | privatize``.

Every command validates its inputs and reports a bad argument or file as a one-line error
(exit status 2), never a traceback.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

PAPER_KS = (1, 5, 10, 15, 20, 25, 30, 35, 40)


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _progress(label: str):
    start = time.perf_counter()

    def report(done: int, total: int) -> None:
        _log(f"  [{label}] {done}/{total} runs  {time.perf_counter() - start:6.1f} s")

    return report


def _sweep_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, default=Path("results"), help="output folder")
    p.add_argument("--seed", type=int, default=0, help="PRNG seed (experiments only)")
    p.add_argument("--trials", type=int, default=50, help="trials per k (default 50)")
    p.add_argument("--ks", type=float, nargs="+", default=list(PAPER_KS), help="grid of k")
    p.add_argument("--beta", type=float, default=0.1, help="β of Lemma 1 (default 0.1)")
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    p.add_argument("--sampler", choices=("fast", "jax"), default="fast", help="gamma sampler")
    p.add_argument("--batch-size", type=int, default=None, help="runs per chunk (memory)")


def _setup(args) -> None:
    import jax

    if args.dtype == "float64":
        jax.config.update("jax_enable_x64", True)


def _run_sweeps(args, mdps: dict, supports: dict, stem: str, extra_meta: dict) -> list[Path]:
    import jax
    import numpy as np

    from . import _report, sweep

    if args.trials < 2:
        raise ValueError(f"--trials must be >= 2 to report a standard deviation, got {args.trials}")
    start = time.perf_counter()
    key = jax.random.key(args.seed)
    tables, timings = {}, {}
    for i, (name, mdp) in enumerate(mdps.items()):
        t0 = time.perf_counter()
        _log(f"{name}: S={mdp.num_states}, A={mdp.num_actions}, horizon={mdp.horizon}")
        result = sweep(
            jax.random.fold_in(key, i),
            mdp,
            ks=args.ks,
            num_trials=args.trials,
            beta=args.beta,
            support=supports.get(name),
            batch_size=args.batch_size,
            sampler=args.sampler,
            progress=_progress(name),
        )
        tables[name] = _report.summarize(result)
        not_converged = int((~np.asarray(result.converged)).sum())
        if not_converged:
            _log(
                f"  warning: {not_converged} run(s) did not reach the value-iteration tolerance "
                "(their policies may not be ε-optimal; the bounds stay valid)"
            )
        timings[name] = round(time.perf_counter() - t0, 3)
    meta = {
        "command": " ".join(["jaxprivmdp"] + sys.argv[1:]),
        "seed": args.seed,
        "trials": args.trials,
        "ks": list(args.ks),
        "beta": args.beta,
        "dtype": args.dtype,
        "sampler": args.sampler,
        "wall_time_s": None,
        "wall_time_per_sweep_s": timings,
        "environment": _report.environment(),
        **extra_meta,
    }
    stem_path = args.out / stem
    figs = _report.plot_sweeps(tables, stem_path, beta=args.beta, trials=args.trials)
    meta["wall_time_s"] = round(time.perf_counter() - start, 3)
    files = _report.write_tables(stem_path, tables, meta) + figs
    _print_table(tables)
    return files


def _print_table(tables: dict) -> None:
    cols = ("pessimistic", "private_value", "true_value", "optimistic", "cost")
    for name, rows in tables.items():
        print(f"\n{name}  (mean over trials; non-private optimum {rows[0]['optimal_value']:.4f})")
        print("     k " + "".join(f"{c:>15}" for c in cols))
        for r in rows:
            print(f"{r['k']:6g} " + "".join(f"{r[c + '_mean']:15.4f}" for c in cols))


def cmd_reproduce(args) -> list[Path]:
    """Figure 1 of the paper: both examples over the grid of k."""
    import jax

    from . import examples

    dtype = args.dtype
    mdps = {
        "Example 1 (investment)": examples.investment(dtype=dtype),
        "Example 2 (random, S=20, A=5, T=10)": examples.random_mdp(jax.random.key(0), dtype=dtype),
    }
    supports = {"Example 1 (investment)": "nonzero"}
    meta = {
        "examples": {"Example 2": "examples.random_mdp(jax.random.key(0))"},
        "privacy": {
            name: _guarantees(mdp, args.ks, support=supports.get(name))
            for name, mdp in mdps.items()
        },
    }
    return _run_sweeps(args, mdps, supports, "figure1", meta)


PRIVACY_B = 0.1
PRIVACY_DELTA = 1e-3


def _guarantees(mdp, ks, *, support=None, b=PRIVACY_B, target_delta=PRIVACY_DELTA) -> dict:
    """The (ε, δ) that each k of a sweep buys, for one-row adjacency (recorded in the JSON)."""
    import numpy as np

    from . import privacy

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
        g = privacy.mdp_guarantee(
            k, P, b=b, target_delta=target_delta, action_mask=mask, support=support
        )
        out["per_k"].append({"k": float(k), "epsilon": g.epsilon, "delta": g.delta})
    return out


RELEASE_METADATA = ("k", "epsilon", "delta", "b", "adjacency", "eta")


def load_npz_mdp(path: Path, *, horizon, discount, initial_state, dtype):
    """Reads an MDP from ``.npz`` (``transitions``, ``rewards``, optional ``terminal_reward``
    and ``action_mask``) and validates it with :func:`make_mdp`."""
    import numpy as np

    from . import make_mdp

    if not path.is_file():
        raise ValueError(f"--mdp: no such file {str(path)!r}")
    try:
        data = np.load(path, allow_pickle=False)
    except Exception as e:
        raise ValueError(f"--mdp: {str(path)!r} is not a readable .npz file ({e})") from None
    with data:
        names = set(data.files)
        missing = {"transitions", "rewards"} - names
        if missing:
            raise ValueError(
                f"--mdp: {str(path)!r} lacks array(s) {sorted(missing)}; it has {sorted(names)}"
            )
        # `jaxprivmdp privatize` stores its guarantee beside the arrays; those are fine here.
        unknown = names - {"transitions", "rewards", "terminal_reward", "action_mask"}
        unknown -= set(RELEASE_METADATA)
        if unknown:
            raise ValueError(f"--mdp: unknown array(s) {sorted(unknown)} in {str(path)!r}")
        arrays = {n: data[n] for n in names}
    return make_mdp(
        arrays["transitions"],
        arrays["rewards"],
        terminal_reward=arrays.get("terminal_reward"),
        action_mask=arrays.get("action_mask"),
        horizon=horizon,
        discount=discount,
        initial_state=initial_state,
        dtype=dtype,
    )


def _mdp_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mdp", type=Path, required=True, help=".npz with transitions, rewards, ...")
    p.add_argument("--horizon", type=int, default=None, help="T (omit for infinite horizon)")
    p.add_argument("--discount", type=float, default=None, help="γ (default 1, or 0.95 if T unset)")
    p.add_argument("--initial-state", type=int, default=0)
    p.add_argument("--support", choices=("nonzero",), default=None, help="privatize nonzeros only")


def _load_user_mdp(args):
    discount = args.discount if args.discount is not None else (1.0 if args.horizon else 0.95)
    return load_npz_mdp(
        args.mdp,
        horizon=args.horizon,
        discount=discount,
        initial_state=args.initial_state,
        dtype=getattr(args, "dtype", None),
    )


def cmd_sweep(args) -> list[Path]:
    """The same sweep, figure and table on a user's MDP."""
    mdp = _load_user_mdp(args)
    name = args.mdp.stem
    return _run_sweeps(args, {name: mdp}, {name: args.support}, "sweep", {"mdp": str(args.mdp)})


def _mdp_guarantee(args, mdp, k):
    """The guarantee of privatizing ``mdp`` with ``k`` under the command's privacy options."""
    import numpy as np

    from . import privacy

    return privacy.mdp_guarantee(
        k,
        np.asarray(mdp.transitions),
        b=args.b,
        eta=args.eta,
        target_delta=args.delta,
        action_mask=np.asarray(mdp.action_mask),
        support=args.support,
        smoothing=args.smoothing,
        adjacency=args.adjacency,
    )


def cmd_privacy(args) -> list[Path]:
    """The (ε, δ) each k buys: a table on the terminal, a plot and a JSON in --out."""
    import json

    from . import privacy

    if args.mdp is not None:
        mdp = _load_user_mdp(args)
        rows = []
        for k in args.k:
            g = _mdp_guarantee(args, mdp, k)
            rows.append({"k": k, "epsilon": g.epsilon, "delta": g.delta, "rows": g.num_rows})
        what = f"MDP {args.mdp} ({args.adjacency} adjacency, {rows[0]['rows']} private rows)"
        if args.eta is None:
            _log("note: eta derived from the data (row minima); pass --eta for a public bound")
    else:
        if args.n is None or args.eta is None:
            raise ValueError("give --n and --eta (one row), or --mdp FILE.npz")
        gs = [
            privacy.guarantee(k, b=args.b, eta=args.eta, n=args.n, target_delta=args.delta)
            for k in args.k
        ]
        print(privacy.format_table(gs))
        rows = [
            {"k": g.k, "epsilon": g.epsilon, "delta": g.delta, "log_gamma": g.log_gamma} for g in gs
        ]
        what = f"one row: n = {args.n}, eta = {args.eta}"
    print(f"\n{what}; b = {args.b}, target delta = {args.delta}")
    print(f"{'k':>10} {'epsilon':>14} {'delta':>12}")
    for r in rows:
        print(f"{r['k']:10g} {r['epsilon']:14.6g} {r['delta']:12.3g}")
    args.out.mkdir(parents=True, exist_ok=True)
    meta = {k: v for k, v in vars(args).items() if k not in ("func", "out", "mdp", "command")}
    meta["mdp"] = None if args.mdp is None else str(args.mdp)
    json_path = args.out / "privacy.json"
    json_path.write_text(json.dumps({**meta, "guarantees": rows}, indent=2) + "\n")
    return [json_path, _plot_epsilon(rows, args.out / "privacy_epsilon.png", what)]


def _plot_epsilon(rows, path: Path, title: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.6), constrained_layout=True)
    ax.plot([r["k"] for r in rows], [r["epsilon"] for r in rows], marker="o")
    ax.set_xlabel("$k$ (larger = weaker privacy)")
    ax.set_ylabel(r"$\epsilon$ at the target $\delta$")
    ax.set_title(title, fontsize=8)
    ax.grid(alpha=0.3)
    fig.savefig(path, dpi=150)
    plt.close(fig)
    return path


def cmd_privatize(args) -> list[Path]:
    """A release: privatize a user's MDP with OS-entropy randomness; never write the input."""
    import numpy as np

    from . import dirichlet_mechanism, secure_key

    if args.eta is None and args.smoothing is None:
        raise ValueError(
            "a release needs a public lower bound on the rows: pass --eta (or --smoothing, "
            "which implies it); an eta derived from the data would leak the data"
        )
    mdp = _load_user_mdp(args)
    if args.out.exists() and not args.force:
        raise ValueError(f"--out {str(args.out)!r} exists; pass --force to overwrite")
    g = _mdp_guarantee(args, mdp, args.k)
    private = dirichlet_mechanism(
        secure_key(),
        mdp.transitions,
        args.k,
        action_mask=mdp.action_mask,
        support=args.support,
        smoothing=args.smoothing,
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("wb") as f:
        np.savez(
            f,
            transitions=np.asarray(private),
            rewards=np.asarray(mdp.rewards),
            terminal_reward=np.asarray(mdp.terminal_reward),
            action_mask=np.asarray(mdp.action_mask),
            k=args.k,
            epsilon=g.epsilon,
            delta=g.delta,
            b=args.b,
            adjacency=args.adjacency,
            eta=args.eta if args.eta is not None else args.smoothing,
        )
    print(
        f"privatized {g.num_rows} rows with k = {args.k}: ({g.epsilon:.6g}, {g.delta:.3g})-DP "
        f"for {args.adjacency} adjacency, b = {args.b}"
    )
    return [args.out]


def _privacy_options(p: argparse.ArgumentParser, *, many_k: bool) -> None:
    if many_k:
        p.add_argument("--k", type=float, nargs="+", required=True, help="values of k")
    else:
        p.add_argument("--k", type=float, required=True, help="the mechanism's k")
    p.add_argument("--b", type=float, default=0.1, help="adjacency bound b in (0, 1]")
    p.add_argument("--eta", type=float, default=None, help="public lower bound on row entries")
    p.add_argument("--delta", type=float, default=1e-3, help="target delta")
    p.add_argument("--adjacency", choices=("row", "all"), default="row")
    p.add_argument("--smoothing", type=float, default=None, help="mix rows with uniform")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jaxprivmdp", description="Privacy-preserving policy synthesis in MDPs (JAX)."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("reproduce", help="reproduce the paper's Figure 1 into --out")
    _sweep_options(p)
    p.set_defaults(func=cmd_reproduce)
    p = sub.add_parser("sweep", help="Figure-1-style sweep on your own MDP (.npz)")
    _mdp_options(p)
    _sweep_options(p)
    p.set_defaults(func=cmd_sweep)
    p = sub.add_parser("privacy", help="(epsilon, delta) per k: table, plot, JSON")
    _privacy_options(p, many_k=True)
    p.add_argument("--n", type=int, default=None, help="row dimension (without --mdp)")
    p.add_argument("--mdp", type=Path, default=None, help="or: account for a whole MDP (.npz)")
    p.add_argument("--horizon", type=int, default=None)
    p.add_argument("--discount", type=float, default=None)
    p.add_argument("--initial-state", type=int, default=0)
    p.add_argument("--support", choices=("nonzero",), default=None)
    p.add_argument("--out", type=Path, default=Path("results"), help="output folder")
    p.set_defaults(func=cmd_privacy)
    p = sub.add_parser("privatize", help="release a privatized MDP (OS-entropy randomness)")
    _mdp_options(p)
    _privacy_options(p, many_k=False)
    p.add_argument("--out", type=Path, required=True, help="output .npz (private data only)")
    p.add_argument("--force", action="store_true", help="overwrite --out")
    p.set_defaults(func=cmd_privatize)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if hasattr(args, "dtype"):
        _setup(args)
    try:
        files = args.func(args)
    except (ValueError, OSError) as e:
        print(f"jaxprivmdp {args.command}: error: {e}", file=sys.stderr)
        return 2
    for f in files:
        _log(f"wrote {f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
