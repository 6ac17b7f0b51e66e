#!/usr/bin/env python
"""The sparse robust kernel per stage, this checkout vs a previous commit (issue 15, item 4).

    python benchmarks/bench_memory_kernel.py [--before REV] [--side N] [--reps R]

For a ``side × side`` gridworld (a :class:`SparseMDP`, S = side², A = 4, K = 3) and one
decision per state, ``checked_backup`` of the paper's box with and without
``support_aware`` and the plain expectation (``evaluate``'s stage: a gather and a dot), each
jitted, by this checkout's ``planning._kernel`` and by the module at ``--before`` (loaded
from ``git show``), interleaved in one process. Prints the CPU time per stage
(``time.process_time``, median of ``--reps``), entries per second (S·K per stage), and
checks that the two modules give equal bounds.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from jaxprivmdp.models._rows import Rows, successors  # noqa: E402
from jaxprivmdp.models.examples import gridworld  # noqa: E402
from jaxprivmdp.planning import _kernel as after  # noqa: E402
from jaxprivmdp.sets._boxes import RowBox  # noqa: E402


def load(rev: str, path: str, name: str, package: str):
    """The module at ``path`` as at ``rev``, inside ``package`` (relative imports work)."""
    source = subprocess.run(
        ["git", "show", f"{rev}:{path}"], cwd=REPO, check=True, capture_output=True, text=True
    ).stdout
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader=None))
    module.__package__ = package
    exec(compile(source, f"{rev}:{path}", "exec"), module.__dict__)
    return module


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--before", default="b02f23f")
    p.add_argument("--side", type=int, default=300)
    p.add_argument("--reps", type=int, default=7)
    args = p.parse_args()
    before = load(
        args.before,
        "jaxprivmdp/planning/_kernel.py",
        "jaxprivmdp.planning._kb",
        "jaxprivmdp.planning",
    )
    m = gridworld(args.side, args.side)
    S = m.num_states
    rows = Rows(m.probs[:, 0], m.next_states[:, 0])  # one decision per state
    alpha = jnp.float32(0.05)
    box = RowBox(
        jnp.maximum(rows.probs - alpha, 0), jnp.minimum(rows.probs + alpha, 1), alpha, 0.01
    )
    v_low = jax.random.uniform(jax.random.key(0), (S,))
    v_high = v_low + 0.1
    calls = {}
    for label, mod in (("before", before), ("after", after)):
        for aware in (False, True):
            f = jax.jit(
                lambda r, b, lo, hi, mod=mod, aware=aware: mod.checked_backup(
                    r, b, lo, hi, width=32, support_aware=aware
                )
            )
            calls[(label, aware)] = f
    expect = jax.jit(lambda r, v: jnp.sum(r.probs * v[successors(r)], axis=-1))
    calls[("expectation", None)] = lambda r, b, lo, hi: expect(r, lo)
    times = {name: [] for name in calls}
    outs = {name: jax.block_until_ready(f(rows, box, v_low, v_high)) for name, f in calls.items()}
    for _ in range(args.reps):
        for name, f in calls.items():
            c = time.process_time()
            jax.block_until_ready(f(rows, box, v_low, v_high))
            times[name].append(time.process_time() - c)
    entries = S * rows.probs.shape[-1]
    print(f"S = {S}, K = {rows.probs.shape[-1]}; CPU time per stage (median of {args.reps})")
    for name, ts in times.items():
        t = float(np.median(ts))
        print(f"{str(name):>22}: {t * 1e3:8.2f} ms  {entries / t:.3g} entries/s")
    for aware in (False, True):
        b, a = outs[("before", aware)], outs[("after", aware)]
        diff = max(float(jnp.max(jnp.abs(x - y))) for x, y in zip(a[:2], b[:2], strict=True))
        print(f"support_aware={aware}: max |after - before| = {diff:.3g}")


if __name__ == "__main__":
    main()
