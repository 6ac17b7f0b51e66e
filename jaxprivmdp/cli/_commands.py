"""Command-line interface: ``jaxprivmdp reproduce | sweep | privacy | privatize``.

Every command validates its arguments before it reads or computes anything, and reports a
bad argument or file as a one-line error (exit status 2), never a traceback. Every file it
writes appears whole or not at all (see :func:`jaxprivmdp.io._files.atomic_outputs`).
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

from ..io._files import atomic_outputs, atomic_path
from ._args import ONE_OVER_N_RTOL, build_parser, check_args
from ._mdp_files import load_npz_mdp as load_npz_mdp
from ._mdp_files import load_user_mdp

PRIVACY_B = 0.1
PRIVACY_DELTA = 1e-3


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _progress(label: str):
    start = time.perf_counter()

    def report(done: int, total: int) -> None:
        _log(f"  [{label}] {done}/{total} runs  {time.perf_counter() - start:6.1f} s")

    return report


# --------------------------------------------------------------------------- accounting


def _accounting(flag: str, k: float, compute):
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


def _format_log10(log_value: float) -> str:
    """``exp(log_value)`` in scientific notation, also far below float64's range."""
    if not math.isfinite(log_value):
        return "nan" if math.isnan(log_value) else ("0" if log_value < 0 else "inf")
    exponent = log_value / math.log(10)
    e = math.floor(exponent)
    mantissa = 10 ** (exponent - e)
    if mantissa >= 9.995:
        mantissa, e = 1.0, e + 1
    return f"{mantissa:.2f}e{e:+d}"


def format_table(rows: list[dict]) -> str:
    """A plain-text table with columns ``k``, ``epsilon``, ``delta``, ``gamma``.

    Args:
      rows: dicts with ``k``, ``epsilon``, ``delta`` and ``log_gamma`` (None or NaN where
        there is no good set), one per line.

    Returns:
      The table as a string (no trailing newline).
    """
    lines = [f"{'k':>10}  {'epsilon':>12}  {'delta':>10}  {'gamma':>12}"]
    for r in rows:
        log_delta = math.log(r["delta"]) if r["delta"] > 0 else -math.inf
        log_gamma = math.nan if r["log_gamma"] is None else r["log_gamma"]
        lines.append(
            f"{r['k']:>10.4g}  {r['epsilon']:>12.6g}  {_format_log10(log_delta):>10}  "
            f"{_format_log10(log_gamma):>12}"
        )
    return "\n".join(lines)


def _guarantees(mdp, ks, *, support=None, b=PRIVACY_B, target_delta=PRIVACY_DELTA) -> dict:
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
        g = _accounting(
            "--ks",
            k,
            lambda k=k: privacy.mdp_guarantee(
                k, P, b=b, target_delta=target_delta, action_mask=mask, support=support
            ),
        )
        out["per_k"].append({"k": float(k), "epsilon": g.epsilon, "delta": g.delta})
    return out


def _mdp_guarantee(args, mdp, k):
    """The guarantee of privatizing ``mdp`` with ``k`` under the command's privacy options."""
    import numpy as np

    from .. import SparseMDP, privacy

    if isinstance(mdp, SparseMDP):  # successor lists carry their own support and mask
        return _accounting(
            "--k",
            k,
            lambda: privacy.mdp_guarantee(
                k, mdp, b=args.b, eta=args.eta, target_delta=args.delta, adjacency=args.adjacency
            ),
        )
    return _accounting(
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


# --------------------------------------------------------------------------- sweeps


def _setup(args) -> None:
    import jax

    if args.dtype == "float64":
        jax.config.update("jax_enable_x64", True)
    if getattr(args, "coordinator", None) is not None:
        # One sweep across processes (hosts): CPU processes talk through gloo.
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        jax.distributed.initialize(
            args.coordinator, num_processes=args.num_processes, process_id=args.process_id
        )


def _run_sweeps(args, mdps: dict, options: dict, stem: str, extra_meta: dict) -> list[Path]:
    import jax
    import numpy as np

    from .. import sweep
    from ..experiments import _report

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
            batch_size=args.batch_size,
            sampler=args.sampler,
            support_aware=args.support_aware,
            bound=args.bound,
            robust=args.robust,
            progress=_progress(name),
            **options.get(name, {}),
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
        "support_aware": args.support_aware,
        "bound": args.bound,
        "robust": args.robust,
        "wall_time_s": None,
        "wall_time_per_sweep_s": timings,
        "environment": _report.environment(),
        **extra_meta,
    }
    stem_path = args.out / stem
    if jax.process_index() != 0:  # every process has the results; process 0 writes them
        _log(f"process {jax.process_index()}: done (process 0 writes the outputs)")
        return []
    # All four files are staged and renamed together: never a figure without its table.
    with atomic_outputs() as stage:
        figs = _report.plot_sweeps(
            tables, stem_path, beta=args.beta, trials=args.trials, stage=stage
        )
        meta["wall_time_s"] = round(time.perf_counter() - start, 3)
        files = _report.write_tables(stem_path, tables, meta, stage=stage) + figs
    _print_table(tables)
    return files


