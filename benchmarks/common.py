"""Shared helpers of the benchmark scripts: arguments, environment header, timing, output.

Not part of the library and not a test module. Every script does, in order:

1. ``args = common.parse_args(...)``: parses ``--quick``, ``--dtype`` and ``--out`` and sets
   ``jax_enable_x64`` for float64 *before* any array is created;
2. ``env = common.environment(args)`` and ``common.print_header(...)``;
3. times with :func:`time_call` (a timed first call that includes tracing and compilation,
   warm-up calls, then the median of repeated calls, each ended by ``jax.block_until_ready``)
   or :func:`aot_compile_time` for the compile time of a jitted function alone;
4. prints markdown tables (:func:`markdown_table`) and writes the numbers with
   :func:`write_json` to ``benchmarks/results/<name>.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
RESULTS_DIR = BENCH_DIR / "results"

if str(REPO_ROOT) not in sys.path:  # run from a clone without `pip install -e .`
    sys.path.append(str(REPO_ROOT))


# ----------------------------------------------------------------------------- arguments


def parse_args(
    description: str,
    *,
    default_dtype: str = "float32",
    add_arguments: Callable[[argparse.ArgumentParser], None] | None = None,
    argv: Sequence[str] | None = None,
) -> argparse.Namespace:
    """Parses the common flags and configures JAX's precision before any array exists."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--quick", action="store_true", help="a small configuration that runs in < 30 s"
    )
    parser.add_argument(
        "--dtype",
        choices=("float32", "float64"),
        default=default_dtype,
        help=f"floating-point dtype of every array (default {default_dtype})",
    )
    parser.add_argument(
        "--out", type=Path, default=None, help="JSON output (default benchmarks/results/...)"
    )
    if add_arguments is not None:
        add_arguments(parser)
    args = parser.parse_args(argv)
    import jax

    # x64 must be set before the first array is created; float32 is JAX's default.
    jax.config.update("jax_enable_x64", args.dtype == "float64")
    return args


# ----------------------------------------------------------------------------- environment


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory_total_gib() -> float | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return None


def _git_revision() -> str:
    try:
        rev = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "jaxprivmdp"],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        return rev + (" (jaxprivmdp/ has uncommitted changes)" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _version(module: str) -> str:
    try:
        mod = __import__(module)
        return str(getattr(mod, "__version__", "?"))
    except ImportError:
        return "not installed"


def environment(args: argparse.Namespace | None = None) -> dict[str, Any]:
    """Machine, backend and library versions, as a dict (also written to the JSON)."""
    import jax

    device = jax.devices()[0]
    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:
        affinity = os.cpu_count()
    mem = _memory_total_gib()
    env = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "command": "python " + " ".join([os.path.relpath(sys.argv[0], REPO_ROOT)] + sys.argv[1:]),
        "uname": " ".join(platform.uname()),
        "processor": platform.processor() or "unknown",
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpu_affinity": affinity,
        "memory_gib": None if mem is None else round(mem, 1),
        "python": platform.python_version(),
        "jax": jax.__version__,
        "jaxlib": _version("jaxlib"),
        "numpy": _version("numpy"),
        "scipy": _version("scipy"),
        "jaxprivmdp": _version("jaxprivmdp"),
        "git": _git_revision(),
        "backend": jax.default_backend(),
        "device_kind": device.device_kind,
        "device_count": jax.device_count(),
        "x64": bool(jax.config.jax_enable_x64),
        "load_average_1m": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
    }
    if args is not None:
        env["dtype"] = args.dtype
        env["quick"] = bool(args.quick)
    return env


def print_header(title: str, env: dict[str, Any], notes: Sequence[str] = ()) -> None:
    """Prints a markdown header: title, command, machine, backend, versions, dtype."""
    print(f"# {title}\n")
    print(f"- command: `{env['command']}`")
    print(f"- date: {env['date']}, git {env['git']}")
    print(
        f"- machine: {env['cpu_model']} (platform.processor: {env['processor']}), "
        f"os.cpu_count() = {env['cpu_count']} (usable: {env['cpu_affinity']}), "
        f"RAM {env['memory_gib']} GiB; load average (1 min) at start "
        f"{env['load_average_1m']}"
    )
    print(f"- uname: {env['uname']}")
    print(
        f"- backend: {env['backend']} ({env['device_count']} x {env['device_kind']}); "
        f"dtype {env.get('dtype', '?')} (x64 {'on' if env['x64'] else 'off'})"
    )
    print(
        f"- versions: python {env['python']}, jax {env['jax']}, jaxlib {env['jaxlib']}, "
        f"numpy {env['numpy']}, scipy {env['scipy']}, jaxprivmdp {env['jaxprivmdp']}"
    )
    for note in notes:
        print(f"- {note}")
    print()


