#!/usr/bin/env python
"""``jp.check`` against Storm's sparse engine on QVBS-like models, side by side.

Each case is a (model, property) of a family in :mod:`check_models` (PRISM sources written
here, of the kinds of the QVBS: consensus, brp, crowds, csma, zeroconf, wlan), built by
Storm through stormpy in this process. For each case, one after the other on this machine:

- Storm: ``stormpy.build_model`` with ``build_full`` (every label and reward: the model
  ``jp.load_prism`` converts), then ``stormpy.model_checking`` with its default settings on
  that model (the sparse engine), the value at the initial state; the check's time is the
  median of ``--repeat`` calls (default 3; Storm's first call on a small model carries a
  fixed cost of 1–3 ms, kept as ``check_first_s``).
- ours: ``jp.load_prism`` (Storm's build plus the conversion into a float64 ``SparseMDP``),
  then ``jp.check`` on it: the first call compiles (``first_s``); ``second_s`` is the
  median of ``--repeat`` calls after it (compiled). Every time is wall-clock with
  ``jax.block_until_ready``.

stormpy's default environment (``stormpy.environments.default(model)``) is *sound* for a
float64 model (``force_soundness``), with Storm's topological solvers (``TOPOLOGICAL``
linear-equation and min-max methods: strongly connected components in order); ``--unsound``
also times a bare ``stormpy.Environment()`` (the command line's default: unsound value
iteration). Storm's iteration counts are not reported: stormpy's results do not carry them
(Storm logs them only at debug level). The relative difference ``|ours - Storm| / |Storm|``
must be <= 1e-6 (flagged otherwise).

``--where TEXT;TEXT`` (substrings of cases' names) times the phases of ``jp.check`` on those
cases (host precomputation, device iteration, the guessed bounds, the policy) by wrapping
the functions of :mod:`jaxprivmdp.properties._unbounded` from outside, and estimates the
bytes an iteration touches (see ``benchmarks/RESULTS.md``, "Where check's time goes").

``--load`` times ``jp.load_prism`` against Storm's build alone (``--before REV``: also the
conversion of a git revision); ``--fresh`` times each case's first check in a new process
with an empty Numba cache (``--before REV``: also a git revision's), see :mod:`check_profile`.

To time an older revision's library with this script: ``PYTHONPATH=DIR python
benchmarks/bench_check.py --out OUT.json`` with ``DIR`` holding ``git archive REV
jaxprivmdp`` unpacked.

Run: ``python benchmarks/bench_check.py [--quick | --medium] [--only TEXT] [--out JSON]
[--repeat N] [--unsound] [--where TEXT] [--load | --fresh [--before REV] [--rounds N]]``;
default: the full set (10³–10⁶ states; 5–10 min on a 2-core VM). Writes
``benchmarks/results/bench_check.json`` (``bench_check_quick.json``, ``bench_check_load.json``,
``bench_check_where.json``, ``bench_check_fresh.json``, ...).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("JAX_ENABLE_X64", "1")

import jax  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_models import Case, family_source  # noqa: E402

import jaxprivmdp as jp  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
TOL = 1e-6

QUICK = [
    Case("consensus", "N=2,K=2", 'Pmin=? [F "finished" & "all_coins_equal_1"]', None),
    Case("consensus", "N=2,K=2", 'R{"steps"}max=? [F "finished"]', "steps"),
    Case("brp", "N=64,MAX=4", 'P=? [F "failure"]', None),
    Case("crowds", "M=3,RUNS=6", 'P=? [F "observe0Greater1"]', None),
    Case("csma", "N=2,K=4", 'Pmax=? [F "some_gave_up"]', None),
    Case("csma", "N=2,K=4", 'R{"time"}min=? [F "finished"]', "time"),
    Case("zeroconf", "K=4,W=100", 'Pmax=? [F "error"]', None),
    Case("wlan", "W=20", 'R{"time"}max=? [F "both_sent"]', "time"),
]
MEDIUM = [
    Case("consensus", "N=4,K=2", 'Pmin=? [F "finished" & "all_coins_equal_1"]', None),
    Case("consensus", "N=4,K=2", 'R{"steps"}max=? [F "finished"]', "steps"),
    Case("brp", "N=1024,MAX=8", 'P=? [F "failure"]', None),
    Case("crowds", "M=4,RUNS=12", 'P=? [F "observe0Greater1"]', None),
    Case("csma", "N=3,K=4", 'Pmax=? [F "some_gave_up"]', None),
    Case("csma", "N=3,K=4", 'R{"time"}min=? [F "finished"]', "time"),
    Case("zeroconf", "K=4,W=1000", 'Pmax=? [F "error"]', None),
    Case("zeroconf", "K=4,W=1000", 'R{"time"}min=? [F "done"]', "time"),
    Case("wlan", "W=1000", 'R{"time"}max=? [F "both_sent"]', "time"),
]
# 10⁵–10⁶ states. Long chains cost us iterations in proportion (brp's chunks, zeroconf's and
# wlan's timers: 13,136 iterations and 69 s on brp N=4096, 53,963 and 217 s on zeroconf
# W=10000, against Storm's 0.04 s), so the full set keeps those at 10⁵ states.
LARGE = [
    Case("consensus", "N=5,K=2", 'R{"steps"}max=? [F "finished"]', "steps"),
    Case("brp", "N=4096,MAX=8", 'P=? [F "failure"]', None),
    Case("crowds", "M=3,RUNS=30", 'P=? [F "observe0Greater1"]', None),
    Case("csma", "N=3,K=5", 'Pmax=? [F "some_gave_up"]', None),
    Case("csma", "N=3,K=6", 'R{"time"}min=? [F "finished"]', "time"),
    Case("wlan", "W=3000", 'R{"time"}max=? [F "both_sent"]', "time"),
]
SETS = {"quick": QUICK, "medium": QUICK + MEDIUM, "full": QUICK + MEDIUM + LARGE}


def _timed(fn):
    t = time.perf_counter()
    out = jax.block_until_ready(fn())
    return out, time.perf_counter() - t


def storm_side(
    stormpy, path: Path, constants: str, prop: str, unsound: bool = False, repeat: int = 3
) -> dict:
    """Storm's build (``build_full``) and check (default settings: sound) of one case: the
    check's median over ``repeat`` calls (its first call alone: ``check_first_s``)."""
    t = time.perf_counter()
    program = stormpy.parse_prism_program(str(path), prism_compatibility=True)
    if constants:
        program, _ = stormpy.instantiate_constants(program, constants)
    model = stormpy.build_model(program, options=stormpy.BuilderOptions(build_full=True))
    build = time.perf_counter() - t
    formula = stormpy.parse_properties(prop, program)[0]
    env = stormpy.Environment() if unsound else stormpy.environments.default(model)
    checks = []
    for _ in range(repeat):
        t = time.perf_counter()
        result = stormpy.model_checking(model, formula, environment=env)
        checks.append(time.perf_counter() - t)
    t = time.perf_counter()  # as Storm's command line asks: the initial states' values only
    stormpy.model_checking(model, formula, only_initial_states=True, environment=env)
    check_init = time.perf_counter() - t
    (init,) = model.initial_states
    return {
        "states": model.nr_states,
        "transitions": model.nr_transitions,
        "choices": model.nr_choices,
        "build_s": build,
        "check_s": float(np.median(checks)),
        "check_first_s": checks[0],
        "check_initial_only_s": check_init,
        "value": float(result.get_value(init)),
    }