def _print_table(tables: dict) -> None:
    cols = ("pessimistic", "private_value", "true_value", "optimistic", "cost")
    for name, rows in tables.items():
        print(f"\n{name}  (mean over trials; non-private optimum {rows[0]['optimal_value']:.4f})")
        robust = "robust_true_value_mean" in rows[0]
        extra = ("robust_pessimistic", "robust_true_value") if robust else ()
        widths = [max(15, len(c) + 2) for c in cols + extra]
        print("     k " + "".join(f"{c:>{w}}" for c, w in zip(cols + extra, widths, strict=True)))
        for r in rows:
            cells = "".join(
                f"{r[c + '_mean']:{w}.4f}" for c, w in zip(cols + extra, widths, strict=True)
            )
            print(f"{r['k']:6g} {cells}   {r['covered_fraction']:7.3f}")


def cmd_reproduce(args) -> list[Path]:
    """Figure 1 of the paper: both examples over the grid of k."""
    import jax

    from ..models import examples

    dtype = args.dtype
    mdps = {
        "Example 1 (investment)": examples.investment(dtype=dtype),
        "Example 2 (random, S=20, A=5, T=10)": examples.random_mdp(jax.random.key(0), dtype=dtype),
    }
    options = {"Example 1 (investment)": {"support": "nonzero"}}
    meta = {
        "examples": {"Example 2": "examples.random_mdp(jax.random.key(0))"},
        "privacy": {
            name: _guarantees(mdp, args.ks, **options.get(name, {})) for name, mdp in mdps.items()
        },
    }
    return _run_sweeps(args, mdps, options, "figure1", meta)


def cmd_sweep(args) -> list[Path]:
    """The same sweep, figure and table on a user's MDP."""
    mdp, _ = load_user_mdp(args)
    name = args.mdp.stem
    options = {name: {"support": args.support, "smoothing": args.smoothing}}
    return _run_sweeps(args, {name: mdp}, options, "sweep", {"mdp": str(args.mdp)})


# --------------------------------------------------------------------------- frontier


def _frontier_mdp(args):
    """``--example`` or ``--mdp``, and the mechanism's ``support`` option for it."""
    import jax

    from ..models import examples

    if args.mdp is not None:
        mdp, _ = load_user_mdp(args)
        return args.mdp.stem, mdp, args.support
    if args.example == "1":
        return "Example 1 (investment)", examples.investment(dtype=args.dtype), "nonzero"
    if args.example == "2":
        mdp = examples.random_mdp(jax.random.key(0), dtype=args.dtype)
        return "Example 2 (random, S=20, A=5, T=10)", mdp, None
    grid = examples.gridworld(20, 20, horizon=60, discount=1.0, dtype=args.dtype)
    return "20x20 gridworld (T=60)", grid, None


