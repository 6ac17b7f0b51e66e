#!/usr/bin/env python
"""Sparse models' planning and bounds, this checkout vs an earlier commit, in one process
(issue 15: the 50×50 dense-vs-sparse row, and `solve`/`evaluate` on successor lists).

    python benchmarks/bench_sparse_ab.py [--before COMMIT] [--rounds N] [--sides 50 300]

Both versions of the package run round-robin in one loop (``bench_sets_ab.export``: the
earlier commit is exported with ``git archive`` and imported under another name). Per
gridworld side (``examples.gridworld(side, side, horizon=100, discount=1)``, 3 successors a
row): ``solve``, ``evaluate`` of its optimal policy, ``cost_of_privacy`` (paper's set, and the
certified support-aware set) with ``k = 50``, and ``synthesize`` (``sampler="fast"``), each
called as a user does (eagerly: the public functions compile their own programs), plus the
discounted 300×300 ``synthesize``, and the Figure-1 sweep (``ks=[1, 5, …, 40]``, ``--trials``
per k, ``sweep``'s defaults) of the 100×100 gridworld with T = 200. Printed per call:
median wall and CPU time (``time.process_time``, both threads of XLA's pool), the ratio
before ÷ after, and whether both versions return the same bits (tied values may pick other
actions: the bits differ then, the bounds stay valid).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import jax
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_sets_ab import convert, export, timed  # noqa: E402

import jaxprivmdp as jp  # noqa: E402

K = 50.0


def calls_for(lib, g, policy, key) -> dict:
    """The user's calls on one gridworld, for one version of the package."""
    g = convert(lib, g)
    out = {
        "solve": lambda: lib.solve(g),
        "evaluate": lambda: lib.evaluate(g, policy),
        "cost_of_privacy paper": lambda: lib.cost_of_privacy(g, policy, k=K),
        "cost_of_privacy certified aware": lambda: lib.cost_of_privacy(
            g, policy, k=K, bound="certified", support_aware=True
        ),
    }
    if g.is_finite_horizon:
        out["synthesize"] = lambda: lib.synthesize(key, g, k=K, sampler="fast")
        return out
    return {"synthesize": lambda: lib.synthesize(key, g, k=10.0, sampler="fast")}


KS = [1.0, 5.0, 10.0, 15.0, 20.0, 25.0, 30.0, 35.0, 40.0]


def sweep_calls(lib, g, key, trials: int) -> dict:
    g = convert(lib, g)
    return {"sweep": lambda: lib.sweep(key, g, ks=KS, num_trials=trials).cost}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--before", default="b45668a", help="the earlier commit")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--sides", type=int, nargs="+", default=(50, 300))
    p.add_argument("--trials", type=int, default=4, help="sweep trials per k (0: no sweep)")
    args = p.parse_args(argv)
    key = jax.random.key(0)
    problems = [
        (f"{s}x{s} T=100", jp.examples.gridworld(s, s, horizon=100, discount=1.0))
        for s in args.sides
    ]
    problems.append(("300x300 discounted 0.95", jp.examples.gridworld(300, 300, discount=0.95)))
    if args.trials:
        problems.append((f"100x100 T=200, {len(KS)} k x {args.trials}", "sweep"))
    print(f"before = {args.before}, after = this checkout, CPU backend {jax.devices()[0]}")
    print(
        "| model | call | before wall | after wall | before CPU | after CPU | CPU before ÷ after "
        "| same bits |\n|---|---|---|---|---|---|---|---|"
    )
    with tempfile.TemporaryDirectory() as tmp:
        before = export(args.before, Path(tmp))
        for name, g in problems:
            libs = (("before", before), ("after", jp))
            if isinstance(g, str):  # the sweep (seconds a call: at most 3 rounds)
                grid = jp.examples.gridworld(100, 100, horizon=200, discount=1.0)
                versions = {v: sweep_calls(lib, grid, key, args.trials) for v, lib in libs}
            else:
                policy = jp.solve(g).policy
                versions = {v: calls_for(lib, g, policy, key) for v, lib in libs}
            calls = {f"{c} {v}": f for v, cs in versions.items() for c, f in cs.items()}
            load = os.getloadavg()[0]
            res = timed(calls, min(args.rounds, 3) if isinstance(g, str) else args.rounds)
            for c in versions["after"]:
                a, b = versions["before"][c](), versions["after"][c]()
                same = all(
                    np.array_equal(x, y)
                    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True)
                )
                (wb, cb), (wa, ca) = res[f"{c} before"], res[f"{c} after"]
                print(
                    f"| {name} | {c} | {wb * 1e3:.1f} ms | {wa * 1e3:.1f} ms | "
                    f"{cb * 1e3:.1f} ms | {ca * 1e3:.1f} ms | {cb / ca:.2f} | {same} |"
                )
            print(f"<!-- {name}: 1-min load {load:.2f} -> {os.getloadavg()[0]:.2f} -->")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
