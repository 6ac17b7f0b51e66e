#!/usr/bin/env python
"""``synthesize(key, gridworld(N, N), Dirichlet(10), PaperSet(support_aware=True))``.

    /usr/bin/time -v python benchmarks/bench_memory_large.py [--side 1000]

One call, compilation included, as a user makes it: the default ``sampler="jax"``, the
paper's set, infinite horizon (γ = 0.95). Prints the model's build time and the call's wall
and process CPU time (from the start, model included); the peak resident memory is
``/usr/bin/time -v``'s "Maximum resident set size". Targets (S = 10⁶): ≤ 2 GiB, ≤ 60 s.
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
    p.add_argument("--side", type=int, default=1000)
    side = p.parse_args().side
    wall, cpu = time.perf_counter(), time.process_time()
    model = gridworld(side, side)
    print(f"model: {time.perf_counter() - wall:.1f} s wall", flush=True)
    uset = jp.PaperSet(0.1, support_aware=True)
    out = jax.block_until_ready(jp.synthesize(jax.random.key(0), model, jp.Dirichlet(10.0), uset))
    print(
        f"synthesize: {time.perf_counter() - wall:.1f} s wall, "
        f"{time.process_time() - cpu:.1f} s CPU (model included); converged {bool(out.converged)}"
    )


if __name__ == "__main__":
    main()