def our_side(path: Path, case: Case, repeat: int = 3) -> dict:
    """``jp.load_prism`` and ``jp.check`` (float64): its first call (compiling) and the
    median of ``repeat`` calls after it (``second_s``)."""
    constants = family_source(case.family, case.constants)[1]
    built, load = _timed(
        lambda: jp.load_prism(
            path, constants=constants or None, reward_structure=case.reward, dtype=np.float64
        )
    )
    model, labels = built.model, built.labels

    def run():
        return jp.check(model, case.prop, labels=labels, reward_name=case.reward)

    first, first_s = _timed(run)
    calls = [_timed(run) for _ in range(repeat)]
    second = calls[0][0]
    return {
        "load_s": load,
        "first_s": first_s,
        "second_s": float(np.median([t for _, t in calls])),
        "later_calls_s": [t for _, t in calls],
        "iterations": int(second.iterations),
        "converged": bool(second.converged),
        "value": float(second.value_at_initial),
        "error_bound": float(second.error_bound[model.initial_state]),
        "same_as_first": bool(float(first.value_at_initial) == float(second.value_at_initial)),
    }


def run_case(stormpy, case: Case, folder: Path, unsound: bool, repeat: int = 3) -> dict:
    text, constants = family_source(case.family, case.constants)
    path = folder / f"{case.family}.prism"
    path.write_text(text)
    storm = storm_side(stormpy, path, constants, case.prop, repeat=repeat)
    ours = our_side(path, case, repeat)
    ref = storm["value"]
    rel = (
        abs(ours["value"] - ref) / abs(ref)
        if ref not in (0, math.inf)
        else abs(ours["value"] - ref)
    )
    row = {
        "case": case.name,
        "family": case.family,
        "constants": case.constants,
        "property": case.prop,
        "storm": storm,
        "ours": ours,
        "rel_diff": rel,
        "flag": bool(not rel <= TOL),
    }
    if unsound:
        row["storm_unsound"] = storm_side(stormpy, path, constants, case.prop, unsound=True)
    row["ratio_second"] = ours["second_s"] / storm["check_s"]
    row["ratio_first"] = ours["first_s"] / storm["check_s"]
    row["ratio_load"] = ours["load_s"] / storm["build_s"]
    return row