# ----------------------------------------------------------------------------- timing


def block(x: Any) -> Any:
    """``jax.block_until_ready`` on a pytree (no-op for NumPy / Python values)."""
    import jax

    return jax.block_until_ready(x)


@dataclasses.dataclass
class Timing:
    """Wall-clock times of one callable, in seconds.

    Attributes:
      first_s: the first call (tracing + compilation + one run for a jitted function).
      median_s: median over ``repeats`` calls after warm-up (the steady state).
      min_s: fastest of those calls.
      q25_s, q75_s: quartiles of those calls.
      repeats: number of timed calls.
      compile_s: ``first_s − median_s`` (an estimate of tracing + compilation), or the
        ahead-of-time ``lower().compile()`` time when it was measured.
    """

    first_s: float
    median_s: float
    min_s: float
    q25_s: float
    q75_s: float
    repeats: int
    compile_s: float

    def as_dict(self) -> dict[str, float]:
        return dataclasses.asdict(self)


def time_call(
    fn: Callable[..., Any],
    *args: Any,
    min_repeats: int = 5,
    max_repeats: int = 200,
    budget_s: float = 1.0,
    warmup: int = 1,
    **kwargs: Any,
) -> Timing:
    """Times ``fn(*args, **kwargs)``: first call, warm-up, then the median of repeats.

    Every call is followed by ``jax.block_until_ready`` on its output, so the numbers are
    latencies of complete computations (JAX dispatches asynchronously). Calls are repeated
    until ``min_repeats`` were made and ``budget_s`` seconds were spent, at most
    ``max_repeats`` times.
    """
    t0 = time.perf_counter()
    block(fn(*args, **kwargs))
    first = time.perf_counter() - t0
    for _ in range(warmup):
        block(fn(*args, **kwargs))
    times: list[float] = []
    spent = 0.0
    while len(times) < max_repeats and (len(times) < min_repeats or spent < budget_s):
        t0 = time.perf_counter()
        block(fn(*args, **kwargs))
        dt = time.perf_counter() - t0
        times.append(dt)
        spent += dt
    q = statistics.quantiles(times, n=4) if len(times) > 1 else [times[0]] * 3
    median = statistics.median(times)
    return Timing(
        first_s=first,
        median_s=median,
        min_s=min(times),
        q25_s=q[0],
        q75_s=q[2],
        repeats=len(times),
        compile_s=max(first - median, 0.0),
    )


def time_interleaved(
    calls: dict[str, Callable[[], Any]],
    *,
    min_repeats: int = 7,
    max_repeats: int = 300,
    budget_s: float = 2.0,
) -> dict[str, Timing]:
    """Times several zero-argument callables round-robin, so they share the same load.

    For ratios between callables on a shared machine: each round calls every callable once
    (each call ended by ``jax.block_until_ready``), so a burst of outside load hits all of
    them alike. ``first_s`` is each callable's first call (compilation included).
    """
    first = {}
    for name, fn in calls.items():
        t0 = time.perf_counter()
        block(fn())
        first[name] = time.perf_counter() - t0
        block(fn())  # warm-up
    times: dict[str, list[float]] = {name: [] for name in calls}
    spent, rounds = 0.0, 0
    while rounds < max_repeats and (rounds < min_repeats or spent < budget_s):
        for name, fn in calls.items():
            t0 = time.perf_counter()
            block(fn())
            dt = time.perf_counter() - t0
            times[name].append(dt)
            spent += dt
        rounds += 1
    out = {}
    for name, ts in times.items():
        q = statistics.quantiles(ts, n=4)
        median = statistics.median(ts)
        out[name] = Timing(
            first_s=first[name],
            median_s=median,
            min_s=min(ts),
            q25_s=q[0],
            q75_s=q[2],
            repeats=len(ts),
            compile_s=max(first[name] - median, 0.0),
        )
    return out


