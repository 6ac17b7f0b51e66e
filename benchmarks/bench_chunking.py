#!/usr/bin/env python
"""``sweep``'s chunking on the current backend: a grid of (vector_width × batch_size) against
the defaults (target: the defaults within 1.5× of the best).

    python benchmarks/bench_chunking.py [--quick] [--cases example2,grid] [--widths 1,4,16]
        [--batches 256,1024] [--trials N] [--grid-n N] [--grid-trials N] [--repeats R]

Cases (``--cases``): ``example2``, Example 2 (``examples.random_mdp(key(0))``: S = 20, A = 5,
T = 10) with the paper's 9 values of k × ``--trials`` trials; ``grid``, the support-aware sweep
of an n×n gridworld (infinite horizon, γ = 0.95; 9 k × ``--grid-trials``); and on request
``example2-infinite`` (the same rows, γ = 0.95, no horizon), ``dense100`` (a random dense
MDP, S = 100, A = 5, T = 10), ``grid-finite`` (the gridworld with T = 4n, γ = 1) and
``tail`` (14 runs in a 256-run chunk: the padded groups are skipped).
Defaults per backend: on a CPU 9 × 200 runs and a 20×20 gridworld × 4 trials, widths 1..64,
batches 256 and 1024; on an accelerator 9 × 20,000 runs and the 100×100 gridworld × 100
trials, widths 16..4096, batches 4096 and 65,536. Each configuration is one ``sweep`` call
compiled by a first call, then timed ``--repeats`` times (``jax.block_until_ready``); the
table has the median wall time, runs/s, and the process CPU time per run (threads included:
on a shared CPU the steadier measure; on a GPU read the wall time). It ends with the default's
runs/s and CPU time per run, the best configurations' and the ratios (the target: default
within 1.5× of the best).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import common

KS = (1.0, 5.0, 10.0, 15.0, 20.0, 25.0, 30.0, 35.0, 40.0)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="fewer runs and configurations")
    p.add_argument("--cases", default="example2,grid")
    p.add_argument("--widths", default=None, help="comma-separated vector widths")
    p.add_argument("--batches", default=None, help="comma-separated batch sizes")
    p.add_argument("--trials", type=int, default=None, help="Example 2 trials per k")
    p.add_argument("--grid-n", type=int, default=None)
    p.add_argument("--grid-trials", type=int, default=None)
    p.add_argument("--repeats", type=int, default=3)
    return p.parse_args()


def ints(text: str | None, default: tuple[int, ...]) -> tuple[int, ...]:
    return default if text is None else tuple(int(x) for x in text.split(","))


def settings(args, accelerator: bool) -> dict:
    if accelerator:
        widths, batches = (16, 64, 256, 1024, 4096), (4096, 65536)
        trials, n, grid_trials = 20_000, 100, 100
    else:
        widths, batches = (1, 2, 4, 8, 16, 32, 64), (256, 1024)
        trials, n, grid_trials = 200, 20, 4
    if args.quick:
        widths, batches, trials, n, grid_trials = widths[::2], batches[:1], trials // 10, n // 2, 2
    return dict(
        widths=ints(args.widths, widths),
        batches=ints(args.batches, batches),
        trials=args.trials or trials,
        n=args.grid_n or n,
        grid_trials=args.grid_trials or grid_trials,
    )


def measure(run, total: int, repeats: int) -> dict:
    """First call (compiles), then ``repeats`` timed calls: wall median and CPU per run."""
    t0 = time.perf_counter()
    common.block(run())
    first = time.perf_counter() - t0
    walls, cpus = [], []
    for _ in range(repeats):
        c0, t0 = time.process_time(), time.perf_counter()
        common.block(run())
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    wall = statistics.median(walls)
    return dict(
        first_s=first,
        wall_s=wall,
        runs_per_s=total / wall,
        cpu_ms_per_run=1e3 * statistics.median(cpus) / total,
    )


def run_case(name: str, mdp, trials: int, aware: bool, cfg: dict, repeats: int) -> None:
    import jax

    import jaxprivmdp as jp
    from jaxprivmdp.experiments._chunks import plan_chunks

    total = len(KS) * trials
    grid = jp.Dirichlet(jax.numpy.asarray(KS), sampler="fast")
    uset = jp.PaperSet(0.1, support_aware=aware)
    default = plan_chunks(mdp, total, grid, jp.Chunking())
    configs = [(None, None)] + [(w, b) for w in cfg["widths"] for b in cfg["batches"] if b >= w]
    rows = []
    for width, batch in configs:
        chunking = jp.Chunking(vector_width=width, batch_size=batch if width else None)

        def run(chunking=chunking):
            return jp.sweep(
                jax.random.key(1), mdp, grid, uset, num_trials=trials, chunking=chunking
            )

        try:
            res = measure(run, total, repeats)
        except Exception as e:  # out of memory, say: the row says so
            res = dict(error=f"{type(e).__name__}: {str(e)[:120]}")
        label = "default" if width is None else ""
        w, b = (default.vector_width, default.batch_size) if width is None else (width, batch)
        rows.append((label, w, b, res))
        print(f"{name} vw={w} batch={b}: {res}", file=sys.stderr, flush=True)
    print(f"\n## {name}: {total:,} runs ({len(KS)} k × {trials} trials)\n")
    print("| | vector_width | batch_size | first call | median | runs/s | CPU ms/run |")
    print("|---|---|---|---|---|---|---|")
    for label, w, b, r in rows:
        if "error" in r:
            print(f"| {label} | {w} | {b} | | | | {r['error']} |")
            continue
        print(
            f"| {label} | {w} | {b} | {r['first_s']:.2f} s | {r['wall_s'] * 1e3:.1f} ms "
            f"| {r['runs_per_s']:,.0f} | {r['cpu_ms_per_run']:.3f} |"
        )
    ok = [row for row in rows if "error" not in row[3]]
    best = max(ok, key=lambda row: row[3]["runs_per_s"])
    base = rows[0][3].get("runs_per_s")
    best_cpu = min(ok, key=lambda row: row[3]["cpu_ms_per_run"])
    base_cpu = rows[0][3].get("cpu_ms_per_run")
    speedup = best[3]["runs_per_s"] / base
    print(
        f"\ndefault ({rows[0][1]} × {rows[0][2]}) {base:,.0f} runs/s; best ({best[1]} × "
        f"{best[2]}) {best[3]['runs_per_s']:,.0f} runs/s: best/default {speedup:.2f}× "
        f"(wall). CPU time per run: default {base_cpu:.3f} ms, best ({best_cpu[1]} × "
        f"{best_cpu[2]}) {best_cpu[3]['cpu_ms_per_run']:.3f} ms: "
        f"{base_cpu / best_cpu[3]['cpu_ms_per_run']:.2f}×."
    )


def run_tail(repeats: int) -> None:
    """The last chunk's padding: 14 runs in a 256-run chunk against 14 in a 16-run chunk and
    256 in the 256-run chunk (20×20 support-aware gridworld, ``vector_width=16``)."""
    import jax

    import jaxprivmdp as jp

    mdp = jp.examples.gridworld(20, 20)
    print("\n## Padding of the last chunk: 20×20 gridworld, support-aware, vector_width 16\n")
    print("| runs | batch_size | median | CPU s |")
    print("|---|---|---|---|")
    for trials, batch in ((7, 256), (7, 16), (128, 256)):

        def run(trials=trials, batch=batch):
            return jp.sweep(
                jax.random.key(1),
                mdp,
                jp.Dirichlet.grid((5.0, 10.0), sampler="fast"),
                jp.PaperSet(0.1, support_aware=True),
                num_trials=trials,
                chunking=jp.Chunking(batch_size=batch, vector_width=16),
            )

        r = measure(run, 2 * trials, repeats)
        cpu_s = r["cpu_ms_per_run"] * 2 * trials / 1e3
        print(f"| {2 * trials} | {batch} | {r['wall_s']:.3f} s | {cpu_s:.3f} |")


def main() -> None:
    args = parse_args()
    import jax

    import jaxprivmdp as jp
    from jaxprivmdp.experiments._chunks import describe_devices

    info = describe_devices(jax.devices())
    cfg = settings(args, info.accelerator)
    mem = "unknown" if info.memory is None else f"{info.memory / 2**30:.1f} GiB"
    common.print_header(
        "sweep chunking: default vs a grid of (vector_width, batch_size)",
        common.machine_info(),
        [f"backend {info.platform}, {info.count} device(s) of {mem}", f"settings {cfg}"],
    )
    cases = args.cases.split(",")
    if "tail" in cases:
        run_tail(args.repeats)
    if "example2" in cases:
        mdp = jp.examples.random_mdp(jax.random.key(0))
        run_case("Example 2", mdp, cfg["trials"], False, cfg, args.repeats)
    if "example2-infinite" in cases:
        mdp = jp.examples.random_mdp(jax.random.key(0), horizon=None, discount=0.95)
        run_case(
            "Example 2, infinite horizon (γ = 0.95)", mdp, cfg["trials"], False, cfg, args.repeats
        )
    if "dense100" in cases:
        mdp = jp.examples.random_mdp(jax.random.key(0), 100)
        run_case("dense S = 100, A = 5, T = 10", mdp, cfg["trials"], False, cfg, args.repeats)
    n = cfg["n"]
    if "grid" in cases:
        mdp = jp.examples.gridworld(n, n)
        name = f"gridworld {n}×{n}, support-aware"
        run_case(name, mdp, cfg["grid_trials"], True, cfg, args.repeats)
    if "grid-finite" in cases:
        mdp = jp.examples.gridworld(n, n, horizon=4 * n, discount=1.0)
        name = f"gridworld {n}×{n}, T = {4 * n}, support-aware"
        run_case(name, mdp, cfg["grid_trials"], True, cfg, args.repeats)


if __name__ == "__main__":
    main()
