"""Loading a large explicit model: ``jp.load_mdp`` against a pandas/NumPy parse of the same file.

The target: loading a PRISM ``.tra`` of 10⁶ states and 6·10⁶ transitions within 2× the
time and 1.5× the memory of a pandas/NumPy parse into the same arrays.

The file: an MDP in PRISM's explicit format (``S C T`` header, ``source choice target
probability`` lines in row order, as PRISM writes them), ``--states`` states, 2 choices each
of 3 successors (``--varied``: 1 to 5, 3 on average, so rows are padded and the layout
scatters), probabilities written as Python's shortest round-trip decimals (mostly 16–17
digits: the hardest case for a reader that rounds exactly), no action names. It is generated
once into ``--folder`` (default: a temporary folder) by :func:`write_tra` here.

The contestants, each in a fresh child process (peaks do not mix), after importing the same
modules (NumPy, pandas, JAX, jaxprivmdp: the same baseline memory):

- ``load_mdp``: ``jp.load_mdp(path)``: parse, validation, the padded ``[S, A, K]`` layout,
  ``make_sparse_mdp``'s checks and the device arrays (float32, JAX's default).
- ``pandas``: ``pandas.read_csv`` (C engine) and NumPy into the same host arrays
  (``next_states`` int32 ``[S, A, K]``, ``probs`` float64, ``action_mask``, zero rewards),
  assuming rows in order and checking nothing: the reference of the target.
- ``pandas+make_sparse_mdp``: the same, then ``jp.make_sparse_mdp`` on them (the checks and
  device arrays ``load_mdp`` also makes).
- ``line_by_line`` (with ``--line-by-line``, first round only: it is slow): ``jp.load_mdp``
  with the vectorized readers switched off: the parsing as it was before them (the layout
  and checks after it are today's).

Time is wall-clock of the load alone (imports excluded), with ``jax.block_until_ready`` on the
model, and the process's CPU time over the same span (less sensitive to the machine's load);
memory is the child's peak resident set (``VmHWM``), absolute and above its resident set after
the imports. Rounds are interleaved (one child of each contestant per round) so that the load
of this shared machine hits all alike; the table shows the median time, the median (and
range) of each round's time over pandas' time in the same round, and the same for CPU time.

Run: ``python benchmarks/bench_load.py [--states 1000000] [--rounds 3] [--folder DIR]
[--line-by-line] [--varied]``;
``--quick`` is ``--states 100000 --rounds 2``. Writes ``benchmarks/results/bench_load.json``
(``bench_load_varied.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import common
import numpy as np

CONTESTANTS = ("load_mdp", "pandas", "pandas+make_sparse_mdp", "line_by_line")
CHOICES, SUCCESSORS = 2, 3


def write_tra(path: Path, num_states: int, seed: int = 0, varied: bool = False) -> None:
    """An MDP's ``.tra`` in PRISM's format: 2 choices × 3 distinct successors per state
    (``varied``: 1 to 5 successors per choice, 3 on average)."""
    rng = np.random.default_rng(seed)
    S, A, K = num_states, CHOICES, SUCCESSORS
    if varied:
        counts = rng.integers(1, 2 * K, size=S * A)
        row = np.repeat(np.arange(S * A), counts)
        src, choice = np.divmod(row, A)
        start = np.cumsum(counts) - counts
        targets = rng.integers(0, S - 2 * K, size=S * A)[row] + np.arange(row.size) - start[row]
        w = rng.random(row.size)
        p = w / np.bincount(row, w)[row]
        last = start + counts - 1
        p[last] = 1 - (np.bincount(row, p) - p[last])  # sums to 1 within an ulp or two
    else:
        src = np.repeat(np.arange(S), A * K)
        choice = np.tile(np.repeat(np.arange(A), K), S)
        targets = (rng.integers(0, S - K, size=(S, A, 1)) + np.arange(K)).reshape(-1)
        w = rng.random((S, A, K))
        p = w / w.sum(-1, keepdims=True)
        p[..., -1] = 1 - p[..., :-1].sum(-1)  # sums to 1 within an ulp or two
        p = p.reshape(-1)
    with open(path, "w") as f:
        f.write(f"{S} {S * A} {src.size}\n")
        step = 1 << 20
        for i in range(0, src.size, step):
            part = slice(i, i + step)
            lines = map(
                "{} {} {} {!r}\n".format,
                src[part].tolist(),
                choice[part].tolist(),
                targets[part].tolist(),
                p[part].tolist(),
            )
            f.write("".join(lines))


def pandas_arrays(path: Path):
    """The reference: ``pandas.read_csv`` and NumPy into ``load_mdp``'s host arrays."""
    import pandas as pd

    with open(path) as f:
        S = int(f.readline().split()[0])
    df = pd.read_csv(
        path,
        sep=" ",
        header=None,
        skiprows=1,
        names=["s", "c", "t", "p"],
        dtype={"s": np.int64, "c": np.int64, "t": np.int64, "p": np.float64},
        engine="c",
    )
    src, choice, tgt, prob = (df[c].to_numpy() for c in "sctp")
    del df
    A = int(choice.max()) + 1
    row = src * A + choice  # rows in order, as PRISM writes them
    starts = np.flatnonzero(np.concatenate([[True], row[1:] != row[:-1]]))
    counts = np.diff(np.append(starts, row.size))
    K = int(counts.max())
    flat = row * K + np.arange(row.size) - np.repeat(starts, counts)
    next_states = np.full(S * A * K, -1, np.int32)
    probs = np.zeros(S * A * K)
    next_states[flat], probs[flat] = tgt, prob
    mask = np.zeros(S * A, bool)
    mask[row[starts]] = True
    shape = (S, A, K)
    return next_states.reshape(shape), probs.reshape(shape), mask.reshape(S, A), np.zeros((S, A))


