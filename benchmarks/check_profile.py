"""The three studies of ``bench_check.py`` beside its table: ``--load``, ``--where`` and
``--fresh``.

``--load``: ``jp.load_prism`` against Storm's own build of the same source
(``stormpy.build_model`` with ``build_full``, what ``load_prism`` asks of Storm), rounds
interleaved, the median and each round's ratio; with ``--before REV`` also the whole
package of the git revision ``REV`` (``git archive`` into a temporary folder, imported as
``jaxprivmdp_before``: its modules import each other relatively), the conversion and the
model's validation as they were there.

``--where``: the phases of ``jp.check`` on a case, timed by wrapping the functions of
:mod:`jaxprivmdp.properties._unbounded` from outside (nothing in the library changes): the
device iteration (each call is one host round trip: the convergence test runs inside its
``lax.while_loop``), the guessed bounds (policy iteration on the host), the policy
extraction, and the rest (graph precomputation on the host). Per iteration: time, and the
bytes the padded layout makes an iteration touch, against this machine's copy bandwidth
(a NumPy copy of 256 MiB). Compilations are counted from JAX's ``jax_log_compiles``
messages in the first and second call, and in a first call of the same property with max
and min swapped on the same model (does a new property of one model's shape recompile?).

``--fresh``: each case's first ``jp.check`` in a new process with an empty Numba cache
(``NUMBA_CACHE_DIR``: what a fresh install's first call compiles) and its second call, rounds
interleaved; with ``--before REV`` also the package at ``REV`` (``git archive``), side by
side, each side in its own process and cache.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jax
import numpy as np
from check_models import family_source

import jaxprivmdp as jp

ROOT = Path(__file__).resolve().parent.parent


def _archive(rev: str) -> Path:
    """A new temporary folder holding the package ``jaxprivmdp`` as it is at ``rev``."""
    folder = Path(tempfile.mkdtemp())
    archive = subprocess.run(
        ["git", "archive", rev, "jaxprivmdp"], cwd=ROOT, check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def _before_module(rev: str):
    """``io/_prism_source.py`` of the package at ``rev``, imported as ``jaxprivmdp_before``."""
    folder = _archive(rev)
    (folder / "jaxprivmdp").rename(folder / "jaxprivmdp_before")
    sys.path.insert(0, str(folder))
    return importlib.import_module("jaxprivmdp_before.io._prism_source")


def load_main(stormpy, cases, rounds: int, before: str | None, out: Path) -> None:
    old = _before_module(before) if before else None
    models = list(dict.fromkeys((c.family, c.constants) for c in cases))
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for family, constants in models:
            text, consts = family_source(family, constants)
            path = Path(folder) / f"{family}.prism"
            path.write_text(text)
            times = {"storm_build": [], "load_prism": [], "load_prism_before": []}
            for _ in range(rounds):
                t = time.perf_counter()
                program = stormpy.parse_prism_program(str(path), prism_compatibility=True)
                if consts:
                    program, _ = stormpy.instantiate_constants(program, consts)
                built = stormpy.build_model(
                    program, options=stormpy.BuilderOptions(build_full=True)
                )
                times["storm_build"].append(time.perf_counter() - t)
                states, transitions = built.nr_states, built.nr_transitions
                del built
                for key, fn in (
                    ("load_prism", jp.load_prism),
                    ("load_prism_before", old and old.load_prism),
                ):
                    if fn is None:
                        continue
                    t = time.perf_counter()
                    jax.block_until_ready(
                        fn(path, constants=consts or None, dtype=np.float64).model
                    )
                    times[key].append(time.perf_counter() - t)
            row = {"model": f"{family}[{constants}]", "states": states, "transitions": transitions}
            for key, ts in times.items():
                if ts:
                    row[f"{key}_s"] = statistics.median(ts)
                    if key != "storm_build":
                        ratios = [a / b for a, b in zip(ts, times["storm_build"], strict=True)]
                        row[f"{key}_over_build"] = statistics.median(ratios)
            rows.append(row)
            print(json.dumps(row), flush=True)
    _write(out, {"rounds": rounds, "before": before, "rows": rows})


# The child of ``--fresh``: loads a case and times two checks (argv: family, constants,
# property, reward or ""), printing them as JSON.
_FRESH_CHILD = """
import json, sys, tempfile, time
from pathlib import Path
import numpy as np
from check_models import family_source
import jaxprivmdp as jp
family, constants, prop, reward = sys.argv[1:5]
text, consts = family_source(family, constants)
path = Path(tempfile.mkdtemp()) / "m.prism"
path.write_text(text)
built = jp.load_prism(path, constants=consts or None, reward_structure=reward or None,
                      dtype=np.float64)
