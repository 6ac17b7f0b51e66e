#!/usr/bin/env python
"""The exact/certified sets' Beta box lookup (``sets._beta.intervals``) under ``jax.jit``, this
checkout vs an earlier commit, in one process (issue 15: the lookup was some 15 ms of a 35 ms
``cost_of_privacy``).

    python benchmarks/bench_beta_lookup.py [--before COMMIT] [--rounds N] [--shape R S] [--check]

The package at ``COMMIT`` is exported with ``git archive`` and imported under another name
(``bench_sets_ab.export``), so both versions run round-robin in one loop. The input is what a
dense release of ``bench_sets_ab.py``'s problem holds: ``R = S·A`` rows of ``S`` entries, each
row a Dirichlet(5/S) draw in the dtype (some 65 % of the entries exactly 0 in float32), with
the tables of ``k = 5`` at the certified level ``0.1 / (2 R S)``. Two calls per version: the
pair ``(lower, upper)``, and ``(lower, upper − lower)`` as ``sets._boxes.row_box`` uses it.
Printed per call: the median wall and CPU time (``time.process_time``, both threads of XLA's
pool), and whether both versions return the same bits (NaN payloads included); with
``--check`` first the bits on edge inputs for 24 tables per dtype (:func:`check_bits`).
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
from common import timing_table  # noqa: E402

from jaxprivmdp.sets import _beta  # noqa: E402


def calls_for(name: str, beta, x, tables) -> dict:
    """The two jitted calls of one version's ``intervals``, closed over their inputs."""
    pair = jax.jit(beta.intervals)

    def with_caps(x, t):
        lower, upper = beta.intervals(x, t)
        return lower, upper - lower

    caps = jax.jit(with_caps)
    return {f"pair {name}": lambda: pair(x, tables), f"caps {name}": lambda: caps(x, tables)}


def differing(a, b) -> int:
    """How many entries of the arrays ``a`` and ``b`` (tuples) differ in their bits."""
    out = 0
    for u, v in zip(a, b, strict=True):
        u, v = np.asarray(u), np.asarray(v)
        ints = np.uint64 if u.dtype == np.float64 else np.uint32
        out += int((u.view(ints) != v.view(ints)).sum())
    return out


def edge_inputs(dtype) -> np.ndarray:
    """Values the sets never see and edges they do, then releases: ±0, subnormals, NaN,
    ±inf, values outside [0, 1], 40 floats either side of FLOOR, 1/4, 1/2, 1/2 ± 8 ulps and
    1, the nodes (and their neighbours and mirrors), Dirichlet rows (k = 0.5, 5, 50, 1e4),
    uniform draws, log-uniform ones down to the smallest subnormal, and 1 minus those."""
    f, info, rng = np.dtype(dtype).type, np.finfo(dtype), np.random.default_rng(1)
    special = [0.0, -0.0, info.smallest_subnormal, info.tiny, info.tiny / 2, 1e-40]
    special += [-1e-3, -1.0, 1.5, 2.0, np.inf, -np.inf, np.nan]
    near = []
    for c in [info.tiny, _beta.FLOOR, 0.25, 0.5, 1.0, 0.5 - 8 * info.eps, 0.5 + 8 * info.eps]:
        lo = hi = f(c)
        for _ in range(40):
            lo, hi = np.nextafter(lo, f(0)), np.nextafter(hi, f(2))
            near += [lo, hi]
    nodes = _beta.x_grid().astype(dtype)
    parts = [special, near, nodes, np.nextafter(nodes, f(0)), np.nextafter(nodes, f(1))]
    parts += [1 - nodes, rng.uniform(0, 1, 40_000)]
    parts += [rng.dirichlet(np.full(200, k / 200), size=200).ravel() for k in (0.5, 5, 50, 1e4)]
    tiny = np.log10(float(info.smallest_subnormal))
    logs = 10 ** rng.uniform(tiny, 0, 40_000)
    return np.concatenate([np.asarray(q, dtype) for q in [*parts, logs, 1 - logs]])


def check_bits(before) -> None:
    """Both versions' bits on :func:`edge_inputs`, for 24 tables (k from 1e-2 to 1e8, levels
    from 1e-12 to 0.05) per dtype: eagerly, under jit, and under jit of vmap over k."""
    ks, levels = (1e-2, 0.5, 5.0, 100.0, 1e4, 1e8), (0.05, 1e-4, 1e-9, 1e-12)
    for dtype in ("float32", "float64"):
        with jax.enable_x64(dtype == "float64"):
            x, count, differ = jnp.asarray(edge_inputs(dtype)), 0, 0
            for k, level in [(k, c) for k in ks for c in levels]:
                t = _beta.BetaTables(*map(jnp.asarray, _beta.host_tables(k, level, dtype)))
                for wrap in (lambda f: f, jax.jit):
                    a, b = wrap(before.intervals)(x, t), wrap(_beta.intervals)(x, t)
                    differ += differing(a, b)
                    count += 2 * x.size
            t = _beta.BetaTables(*map(jnp.asarray, _beta.host_tables(np.asarray(ks), 1e-6, dtype)))
            mapped = [jax.jit(jax.vmap(m.intervals, (None, 0))) for m in (before, _beta)]
            differ += differing(mapped[0](x, t), mapped[1](x, t))
            print(f"{dtype}: {count + 2 * x.size * len(ks)} entries compared, {differ} differ")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--before", default="cc10b76", help="the earlier commit")
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--shape", type=int, nargs=2, default=(4000, 1000), metavar=("R", "S"))
    p.add_argument("--dtypes", nargs="+", default=("float32", "float64"))
    p.add_argument("--check", action="store_true", help="compare the bits on edge inputs too")
    args = p.parse_args(argv)
    rows, size = args.shape
    level = 0.1 / (2 * rows * size)
    rng = np.random.default_rng(0)
    draw = rng.dirichlet(np.full(size, 5.0 / size), size=rows)
    with tempfile.TemporaryDirectory() as tmp:
        export(args.before, Path(tmp))
        before = importlib.import_module("jaxprivmdp_before.sets._beta")
        if args.check:
            check_bits(before)
        for dtype in args.dtypes:
            with jax.enable_x64(dtype == "float64"):
                x = jnp.asarray(draw, dtype)
                tables = _beta.BetaTables(*map(jnp.asarray, _beta.host_tables(5.0, level, dtype)))
                calls = calls_for("before", before, x, tables)
                calls |= calls_for("after", _beta, x, tables)
                for kind in ("pair", "caps"):
                    n = differing(calls[f"{kind} before"](), calls[f"{kind} after"]())
                    print(f"{dtype} {kind}: {'the same bits' if n == 0 else f'{n} entries DIFFER'}")
                zeros = float(jnp.mean(x == 0))
                load = os.getloadavg()[0]
                res = timed(calls, args.rounds)
            print(
                f"\n{dtype} [{rows}, {size}] ({zeros:.0%} zeros), before = {args.before}, "
                f"1-min load {load:.2f} -> {os.getloadavg()[0]:.2f}, {args.rounds} rounds"
            )
            print(timing_table(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
