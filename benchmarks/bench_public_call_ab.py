#!/usr/bin/env python
"""The public calls' eager boundary on a small model, this checkout vs an earlier commit, in
one process (the per-trial target of benchmarks/RESULTS.md §1: ``cost_of_privacy`` ≥ 2000×
the LP method).

    python benchmarks/bench_public_call_ab.py [--before COMMIT] [--rounds N]

Both versions (the earlier one exported with ``git archive``, ``bench_sets_ab.export``) run
round-robin on ``bench_lp_baseline``'s problem: ``examples.random_mdp`` (S = 20, A = 5,
T = 10, float64), a ``dirichlet_mechanism(k=10, sampler="fast")`` release and its optimal
policy; ``cost_of_privacy(m, policy, k=10, beta=0.1)`` as a user calls it (eagerly), and
the jitted ``bounds_core`` it dispatches to. Each call gets a fresh copy of the policy (a
trial's policy is new; a copied-back array is cached by JAX). Printed: median wall time per
call and the public call's overhead over its core.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
import time
from pathlib import Path

import jax
import numpy as np

jax.config.update("jax_enable_x64", True)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_sets_ab import convert, export  # noqa: E402

import jaxprivmdp as jp  # noqa: E402


def calls_for(lib, mdp, policy):
    from importlib import import_module

    bounds = import_module(lib.__name__ + ".planning._bounds")
    model = convert(lib, mdp)
    mech, uset = lib.Dirichlet(10.0), lib.PaperSet(0.1)
    kind, params, width = bounds.set_up(model, mech, uset)
    kw = dict(kind=kind, width=width, support_aware=False)
    return {
        "cost_of_privacy": lambda p: lib.cost_of_privacy(model, p, k=10.0, beta=0.1),
        "bounds_core": lambda p: bounds.bounds_core(model, p, params, None, 10_000, **kw),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", default="cc10b76")
    ap.add_argument("--rounds", type=int, default=400)
    args = ap.parse_args(argv)
    mdp = jp.examples.random_mdp(jax.random.key(0), dtype=np.float64)
    p_bar = jp.dirichlet_mechanism(jax.random.key(1), mdp.transitions, 10.0, sampler="fast")
    private = dataclasses.replace(mdp, transitions=p_bar)
    policy = np.asarray(jp.solve(private).policy)
    with tempfile.TemporaryDirectory() as tmp:
        before = export(args.before, Path(tmp))
        calls = {}
        for label, lib in (("before", before), ("after", jp)):
            for name, fn in calls_for(lib, private, policy).items():
                calls[f"{name} {label}"] = fn
        load = os.getloadavg()[0]
        times = {k: [] for k in calls}
        for r in range(args.rounds):
            for name, fn in calls.items():
                p = jax.block_until_ready(jax.device_put(policy))  # a new array each call
                t = time.perf_counter()
                jax.block_until_ready(fn(p))
                if r >= 10:
                    times[name].append(time.perf_counter() - t)
    med = {k: float(np.median(v)) for k, v in times.items()}
    print(
        f"before = {args.before}, {args.rounds} rounds, load {load:.2f} -> {os.getloadavg()[0]:.2f}"
    )
    print("| call | before | after | before ÷ after |\n|---|---|---|---|")
    for name in ("cost_of_privacy", "bounds_core"):
        b, a = med[f"{name} before"], med[f"{name} after"]
        print(f"| {name} | {b * 1e6:.0f} µs | {a * 1e6:.0f} µs | {b / a:.2f} |")
    for label in ("before", "after"):
        over = med[f"cost_of_privacy {label}"] - med[f"bounds_core {label}"]
        print(f"{label}: the public call's own work {over * 1e6:.0f} µs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
