#!/usr/bin/env python
"""Ragged rows: padded `[S, A, K]` vs bucketed successor lists on a leader-like DTMC.

    python benchmarks/bench_ragged.py [--states 12400] [--fanout 4096] [--sweeps 20]

The model is ``jp.examples.leader_like`` (our own generator shaped like Storm's ``leader4_8``:
12,400 states, 16,495 transitions, one state with 4,096 successors), written as a Storm
explicit ``.tra`` (``mdp`` header, one ``s a t p`` line per transition) with a state-reward
file. For each layout (``load_mdp(..., layout="padded" | "ragged")``), in a fresh process
each: the load's wall time and the process's peak RSS (``ru_maxrss``, the interpreter and
JAX included: the baseline row, which only imports, shows their share), the model's stored
successor slots; then, in float64 and float32 (discount 0.95), the time of ``--sweeps``
value-iteration sweeps (``solve(..., options=SolverOptions(max_iterations=sweeps))``,
compiled first, median of 3, ``jax.block_until_ready``) and the full ``solve`` to its
default tolerance (ragged only: the padded one takes minutes). The library is imported from
this checkout.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def write_storm(path: Path, states: int, fanout: int) -> int:
    import numpy as np

    import jaxprivmdp as jp
    from jaxprivmdp.models._ragged import transition_lists

    mdp = jp.examples.leader_like(states, fanout)
    rid, nxt, p = transition_lists(mdp)
    lines = map("{} 0 {} {!r}\n".format, rid.tolist(), nxt.tolist(), p.tolist())
    path.write_text("mdp\n" + "".join(lines))
    r = np.asarray(mdp.rewards)[:, 0].tolist()
    path.with_suffix(".state.rew").write_text("".join(f"{s} {x!r}\n" for s, x in enumerate(r)))
    return rid.size


def _timed(fn, repeats: int = 3) -> float:
    import jax

    jax.block_until_ready(fn())  # compile
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        jax.block_until_ready(fn())
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def child(layout: str, path: Path, sweeps: int) -> dict:
    """One layout in this process: load, memory, solve times."""
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    import jaxprivmdp as jp

    if layout == "none":  # the interpreter and JAX alone
        jnp.zeros(1).block_until_ready()
        return dict(peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    t = time.perf_counter()
    mdp = jp.load_mdp(path, discount=0.95, layout=layout)
    load_s = time.perf_counter() - t
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    slots = mdp.num_slots if isinstance(mdp, jp.RaggedMDP) else mdp.next_states.size
    out = dict(load_s=load_s, peak_rss_after_load_mb=rss, slots=int(slots))
    for dtype in (jnp.float64, jnp.float32):
        m = jax.tree.map(
            lambda x, dtype=dtype: x.astype(dtype) if x.dtype == jnp.float64 else x, mdp
        )
        name = jnp.dtype(dtype).name
        out[f"sweeps_{name}_s"] = _timed(
            lambda m=m: jp.solve(m, options=jp.SolverOptions(max_iterations=sweeps)).values
        )
        if layout == "ragged":
            sol = jp.solve(m)
            out[f"solve_{name}_iterations"] = int(sol.iterations)
            out[f"solve_{name}_s"] = _timed(lambda m=m: jp.solve(m).values, repeats=1)
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--states", type=int, default=12_400)
    ap.add_argument("--fanout", type=int, default=4_096)
    ap.add_argument("--sweeps", type=int, default=20)
    ap.add_argument("--child", nargs=2, metavar=("LAYOUT", "PATH"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], Path(args.child[1]), args.sweeps)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "leader.tra"
        n = write_storm(path, args.states, args.fanout)
        print(f"leader_like: S = {args.states}, fan-out {args.fanout}, {n} transitions")
        rows = {}
        for layout in ("none", "padded", "ragged"):
            cmd = [sys.executable, __file__, "--sweeps", str(args.sweeps)]
            cmd += ["--child", layout, str(path)]
            res = subprocess.run(cmd, capture_output=True, text=True, check=True)
            rows[layout] = json.loads(res.stdout.strip().splitlines()[-1])
            print(layout, rows[layout], flush=True)
    print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
