"""What the benchmarks need beyond pytest-benchmark: compile times and interleaved timing.

Steady-state timings (rounds, calibration, statistics, machine info, JSON) are pytest-benchmark's
job: see ``conftest.py`` and the ``test_*`` functions of the ``bench_*.py`` modules. This file
keeps only what pytest-benchmark does not do, written by hand for that reason:

* :func:`aot_compile_time`: the trace/lower and XLA compile time of a jitted core, ahead of
  time. pytest-benchmark times a callable's steady state; a first call that compiles would be
  one outlier round among many, and it cannot tell lowering from compiling.
* :func:`interleaved`: several callables timed round-robin, one call each per round, so that a
  burst of outside load on this shared 2-core machine hits all of them alike and their ratios
  stay fair. pytest-benchmark runs one benchmark after the other (minutes apart), so a ratio
  of two of its medians mixes two load levels. The samples go into pytest-benchmark's own
  ``Stats`` (no statistics here).
* :func:`xla_op_profile`: per-XLA-op times from a ``jax.profiler`` trace (JAX-specific).
* :func:`machine_info` for the study scripts that are not pytest modules: pytest-benchmark's
  own machine and commit info, plus the JAX backend and the load average.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
RESULTS_DIR = BENCH_DIR / "results"

if str(REPO_ROOT) not in sys.path:  # run from a clone without `pip install -e .`
    sys.path.insert(0, str(REPO_ROOT))


def block(x: Any) -> Any:
    """``jax.block_until_ready`` on a pytree (no-op for NumPy / Python values)."""
    import jax

    return jax.block_until_ready(x)


def load_average() -> float | None:
    """The 1-minute load average (other people's test runs share this machine)."""
    return round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None


def jax_info() -> dict[str, Any]:
    """Backend, device and versions: what pytest-benchmark's machine info does not know."""
    import jax
    import jaxlib
    import numpy as np

    import jaxprivmdp

    return dict(
        jaxprivmdp_path=os.path.dirname(jaxprivmdp.__file__),
        jax=jax.__version__,
        jaxlib=jaxlib.__version__,
        numpy=np.__version__,
        backend=jax.default_backend(),
        device_kind=jax.devices()[0].device_kind,
        device_count=jax.device_count(),
        x64=bool(jax.config.jax_enable_x64),
        cpu_count=os.cpu_count(),
    )


def machine_info() -> dict[str, Any]:
    """pytest-benchmark's machine and commit info (same fields as its JSON), plus JAX's."""
    from pytest_benchmark.plugin import pytest_benchmark_generate_machine_info
    from pytest_benchmark.utils import get_commit_info

    return dict(
        machine_info=pytest_benchmark_generate_machine_info(),
        commit_info=get_commit_info(),
        jax=jax_info(),
        load_average_1m=load_average(),
        command="python " + " ".join([os.path.relpath(sys.argv[0], REPO_ROOT), *sys.argv[1:]]),
    )


def describe(info: dict[str, Any]) -> str:
    """One markdown line block for a script's header, from :func:`machine_info`."""
    m, c, j = info["machine_info"], info["commit_info"], info["jax"]
    return "\n".join(
        [
            f"- command: `{info['command']}`",
            f"- git {c.get('id', '?')[:7]}{' (dirty working tree)' if c.get('dirty') else ''}",
            f"- machine: {m['cpu'].get('brand_raw', m['processor'])}, {j['cpu_count']} CPUs, "
            f"load average (1 min) at start {info['load_average_1m']}",
            f"- {j['backend']} ({j['device_count']} x {j['device_kind']}), x64 "
            f"{'on' if j['x64'] else 'off'}; python {m['python_version']}, jax {j['jax']}, "
            f"numpy {j['numpy']}",
        ]
    )


def print_header(title: str, env: dict[str, Any], notes: Sequence[str] = ()) -> None:
    """A script's markdown header: title, machine description, notes."""
    print(f"# {title}\n")
    print(describe(env))
    for note in notes:
        print(f"- {note}")
    print()


def random_finite_mdp(S: int, A: int, T: int, dtype: str, seed) -> Any:
    """Example 2's generator at any size: Dirichlet(1) rows, U[0, 1] rewards and R_T."""
    import numpy as np

    import jaxprivmdp as jp

    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(S), size=(S, A))
    P /= P.sum(-1, keepdims=True)
    return jp.make_mdp(
        P,
        rng.uniform(0, 1, size=(S, A)),
        terminal_reward=rng.uniform(0, 1, size=S),
        horizon=T,
        dtype=dtype,
    )