def cmd_frontier(args) -> list[Path]:
    """Every mechanism calibrated to each target (ε, δ): value, bounds, cost; figure + tables."""
    import jax

    from ..experiments import _report
    from ..experiments._frontier import frontier

    start = time.perf_counter()
    name, mdp, support = _frontier_mdp(args)
    _log(f"{name}: S={mdp.num_states}, A={mdp.num_actions}, horizon={mdp.horizon}")
    result = frontier(
        jax.random.key(args.seed),
        mdp,
        epsilons=args.epsilons,
        delta=args.delta,
        mechanisms=args.mechanisms,
        num_trials=args.trials,
        beta=args.beta,
        b=args.b,
        eta=args.eta,
        bound=args.bound,
        support=support,
        support_aware=args.support_aware,
        progress=lambda m, done, total: _progress(m)(done, total),
    )
    print(
        f"\n{name}: mean true value of the private policy (non-private optimum "
        f"{result.optimal_value:.4f}); '-' = the mechanism cannot reach that ε"
    )
    print("  epsilon " + "".join(f"{m:>14}" for m in result.parameter))
    for i, e in enumerate(result.epsilons):
        cells = "".join(
            f"{float(result.true_value[m][i].mean()):14.4f}"
            if result.reachable[m][i]
            else f"{'-':>14}"
            for m in result.parameter
        )
        print(f"{e:9g}{cells}")
    for m, floor in result.floor.items():
        if floor > 0:
            print(f"  {m}: smallest ε reachable at δ = {args.delta:g} is about {floor:.4g}")
    print(
        f"\nwhole MDP, when all {result.num_rows} rows may change: ε at δ = {args.delta:g}, "
        "basic composition / Rényi-DP composition"
    )
    print("  epsilon " + "".join(f"{m:>22}" for m in result.parameter))
    for i, e in enumerate(result.epsilons):
        cells = "".join(
            f"{result.all_rows[m][i, 0]:11.4g} /{result.all_rows[m][i, 1]:9.4g}"
            if result.reachable[m][i]
            else f"{'-':>22}"
            for m in result.parameter
        )
        print(f"{e:9g}{cells}")
    meta = {
        "command": " ".join(["jaxprivmdp"] + sys.argv[1:]),
        "model": name,
        "seed": args.seed,
        "trials": args.trials,
        "delta": args.delta,
        "beta": args.beta,
        "bound": args.bound,
        "support_aware": args.support_aware,
        "dtype": args.dtype,
        "environment": _report.environment(),
        "wall_time_s": round(time.perf_counter() - start, 3),
    }
    stem = args.out / "frontier"
    with atomic_outputs() as stage:
        files = _report.write_frontier(result, stem, meta, stage=stage)
        files += _report.plot_frontier(result, stem, title=name, stage=stage)
    return files


# --------------------------------------------------------------------------- privacy


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
        _log(
            f"note: --smoothing {smoothing:g} = 1/n turns every row into the uniform row: ε = 0 "
            "because the output does not depend on the data (nor tells anything about it)"
        )
    elif eta * n >= 1 - ONE_OVER_N_RTOL:
        eta = 1.0 / n  # 0.333333333333333 means 1/3: its ε is 0, not 2e-14
        _log(
            f"note: --eta {eta:g} = 1/n leaves only the uniform row in the domain (entries >= "
            "eta that sum to 1), so there is no other row to protect: the guarantee is "
            "vacuous (ε = 0 trivially)"
        )
    rows = []
    for k in args.k:
        if data_free:
            rows.append({"k": k, "epsilon": 0.0, "delta": 0.0, "log_gamma": None})
            continue
        g = _accounting(
            "--k",
            k,
            lambda k=k: privacy.guarantee(k, b=b, eta=eta, n=n, target_delta=args.delta),
        )
        rows.append({"k": g.k, "epsilon": g.epsilon, "delta": g.delta, "log_gamma": g.log_gamma})
    print(format_table(rows))
    what = f"one row: n = {n}, eta = {eta:g}"
    if smoothing is not None:
        what += f", smoothing = {smoothing:g} (effective b = {b:g})"
    return rows, what, {"effective_b": b, "effective_eta": eta}


def cmd_privacy(args) -> list[Path]:
    """The (ε, δ) each k buys: a table on the terminal, a plot and a JSON in --out."""
    extra = {}
    if args.mdp is not None:
        mdp, _ = load_user_mdp(args, validation_only=True)
        rows = []
        for k in args.k:
            g = _mdp_guarantee(args, mdp, k)
            rows.append({"k": k, "epsilon": g.epsilon, "delta": g.delta, "rows": g.num_rows})
        what = f"MDP {args.mdp} ({args.adjacency} adjacency, {rows[0]['rows']} private rows)"
    else:
        rows, what, extra = _one_row(args)
    print(f"\n{what}; b = {args.b}, target delta = {args.delta}")
    print(f"{'k':>10} {'epsilon':>14} {'delta':>12}")
    for r in rows:
        print(f"{r['k']:10g} {r['epsilon']:14.6g} {r['delta']:12.3g}")
    meta = {k: v for k, v in vars(args).items() if k not in ("out", "mdp", "command")}
    meta["mdp"] = None if args.mdp is None else str(args.mdp)
    json_path = args.out / "privacy.json"
    plot_path = args.out / "privacy_epsilon.png"
    with atomic_outputs() as stage:
        text = json.dumps({**meta, **extra, "guarantees": rows}, indent=2, allow_nan=False)
        stage(json_path).write_text(text + "\n")
        _plot_epsilon(rows, stage(plot_path), what)
    return [json_path, plot_path]


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
    try:
        fig.savefig(path, dpi=150, format="png")
    finally:
        plt.close(fig)
    return path