times = []
for _ in range(2):
    t = time.perf_counter()
    jp.check(built.model, prop, labels=built.labels, reward_name=reward or None)
    times.append(time.perf_counter() - t)
print(json.dumps({"first_s": times[0], "second_s": times[1]}))
"""


def _fresh_run(case, lib: Path) -> dict:
    """One child of ``--fresh``: ``case``'s two checks with the package in ``lib``."""
    with tempfile.TemporaryDirectory() as cache:  # (also the cwd: nothing shadows ``lib``)
        here = str(Path(__file__).resolve().parent)
        env = {**os.environ, "NUMBA_CACHE_DIR": cache, "JAX_ENABLE_X64": "1"}
        env["PYTHONPATH"] = os.pathsep.join([str(lib), here])
        argv = [case.family, case.constants, case.prop, case.reward or ""]
        done = subprocess.run(
            [sys.executable, "-c", _FRESH_CHILD, *argv],
            cwd=cache,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )
    return json.loads(done.stdout.strip().splitlines()[-1])


def fresh_main(cases, rounds: int, before: str | None, out: Path) -> None:
    libs = {"now": ROOT, **({"before": _archive(before)} if before else {})}
    runs = {(c.name, side): [] for c in cases for side in libs}
    for _ in range(rounds):
        for case in cases:
            for side, lib in libs.items():
                runs[case.name, side].append(_fresh_run(case, lib))
                print(case.name, side, json.dumps(runs[case.name, side][-1]), flush=True)
    rows = []
    for case in cases:
        row = {"case": case.name}
        for side in libs:
            first = statistics.median(r["first_s"] for r in runs[case.name, side])
            second = statistics.median(r["second_s"] for r in runs[case.name, side])
            suffix = "" if side == "now" else "_before"
            row[f"first_s{suffix}"], row[f"second_s{suffix}"] = first, second
            row[f"first_minus_second_s{suffix}"] = first - second
        rows.append(row)
    worst = max(r["first_minus_second_s"] for r in rows)
    summary = {
        "max_first_minus_second_s": worst,
        "within_5_s": sum(r["first_minus_second_s"] <= 5 for r in rows),
        "cases": len(rows),
    }
    print(json.dumps(summary))
    _write(out, {"rounds": rounds, "before": before, "summary": summary, "rows": rows})


def _copy_bandwidth() -> float:
    """Bytes per second of a NumPy copy of 256 MiB (read + write), best of 3."""
    a = np.ones(32 * 2**20)
    b = np.empty_like(a)
    best = min(_time(lambda: np.copyto(b, a)) for _ in range(3))
    return 2 * a.nbytes / best