def write_json(path: Path, payload: dict[str, Any]) -> Path:
    """Writes ``payload`` (NumPy scalars and arrays as Python values)."""

    def default(x):
        return x.tolist() if hasattr(x, "tolist") else str(x)

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2, default=default) + "\n")
    print(f"wrote {os.path.relpath(path, Path.cwd())}")
    return path


# ----------------------------------------------------------------------------- compile time


def aot_compile_time(jitted: Any, *args: Any, **kwargs: Any) -> dict[str, float]:
    """Seconds to trace+lower and to compile ``jitted`` for these arguments (ahead of time)."""
    t0 = time.perf_counter()
    lowered = jitted.lower(*args, **kwargs)
    t1 = time.perf_counter()
    lowered.compile()
    t2 = time.perf_counter()
    return dict(lower_s=t1 - t0, compile_s=t2 - t1)


def first_call(fn: Callable[[], Any]) -> float:
    """Seconds of one blocked call (the first one includes tracing and compilation)."""
    t0 = time.perf_counter()
    block(fn())
    return time.perf_counter() - t0


# ----------------------------------------------------------------------------- interleaving


def round_robin(calls: dict[str, Callable[[], Any]], *, min_rounds: int, budget_s: float = 0.0):
    """``{name: (wall samples, CPU samples)}`` (seconds; CPU is ``time.process_time``, every
    thread of the process): one untimed call each, then rounds of one call each, ended by
    ``jax.block_until_ready``, until ``min_rounds`` rounds and ``budget_s`` wall seconds."""
    for fn in calls.values():
        block(fn())
    out: dict[str, tuple[list, list]] = {name: ([], []) for name in calls}
    spent, rounds = 0.0, 0
    while rounds < min_rounds or spent < budget_s:
        for name, fn in calls.items():
            w0, c0 = time.perf_counter(), time.process_time()
            block(fn())
            wall, cpu = time.perf_counter() - w0, time.process_time() - c0
            out[name][0].append(wall)
            out[name][1].append(cpu)
            spent += wall
        rounds += 1
    return out


def timing_table(res: dict[str, tuple[float, float]], baseline: str | None = None) -> str:
    """A Markdown table of ``{name: (wall s, CPU s)}``, with ratios to ``res[baseline]``."""
    if baseline is None:
        lines = ["| call | wall | CPU |", "|---|---|---|"]
        lines += [f"| {n} | {fmt_time(w)} | {fmt_time(c)} |" for n, (w, c) in res.items()]
        return "\n".join(lines)
    bw, bc = res[baseline]
    head = f"| call | wall | wall ÷ {baseline} | CPU | CPU ÷ {baseline} |"
    lines = [head, "|---|---|---|---|---|"]
    lines += [
        f"| {n} | {fmt_time(w)} | {w / bw:.2f} | {fmt_time(c)} | {c / bc:.2f} |"
        for n, (w, c) in res.items()
    ]
    return "\n".join(lines)


def interleaved(
    calls: dict[str, Callable[[], Any]],
    *,
    min_rounds: int = 7,
    max_rounds: int = 1000,
    budget_s: float = 2.0,
) -> dict[str, Any]:
    """Times zero-argument callables round-robin; ``{name: pytest_benchmark Stats}``.

    Each callable is called once untimed first (compilation, warm-up). Then every round calls
    each callable once, ended by ``jax.block_until_ready``, until ``min_rounds`` rounds and
    ``budget_s`` seconds, or ``max_rounds``.
    """
    from pytest_benchmark.stats import Stats

    for fn in calls.values():
        block(fn())
    stats = {name: Stats() for name in calls}
    spent, rounds = 0.0, 0
    while rounds < max_rounds and (rounds < min_rounds or spent < budget_s):
        for name, fn in calls.items():
            t0 = time.perf_counter()
            block(fn())
            dt = time.perf_counter() - t0
            stats[name].update(dt)
            spent += dt
        rounds += 1
    return stats


