"""The sparse bounds target: support-aware bounds ÷ ``evaluate`` and the copy-bandwidth fraction.

The measurement of ``bench_sparse.py``'s ``test_bounds_vs_evaluate[...-bounds_paper]`` (its
model, release, policy, set arguments, byte model and copy) as a plain script that also
records CPU time (``time.process_time``, the whole process: both XLA threads) next to the
wall time of every call, and the load average before and after each size, for a shared
2-core machine. Per size ``n`` (``examples.gridworld(n, n, horizon=20, discount=0.95)``,
``S = n²``, ``A = 4``, ``K = 3``; released by ``Dirichlet(10, sampler="fast")``,
its optimal deterministic policy from ``solve``, ``β = 0.1``), timed round-robin in one
process (each call compiled and run once first, every call ended by
``jax.block_until_ready``):

* ``evaluate_core``, ``bounds_core`` with the paper's set and with ``support_aware=True``
  (arguments as ``cost_of_privacy`` builds them, ``common.set_args``);
* the public calls a user jits: ``jax.jit(evaluate)`` and
  ``jax.jit(lambda m, p: cost_of_privacy(m, p, Dirichlet(10.0), PaperSet(...)))`` (model
  and policy traced), for both sets (``--no-public`` leaves them out);
* with ``--profile``, the top XLA ops of the support-aware ``bounds_core`` from a
  ``jax.profiler`` trace (``common.xla_op_profile``), after the timing.

Then each core's time per stage (median ÷ ``T``), successor entries per second and the bytes
per second of ``bench_sparse.bytes_per_stage`` ("lines" and "minimal") as a fraction of the
copy bandwidth (``bench_sparse.copy_bandwidth``: ``np.copyto`` of a 1 GiB float32 array, best
of 5, read + write counted), measured before the first size and after the last; the
fractions use the larger of the two (load only lowers a copy).

Run: ``python benchmarks/bench_sparse_bandwidth.py [--sizes 100,1000] [--rounds 5]
[--json benchmarks/results/bench_sparse_bandwidth.json]``. At ``n = 1000`` the process peaks
near 3 GB (the 2 GiB copy arrays are freed before the models are built).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics

import bench_sparse as bs
import common
import jax
import numpy as np

import jaxprivmdp as jp
from jaxprivmdp.planning import _bounds, _evaluation

COPY_BYTES = 2**30


def public_calls(private, policy, aware_only=False):
    """The jitted public calls (model and policy traced)."""
    ev = jax.jit(jp.evaluate)
    calls = {"jit(evaluate)": lambda: ev(private, policy)}
    for aware in (True,) if aware_only else (False, True):
        fn = jax.jit(
            lambda m, p, a=aware: jp.cost_of_privacy(
                m, p, jp.Dirichlet(bs.K_PRIVACY), jp.PaperSet(bs.BETA, support_aware=a)
            )
        )
        name = "jit(cost_of_privacy, support_aware)" if aware else "jit(cost_of_privacy)"
        calls[name] = lambda fn=fn: fn(private, policy)
    return calls


def profile(private, policy, args, top=8):
    """The ``top`` XLA ops of the support-aware ``bounds_core`` (``common.xla_op_profile``)."""
    params, kw = args[True]
    hlo = _bounds.bounds_core.lower(private, policy, params, None, 10_000, **kw).compile()
    ops = common.xla_op_profile(lambda: bs.core(private, policy, args[True]), hlo.as_text())
    print("\n| XLA op (support-aware bounds_core) | source | ms per call | launches |")
    print("|---|---|---|---|")
    for op in [o for o in ops or [] if not o["container"]][:top]:
        print(
            f"| {op['op']} | {op['source'][:70]} | {op['seconds_per_call'] * 1e3:.1f} "
            f"| {op['launches_per_call']:.0f} |"
        )


def measure(n, dtype, rounds, public, with_profile=False):
    private, policy, args = bs.private_problem(n, dtype)
    calls = {
        "evaluate_core": lambda: _evaluation.evaluate_core(private, policy),
        "bounds_core, paper's set": lambda: bs.core(private, policy, args[False]),
        "bounds_core, support-aware": lambda: bs.core(private, policy, args[True]),
    }
    if public:
        calls.update(public_calls(private, policy))
    load0 = os.getloadavg()
    budget = 0.0 if n >= 1000 else 8.0
    samples = common.round_robin(calls, min_rounds=rounds if n >= 1000 else 7, budget_s=budget)
    S, A, K = private.next_states.shape
    if with_profile:
        print(f"profile at n = {n}:")
        profile(private, policy, args)
    return dict(
        n=n,
        S=S,
        A=A,
        K=K,
        widths={aware: args[aware][1]["width"] for aware in (False, True)},
        load_before=load0,
        load_after=os.getloadavg(),
        rounds=len(samples["evaluate_core"][0]),
        wall={k: statistics.median(v[0]) for k, v in samples.items()},
        wall_min={k: min(v[0]) for k, v in samples.items()},
        cpu={k: statistics.median(v[1]) for k, v in samples.items()},
        samples=samples,
        itemsize=np.dtype(private.rewards.dtype).itemsize,
    )


def report(res, copy_bps):
    wall, cpu = res["wall"], res["cpu"]
    print(
        f"\n### {res['n']}x{res['n']} (S = {res['S']}), {res['rounds']} rounds, widths "
        f"{res['widths']}, load {res['load_before'][0]:.2f} -> {res['load_after'][0]:.2f}\n"
    )
    print(
        "| call | wall median | wall min | CPU median | wall ÷ evaluate | CPU ÷ evaluate "
        "| per-round wall ratio, median |"
    )
    print("|---|---|---|---|---|---|---|")
    for name in wall:
        base = "jit(evaluate)" if name.startswith("jit(") else "evaluate_core"
        pairs = zip(res["samples"][name][0], res["samples"][base][0], strict=True)
        per_round = statistics.median(a / b for a, b in pairs)
        print(
            f"| {name} | {common.fmt_time(wall[name])} | {common.fmt_time(res['wall_min'][name])}"
            f" | {common.fmt_time(cpu[name])} | {wall[name] / wall[base]:.2f} "
            f"| {cpu[name] / cpu[base]:.2f} | {per_round:.2f} |"
        )
    traffic = bs.bytes_per_stage(res["S"], res["A"], res["K"], res["itemsize"])
    print(
        f"\nbytes per stage: lines {traffic['lines'] / 1e6:.0f} MB, minimal "
        f"{traffic['minimal'] / 1e6:.0f} MB; copy {copy_bps / 1e9:.1f} GB/s\n"
    )
    print("| core | time per stage | entries/s | lines GB/s | fraction | minimal GB/s | fraction |")
    print("|---|---|---|---|---|---|---|")
    for name in list(wall)[:3]:
        stage = wall[name] / bs.T
        line, mini = traffic["lines"] / stage, traffic["minimal"] / stage
        print(
            f"| {name} | {common.fmt_time(stage)} | {res['S'] * res['K'] / stage:.2g} "
            f"| {line / 1e9:.2f} | {100 * line / copy_bps:.1f}% | {mini / 1e9:.2f} "
            f"| {100 * mini / copy_bps:.1f}% |"
        )
    res["traffic"] = traffic


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000")
    parser.add_argument("--rounds", type=int, default=5, help="rounds at n >= 1000")
    parser.add_argument("--no-public", action="store_true")
    parser.add_argument("--profile", action="store_true", help="top XLA ops, support-aware")
    parser.add_argument("--json", default=None)
    opts = parser.parse_args()
    print(f"jaxprivmdp from {os.path.dirname(jp.__file__)}; load {os.getloadavg()}")
    copies = [bs.copy_bandwidth(COPY_BYTES)]
    bs.copy_bandwidth.cache_clear()
    results = [
        measure(int(n), "float32", opts.rounds, not opts.no_public, opts.profile)
        for n in opts.sizes.split(",")
    ]
    bs.private_problem.cache_clear()
    bs.grid.cache_clear()
    copies.append(bs.copy_bandwidth(COPY_BYTES))
    best = max(c["stream_copy_bytes_per_s"] for c in copies)
    print("copy (best of 5, before / after):", [f"{c['best_s'] * 1e3:.1f} ms" for c in copies])
    for res in results:
        report(res, best)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"\npeak RSS {peak / 2**20:.2f} GiB; load at the end {os.getloadavg()}")
    if opts.json:
        info = dict(common.jax_info(), load_end=os.getloadavg(), peak_rss_kib=peak)
        common.write_json(common.Path(opts.json), dict(info=info, copies=copies, results=results))


if __name__ == "__main__":
    main()