def xla_op_profile(
    fn: Callable[[], Any], hlo_text: str, *, repeats: int = 5
) -> list[dict[str, Any]] | None:
    """Per-XLA-op time of ``fn()`` from a ``jax.profiler`` trace, or None if unavailable.

    ``hlo_text`` is the compiled module's text (``jitted.lower(...).compile().as_text()``);
    it names the ops and maps each to the JAX operation it came from (its ``op_name``
    metadata). Returns, per op found in both, the mean time per call of ``fn`` in seconds
    (sorted, largest first). Ops that contain others (``while`` loops) are included and
    flagged, so shares should be read against the non-container ops.
    """
    import gzip
    import re
    import tempfile

    import jax

    source: dict[str, str] = {}
    containers: set[str] = set()
    for line in hlo_text.splitlines():
        m = re.match(r"\s*(?:ROOT )?%([\w.\-]+) = .*?\b([\w\-]+)\(", line)
        if not m:
            continue
        name, opcode = m.group(1), m.group(2)
        op = re.search(r'op_name="([^"]*)"', line)
        source[name] = op.group(1) if op else ""
        if opcode in ("while", "conditional", "call"):
            containers.add(name)
    try:
        block(fn())
        with tempfile.TemporaryDirectory() as tmp:
            with jax.profiler.trace(tmp, create_perfetto_trace=True):
                for _ in range(repeats):
                    block(fn())
            paths = list(Path(tmp).rglob("perfetto_trace.json.gz"))
            if not paths:
                return None
            with gzip.open(paths[0]) as f:
                trace = json.load(f)
    except Exception:  # noqa: BLE001 - profiling is best effort
        return None
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    total: dict[str, float] = {}
    count: dict[str, int] = {}
    for e in events:
        name = e.get("name", "")
        if e.get("ph") == "X" and name in source:
            total[name] = total.get(name, 0.0) + e.get("dur", 0) * 1e-6
            count[name] = count.get(name, 0) + 1
    rows = [
        dict(
            op=name,
            source=re.sub(r"^jit\([^)]*\)/", "", source[name]),
            seconds_per_call=total[name] / repeats,
            launches_per_call=count[name] / repeats,
            container=name in containers,
        )
        for name in total
    ]
    return sorted(rows, key=lambda r: -r["seconds_per_call"])


def aot_compile_time(jitted: Any, *args: Any, **kwargs: Any) -> tuple[float, float]:
    """Seconds to trace+lower and to compile ``jitted`` for these arguments (ahead of time).

    Returns:
      ``(lower_s, compile_s)``.
    """
    t0 = time.perf_counter()
    lowered = jitted.lower(*args, **kwargs)
    t1 = time.perf_counter()
    lowered.compile()
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1


def time_once(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[float, Any]:
    """One blocked call: ``(seconds, output)``."""
    t0 = time.perf_counter()
    out = block(fn(*args, **kwargs))
    return time.perf_counter() - t0, out


# ----------------------------------------------------------------------------- output


def fmt_time(seconds: float | None) -> str:
    """``1.23 ms``-style formatting (three significant digits)."""
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return "n/a"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if abs(seconds) >= scale or unit == "ns":
            value = seconds / scale
            return f"{value:.3g} {unit}" if value < 1000 else f"{value:.0f} {unit}"
    raise AssertionError


def fmt_ratio(x: float | None) -> str:
    if x is None or math.isnan(x):
        return "n/a"
    if x >= 100:
        return f"{x:,.0f}×"
    return f"{x:.3g}×"


def fmt_bytes(n: float | None) -> str:
    if n is None:
        return "n/a"
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.0f} B"


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub-flavoured markdown table (cells converted with ``str``)."""
    cells = [[str(c) for c in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    line = "| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)) + " |"
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    body = [
        "| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |"
        for row in cells
    ]
    return "\n".join([line, sep, *body])


def print_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    print(f"## {title}\n")
    print(markdown_table(headers, rows))
    print()


def _jsonable(x: Any) -> Any:
    import numpy as np

    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return _jsonable(dataclasses.asdict(x))
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_jsonable(v) for v in x]
    if isinstance(x, Path):
        return str(x)
    if isinstance(x, np.generic):
        return x.item()
    if hasattr(x, "tolist"):
        return x.tolist()
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def output_path(name: str, args: argparse.Namespace, suffix: str = ".json") -> Path:
    """``--out`` (with ``suffix``), else ``benchmarks/results/<name>[_quick]<suffix>``.

    A ``--quick`` run never overwrites the results of a full run.
    """
    if args.out is not None:
        return Path(args.out).with_suffix(suffix)
    return RESULTS_DIR / f"{name}{'_quick' if args.quick else ''}{suffix}"


def write_json(name: str, payload: dict[str, Any], out: Path | None = None) -> Path:
    """Writes ``payload`` to ``out``, else ``benchmarks/results/<name>[_quick].json``.

    ``_quick`` is added when ``payload["environment"]["quick"]`` is true.
    """
    quick = bool(payload.get("environment", {}).get("quick"))
    default = RESULTS_DIR / f"{name}{'_quick' if quick else ''}.json"
    path = Path(out) if out is not None else default
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        json.dump(_jsonable(payload), f, indent=2)
        f.write("\n")
    print(f"wrote {os.path.relpath(path, Path.cwd())}")
    return path


def loglog_slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Least-squares slope of ``log y`` against ``log x``."""
    import numpy as np

    if len(xs) < 2:
        return float("nan")
    slope, _ = np.polyfit(np.log(np.asarray(xs, float)), np.log(np.asarray(ys, float)), 1)
    return float(slope)


def verdict(ok: bool) -> str:
    return "MET" if ok else "NOT MET"
