#!/usr/bin/env python
"""Before/after timing: the same named workload on two revisions of the package, interleaved.

    python benchmarks/ab.py [--base REV] [--head REV] [--rounds N] [--quick] WORKLOAD ...
    python benchmarks/ab.py --list

``--base`` (default ``HEAD``) is exported with ``git archive`` into a temporary folder (a
``git worktree`` would register itself in ``.git``; an export leaves the repository as it is);
``--head`` defaults to this working tree (uncommitted changes included). Each side runs in
its own worker process with its revision first on ``sys.path``, so both import the package
under its own name and every module (private ones too) is that revision's. The workloads are
the functions of ``ab_workloads.py`` (``--list`` prints them), the same code on both sides.

Each worker builds the workload's calls, calls each once (compilation, untimed), and then
times one call whenever the parent asks. The parent asks round-robin: per round, every call
on both sides, the side that goes first alternating, so that a burst of outside load on a
shared machine hits both sides alike. Printed per call: the median wall time and CPU time
(``time.process_time`` of the worker: every thread of XLA's pool) on each side, their
ratios base ÷ head (> 1: head is faster), and whether both sides returned the same bits.

Why not pytest-benchmark's ``--benchmark-compare``: it compares two saved runs made one after
the other, minutes apart, so on a shared machine the ratio mixes two load levels, and it
needs the benchmark module to exist at both revisions. Here one process per side lives for
the whole comparison and the calls alternate, which keeps the ratio fair; the workload code
comes from this checkout, so any revision can be measured with today's workloads.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent


# ----------------------------------------------------------------------------- worker side


def _digest(out) -> str:
    """A hash of the bits of every leaf of ``out`` (a pytree); other leaves by ``repr``."""
    import jax
    import numpy as np

    h = hashlib.sha256()
    for leaf in jax.tree.leaves(out):
        if hasattr(leaf, "dtype") and hasattr(leaf, "shape"):
            a = np.asarray(leaf)
            h.update(f"{a.dtype}{a.shape}".encode())
            h.update(np.ascontiguousarray(a).tobytes())
        else:
            h.update(repr(leaf).encode())
    return h.hexdigest()[:16]


def worker(src: str, name: str, quick: bool) -> int:
    """Serve timed calls of workload ``name`` with the package at ``src`` (see the module
    docstring); one JSON line per reply on the original stdout."""
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything the library prints goes to stderr, not into the protocol
    sys.path.insert(0, src)
    sys.path.insert(1, str(BENCH_DIR))
    try:
        import jax
        import jaxlib
        from ab_workloads import WORKLOADS

        import jaxprivmdp as jp

        where = Path(jp.__file__).resolve().parent
        if where != Path(src).resolve() / "jaxprivmdp":
            raise RuntimeError(f"imported {where}, not the package under {src}")
        calls = {}
        for call, spec in WORKLOADS[name](jp, quick).items():
            prepare, run = spec if isinstance(spec, tuple) else (tuple, spec)
            calls[call] = (prepare, run)
        digests = {}
        for call, (prepare, run) in calls.items():
            digests[call] = _digest(jax.block_until_ready(run(*_args(prepare()))))
    except Exception as exc:  # reported to the parent, which goes on with other workloads
        proto.write(json.dumps({"error": f"{type(exc).__name__}: {exc}"}) + "\n")
        return 1
    info = {"jax": jax.__version__, "jaxlib": jaxlib.__version__, "backend": jax.default_backend()}
    proto.write(json.dumps({"calls": list(calls), "digests": digests, "info": info}) + "\n")
    for line in sys.stdin:
        call = line.strip()
        if call == "quit":
            break
        prepare, run = calls[call]
        args = _args(prepare())
        w0, c0 = time.perf_counter(), time.process_time()
        jax.block_until_ready(run(*args))
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        proto.write(json.dumps([wall, cpu]) + "\n")
    return 0


def _args(prepared) -> tuple:
    return prepared if isinstance(prepared, tuple) else (prepared,)


# ----------------------------------------------------------------------------- parent side


def export(rev: str, into: Path) -> str:
    """The package at ``rev`` extracted under ``into``; returns the full commit id."""
    sha = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--verify", f"{rev}^{{commit}}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    tar = subprocess.run(
        ["git", "-C", str(REPO), "archive", sha, "jaxprivmdp"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=tar, check=True)
    return sha


class Side:
    """One worker process: the package at ``src`` serving workload ``name``."""

    def __init__(self, label: str, src: Path, name: str, quick: bool):
        cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", str(src), name]
        env = dict(os.environ, PYTHONPATH="")  # nothing ahead of the revision's folder
        self.label = label
        self.proc = subprocess.Popen(
            cmd + (["--quick"] if quick else []),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=src,
        )
        self.hello = self._read()

    def _read(self):
        line = self.proc.stdout.readline()
        if not line:
            return {"error": f"worker exited with status {self.proc.wait()} (see stderr)"}
        return json.loads(line)

    def time(self, call: str) -> tuple[float, float]:
        self.proc.stdin.write(call + "\n")
        self.proc.stdin.flush()
        return tuple(self._read())

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.close()
            self.proc.wait()


def fmt_time(s: float) -> str:
    if s < 1e-3:
        return f"{s * 1e6:.0f} µs"
    if s < 1.0:
        return f"{s * 1e3:.1f} ms"
    return f"{s:.2f} s"


def compare(name: str, base: Path, head: Path, rounds: int, quick: bool, info: dict) -> list[str]:
    """Markdown rows for workload ``name``, or one row saying why it did not run; the head
    worker's versions and backend go into ``info``."""
    import statistics

    sides = [Side("base", base, name, quick), Side("head", head, name, quick)]
    try:
        for side in sides:
            if "error" in side.hello:
                failed = f"{side.label} failed: {side.hello['error']}"
                return [f"| {name} | — | {failed} |" + " |" * 6]
        info.update(sides[1].hello["info"])
        calls = [c for c in sides[1].hello["calls"] if c in sides[0].hello["calls"]]
        samples = {(s.label, c): ([], []) for s in sides for c in calls}
        for r in range(rounds):
            for call in calls:
                for side in sides if r % 2 == 0 else sides[::-1]:
                    wall, cpu = side.time(call)
                    samples[side.label, call][0].append(wall)
                    samples[side.label, call][1].append(cpu)
    finally:
        for side in sides:
            side.close()
    rows = []
    for call in calls:
        (bw, bc), (hw, hc) = (
            tuple(statistics.median(x) for x in samples[label, call]) for label in ("base", "head")
        )
        same = sides[0].hello["digests"][call] == sides[1].hello["digests"][call]
        rows.append(
            f"| {name} | {call} | {fmt_time(bw)} | {fmt_time(hw)} | {bw / hw:.2f} | "
            f"{fmt_time(bc)} | {fmt_time(hc)} | {bc / hc:.2f} | {'yes' if same else 'NO'} |"
        )
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("workloads", nargs="*", help="names from ab_workloads.py (default: tiny)")
    p.add_argument("--base", default="HEAD", help="the revision to compare against")
    p.add_argument("--head", default=None, help="a revision (default: this working tree)")
    p.add_argument("--rounds", type=int, default=15, help="timed calls per call and side")
    p.add_argument("--quick", action="store_true", help="the workloads' small sizes, 3 rounds")
    p.add_argument("--list", action="store_true", help="print the workloads and exit")
    p.add_argument("--worker", nargs=2, metavar=("SRC", "WORKLOAD"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        return worker(*args.worker, args.quick)
    sys.path.insert(0, str(BENCH_DIR))
    from ab_workloads import WORKLOADS

    if args.list:
        for name, fn in WORKLOADS.items():
            print(f"{name}: {' '.join((fn.__doc__ or '').split())}")
        return 0
    names = args.workloads or ["tiny"]
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        p.error(f"unknown workload(s) {unknown}; --list prints them")
    rounds = min(args.rounds, 3) if args.quick else args.rounds
    with tempfile.TemporaryDirectory(prefix="ab-") as tmp:
        base_dir = Path(tmp) / "base"
        base_dir.mkdir()
        base_sha = export(args.base, base_dir)
        if args.head is None:
            head_dir, head_desc = REPO, "this working tree"
        else:
            head_dir = Path(tmp) / "head"
            head_dir.mkdir()
            head_desc = export(args.head, head_dir)[:10]
        load = os.getloadavg()[0]
        info: dict = {}
        rows = [r for n in names for r in compare(n, base_dir, head_dir, rounds, args.quick, info)]
    print(
        f"base = {args.base} ({base_sha[:10]}), head = {head_desc}; {rounds} rounds"
        f"{', --quick sizes' if args.quick else ''}; Python {sys.version.split()[0]}, "
        f"JAX {info.get('jax', '?')} / jaxlib {info.get('jaxlib', '?')} "
        f"on {info.get('backend', '?')}; "
        f"1-min load {load:.2f} -> {os.getloadavg()[0]:.2f}"
    )
    print(
        "| workload | call | base wall | head wall | wall base ÷ head | base CPU | head CPU "
        "| CPU base ÷ head | same bits |\n|---|---|---|---|---|---|---|---|---|"
    )
    print("\n".join(rows))
    return 1 if any("failed:" in r for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