def child(contestant: str, path: Path) -> dict:
    """One load in this (fresh) process: seconds and memory."""
    import jax
    import pandas  # noqa: F401  (the same baseline for every contestant)

    import jaxprivmdp as jp

    jp.load_mdp, jp.make_sparse_mdp  # noqa: B018  (the package imports these lazily)
    baseline = common.proc_status()["VmRSS"]
    t0, c0 = time.perf_counter(), time.process_time()
    if contestant == "line_by_line":
        from jaxprivmdp.io import _rewards, _transitions

        _transitions.read_columns = _rewards.read_columns = lambda *args, **kwargs: None
    if contestant in ("load_mdp", "line_by_line"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "no reward file beside it"
            out = jp.load_mdp(path)
    elif contestant == "pandas":
        out = pandas_arrays(path)
    else:
        idx, probs, mask, rewards = pandas_arrays(path)
        out = jp.make_sparse_mdp(idx, probs, rewards, action_mask=mask, discount=0.95)
    jax.block_until_ready(out)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    status = common.proc_status()
    return dict(seconds=seconds, cpu=cpu, baseline_rss=baseline, peak_rss=status["VmHWM"])


def run_child(contestant: str, path: Path) -> dict:
    cmd = [sys.executable, __file__, "--child", contestant, "--tra", str(path)]
    # This clone's jaxprivmdp, not an installed one.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(common.REPO_ROOT), *sys.path[:1]])}
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    if done.returncode:
        raise RuntimeError(f"{contestant} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--states", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--folder", type=Path, default=None)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--line-by-line", action="store_true", help="also the old reader, once")
    parser.add_argument(
        "--varied", action="store_true", help="1 to 5 successors per choice (unequal rows)"
    )
    parser.add_argument("--child", choices=CONTESTANTS, help=argparse.SUPPRESS)
    parser.add_argument("--tra", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.tra)))
        return
    if args.quick:
        args.states, args.rounds = 100_000, 2
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.folder or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"bench_{args.states}{'_varied' if args.varied else ''}.tra"
        if not path.is_file():
            t0 = time.perf_counter()
            write_tra(path, args.states, varied=args.varied)
            print(
                f"wrote {path} ({path.stat().st_size / 2**20:.0f} MiB) in "
                f"{time.perf_counter() - t0:.1f} s",
                file=sys.stderr,
            )
        runs = {c: [] for c in CONTESTANTS if c != "line_by_line" or args.line_by_line}
        for r in range(args.rounds):
            for c in runs:
                if c == "line_by_line" and r:
                    continue
                runs[c].append(run_child(c, path))
                print(f"round {r}: {c}: {runs[c][-1]}", file=sys.stderr)
        report(args, path, runs)


def report(args, path: Path, runs: dict) -> None:
    env = common.machine_info()
    with open(path) as f:
        T = int(f.readline().split()[2])
    common.print_header(
        f"Loading a PRISM .tra: {args.states:,} states, {T:,} transitions",
        env,
        [
            f"file {path.stat().st_size / 2**20:.0f} MiB; median of {args.rounds} interleaved "
            "rounds (line_by_line: one)"
        ],
    )
    med = {
        c: {
            k: statistics.median(r[k] for r in rs)
            for k in ("seconds", "cpu", "peak_rss", "baseline_rss")
        }
        for c, rs in runs.items()
    }
    # Ratios within a round (the same load for both), then their median and range.
    ratios, cpu_ratios = (
        {
            c: [r[k] / p[k] for r, p in zip(rs, runs["pandas"], strict=False)]
            for c, rs in runs.items()
        }
        for k in ("seconds", "cpu")
    )
    ref = med["pandas"]
    rows = [
        [
            c,
            f"{m['seconds']:.2f} s",
            f"{statistics.median(ratios[c]):.2f}× ({min(ratios[c]):.2f}–{max(ratios[c]):.2f})",
            f"{m['cpu']:.2f} s",
            f"{statistics.median(cpu_ratios[c]):.2f}×",
            common.fmt_bytes(m["peak_rss"]),
            common.fmt_bytes(m["peak_rss"] - m["baseline_rss"]),
            f"{m['peak_rss'] / ref['peak_rss']:.2f}×",
        ]
        for c, m in med.items()
    ]
    headers = [
        "contestant",
        "time",
        "/ pandas, same round",
        "CPU time",
        "CPU / pandas",
        "peak RSS",
        "above imports",
        "/ pandas",
    ]
    common.print_table("Load time and peak memory", headers, rows)
    out = common.RESULTS_DIR / f"bench_load{'_varied' if args.varied else ''}.json"
    common.write_json(out, dict(env=env, states=args.states, transitions=T, runs=runs, median=med))
    print(f"\n(JSON: {out.relative_to(common.REPO_ROOT)})")


if __name__ == "__main__":
    main()