def _geomean(xs) -> float:
    xs = [x for x in xs if x > 0 and math.isfinite(x)]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def table(rows) -> str:
    head = (
        "| case | states | transitions | Storm build / check (s) | load_prism (s) | "
        "check 1st / 2nd (s) | iterations | rel. diff | 2nd / Storm |\n|---|" + "---|" * 8
    )
    lines = [head]
    for r in rows:
        s, o = r["storm"], r["ours"]
        lines.append(
            f"| {r['case']} | {s['states']:,} | {s['transitions']:,} | {s['build_s']:.3f} / "
            f"{s['check_s']:.3f} | {o['load_s']:.3f} | {o['first_s']:.2f} / {o['second_s']:.3f} "
            f"| {o['iterations']} | {r['rel_diff']:.1e}{' FLAG' * r['flag']} | "
            f"{r['ratio_second']:.1f}× |"
        )
    return "\n".join(lines)


def summary(rows) -> dict:
    return {
        "geomean_second_over_storm": _geomean(r["ratio_second"] for r in rows),
        "geomean_first_over_storm": _geomean(r["ratio_first"] for r in rows),
        "geomean_load_over_build": _geomean(r["ratio_load"] for r in rows),
        "max_second_over_storm": max(r["ratio_second"] for r in rows),
        "flags": sum(r["flag"] for r in rows),
        "cases": len(rows),
    }


def _write(path: Path, which: str, argv, stormpy, rows) -> dict:
    """The JSON so far (rewritten after each case: a long run stopped keeps its cases)."""
    out = {
        "set": which,
        "command": "python benchmarks/bench_check.py "
        + " ".join(sys.argv[1:] if argv is None else argv),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load_average": os.getloadavg(),
        "machine": {
            "platform": platform.platform(),
            "processor": platform.processor(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "jax": jax.__version__,
            "jax_backend": jax.default_backend(),
            "stormpy": stormpy.__version__,
            "jaxprivmdp": jp.__version__,
        },
        "summary": summary(rows),
        "cases": rows,
    }
    path.write_text(json.dumps(out, indent=1) + "\n")
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    size = ap.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="a few small cases (< 2 min)")
    size.add_argument("--medium", action="store_true", help="quick plus 10⁴–10⁵-state cases")
    ap.add_argument("--only", default=None, help="cases whose name contains this text")
    ap.add_argument("--unsound", action="store_true", help="also time Storm's unsound VI")
    ap.add_argument("--where", default=None, help="time check's phases: TEXT;TEXT;...")
    ap.add_argument("--load", action="store_true", help="load_prism against Storm's build")
    ap.add_argument("--fresh", action="store_true", help="first calls in an empty Numba cache")
    ap.add_argument("--before", default=None, help="--load/--fresh: also this git revision's")
    ap.add_argument("--rounds", type=int, default=3, help="--load/--fresh: interleaved rounds")
    ap.add_argument("--out", default=None, help="JSON path (default: results/bench_check*.json)")
    ap.add_argument("--repeat", type=int, default=3, help="timed checks per side (median)")
    args = ap.parse_args(argv)
    import stormpy

    which = "quick" if args.quick else "medium" if args.medium else "full"
    cases = [c for c in SETS[which] if args.only is None or args.only in c.name]
    if args.where is not None:
        from check_profile import where_main

        parts = args.where.split(";")  # names hold commas
        chosen = [c for c in SETS["full"] if any(part in c.name for part in parts)]
        where_main(stormpy, chosen, Path(args.out or RESULTS / "bench_check_where.json"))
        return
    if args.load:
        from check_profile import load_main

        default = RESULTS / f"bench_check_load{'' if which == 'full' else '_' + which}.json"
        load_main(stormpy, cases, args.rounds, args.before, Path(args.out or default))
        return
    if args.fresh:
        from check_profile import fresh_main

        # (one file whatever the set: a fresh process's compilation hardly depends on size)
        fresh_main(
            cases, args.rounds, args.before, Path(args.out or RESULTS / "bench_check_fresh.json")
        )
        return
    rows = []
    path = (
        Path(args.out)
        if args.out
        else RESULTS / f"bench_check{'' if which == 'full' else '_' + which}.json"
    )
    with tempfile.TemporaryDirectory() as folder:
        for case in cases:
            rows.append(run_case(stormpy, case, Path(folder), args.unsound, args.repeat))
            _write(path, which, argv, stormpy, rows)
            r = rows[-1]
            print(
                f"{r['case']}: {r['storm']['states']:,} states, "
                f"Storm {r['storm']['check_s']:.3f} s,"
                f" ours {r['ours']['first_s']:.2f}/{r['ours']['second_s']:.3f} s, "
                f"{r['ours']['iterations']} it, rel {r['rel_diff']:.1e}",
                flush=True,
            )
    out = _write(path, which, argv, stormpy, rows)
    print(table(rows))
    print(json.dumps(out["summary"], indent=1))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
