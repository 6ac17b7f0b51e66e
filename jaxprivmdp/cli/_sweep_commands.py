"""The commands that sweep ``k``: ``reproduce`` (Figure 1), ``sweep`` (a user's MDP) and
``frontier`` (every mechanism at each target ε); each writes its figures and tables together.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from ..io.core import atomic_outputs
from ._accounting import sweep_guarantees
from ._interrupts import guarded, writing
from ._mdp_files import model_fields
from ._objective import directed, objective_lines, objective_record
from ._property_commands import load_problem, property_problem
from ._terminal import frontier_progress, note, print_frontier, print_sweep_tables, progress


def _run_sweeps(args, mdps: dict, options: dict, stem: str, extra_meta: dict) -> list[Path]:
    """One sweep per problem of ``mdps``; ``extra_meta`` holds its ``objective`` (one for
    every problem) beside the command's own fields."""
    import jax
    import numpy as np

    from ..experiments import Chunking, _report, sweep
    from ..mechanisms.core import mechanism_class
    from ..sets.core import set_named

    cls = mechanism_class(args.mechanism or "dirichlet")
    # The flags become objects here: the grid (sweeps sample the Dirichlet's "fast" way
    # unless --sampler says otherwise) and the set.
    static = {"sampler": args.sampler or "fast"} if cls.name == "dirichlet" else {}
    grid = cls.grid(args.ks, **static)
    bound = set_named(args.bound, args.beta, args.support_aware)
    start = time.perf_counter()
    tables, timings = {}, {}
    for i, (name, problem) in enumerate(mdps.items()):
        t0 = time.perf_counter()
        mdp = _model(problem)
        _announce(name, mdp, extra_meta)
        result = guarded(
            sweep,
            jax.random.fold_in(jax.random.key(args.seed), i),
            problem,
            grid,
            bound,
            num_trials=args.trials,
            # Without --batch-size, chunks of one vectorized group per device (the library
            # rounds 1 up to that): progress every few seconds, and as fast on CPU (measured:
            # 450 runs of Example 2 and the 20x20 gridworld, 16 vs 256 runs per chunk).
            chunking=Chunking(batch_size=args.batch_size or 1, progress=progress(name)),
            robust=args.robust,
            **options.get(name, {}),
        )
        tables[name] = _report.summarize(result)
        not_converged = int((~np.asarray(result.converged)).sum())
        if not_converged:
            note(
                f"  warning: {not_converged} run(s) did not reach the value-iteration tolerance "
                "(their policies may not be ε-optimal; the bounds stay valid)"
            )
        timings[name] = round(time.perf_counter() - t0, 3)
    meta = _sweep_meta(args, mdps, timings, extra_meta)
    stem_path = args.out / stem
    if jax.process_index() != 0:  # every process has the results; process 0 writes them
        note(f"process {jax.process_index()}: done (process 0 writes the outputs)")
        return []
    # All four files are staged and renamed together: never a figure without its table.
    with atomic_outputs() as stage, writing():
        figs = _report.plot_sweeps(
            tables,
            stem_path,
            beta=args.beta,
            trials=args.trials,
            stage=stage,
            mechanism=args.mechanism,
            settings=set_settings(args),
            k_axis=args.k_axis,
        )
        meta["wall_time_s"] = round(time.perf_counter() - start, 3)
        files = _report.write_tables(stem_path, tables, meta, stage=stage) + figs
    print_sweep_tables(tables, "\n".join(objective_lines(extra_meta)))
    return files


def _sweep_meta(args, mdps: dict, timings: dict, extra_meta: dict) -> dict:
    """The sweep command's metadata (its ``wall_time_s`` filled in when the files are
    written)."""
    from ..experiments import _report

    return {
        "command": " ".join(["jaxprivmdp"] + sys.argv[1:]),
        "seed": args.seed,
        "trials": args.trials,
        "mechanism": args.mechanism,
        "ks": list(args.ks),
        "beta": args.beta,
        "dtype": args.dtype,
        "sampler": args.sampler,
        "support_aware": args.support_aware,
        "bound": args.bound,
        "robust": args.robust,
        "models": {name: model_fields(_model(mdp)) for name, mdp in mdps.items()},
        "wall_time_s": None,
        "wall_time_per_sweep_s": timings,
        "environment": _report.environment(),
        **extra_meta,
    }