def summary(stats: Any) -> dict[str, float]:
    """The fields of a ``Stats`` we keep in ``extra_info`` (seconds)."""
    return dict(median=stats.median, min=stats.min, iqr=stats.iqr, rounds=stats.rounds)


def ratios(stats: dict[str, Any], base: str) -> dict[str, float]:
    """Median of each callable over the median of ``base`` (same rounds, same load)."""
    return {name: s.median / stats[base].median for name, s in stats.items() if name != base}


# ----------------------------------------------------------------------------- set tables


SET_CLASSES = ("paper", "exact", "certified")


def uncertainty_set(name: str, beta: Any = 0.1, support_aware: bool = False) -> Any:
    """The set object a benchmark names by string (its parameter ids and JSON fields are
    strings): ``jp.PaperSet``, ``jp.ExactSet`` or ``jp.CertifiedSet``."""
    import jaxprivmdp as jp

    cls = {"paper": jp.PaperSet, "exact": jp.ExactSet, "certified": jp.CertifiedSet}[name]
    return cls(beta, support_aware=support_aware)


def set_static_name() -> str | None:
    """The name of the static set argument of the jitted cores, read off
    ``_bounds.bounds_core``'s signature: None where the set's parameters say which box they
    are (``SetParams.is_radius_box``), ``kind`` in earlier revisions, ``bound`` in revisions
    before the additive mechanisms."""
    import inspect

    from jaxprivmdp.planning import _bounds

    names = inspect.signature(_bounds.bounds_core).parameters
    return next((name for name in ("kind", "bound") if name in names), None)


def prepare_set(
    mdp: Any, k: Any, beta: Any, bound: str, support_aware: bool = False, *, grid: bool = False
) -> Any:
    """``_bounds.set_up`` for ``Dirichlet(k)`` (``k`` a scalar, or a 1-D grid with
    ``grid=True``) and the set named ``bound``, ``k`` checked as the public boundaries check
    it."""
    from jaxprivmdp._checks import check_positive
    from jaxprivmdp.mechanisms import Dirichlet
    from jaxprivmdp.planning import _bounds

    if not grid:
        check_positive("k", k, dtype=mdp.rewards.dtype)
    return _bounds.set_up(mdp, Dirichlet(k), uncertainty_set(bound, beta, support_aware))


def set_args(
    mdp: Any, k: Any, beta: Any, bound: str, support_aware: bool = False, *, grid: bool = False
) -> tuple[Any, dict[str, Any]]:
    """``(params, static kwargs)`` exactly as ``cost_of_privacy(m, p, Dirichlet(k), uset)``
    (or, with ``grid``, ``sweep``) passes them to ``_bounds.bounds_core``, from :func:`prepare_set`.
    The kwargs (``width``, ``support_aware``, and ``bound``/``kind`` in earlier revisions)
    also fit ``_synthesis.synthesize_core``, ``_bounds.robust_solve_core`` and
    :func:`row_box`."""

    *first, params, width = prepare_set(mdp, k, beta, bound, support_aware, grid=grid)
    static = {"width": width, "support_aware": bool(support_aware)}
    name = set_static_name()
    if name is not None:
        static[name] = first[0]
    return params, static


def row_box(rows: Any, params: Any, static: dict[str, Any]) -> Any:
    """``_sets.row_box`` with the static kwargs of :func:`set_args` (``width`` is not its)."""
    from jaxprivmdp.sets import _boxes as _sets

    name = set_static_name()
    extra = {} if name is None else {name: static[name]}
    return _sets.row_box(rows, params, support_aware=static["support_aware"], **extra)


