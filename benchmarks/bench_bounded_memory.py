#!/usr/bin/env python
"""Peak memory of a step-bounded ``jp.check``: the default (the first step's rule, `[S]`)
against ``step_policy=True`` (one rule per step, `[k, S]`).

A sparse chain of ``S`` states, two actions (forward w.p. 0.9, or two ahead w.p. 0.5),
``Pmax=? [F<=k "goal"]``. Run each mode in its own process under ``/usr/bin/time -v``
(its "Maximum resident set size" is the peak)::

    /usr/bin/time -v python benchmarks/bench_bounded_memory.py none      # model only
    /usr/bin/time -v python benchmarks/bench_bounded_memory.py default
    /usr/bin/time -v python benchmarks/bench_bounded_memory.py step

``S`` and ``k`` are the optional second and third arguments (default 10⁶ and 1000).
"""

from __future__ import annotations

import sys
import time

import jax
import numpy as np

import jaxprivmdp as jp


def chain(S: int) -> jp.SparseMDP:
    """The sparse chain: action 0 forward w.p. 0.9, action 1 two ahead w.p. 0.5."""
    s = np.arange(S)
    nxt = np.empty((S, 2, 2), np.int32)
    probs = np.empty((S, 2, 2))
    nxt[:, 0, 0], nxt[:, 0, 1] = s, np.minimum(s + 1, S - 1)
    probs[:, 0] = [0.1, 0.9]
    nxt[:, 1, 0], nxt[:, 1, 1] = s, np.minimum(s + 2, S - 1)
    probs[:, 1] = [0.5, 0.5]
    end = s >= S - 2  # the last two states loop
    nxt[end, :, 0], nxt[end, :, 1] = s[end, None], -1
    probs[end, :, 0], probs[end, :, 1] = 1.0, 0.0
    return jp.make_sparse_mdp(nxt, probs, np.zeros((S, 2)))


def main(argv: list[str]) -> None:
    mode = argv[0] if argv else "default"
    if mode not in ("none", "default", "step"):
        raise SystemExit("mode: none, default or step")
    S = int(argv[1]) if len(argv) > 1 else 1_000_000
    k = int(argv[2]) if len(argv) > 2 else 1000
    mdp = chain(S)
    t = time.perf_counter()
    if mode != "none":
        goal = np.arange(S) >= S - 600
        res = jp.check(
            mdp, f'Pmax=? [F<={k} "goal"]', labels={"goal": goal}, step_policy=mode == "step"
        )
        jax.block_until_ready(res)  # (NumPy on the host: nothing to wait for)
        print(f"{mode}: policy {res.policy.shape}, value {float(res.values[S - 700]):.6g}")
    print(f"{mode}: {time.perf_counter() - t:.1f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
