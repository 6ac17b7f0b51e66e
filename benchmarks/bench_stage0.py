#!/usr/bin/env python
"""Peak memory of a finite-horizon ``synthesize`` in full and with ``stage=0``.

    /usr/bin/time -v python benchmarks/bench_stage0.py --side 300 --horizon 200 --mode stage0
    /usr/bin/time -v python benchmarks/bench_stage0.py --side 300 --horizon 200 --mode full

One call on ``gridworld(side, side, horizon=T)`` (γ = 1, the paper's set, ``k = 10``),
compilation included, one mode per process: ``full`` keeps the `[T + 1, S]` values and
bounds and the `[T, S]` policy; ``stage0`` (``synthesize(..., stage=0)``) one backward pass
in `[S]` memory. Prints wall and process CPU time and the cost at ``s0`` (equal in both
modes, bit for bit); the peak resident memory is ``/usr/bin/time -v``'s "Maximum resident
set size". ``--progress`` adds the progress reports (``stage0``: every 5 s on stderr).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax  # noqa: E402

import jaxprivmdp as jp  # noqa: E402
from jaxprivmdp.models.examples import gridworld  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--side", type=int, default=300)
    p.add_argument("--horizon", type=int, default=200)
    p.add_argument("--mode", choices=("full", "stage0"), default="stage0")
    p.add_argument("--progress", action="store_true")
    a = p.parse_args()
    model = gridworld(a.side, a.side, horizon=a.horizon)
    wall, cpu = time.perf_counter(), time.process_time()
    stage = 0 if a.mode == "stage0" else None
    mech = jp.Dirichlet(10.0)
    out = jp.synthesize(jax.random.key(0), model, mech, stage=stage, progress=a.progress or None)
    out = jax.block_until_ready(out)
    print(
        f"{a.mode}: S = {model.num_states:,}, T = {a.horizon}: "
        f"{time.perf_counter() - wall:.1f} s wall, {time.process_time() - cpu:.1f} s CPU, "
        f"cost {float(out.cost)!r}, V̄(s0) "
        f"{float(out.private_values[..., model.initial_state].ravel()[0])!r}, "
        f"policy {out.policy.shape}"
    )


if __name__ == "__main__":
    main()