def time_prepare_set(
    mdp: Any,
    k: Any,
    beta: Any,
    bound: str,
    support_aware: bool = False,
    *,
    cold: int = 3,
    grid: bool = False,
) -> dict[str, Any]:
    """Host time of :func:`prepare_set` (the boundary's set work): first call and cached.

    ``"exact"``/``"certified"`` tabulate Beta quantiles on the host (``scipy``'s
    ``betaincinv`` on a grid of ``p``), cached per ``(k, level, dtype)``. ``first_s``: median of
    ``cold`` calls, each after clearing the module's caches (``_quantile_tables`` and the
    grid), i.e. what a process pays the first time it meets this ``k``; ``cached``: the
    steady state (tables cached: the checks, ``entry_count``, the radius, the transfer of the
    tables to the device and the fill width). Each call ends with ``block_until_ready``.
    """
    import statistics

    from jaxprivmdp.sets import _beta

    def call():
        return prepare_set(mdp, k, beta, bound, support_aware, grid=grid)

    firsts = []
    for _ in range(cold):
        _beta._quantile_tables.cache_clear()
        _beta._interval_tables.cache_clear()
        _beta._grid.cache_clear()
        firsts.append(first_call(call))
    cached = time_call(call, min_repeats=20, budget_s=0.5)
    return dict(
        first_s=statistics.median(firsts),
        first_all_s=firsts,
        cached_s=cached.median_s,
        cached=summary(cached.stats),
    )


# ----------------------------------------------------------------------------- XLA profile


def xla_op_profile(
    fn: Callable[[], Any], hlo_text: str, *, repeats: int = 5
) -> list[dict[str, Any]] | None:
    """Per-XLA-op time of ``fn()`` from a ``jax.profiler`` trace, or None if unavailable.

    ``hlo_text`` is the compiled module's text (``jitted.lower(...).compile().as_text()``);
    it names the ops and maps each to the JAX operation it came from (its ``op_name``
    metadata). Returns, per op found in both, the mean time per call of ``fn`` in seconds
    (sorted, largest first). Ops that contain others (``while`` loops) are flagged, so shares
    should be read against the non-container ops.
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


# ----------------------------------------------------------------------------- output


def fmt_time(seconds: float | None) -> str:
    """``1.23 ms``-style formatting (three significant digits)."""
    if seconds is None or seconds != seconds:
        return "n/a"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if abs(seconds) >= scale or unit == "ns":
            value = seconds / scale
            return f"{value:.3g} {unit}" if value < 1000 else f"{value:.0f} {unit}"
    raise AssertionError


def fmt_ratio(x: float | None) -> str:
    if x is None or x != x:
        return "n/a"
    return f"{x:,.0f}×" if x >= 100 else f"{x:.3g}×"


def fmt_bytes(n: float | None) -> str:
    if n is None:
        return "n/a"
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.0f} B"


def print_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """A markdown table (the study scripts print their results as RESULTS.md shows them)."""
    print(f"## {title}\n")
    print("| " + " | ".join(headers) + " |")
    print("|" + "---|" * len(headers))
    for row in rows:
        print("| " + " | ".join(str(c) for c in row) + " |")
    print()


def verdict(ok: bool) -> str:
    return "MET" if ok else "NOT MET"


# ----------------------------------------------------------------------------- pytest-benchmark


def bench(benchmark: Any, fn: Callable[[], Any], **extra_info: Any) -> Any:
    """pytest-benchmark's steady state of ``fn()``, after a timed first call (compilation).

    The first call compiles (and is the warm-up); pytest-benchmark then calibrates, times its
    rounds (each ended by ``jax.block_until_ready``) and keeps the statistics. ``extra_info``
    gets the first call, an estimate of the compile time (first call − median) and the load.
    """
    first = first_call(fn)
    benchmark.extra_info.update(first_call_s=first, load_average_1m=load_average(), **extra_info)
    out = benchmark(lambda: block(fn()))
    stats = getattr(benchmark, "stats", None)
    if stats is not None:
        benchmark.extra_info["compile_s_estimate"] = max(first - stats.stats.median, 0.0)
    return out


# ----------------------------------------------------------------------------- study scripts


@dataclasses.dataclass
class Timing:
    """A study script's timing: first call, and pytest-benchmark ``Stats`` of the rest."""

    first_s: float
    stats: Any

    @property
    def median_s(self) -> float:
        return self.stats.median

    @property
    def min_s(self) -> float:
        return self.stats.min

    @property
    def repeats(self) -> int:
        return self.stats.rounds

    @property
    def compile_s(self) -> float:
        """First call − median: the compilation a first call includes (an estimate)."""
        return max(self.first_s - self.stats.median, 0.0)

    def as_dict(self) -> dict[str, float]:
        return dict(
            first_s=self.first_s,
            compile_s_estimate=self.compile_s,
            **{f"{k}_s" if k != "rounds" else k: v for k, v in summary(self.stats).items()},
        )


