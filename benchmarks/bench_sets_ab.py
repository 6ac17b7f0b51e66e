#!/usr/bin/env python
"""The uncertainty sets' bounds under ``jax.jit``, this checkout vs an earlier commit, in one
process (issue 15, item 1: every set ≤ 5× ``evaluate``).

    python benchmarks/bench_sets_ab.py [--before COMMIT] [--rounds N] [--sizes S A T]
        [--aware] [--sparse] [--discounted]

The package at ``COMMIT`` is exported with ``git archive`` into a temporary folder and
imported under another name, so both versions run round-robin in one loop (on this shared
machine, two runs minutes apart see different loads). The problem is ``bench_jit.py``'s
dense one (Example 2's generator, S = 1000, A = 4, T = 20, a Dirichlet release with k = 5,
``support="nonzero"``, its optimal policy; ``--sparse``: its sparse one, 8 successors a
row; ``--discounted``: the same rows with an infinite horizon, γ = 0.9); each set is called
as a user writes it, ``jax.jit(lambda m, p: cost_of_privacy(m, p, mech, uset))``, next to
``jax.jit(evaluate)``.
Printed per call: the median wall and CPU time (``time.process_time``, both threads of
XLA's pool) and their ratios to ``evaluate``; and whether both versions return the same
bits.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import jax  # noqa: E402
import numpy as np  # noqa: E402
from common import round_robin, timing_table  # noqa: E402

import jaxprivmdp as jp  # noqa: E402

SETS = ("paper", "exact", "certified")


def export(commit: str, into: Path) -> object:
    """The package at ``commit``, imported as ``jaxprivmdp_before`` (relative imports)."""
    tar = subprocess.run(
        ["git", "-C", str(REPO), "archive", commit, "jaxprivmdp"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=tar, check=True)
    (into / "jaxprivmdp").rename(into / "jaxprivmdp_before")
    sys.path.insert(0, str(into))
    return importlib.import_module("jaxprivmdp_before")


def convert(lib, model):
    """The same model as ``lib``'s class (the two packages' classes differ)."""
    fields = {f.name: getattr(model, f.name) for f in dataclasses.fields(model)}
    return getattr(lib, type(model).__name__)(**fields)


def timed(calls: dict, rounds: int) -> dict:
    """``{name: (median wall s, median CPU s)}``, round-robin after one untimed call."""
    samples = round_robin(calls, min_rounds=rounds)
    return {n: (float(np.median(w)), float(np.median(c))) for n, (w, c) in samples.items()}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--before", default="5b36724", help="the earlier commit")
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--sizes", type=int, nargs=3, default=(1000, 4, 20), metavar=("S", "A", "T"))
    p.add_argument("--aware", action="store_true", help="support-aware sets")
    p.add_argument("--sparse", action="store_true", help="bench_jit's sparse model (K = 8)")
    p.add_argument("--discounted", action="store_true", help="infinite horizon, γ = 0.9")
    args = p.parse_args(argv)
    S, A, T = args.sizes
    with tempfile.TemporaryDirectory() as tmp:
        before = export(args.before, Path(tmp))
        if args.sparse:
            sys.path.insert(1, str(REPO / "benchmarks"))
            from bench_jit import sparse_model

            mdp, kw = sparse_model(S, A, T, 8, 5), {}
            if args.discounted:
                mdp = jp.make_sparse_mdp(mdp.next_states, mdp.probs, mdp.rewards, discount=0.9)
        else:
            key, horizon = jax.random.key(3), None if args.discounted else T
            discount = 0.9 if args.discounted else None
            mdp = jp.examples.random_mdp(key, S, A, horizon=horizon, discount=discount)
            kw = {"support": "nonzero"}
        rel = jp.privatize(jax.random.key(4), mdp, jp.Dirichlet(5.0), **kw)
        pol = jp.solve(rel).policy
        ev = jax.jit(jp.evaluate)
        calls = {"evaluate": lambda: ev(rel, pol)}
        for name in SETS:
            outs = []
            for label, lib in (("before", before), ("after", jp)):
                cls = {"paper": lib.PaperSet, "exact": lib.ExactSet, "certified": lib.CertifiedSet}
                uset, mech, model = (
                    cls[name](0.1, args.aware),
                    lib.Dirichlet(5.0),
                    convert(lib, rel),
                )
                f = jax.jit(
                    lambda m, q, lib=lib, mech=mech, u=uset: lib.cost_of_privacy(m, q, mech, u)
                )
                calls[f"{name} {label}"] = lambda f=f, m=model: f(m, pol)
                outs.append(calls[f"{name} {label}"]())
            same = all(np.array_equal(a, b) for a, b in zip(*outs, strict=True))
            print(
                f"{name}{' aware' if args.aware else ''}: before and after "
                f"{'return the same bits' if same else 'DIFFER'}"
            )
        load = os.getloadavg()[0]
        res = timed(calls, args.rounds)
    print(
        f"\n{'sparse' if args.sparse else 'dense'} S={S} A={A} "
        f"{'γ=0.9' if args.discounted else f'T={T}'}, before = {args.before}, "
        f"1-min load {load:.2f} -> "
        f"{os.getloadavg()[0]:.2f}, {args.rounds} rounds, CPU backend {jax.devices()[0]}"
    )
    print(timing_table(res, baseline="evaluate"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