def cmd_privatize(args) -> list[Path]:
    """A release: privatize a user's MDP with OS-entropy randomness; never write the input."""
    import numpy as np

    from .. import SparseMDP, dirichlet_mechanism, secure_key

    mdp, arrays = load_user_mdp(args, validation_only=True)
    g = _mdp_guarantee(args, mdp, args.k)
    if isinstance(mdp, SparseMDP):
        private = dirichlet_mechanism(secure_key(), mdp, args.k)
        rows = {
            "next_states": np.asarray(mdp.next_states),
            "probs": np.asarray(private.probs),
            # The lists are the public support: a listed entry the noise set to 0 stays.
            "support": np.asarray(mdp.next_states) >= 0,
        }
        # A PRISM model's rewards were read from its reward file: they are public.
        public = {"rewards": np.asarray(mdp.rewards)}
        if mdp.is_finite_horizon:
            public["terminal_reward"] = np.asarray(mdp.terminal_reward)
        return _write_release(args, g, rows, np.asarray(mdp.action_mask), public)
    private = dirichlet_mechanism(
        secure_key(), mdp, args.k, support=args.support, smoothing=args.smoothing
    )
    # Rewards and terminal reward are public and kept exactly as given.
    public = {n: arrays[n] for n in ("rewards", "terminal_reward") if n in arrays}
    # The support it was privatized over is public structure: the support-aware sets need it.
    rows = {"transitions": np.asarray(private.transitions), "support": np.asarray(private.support)}
    return _write_release(args, g, rows, np.asarray(mdp.action_mask), public)


def _write_release(args, g, rows: dict, action_mask, public: dict) -> list[Path]:
    """The release file: the privatized rows, the public parts and the guarantee."""
    import numpy as np

    with atomic_path(args.out) as tmp, tmp.open("wb") as f:
        np.savez(
            f,
            **rows,
            action_mask=action_mask,
            **public,
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


# --------------------------------------------------------------------------- main


def _zero_entry_message(e) -> str:
    shown = ", ".join(f"(state {s}, action {a})" for s, a in e.rows[:5])
    more = f" and {len(e.rows) - 5} more" if len(e.rows) > 5 else ""
    return (
        f"transition rows {shown}{more} have zero entries, which the Dirichlet mechanism "
        "cannot privatize: pass --support nonzero to treat the zero pattern as public, or "
        "--smoothing ETA to mix every row with the uniform distribution first"
    )


COMMANDS = {
    "reproduce": cmd_reproduce,
    "sweep": cmd_sweep,
    "privacy": cmd_privacy,
    "privatize": cmd_privatize,
    "frontier": cmd_frontier,
}


def main(argv: list[str] | None = None) -> int:
    """Runs a command; returns its exit status (0, 2 for a bad input, 130 when interrupted)."""
    args = build_parser().parse_args(argv)
    import jax

    from ..models._support import ZeroEntryError

    x64 = jax.config.jax_enable_x64  # restored: callers in Python keep their setting

    def error(msg) -> None:
        print(f"jaxprivmdp {args.command}: error: {' '.join(str(msg).split())}", file=sys.stderr)

    try:
        check_args(args)
        if hasattr(args, "dtype"):
            _setup(args)
        files = COMMANDS[args.command](args)
    except KeyboardInterrupt:
        print(f"jaxprivmdp {args.command}: interrupted", file=sys.stderr)
        return 130
    except ZeroEntryError as e:
        error(_zero_entry_message(e))
        return 2
    except MemoryError:
        error("out of memory: try a smaller --batch-size, fewer --trials or a smaller MDP")
        return 2
    except (ValueError, OSError) as e:
        error(e)
        return 2
    finally:
        jax.config.update("jax_enable_x64", x64)
    for f in files:
        _log(f"wrote {f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
