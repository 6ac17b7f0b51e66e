#!/usr/bin/env python
"""One property over many releases of one model: ``jp.check`` on the batch against Storm
checking each release in turn, per model checked.

For each case (a model of :mod:`check_models`, built by Storm through ``jp.load_prism``):
``n`` releases ``jax.vmap(lambda key: jp.privatize(key, model, jp.Dirichlet(k),
support="nonzero"))(keys)`` (one support: the batch shares the graph precomputation and
every loop), then, one after the other on this machine:

- ours, batched: ``jp.check(releases, prop)``, four times (the first compiles and converts
  the batch to its float64 host form, which later checks of the batch reuse, as Storm's model
  keeps its matrix): the median of the last three calls' times ÷ ``n``, each call's result
  dropped before the next (three results kept alive made each call page in fresh memory,
  some 2.5 ms a model of crowds M = 4's `[32, 49,504]` arrays);
- ours, one by one: ``jp.check`` on each release (compiled), the total ÷ ``n``;
- Storm: each release written as DRN (``jp.save_mdp``) and parsed by
  ``stormpy.build_model_from_drn`` (not timed), then ``stormpy.model_checking`` with its
  default (sound) environment, timed, the total ÷ ``n``.

Every release's value at the initial state must agree with Storm's within 1e-6 (relative;
flagged otherwise). Run: ``python benchmarks/bench_check_batch.py [--n 32] [--k 1000]
[--only TEXT] [--out JSON]``; writes ``benchmarks/results/bench_check_batch.json``.
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
CASES = [
    Case("brp", "N=64,MAX=4", 'P=? [F "failure"]', None),
    Case("zeroconf", "K=4,W=100", 'Pmax=? [F "error"]', None),
    Case("consensus", "N=4,K=2", 'Pmin=? [F "finished" & "all_coins_equal_1"]', None),
    Case("brp", "N=1024,MAX=8", 'P=? [F "failure"]', None),
    Case("crowds", "M=4,RUNS=12", 'P=? [F "observe0Greater1"]', None),
    Case("wlan", "W=1000", 'R{"time"}max=? [F "both_sent"]', "time"),
]


def _timed(fn):
    t = time.perf_counter()
    out = jax.block_until_ready(fn())
    return out, time.perf_counter() - t


def run_case(stormpy, case: Case, n: int, k: float, folder: Path) -> dict:
    text, constants = family_source(case.family, case.constants)
    path = folder / f"{case.family}.prism"
    path.write_text(text)
    built = jp.load_prism(
        path, constants=constants or None, reward_structure=case.reward, dtype=np.float64
    )
    model, labels = built.model, built.labels
    keys = jax.random.split(jax.random.key(0), n)
    releases = jax.vmap(lambda key: jp.privatize(key, model, jp.Dirichlet(k), support="nonzero"))(
        keys
    )
    one = [jax.tree_util.tree_map(lambda x, i=i: x[i], releases) for i in range(n)]

    def batch():
        return jp.check(releases, case.prop, labels=labels, reward_name=case.reward)

    _, first = _timed(batch)
    res, times = None, []
    for _ in range(3):  # (one result alive at a time, as a loop over checks holds it)
        res = None
        res, t = _timed(batch)
        times.append(t)
    second = float(np.median(times))
    jp.check(one[0], case.prop, labels=labels, reward_name=case.reward)  # compiled
    _, loop = _timed(
        lambda: [jp.check(m, case.prop, labels=labels, reward_name=case.reward) for m in one]
    )
    storm_s, storm_values = 0.0, []
    keep = {name: np.asarray(v) for name, v in labels.items() if name != "init"}
    for i, m in enumerate(one):
        drn = folder / f"release{i}.drn"
        jp.save_mdp(drn, m, labels=keep, reward_name=case.reward)
        sm = stormpy.build_model_from_drn(str(drn))
        formula = stormpy.parse_properties(case.prop)[0]
        env = stormpy.environments.default(sm)
        t = time.perf_counter()
        out = stormpy.model_checking(sm, formula, environment=env)
        storm_s += time.perf_counter() - t
        storm_values.append(float(out.get_value(sm.initial_states[0])))
        drn.unlink()
    ours = np.asarray(res.value_at_initial, np.float64)
    ref = np.asarray(storm_values)
    rel = np.abs(ours - ref) / np.where(ref != 0, np.abs(ref), 1)
    row = {
        "case": case.name,
        "states": int(model.num_states),
        "n": n,
        "k": k,
        "storm_per_model_s": storm_s / n,
        "batch_first_s": first,
        "batch_per_model_s": second / n,
        "loop_per_model_s": loop / n,
        "iterations": int(np.max(np.asarray(res.iterations))),
        "all_converged": bool(np.all(np.asarray(res.converged))),
        "max_rel_diff": float(rel.max()),
        "flag": bool(rel.max() > 1e-6),
    }
    row["storm_over_batch"] = row["storm_per_model_s"] / row["batch_per_model_s"]
    row["loop_over_batch"] = row["loop_per_model_s"] / row["batch_per_model_s"]
    print(
        f"{case.name}: {row['states']:,} states, n={n}: Storm {row['storm_per_model_s'] * 1e3:.2f}"
        f" ms/model, batch {row['batch_per_model_s'] * 1e3:.2f}, loop "
        f"{row['loop_per_model_s'] * 1e3:.2f} (Storm ÷ batch {row['storm_over_batch']:.2f}×), "
        f"rel {row['max_rel_diff']:.1e}",
        flush=True,
    )
    return row


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=32, help="releases per case")
    ap.add_argument("--k", type=float, default=1000.0, help="the Dirichlet mechanism's k")
    ap.add_argument("--only", default=None, help="cases whose name contains this text")
    ap.add_argument("--out", default=str(RESULTS / "bench_check_batch.json"))
    args = ap.parse_args(argv)
    import stormpy  # noqa: PLC0415  (the prism extra)

    cases = [c for c in CASES if args.only is None or args.only in c.name]
    with tempfile.TemporaryDirectory() as folder:
        rows = [run_case(stormpy, c, args.n, args.k, Path(folder)) for c in cases]
    ratios = [r["storm_over_batch"] for r in rows]
    out = {
        "command": "python benchmarks/bench_check_batch.py " + " ".join(argv or sys.argv[1:]),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
        "versions": {"jax": jax.__version__, "stormpy": stormpy.__version__},
        "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
        "rows": rows,
        "summary": {
            "geomean_storm_over_batch": math.exp(np.mean(np.log(ratios))),
            "flags": sum(r["flag"] for r in rows),
        },
    }
    Path(args.out).write_text(json.dumps(out, indent=1))
    print(json.dumps(out["summary"], indent=1))


if __name__ == "__main__":
    main()
