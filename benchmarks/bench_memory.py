"""Peak host memory of a ``sweep`` vs ``batch_size`` (and ``vector_width``), and invariance.

Problem: ``examples.random_mdp`` with ``S = 200``, ``A = 10``, ``T = 50``; 9 values of ``k``
``{1, 5, …, 40}`` × 50 trials = 450 runs. Each configuration runs in a fresh child process
(so peaks do not mix): the child builds the MDP, records its resident memory (the baseline:
Python + JAX + the MDP), runs one ``sweep`` (compilation included), and reports its peak
resident memory ``VmHWM`` from ``/proc/self/status``; the parent cross-checks it with the
child's ``ru_maxrss`` from ``os.wait4`` and kills a child that grows beyond ``--kill-gib``.

Configurations: several ``batch_size`` values (runs per compiled call; ``default`` =
``_chunks.default_batch_size(total, group)``; ``all`` = every run in one call) and several
``vector_width`` values (runs vectorized together; ``default`` =
``_chunks.default_vector_width(mdp, sampler)``; ``all`` = every run vmapped at once, the
fully unchunked computation). Results of every
``batch_size`` configuration are compared with ``np.array_equal`` to the first one; the
``vector_width`` configurations are compared too (the library only promises equality up to
rounding there).

Targets: the default (chunked) sweep completes within 4 GiB peak RSS, and the results do
not depend on ``batch_size``.

Sampler: ``--sampler fast`` (the library's default) or ``jax`` (the reference,
``jax.random.loggamma``). With ``sampler="jax"`` this problem takes about a second per run
on a 2-core CPU, so its default is 4 trials per k (``--trials`` to change).

Run: ``python benchmarks/bench_memory.py [--quick] [--dtype float32|float64]
[--sampler fast|jax] [--trials N] [--batch-sizes 16,default,64,all]
[--vector-widths 1,4,all]``.
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

NAME = "bench_memory"
KS = (1.0, 5.0, 10.0, 15.0, 20.0, 25.0, 30.0, 35.0, 40.0)
LIMIT_GIB = 4.0


def _add_arguments(parser):
    parser.add_argument("--sampler", choices=("fast", "jax"), default=None)
    parser.add_argument("--trials", type=int, default=None, help="trials per k")
    parser.add_argument("--states", type=int, default=None)
    parser.add_argument("--actions", type=int, default=None)
    parser.add_argument("--horizon", type=int, default=None)
    parser.add_argument(
        "--batch-sizes", default=None, help="comma-separated ints, 'default' or 'all'"
    )
    parser.add_argument(
        "--vector-widths", default=None, help="comma-separated ints or 'all' ('' for none)"
    )
    parser.add_argument("--kill-gib", type=float, default=10.0, help="kill a child above this")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--batch-size", default="default", help=argparse.SUPPRESS)
    parser.add_argument("--vector-width", default="default", help=argparse.SUPPRESS)
    parser.add_argument("--child-out", default=None, help=argparse.SUPPRESS)


args = common.script_args(
    __doc__.splitlines()[0], default_dtype="float32", add_arguments=_add_arguments
)


def resolve(value, total):
    return None if value == "default" else total if value == "all" else int(value)


# ----------------------------------------------------------------------------- child


def run_child(sizes):
    import jax
    import numpy as np

    import jaxprivmdp as jp
    from jaxprivmdp.experiments import _chunks

    mdp = jp.examples.random_mdp(
        jax.random.key(0),
        num_states=sizes["S"],
        num_actions=sizes["A"],
        horizon=sizes["T"],
        dtype=args.dtype,
    )
    jax.block_until_ready(mdp)
    baseline = common.proc_status()["VmRSS"]
    total = len(KS) * sizes["N"]
    kwargs = dict(
        batch_size=resolve(args.batch_size, total),
        vector_width=resolve(args.vector_width, total),
    )
    # What sweep uses (it rounds batch_size up to whole groups of vector_width × devices).
    vector_width = kwargs["vector_width"] or _chunks.default_vector_width(mdp, args.sampler)
    group = vector_width * jax.device_count()
    batch_size = kwargs["batch_size"] or _chunks.default_batch_size(total, group)
    batch_size = group * -(-batch_size // group)
    used = dict(
        batch_size=batch_size,
        vector_width=vector_width,
        runs_computed=batch_size * -(-total // batch_size),
    )
    t0 = time.perf_counter()
    grid = jp.Dirichlet.grid(KS, sampler=args.sampler or "fast")
    chunking = jp.Chunking(**kwargs)
    res = jp.sweep(jax.random.key(1), mdp, grid, num_trials=sizes["N"], chunking=chunking)
    jax.block_until_ready(res)
    elapsed = time.perf_counter() - t0
    status = common.proc_status()
    # Array fields only: `robust` is None unless sweep(robust=True).
    fields = {f: getattr(res, f) for f in res._fields if getattr(res, f) is not None}
    np.savez(args.child_out + ".npz", **{f: np.asarray(x) for f, x in fields.items()})
    with open(args.child_out + ".json", "w") as f:
        json.dump(
            dict(
                baseline_rss=baseline,
                peak_rss=status.get("VmHWM"),
                final_rss=status.get("VmRSS"),
                elapsed_s=elapsed,
                used=used,
            ),
            f,
        )


# ----------------------------------------------------------------------------- parent


def run_config(label, batch_size, vector_width, sizes, tmpdir):
    out = str(Path(tmpdir) / f"cfg_{len(os.listdir(tmpdir))}")
    cmd = [
        sys.executable,
        os.path.abspath(__file__),
        "--child",
        f"--batch-size={batch_size}",
        f"--vector-width={vector_width}",
        f"--child-out={out}",
        f"--dtype={args.dtype}",
        f"--sampler={args.sampler}",
        f"--states={sizes['S']}",
        f"--actions={sizes['A']}",
        f"--horizon={sizes['T']}",
        f"--trials={sizes['N']}",
    ]
    run = common.run_watched_child(cmd, out + ".log", args.kill_gib)
    wall = run["wall_s"]
    entry = dict(
        label=label,
        batch_size_arg=batch_size,
        vector_width_arg=vector_width,
        returncode=run["returncode"],
        wall_s=wall,
        ru_maxrss=run["ru_maxrss"],
        killed_above_gib=run["killed_above_gib"],
    )
    if run["returncode"] == 0:
        with open(out + ".json") as f:
            entry.update(json.load(f))
        entry["npz"] = out + ".npz"
    else:
        with open(out + ".log") as f:
            entry["log_tail"] = f.read()[-2000:]
    print(
        f"{label}: rc={entry['returncode']}, peak {common.fmt_bytes(entry.get('peak_rss'))}, "
        f"wall {wall:.1f} s",
        flush=True,
    )
    return entry


def compare(results):
    import numpy as np

    ref = next((r for r in results if r["returncode"] == 0), None)
    ref_data = dict(np.load(ref["npz"])) if ref else None
    for r in results:
        if r["returncode"] != 0 or ref is None:
            r["identical_to_reference"] = None
            continue
        data = dict(np.load(r["npz"]))
        r["identical_to_reference"] = all(
            np.array_equal(data[k], ref_data[k], equal_nan=True) for k in ref_data
        )
        r["fields_differing"] = {}
        for k in ref_data:
            if np.array_equal(data[k], ref_data[k], equal_nan=True):
                continue
            diff = np.abs(data[k] - ref_data[k])
            r["fields_differing"][k] = dict(
                entries=int(np.sum(data[k] != ref_data[k])),
                of=int(data[k].size),
                max_abs_diff=float(np.max(diff)),
                max_rel_diff=float(np.max(diff / np.maximum(np.abs(ref_data[k]), 1e-30))),
            )
    for r in results:
        r.pop("npz", None)
    return ref


def main():
    import jax  # noqa: F401 - initializes the backend for the header

    if args.sampler is None:
        args.sampler = "fast"  # the library's default
    quick = args.quick
    sizes = dict(
        S=args.states or (50 if quick else 200),
        A=args.actions or (5 if quick else 10),
        T=args.horizon or (10 if quick else 50),
        N=args.trials or (4 if quick else (50 if args.sampler == "fast" else 4)),
    )
    if args.child:
        run_child(sizes)
        return

    if args.batch_sizes is not None:
        batch_sizes = [b for b in args.batch_sizes.split(",") if b]
    else:
        batch_sizes = ["16", "default"] if quick else ["16", "default", "64", "all"]
    if args.vector_widths is not None:
        vector_widths = [v for v in args.vector_widths.split(",") if v]
    else:
        vector_widths = [] if quick else ["1", "4", "all"]

    env = common.machine_info()
    total = len(KS) * sizes["N"]
    itemsize = 8 if args.dtype == "float64" else 4
    sa_s = sizes["S"] * sizes["A"] * sizes["S"] * itemsize
    common.print_header(
        f"Peak host memory of sweep vs batch_size / vector_width (S={sizes['S']}, "
        f"A={sizes['A']}, T={sizes['T']}, {len(KS)} k × {sizes['N']} trials = {total} runs)",
        env,
        notes=[
            f"sampler = {args.sampler!r}; one child process per configuration; peak = VmHWM "
            "of the child (compilation included); baseline = its RSS after building the MDP",
            f"one [S, A, S] array = {common.fmt_bytes(sa_s)}; `vector_width` = runs "
            "vectorized together (default `_chunks.default_vector_width(mdp, sampler)`), "
            "`batch_size` = runs per compiled call (default "
            "`_chunks.default_batch_size(total, group)`)",
        ],
    )
    results = []
    with tempfile.TemporaryDirectory() as tmpdir:
        for bs in batch_sizes:
            results.append(run_config(f"batch_size={bs}", bs, "default", sizes, tmpdir))
        for vw in vector_widths:
            results.append(run_config(f"vector_width={vw}", "default", vw, sizes, tmpdir))
        print()
        ref = compare(results)

    rows = []
    for r in results:
        ok = r["returncode"] == 0
        used = r.get("used", {})
        peak = r.get("peak_rss")
        group = used.get("vector_width") or used.get("batch_size")
        within = ok and peak <= LIMIT_GIB * 2**30
        rows.append(
            [
                r["label"],
                used.get("batch_size", "?") if ok else "",
                used.get("vector_width", "—") if ok else "",
                used.get("runs_computed", "?") if ok else "",
                common.fmt_bytes(peak) if ok else "—",
                common.fmt_bytes(peak - r["baseline_rss"]) if ok else "—",
                common.fmt_bytes((peak - r["baseline_rss"]) / group) if ok and group else "—",
                f"{(peak - r['baseline_rss']) / group / sa_s:.1f}" if ok and group else "—",
                common.fmt_bytes(r["ru_maxrss"]),
                f"{r['elapsed_s']:.1f} s" if ok else "—",
                ("yes" if r["identical_to_reference"] else "NO") if ok else "—",
                common.verdict(within)
                if ok
                else (
                    f"killed above {r['killed_above_gib']} GiB"
                    if r["killed_above_gib"]
                    else f"failed rc={r['returncode']}"
                ),
            ]
        )
    common.print_table(
        "Peak resident memory per configuration",
        [
            "configuration",
            "batch_size used",
            "vector_width used",
            f"runs computed (of {total})",
            "peak RSS (VmHWM)",
            "peak − baseline",
            "÷ runs vectorized",
            "= [S, A, S] arrays per run",
            "ru_maxrss (wait4)",
            "sweep time (with compile)",
            f"np.array_equal to {ref['label'] if ref else '?'}",
            f"<= {LIMIT_GIB:g} GiB",
        ],
        rows,
    )
    diff_rows = [
        [
            r["label"],
            field,
            f"{d['entries']} / {d['of']}",
            f"{d['max_abs_diff']:.1e}",
            f"{d['max_rel_diff']:.1e}",
        ]
        for r in results
        for field, d in (r.get("fields_differing") or {}).items()
    ]
    if diff_rows:
        eps = 2.0**-23 if args.dtype == "float32" else 2.0**-52
        common.print_table(
            f"Fields that differ from {ref['label']} (machine epsilon of {args.dtype} = {eps:.1e})",
            ["configuration", "field", "entries differing", "max |Δ|", "max relative |Δ|"],
            diff_rows,
        )
    for r in results:
        if r["returncode"] != 0:
            print(f"{r['label']} log tail:\n```\n{r.get('log_tail', '')}\n```\n")

    bs_results = [r for r in results if r["label"].startswith("batch_size=")]
    default = next((r for r in bs_results if r["label"] == "batch_size=default"), None)
    default_ok = bool(
        default and default["returncode"] == 0 and default["peak_rss"] <= LIMIT_GIB * 2**30
    )
    chunked = bs_results
    chunked_ok = all(r["returncode"] == 0 and r["peak_rss"] <= LIMIT_GIB * 2**30 for r in chunked)
    identical = all(r["identical_to_reference"] for r in bs_results)
    print(
        f"Targets: default sweep within {LIMIT_GIB:g} GiB: {common.verdict(default_ok)}; "
        f"every chunked batch_size within {LIMIT_GIB:g} GiB: {common.verdict(chunked_ok)}; "
        f"results identical (np.array_equal) across batch_size: {common.verdict(identical)}.\n"
    )
    common.write_json(
        common.results_path(NAME, args),
        dict(
            environment=env,
            sizes=sizes,
            ks=list(KS),
            sampler=args.sampler,
            limit_gib=LIMIT_GIB,
            configs=results,
            default_within_limit=default_ok,
            chunked_within_limit=chunked_ok,
            identical_across_batch_size=identical,
        ),
    )


if __name__ == "__main__":
    main()
