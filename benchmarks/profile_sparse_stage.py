#!/usr/bin/env python
"""Where one stage of a sparse finite-horizon recursion goes: per-XLA-op time (the
50×50 dense-vs-sparse comparison of ``sparse_quick.py``).

    python benchmarks/profile_sparse_stage.py [--side 50] [--horizon 100] [--k 50]
        [--bound paper] [--support-aware] [--top 30]

On ``examples.gridworld(side, side, horizon=T, discount=1)`` (``A = 4``, 3 successors a row)
and its optimal policy (``solve``): the median wall time of ``bounds_core`` (arguments as
``cost_of_privacy(m, policy, Dirichlet(k), uset)`` builds them, ``common.set_args``) and of
``solve_core``, then each one's top XLA ops from a ``jax.profiler`` trace
(``common.xla_op_profile``) in µs per stage (time per call ÷ ``T``), with the JAX operation
each came from. The profiler adds a fixed cost per op: read the shares, not the sum.
"""

from __future__ import annotations

import argparse
import statistics

import common
import jax

import jaxprivmdp as jp
from jaxprivmdp.planning import _bellman, _bounds


def show(name: str, jitted, args, kwargs, stages: int, top: int) -> None:
    def fn():
        return jitted(*args, **kwargs)

    wall = statistics.median(common.round_robin({name: fn}, min_rounds=15)[name][0])
    print(f"\n{name}: median {wall * 1e3:.2f} ms a call ({stages} stages)")
    hlo = jitted.lower(*args, **kwargs).compile().as_text()
    prof = common.xla_op_profile(fn, hlo, repeats=10)
    if prof is None:
        print("  (no profile: jax.profiler unavailable)")
        return
    print("| µs / stage | launches / call | op | from |\n|---|---|---|---|")
    for p in prof[:top]:
        where = p["source"].split("/while/body/")[-1][-60:]
        flag = " (loop)" if p.get("container") else ""
        print(
            f"| {p['seconds_per_call'] * 1e6 / stages:.1f} | {p['launches_per_call']:.0f} "
            f"| {p['op']}{flag} | {where} |"
        )


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--side", type=int, default=50)
    p.add_argument("--horizon", type=int, default=100)
    p.add_argument("--k", type=float, default=50.0)
    p.add_argument("--bound", default="paper", choices=("paper", "exact", "certified"))
    p.add_argument("--support-aware", action="store_true")
    p.add_argument("--top", type=int, default=30)
    args = p.parse_args(argv)
    g = jp.examples.gridworld(args.side, args.side, horizon=args.horizon, discount=1.0)
    policy = jp.solve(g).policy
    params, static = common.set_args(g, args.k, 0.1, args.bound, args.support_aware)
    print(
        f"gridworld {args.side}x{args.side}, T = {args.horizon}, k = {args.k}, "
        f"{args.bound} set{' (support-aware)' if args.support_aware else ''}, "
        f"width {static['width']}; {jax.devices()[0]}, jax {jax.__version__}"
    )
    T = args.horizon
    show("bounds_core", _bounds.bounds_core, (g, policy, params, None, 10_000), static, T, args.top)
    show("solve_core", _bellman.solve_core, (g, None, 10_000), {}, T, args.top)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
