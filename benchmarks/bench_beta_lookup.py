#!/usr/bin/env python
"""The exact/certified sets' Beta box lookup (``sets._beta.intervals``) under ``jax.jit``, this
checkout vs an earlier commit, in one process (issue 15: the lookup was some 15 ms of a 35 ms
``cost_of_privacy``).

    python benchmarks/bench_beta_lookup.py [--before COMMIT] [--rounds N] [--shape R S]

The package at ``COMMIT`` is exported with ``git archive`` and imported under another name
(``bench_sets_ab.export``), so both versions run round-robin in one loop. The input is what a
dense release of ``bench_sets_ab.py``'s problem holds: ``R = S·A`` rows of ``S`` entries, each
row a Dirichlet(5/S) draw in the dtype (some 65 % of the entries exactly 0 in float32), with
the tables of ``k = 5`` at the certified level ``0.1 / (2 R S)``. Two calls per version: the
pair ``(lower, upper)``, and ``(lower, upper − lower)`` as ``sets._boxes.row_box`` uses it.
Printed per call: the median wall and CPU time (``time.process_time``, both threads of XLA's
pool), and whether both versions return the same bits (NaN payloads included).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from bench_sets_ab import export, timed  # noqa: E402

from jaxprivmdp.sets import _beta  # noqa: E402


def calls_for(name: str, beta, x, tables) -> dict:
    """The two jitted calls of one version's ``intervals``, closed over their inputs."""
    pair = jax.jit(beta.intervals)

    def with_caps(x, t):
        lower, upper = beta.intervals(x, t)
        return lower, upper - lower

    caps = jax.jit(with_caps)
    return {f"pair {name}": lambda: pair(x, tables), f"caps {name}": lambda: caps(x, tables)}


def same_bits(a, b) -> bool:
    return all(
        np.array_equal(np.asarray(u).view(np.uint8), np.asarray(v).view(np.uint8))
        for u, v in zip(a, b, strict=True)
    )


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--before", default="cc10b76", help="the earlier commit")
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--shape", type=int, nargs=2, default=(4000, 1000), metavar=("R", "S"))
    p.add_argument("--dtypes", nargs="+", default=("float32", "float64"))
    args = p.parse_args(argv)
    rows, size = args.shape
    level = 0.1 / (2 * rows * size)
    rng = np.random.default_rng(0)
    draw = rng.dirichlet(np.full(size, 5.0 / size), size=rows)
    with tempfile.TemporaryDirectory() as tmp:
        export(args.before, Path(tmp))
        before = importlib.import_module("jaxprivmdp_before.sets._beta")
        for dtype in args.dtypes:
            with jax.enable_x64(dtype == "float64"):
                x = jnp.asarray(draw, dtype)
                tables = _beta.BetaTables(*map(jnp.asarray, _beta.host_tables(5.0, level, dtype)))
                calls = calls_for("before", before, x, tables)
                calls |= calls_for("after", _beta, x, tables)
                for kind in ("pair", "caps"):
                    same = same_bits(calls[f"{kind} before"](), calls[f"{kind} after"]())
                    print(f"{dtype} {kind}: {'the same bits' if same else 'bits DIFFER'}")
                zeros = float(jnp.mean(x == 0))
                load = os.getloadavg()[0]
                res = timed(calls, args.rounds)
            print(
                f"\n{dtype} [{rows}, {size}] ({zeros:.0%} zeros), before = {args.before}, "
                f"1-min load {load:.2f} -> {os.getloadavg()[0]:.2f}, {args.rounds} rounds"
            )
            print("| call | wall | CPU |\n|---|---|---|")
            for n, (w, c) in res.items():
                print(f"| {n} | {w * 1e3:.2f} ms | {c * 1e3:.2f} ms |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