def time_interleaved(
    calls: dict[str, Callable[[], Any]], *, min_repeats: int = 7, budget_s: float = 2.0
) -> dict[str, Timing]:
    """:func:`interleaved` with each callable's first call timed first (compilation)."""
    first = {name: first_call(fn) for name, fn in calls.items()}
    st = interleaved(calls, min_rounds=min_repeats, budget_s=budget_s)
    return {name: Timing(first[name], st[name]) for name in calls}


def time_call(
    fn: Callable[..., Any], *args: Any, min_repeats: int = 7, budget_s: float = 2.0, **kwargs: Any
) -> Timing:
    """One callable: the study scripts' steady state where pytest-benchmark does not fit."""
    return time_interleaved(
        {"f": lambda: fn(*args, **kwargs)}, min_repeats=min_repeats, budget_s=budget_s
    )["f"]


def script_args(
    description: str,
    *,
    default_dtype: str = "float32",
    add_arguments: Callable[[Any], None] | None = None,
) -> Any:
    """A study script's flags (``--quick``, ``--dtype``, ``--out``); x64 set before any array."""
    import argparse

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="a small configuration")
    parser.add_argument("--dtype", choices=("float32", "float64"), default=default_dtype)
    parser.add_argument("--out", type=Path, default=None, help="JSON output")
    if add_arguments is not None:
        add_arguments(parser)
    args = parser.parse_args()
    import jax

    jax.config.update("jax_enable_x64", args.dtype == "float64")
    return args


def results_path(name: str, args: Any) -> Path:
    """``--out``, else ``benchmarks/results/<name>[_quick].json`` (quick never overwrites)."""
    return args.out or RESULTS_DIR / f"{name}{'_quick' if args.quick else ''}.json"


def proc_status(pid="self") -> dict[str, int]:
    """``{field: bytes}`` of the ``Vm*`` lines of ``/proc/<pid>/status`` (Linux)."""
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("Vm"):
                    name, value = line.split(":", 1)
                    parts = value.split()
                    out[name] = int(parts[0]) * 1024 if parts[1:] == ["kB"] else int(parts[0])
    except (OSError, ValueError):
        pass
    return out


def run_watched_child(cmd: Sequence[str], log_path: str, kill_gib: float) -> dict[str, Any]:
    """Runs ``cmd`` with output to ``log_path``, killing it above ``kill_gib`` of RSS.

    Peak memory of a child process is what these studies measure: pytest-benchmark times
    calls in its own process and has no notion of another process's memory.

    Returns:
      ``returncode``, ``wall_s``, ``cpu_s``, ``ru_maxrss`` (bytes, the child's own rusage)
      and ``killed_above_gib`` (None unless killed).
    """
    import subprocess
    import threading

    kill_bytes = kill_gib * 2**30
    killed, done = threading.Event(), threading.Event()
    with open(log_path, "w") as log:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)

        def monitor():
            while not done.is_set():
                if proc_status(proc.pid).get("VmRSS", 0) > kill_bytes:
                    killed.set()
                    proc.kill()
                    return
                time.sleep(0.05)

        thread = threading.Thread(target=monitor, daemon=True)
        thread.start()
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own rusage
        returncode = os.waitstatus_to_exitcode(status)
        done.set()
        thread.join()
        wall = time.perf_counter() - t0
    return dict(
        returncode=returncode,
        wall_s=wall,
        cpu_s=usage.ru_utime + usage.ru_stime,
        ru_maxrss=usage.ru_maxrss * 1024,  # kB on Linux
        killed_above_gib=kill_gib if killed.is_set() else None,
    )