def _announce(name: str, mdp, objective: dict) -> None:
    """The model's size and what is optimized (:func:`objective_record`), on stderr."""
    note(f"{name}: S={mdp.num_states}, A={mdp.num_actions}, horizon={mdp.horizon}")
    for line in objective_lines(objective):
        note(f"  {line}")


def _model(problem):
    """The model a problem (a model, or a property's :class:`PropertyModel`) plans on."""
    return getattr(problem, "model", problem)


def set_settings(args) -> str:
    """The options that change what a figure shows, as the flags that set them."""
    words = [f"--bound {args.bound}", f"--beta {args.beta:g}"]
    if getattr(args, "mechanism", None) is not None:
        words.insert(0, f"--mechanism {args.mechanism}")
    words += ["--support-aware"] if args.support_aware else []
    words += ["--robust"] if getattr(args, "robust", False) else []
    return " ".join(words)


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
        **objective_record(args, None),
        "examples": {"Example 2": "examples.random_mdp(jax.random.key(0))"},
        "privacy": {
            name: sweep_guarantees(mdp, args.ks, mechanism=args.mechanism, **options.get(name, {}))
            for name, mdp in mdps.items()
        },
    }
    return _run_sweeps(args, mdps, options, "figure1", meta)


def cmd_sweep(args) -> list[Path]:
    """The same sweep, figure and table on a user's MDP."""
    problem = directed(args, load_problem(args)[0])
    name = args.mdp.stem
    options = {name: {"support": args.support, "smoothing": args.smoothing}}
    meta = {"mdp": str(args.mdp), "property": args.property, **objective_record(args, problem)}
    return _run_sweeps(args, {name: problem}, options, "sweep", meta)


def _frontier_mdp(args):
    """``--example`` or ``--mdp``, and the mechanism's ``support`` option for it."""
    import jax

    from ..models import examples

    if args.mdp is not None:
        return args.mdp.stem, load_problem(args)[0], args.support
    if args.example == "1":
        name, mdp, support = (
            "Example 1 (investment)",
            examples.investment(dtype=args.dtype),
            "nonzero",
        )
    elif args.example == "2":
        mdp = examples.random_mdp(jax.random.key(0), dtype=args.dtype)
        name, support = "Example 2 (random, S=20, A=5, T=10)", None
    else:
        mdp = examples.gridworld(20, 20, horizon=60, discount=1.0, dtype=args.dtype)
        name, support = "20x20 gridworld (T=60)", None
    horizon = mdp.horizon if args.horizon is None else args.horizon
    return name, property_problem(args, mdp, horizon), support


def cmd_frontier(args) -> list[Path]:
    """Every mechanism calibrated to each target (ε, δ): value, bounds, cost; figure + tables."""
    import jax

    from ..experiments import _report, frontier
    from ..mechanisms.core import mechanism_class
    from ..privacy import Adjacency
    from ..sets.core import set_named

    start = time.perf_counter()
    name, problem, support = _frontier_mdp(args)
    problem = directed(args, problem)
    objective = objective_record(args, problem)
    mdp = _model(problem)
    _announce(name, mdp, objective)
    result = guarded(
        frontier,
        jax.random.key(args.seed),
        problem,
        [mechanism_class(m) for m in args.mechanisms],
        set_named(args.bound, args.beta, args.support_aware),
        epsilons=args.epsilons,
        delta=args.delta,
        adjacency=Adjacency(args.b, args.eta),
        num_trials=args.trials,
        support=support,
        progress=frontier_progress(),
    )
    print_frontier(name, result, args.delta, "\n".join(objective_lines(objective)))
    meta = {
        "command": " ".join(["jaxprivmdp"] + sys.argv[1:]),
        "model": name,
        "property": args.property,
        **objective,
        "models": {name: model_fields(mdp)},
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
    with atomic_outputs() as stage, writing():
        files = _report.write_frontier(result, stem, meta, stage=stage)
        files += _report.plot_frontier(
            result, stem, title=name, stage=stage, settings=set_settings(args)
        )
    return files