def _time(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def _slots(model) -> tuple[int, int]:
    """``(successor slots, state-action pairs)`` of the padded or ragged layout."""
    S, A = model.rewards.shape
    if hasattr(model, "buckets"):  # RaggedMDP: blocks of rows, each padded to its K_b
        return model.num_slots, S * A
    return int(np.prod(model.next_states.shape)), S * A


def _bytes_per_iteration(model) -> int:
    """Two backups (lower and upper bound) over the stored successor slots: index (int32),
    probability and the gathered value (float64) each; reward (float64) and mask per
    pair; the bounds read and written, the fixed values and groups per state."""
    slots, pairs = _slots(model)
    per_backup = slots * (4 + 8 + 8) + pairs * (8 + 1)
    return 2 * per_backup + model.num_states * (2 * 8 * 3 + 4 + 1)


class _Compiles(logging.Handler):
    """Counts XLA compilations (JAX's ``jax_log_compiles`` messages)."""

    def __init__(self):
        super().__init__()
        self.count = 0

    def emit(self, record):
        self.count += record.getMessage().startswith("Compiling ")


def _phases(model, labels, prop: str, reward, compiles: _Compiles):
    """One ``jp.check``: total time, the wrapped calls ``(name, seconds, iterations)``, the
    iterations and the compilations it triggered."""
    from jaxprivmdp.properties import _unbounded

    calls, wrapped = [], {}
    for name in ("_device_iteration", "guess_bounds", "extract_policy"):
        fn = wrapped[name] = getattr(_unbounded, name)

        def timed(*a, _fn=fn, _name=name, **k):
            t0 = time.perf_counter()
            res = _fn(*a, **k)
            its = res[2] if _name == "_device_iteration" else None
            calls.append((_name, time.perf_counter() - t0, its))
            return res

        setattr(_unbounded, name, timed)
    before = compiles.count
    try:
        t = time.perf_counter()
        res = jax.block_until_ready(jp.check(model, prop, labels=labels, reward_name=reward))
        total = time.perf_counter() - t
    finally:
        for name, fn in wrapped.items():
            setattr(_unbounded, name, fn)
    return total, calls, int(res.iterations), compiles.count - before


def _other(prop: str) -> str | None:
    """The property with max and min swapped (None for a DTMC's ``P=?``/``R=?``)."""
    swapped = prop.replace("max=", "MIN=").replace("min=", "max=").replace("MIN=", "min=")
    return swapped if swapped != prop else None


def where_main(stormpy, cases, out: Path | None) -> None:
    bandwidth = _copy_bandwidth()
    compiles = _Compiles()
    jax.config.update("jax_log_compiles", True)
    logger = logging.getLogger("jax")
    logger.addHandler(compiles)
    logger.propagate = False  # count, do not print
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for case in cases:
            text, consts = family_source(case.family, case.constants)
            path = Path(folder) / f"{case.family}.prism"
            path.write_text(text)
            built = jp.load_prism(
                path, constants=consts or None, reward_structure=case.reward, dtype=np.float64
            )
            model, labels = built.model, built.labels
            args = (model, labels, case.prop, case.reward, compiles)
            total1, _, _, compiles1 = _phases(*args)
            total2, calls2, its, compiles2 = _phases(*args)
            other = _other(case.prop)
            swapped = _phases(model, labels, other, case.reward, compiles) if other else None
            rows.append(
                _where_row(
                    case,
                    model,
                    (total1, compiles1),
                    (total2, calls2, its, compiles2),
                    swapped,
                    bandwidth,
                )
            )
            print(json.dumps(rows[-1]), flush=True)
            _write(out, {"rows": rows})  # after each case: a stopped run keeps its rows


def _where_row(case, model, first, second, swapped, bandwidth) -> dict:
    (total1, compiles1), (total2, calls2, its, compiles2) = first, second
    device = [c for c in calls2 if c[0] == "_device_iteration"]
    device_s = sum(c[1] for c in device)
    per_it = device_s / its if its else float("nan")
    nbytes = _bytes_per_iteration(model)
    slots, _ = _slots(model)
    probs = [b.probs for b in model.buckets] if hasattr(model, "buckets") else [model.probs]
    transitions = sum(int(np.count_nonzero(np.asarray(p))) for p in probs)
    row = {
        "case": case.name,
        "states": int(model.num_states),
        "layout": type(model).__name__,
        "transitions": transitions,
        "slots_per_transition": slots / transitions,
        "first_s": total1,
        "second_s": total2,
        "compile_s": total1 - total2,
        "compilations_first": compiles1,
        "compilations_second": compiles2,
        "iterations": its,
        "device_calls": len(device),
        "device_iterations_per_call": [c[2] for c in device],
        "device_s": device_s,
        "guess_bounds_s": sum(c[1] for c in calls2 if c[0] == "guess_bounds"),
        "extract_policy_s": sum(c[1] for c in calls2 if c[0] == "extract_policy"),
        "host_rest_s": total2 - sum(c[1] for c in calls2),
        "per_iteration_s": per_it,
        "bytes_per_iteration": nbytes,
        "achieved_bytes_per_s": nbytes / per_it if its else float("nan"),
        "copy_bandwidth_bytes_per_s": bandwidth,
        "bandwidth_fraction": nbytes / per_it / bandwidth if its else float("nan"),
    }
    if swapped is not None:
        total, _, swapped_its, swapped_compiles = swapped
        row |= {
            "swapped_s": total,
            "swapped_iterations": swapped_its,
            "swapped_compilations": swapped_compiles,
        }
    return row


def _write(out: Path | None, data: dict) -> None:
    if out is None:
        return
    import stormpy

    data["command"] = "python benchmarks/bench_check.py " + " ".join(sys.argv[1:])
    data["git"] = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    data["machine"] = {
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "jax": jax.__version__,
        "backend": jax.default_backend(),
        "stormpy": stormpy.__version__,
        "jaxprivmdp": jp.__version__,
    }
    out.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {out}")
