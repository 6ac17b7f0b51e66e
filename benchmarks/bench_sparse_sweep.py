"""The Figure-1 sweep on a 100×100 gridworld (``SparseMDP``): wall time and peak memory.

Problem: ``examples.gridworld(100, 100, horizon=200, discount=1.0)`` (``S = 10⁴``, ``A = 4``,
``K = 3``; the shortest path to the goal takes 198 steps), Figure 1's grid of ``k``
``{1, 5, 10, …, 40}`` × N trials, ``sweep``'s defaults (``sampler="fast"``, the paper's set,
``β = 0.1``, default ``batch_size`` and ``vector_width``). ``--horizon 0`` uses the infinite
horizon with ``γ = 0.95`` instead.

Each trial count runs in a fresh child process (so peaks do not mix): the child builds the
model, records its resident memory (baseline: Python + JAX + the model), runs ``sweep`` once
(the first call: compilation included) and, for the trial count of ``--repeat-at``, a second
time (after compilation, same process); it reports ``VmHWM`` (peak resident memory, from
``/proc/self/status``) after each call and the time at which each compiled chunk finished
(``sweep``'s ``progress`` callback, which blocks on the chunk). The parent cross-checks the
peak with ``os.wait4``'s ``ru_maxrss`` and kills a child above ``--kill-gib``.

Defaults: N ∈ {10, 50, 100}, the second call at N = 50 (Figure 1's count). Memory should be
flat in N: a sweep keeps one chunk of runs (``batch_size``) in flight and only a few scalars
per finished run.

Run: ``python benchmarks/bench_sparse_sweep.py [--quick] [--trials-list 10,50,100]
[--repeat-at 50] [--n 100] [--horizon 200|0]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import common

NAME = "bench_sparse_sweep"
KS = (1.0, 5.0, 10.0, 15.0, 20.0, 25.0, 30.0, 35.0, 40.0)


def _add_arguments(parser):
    parser.add_argument("--n", type=int, default=None, help="the map is n × n")
    parser.add_argument(
        "--horizon", type=int, default=None, help="T (γ = 1); 0 = infinite with γ = 0.95"
    )
    parser.add_argument("--trials-list", default=None, help="comma-separated trial counts")
    parser.add_argument("--repeat-at", type=int, default=None, help="call twice at this N")
    parser.add_argument("--kill-gib", type=float, default=10.0, help="kill a child above this")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--trials", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--calls", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--child-out", default=None, help=argparse.SUPPRESS)


args = common.script_args(
    __doc__.splitlines()[0], default_dtype="float32", add_arguments=_add_arguments
)


def model(n, horizon, dtype):
    import jaxprivmdp as jp

    if horizon == 0:
        return jp.examples.gridworld(n, n, discount=0.95, dtype=dtype)
    return jp.examples.gridworld(n, n, horizon=horizon, discount=1.0, dtype=dtype)


# ----------------------------------------------------------------------------- child


def run_child(n, horizon):
    import jax
    import numpy as np

    import jaxprivmdp as jp
    from jaxprivmdp.experiments import _chunks

    mdp = model(n, horizon, args.dtype)
    jax.block_until_ready(mdp)
    baseline = common.proc_status()["VmRSS"]
    total = len(KS) * args.trials
    vector_width = _chunks.default_vector_width(mdp, "fast")
    group = vector_width * jax.device_count()
    batch_size = _chunks.default_batch_size(total, group)
    calls = []
    for _ in range(args.calls):
        chunks = []
        t0 = time.perf_counter()
        res = jp.sweep(
            jax.random.key(1),
            mdp,
            jp.Dirichlet.grid(KS, sampler="fast"),
            num_trials=args.trials,
            chunking=jp.Chunking(
                progress=lambda done, _total, t0=t0, chunks=chunks: chunks.append(
                    (done, time.perf_counter() - t0)
                )
            ),
        )
        jax.block_until_ready(res)
        elapsed = time.perf_counter() - t0
        status = common.proc_status()
        calls.append(
            dict(
                wall_s=elapsed,
                chunks_done_at_s=chunks,
                peak_rss_after=status.get("VmHWM"),
                rss_after=status.get("VmRSS"),
            )
        )
    cost = np.asarray(res.cost)
    with open(args.child_out, "w") as f:
        json.dump(
            dict(
                baseline_rss=baseline,
                calls=calls,
                used=dict(
                    vector_width=vector_width,
                    batch_size=batch_size,
                    runs_computed=batch_size * -(-total // batch_size),
                ),
                mean_cost_per_k=cost.mean(axis=1).tolist(),
                mean_true_value=float(np.asarray(res.true_value).mean()),
                optimal_value=float(res.optimal_value),
                all_converged=bool(np.asarray(res.converged).all()),
            ),
            f,
        )


# ----------------------------------------------------------------------------- parent


def run_config(trials, calls, n, horizon, tmpdir):
    out = str(Path(tmpdir) / f"trials_{trials}.json")
    cmd = [
        sys.executable,
        os.path.abspath(__file__),
        "--child",
        f"--trials={trials}",
        f"--calls={calls}",
        f"--n={n}",
        f"--horizon={horizon}",
        f"--child-out={out}",
        f"--dtype={args.dtype}",
    ]
    load = common.load_average()
    run = common.run_watched_child(cmd, out + ".log", args.kill_gib)
    returncode, wall = run["returncode"], run["wall_s"]
    entry = dict(
        trials=trials,
        runs=len(KS) * trials,
        returncode=returncode,
        process_wall_s=wall,
        cpu_s=run["cpu_s"],
        ru_maxrss=run["ru_maxrss"],
        load_average_1m_at_start=load,
        load_average_1m_at_end=common.load_average(),
        killed_above_gib=run["killed_above_gib"],
    )
    if returncode == 0:
        with open(out) as f:
            entry.update(json.load(f))
    else:
        with open(out + ".log") as f:
            entry["log_tail"] = f.read()[-2000:]
    first = entry.get("calls", [{}])[0]
    print(
        f"N={trials}: rc={returncode}, first call {first.get('wall_s', float('nan')):.1f} s, "
        f"peak {common.fmt_bytes(first.get('peak_rss_after'))}, process {wall:.1f} s",
        flush=True,
    )
    return entry


def main():
    import jax  # noqa: F401 - initializes the backend for the header

    quick = args.quick
    n = args.n or (20 if quick else 100)
    horizon = args.horizon if args.horizon is not None else (40 if quick else 200)
    if args.child:
        run_child(n, horizon)
        return
    trials_list = [
        int(t) for t in (args.trials_list or ("2,4" if quick else "10,50,100")).split(",") if t
    ]
    repeat_at = args.repeat_at if args.repeat_at is not None else (4 if quick else 50)

    env = common.machine_info()
    horizon_text = f"T = {horizon}, γ = 1" if horizon else "infinite horizon, γ = 0.95"
    common.print_header(
        f"Figure-1 sweep on a {n}×{n} gridworld (S = {n * n}, A = 4, K = 3, {horizon_text})",
        env,
        notes=[
            f"{len(KS)} k × N trials, sweep defaults (sampler 'fast', paper's set, β = 0.1); "
            "one child process per N; peak = VmHWM of the child (compilation included); "
            "baseline = its RSS after building the model",
            f"the second call (after compilation, same process) at N = {repeat_at}",
        ],
    )
    results = []
    with tempfile.TemporaryDirectory() as tmpdir:
        for trials in trials_list:
            calls = 2 if trials == repeat_at else 1
            results.append(run_config(trials, calls, n, horizon, tmpdir))
    print()
    rows = []
    for r in results:
        ok = r["returncode"] == 0
        calls = r.get("calls", [])
        second = calls[1] if len(calls) > 1 else None
        chunks = calls[0]["chunks_done_at_s"] if ok else []
        rows.append(
            [
                f"{r['trials']} ({r['runs']} runs)",
                f"{r['used']['batch_size']} × {len(chunks)}, width {r['used']['vector_width']}"
                if ok
                else "—",
                f"{calls[0]['wall_s']:.1f} s" if ok else "—",
                f"{second['wall_s']:.1f} s" if second else "—",
                f"{calls[0]['wall_s'] / r['runs']:.3f} s"
                + (f" / {second['wall_s'] / r['runs']:.3f} s" if second else ""),
                common.fmt_bytes(r.get("baseline_rss")),
                common.fmt_bytes(calls[0]["peak_rss_after"]) if ok else "—",
                common.fmt_bytes(second["peak_rss_after"]) if second else "—",
                common.fmt_bytes(r["ru_maxrss"]),
                f"{r['cpu_s']:.0f} s",
                f"{r['load_average_1m_at_start']} → {r['load_average_1m_at_end']}",
            ]
        )
    common.print_table(
        "Wall time and peak resident memory per trial count",
        [
            "N trials",
            "batch_size × chunks",
            "first call",
            "second call",
            "per run (first / second)",
            "baseline RSS",
            "peak RSS after first call",
            "after second call",
            "ru_maxrss (wait4)",
            "child CPU time",
            "load (1 min) start → end",
        ],
        rows,
    )
    peaks = [r["calls"][-1]["peak_rss_after"] for r in results if r["returncode"] == 0]
    if peaks:
        spread = max(peaks) / min(peaks)
        print(
            f"Peak RSS across N = {trials_list}: {common.fmt_bytes(min(peaks))} … "
            f"{common.fmt_bytes(max(peaks))} (max/min {spread:.3f}).\n"
        )
    common.write_json(
        common.results_path(NAME, args),
        dict(
            environment=env,
            n=n,
            horizon=horizon,
            ks=list(KS),
            trials_list=trials_list,
            repeat_at=repeat_at,
            configs=results,
        ),
    )


if __name__ == "__main__":
    main()
