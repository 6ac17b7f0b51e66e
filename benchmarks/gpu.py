#!/usr/bin/env python
"""The users' paths on the current backend, in one command.

    python benchmarks/gpu.py [--quick] [--json OUT.json] [--budget-s N] [--only TEXT ...]

Runs anywhere (CPU, GPU, TPU): the header labels the backend (device kind, platform, device
count, JAX/jaxlib/Python versions, default float dtype, commit). For the current backend it
prints one markdown table; each timed row has the first call (tracing + compilation + one
run) and the median of a few later calls, every call ended by ``jax.block_until_ready``:

- the Figure-1 sweep of Example 2 (``sweep``, the paper's 9 values of k, 50 trials);
- ``sweep`` throughput on Example 2 at 20,000 trials per k (runs/s), default chunking and
  ``vector_width=4096, batch_size=65536``;
- a dense random MDP (S = 1000, A = 4, T = 20): ``evaluate`` and ``cost_of_privacy`` for each
  set (``PaperSet``, ``ExactSet``, ``CertifiedSet``) as a ratio to ``evaluate``, eagerly and
  under ``jax.jit`` (a lambda closing over the mechanism and the set), and each
  support-aware set under ``jax.jit``;
- gridworlds 100², 300², 1000² (infinite horizon, γ = 0.95): ``solve``, ``synthesize(key,
  grid, Dirichlet(10), CertifiedSet(support_aware=True))`` and a 9 k × 10 trials ``sweep``
  with ``PaperSet(support_aware=True)``;
- the float32-vs-float64 bound check: Example 2 (T = 10), one privatized P̄
  (k = 5) and its optimal policy; ``cost_of_privacy`` in float32 (x64 off) and in float64
  (x64 switched on for this row only, the same P̄ cast exactly); the float32 bounds must
  bracket the float64 ones (pessimistic32 ≤ pessimistic64, optimistic32 ≥ optimistic64 at
  every stage and state).

Every row is guarded: an exception (out of memory, say) is caught and printed in its row.
Rows run cheapest-and-most-important first (the gridworld sweeps last, 1000² the very last);
a row whose estimated time (from its sizes and the platform, or scaled from the same row at
the previous gridworld size) exceeds what is left of ``--budget-s`` is skipped and says so.
``--quick`` shrinks everything (S = 200, gridworlds 30² and 60², 2,000 trials, 9 k × 1 trial
gridworld sweeps, fewer repeats; default budget 55 s). Progress goes to stderr.

The library is imported from this repository (its root is put first on ``sys.path``), so the
script runs from a plain checkout without installing the package. Only public JAX APIs.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gc
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

T0 = time.perf_counter()
REPO = Path(__file__).resolve().parents[1]

PAPER_KS = (1.0, 5.0, 10.0, 15.0, 20.0, 25.0, 30.0, 35.0, 40.0)
BOUNDS = ("paper", "exact", "certified")
SET_NAMES = {"paper": "PaperSet", "exact": "ExactSet", "certified": "CertifiedSet"}


def uncertainty_set(bound: str, aware: bool = False) -> Any:
    """The set named ``bound`` (rows and JSON name sets by string), β = 0.1."""
    import jaxprivmdp as jp

    return getattr(jp, SET_NAMES[bound])(0.1, support_aware=aware)


WIDE = dict(vector_width=4096, batch_size=65536)


# ----------------------------------------------------------------------------- configuration


@dataclasses.dataclass(frozen=True)
class Config:
    quick: bool
    budget_s: float
    fig1_trials: int = 50
    throughput_trials: int = 20_000
    dense_states: int = 1000
    dense_actions: int = 4
    dense_horizon: int = 20
    dense_k: float = 5.0
    grid_sizes: tuple[int, ...] = (100, 300, 1000)
    grid_k: float = 10.0
    grid_sweep_trials: int = 10
    x64_k: float = 5.0
    max_repeats: int = 5  # timed calls after the first
    row_cap_s: float = 5.0  # stop repeating once the timed calls add up to this

    @classmethod
    def make(cls, quick: bool, budget_s: float | None) -> Config:
        if not quick:
            return cls(quick=False, budget_s=240.0 if budget_s is None else budget_s)
        return cls(
            quick=True,
            budget_s=55.0 if budget_s is None else budget_s,
            throughput_trials=2_000,
            dense_states=200,
            grid_sizes=(30, 60),
            grid_sweep_trials=1,
            max_repeats=3,
            row_cap_s=1.0,
        )

    def wide_chunking(self) -> dict[str, int]:
        """``vector_width=4096, batch_size=65536``; with ``--quick`` the batch is cut to the
        runs rounded up to a multiple of 4096 (18,000 runs would be padded to 65,536)."""
        runs = len(PAPER_KS) * self.throughput_trials
        width = WIDE["vector_width"]
        return dict(
            vector_width=width,
            batch_size=min(WIDE["batch_size"], width * math.ceil(runs / width)),
        )


# ----------------------------------------------------------------------------- rows


@dataclasses.dataclass
class Row:
    """One line of the table.

    ``make()`` builds the inputs (untimed, but inside the guard and the budget) and returns
    the zero-argument call to time. ``kind="check"``: the call runs once and returns a dict
    of results (``result``, ``ok``, ...). ``estimate(ctx)`` returns ``(setup_s, first_s,
    steady_s)`` for the budget. ``runs``: runs per call (throughput = runs / median).
    ``baseline``: key of the row this one is a ratio to; with ``baseline_make`` (building
    that row's call) the two are timed round-robin in this row (the ratio of medians taken
    under the same load), else ``ratio = median / the baseline row's median``.
    """

    key: str
    section: str
    name: str
    make: Callable[[], Callable[[], Any]]
    estimate: Callable[[Context], tuple[float, float, float]]
    kind: str = "timed"
    runs: int | None = None
    baseline: str | None = None
    baseline_make: Callable[[], Callable[[], Any]] | None = None
    order: int = 0  # display order (rows run in list order)
    params: dict[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Context:
    cfg: Config
    accelerator: bool
    results: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    cache: dict[str, Any] = dataclasses.field(default_factory=dict)
    start: float = T0  # the budget counts from here (default: the script's start)

    def left(self) -> float:
        """Seconds left of the budget."""
        return self.cfg.budget_s - (time.perf_counter() - self.start)

    def pick(self, cpu: float, accelerator: float) -> float:
        """A constant of the cost model: 2-core CPU measurements, or an accelerator's."""
        return accelerator if self.accelerator else cpu

    def lazy(self, key: str, build: Callable[[], Any]) -> Any:
        """Shared inputs, built once; a failed build is remembered and re-raised."""
        if key not in self.cache:
            try:
                self.cache[key] = ("ok", build())
            except Exception as e:  # noqa: BLE001 - re-raised in every row that needs it
                self.cache[key] = ("error", e)
        status, value = self.cache[key]
        if status == "error":
            raise value
        return value

    def measured(self, key: str) -> dict[str, Any] | None:
        r = self.results.get(key)
        if r and r.get("status") == "ok" and r.get("median_s") is not None:
            return r
        return None


def log(msg: str) -> None:
    print(f"[{time.perf_counter() - T0:7.1f} s] {msg}", file=sys.stderr, flush=True)


def block(x: Any) -> Any:
    import jax

    return jax.block_until_ready(x)


def short_error(e: BaseException, limit: int = 240) -> str:
    text = str(e).strip().splitlines()
    first = next((line for line in text if line.strip()), "")
    msg = f"{type(e).__name__}: {first}" if first else type(e).__name__
    return msg if len(msg) <= limit else msg[: limit - 1] + "…"


def estimate_total(row: Row, ctx: Context) -> float:
    setup, first, steady = row.estimate(ctx)
    if row.kind == "check":
        return setup + first
    cfg = ctx.cfg
    return setup + first + min(cfg.max_repeats * steady, max(cfg.row_cap_s, steady))


def run_row(row: Row, ctx: Context) -> dict[str, Any]:
    """Runs one row within the budget; never raises (except KeyboardInterrupt)."""
    cfg = ctx.cfg
    res: dict[str, Any] = dict(
        key=row.key,
        section=row.section,
        name=row.name,
        kind=row.kind,
        order=row.order,
        params=row.params,
        status=None,
        first_s=None,
        median_s=None,
        compile_s=None,
        repeats=0,
        times_s=[],
        result=None,
        error=None,
    )
    left = ctx.left()
    try:
        est = estimate_total(row, ctx)
        steady_guess = row.estimate(ctx)[2]
    except Exception as e:  # noqa: BLE001 - a broken estimate must not stop the script
        est = steady_guess = 0.0
        log(f"  (estimate failed: {short_error(e)})")
    res["estimate_s"] = est
    if est > left:
        res["status"] = "skipped"
        res["result"] = f"skipped: estimated {est:.0f} s > {max(left, 0):.0f} s left of budget"
        log(f"skip  {row.section}: {row.name}: estimated {est:.0f} s, {max(left, 0):.0f} s left")
        return res
    log(f"run   {row.section}: {row.name} (estimated {est:.1f} s, {left:.0f} s left)")
    t_row = time.perf_counter()
    try:
        fn = row.make()
        if row.kind == "check":
            t0 = time.perf_counter()
            out = fn()
            res["first_s"] = time.perf_counter() - t0
            res.update(out)
            res["status"] = "ok"
        else:
            t0 = time.perf_counter()
            block(fn())
            first = time.perf_counter() - t0
            res["first_s"] = first
            base_fn = row.baseline_make() if row.baseline_make is not None else None
            if base_fn is not None:
                block(base_fn())  # compiled by its own row; warm it here
            times: list[float] = []
            base_times: list[float] = []
            while len(times) < cfg.max_repeats:
                left = ctx.left()
                guess = statistics.median(times) if times else first
                if times and (sum(times) + sum(base_times) >= cfg.row_cap_s or guess > left):
                    break
                if not times and min(first, steady_guess) > left:
                    break  # even one more call does not fit: report the first call only
                t0 = time.perf_counter()
                block(fn())
                times.append(time.perf_counter() - t0)
                if base_fn is not None:
                    t0 = time.perf_counter()
                    block(base_fn())
                    base_times.append(time.perf_counter() - t0)
            if base_times:
                res["baseline_times_s"] = base_times
                res["baseline_median_s"] = statistics.median(base_times)
                if res["baseline_median_s"] > 0:
                    res["ratio"] = statistics.median(times) / res["baseline_median_s"]
                    res["ratio_to"] = row.baseline
                    res["ratio_interleaved"] = True
            res["times_s"] = times
            res["repeats"] = len(times)
            if times:
                med = statistics.median(times)
                res["median_s"] = med
                res["compile_s"] = max(first - med, 0.0)
                if row.runs:
                    res["runs_per_s"] = row.runs / med
            else:
                res["result"] = "first call only (budget)"
            res["status"] = "ok"
    except KeyboardInterrupt:
        raise
    except Exception as e:  # noqa: BLE001 - out of memory and friends go in the row
        res["status"] = "error"
        res["error"] = short_error(e)
        log(f"  error: {res['error']}")
    finally:
        res["wall_s"] = time.perf_counter() - t_row
        gc.collect()
    if res["status"] == "ok":
        if res["median_s"] is not None:
            log(
                f"  done: first {fmt_time(res['first_s'])}, median {fmt_time(res['median_s'])}"
                f" of {res['repeats']} (row {res['wall_s']:.1f} s)"
            )
        else:
            log(f"  done in {res['wall_s']:.1f} s: {res.get('result')}")
    return res


def run_rows(rows: Sequence[Row], ctx: Context) -> list[dict[str, Any]]:
    for row in rows:
        ctx.results[row.key] = run_row(row, ctx)
    out = [ctx.results[row.key] for row in rows]
    for res in out:  # ratios, once every baseline has run
        row = next(r for r in rows if r.key == res["key"])
        if row.baseline is None or res.get("median_s") is None or "ratio" in res:
            continue
        base = ctx.measured(row.baseline)
        if base is not None and base["median_s"] > 0:
            res["ratio"] = res["median_s"] / base["median_s"]
            res["ratio_to"] = row.baseline
            res["ratio_interleaved"] = False
    return sorted(out, key=lambda r: r["order"])


# ----------------------------------------------------------------------------- the rows


def build_rows(ctx: Context) -> list[Row]:  # noqa: C901 - one place that lists the table
    import jax
    import numpy as np

    import jaxprivmdp as jp

    cfg = ctx.cfg
    pick = ctx.pick
    rows: list[Row] = []
    order = iter(range(10_000))
    display: dict[str, int] = {}

    def add(row: Row) -> None:
        row.order = display.setdefault(row.key, next(order))
        rows.append(row)

    def example2():
        return ctx.lazy("ex2", lambda: jp.examples.random_mdp(jax.random.key(0)))

    # Display order is fixed here; run order is set at the end (most important first).
    fig1_grid = jp.Dirichlet.grid(PAPER_KS, sampler="fast")
    # --- Figure 1
    nk = len(PAPER_KS)
    add(
        Row(
            "fig1",
            "Figure 1",
            f"sweep Example 2 (S=20, A=5, T=10), {nk} k × {cfg.fig1_trials} trials",
            lambda: partial(
                jp.sweep, jax.random.key(1), example2(), fig1_grid, num_trials=cfg.fig1_trials
            ),
            lambda c: (0.5, c.pick(9.0, 10.0), c.pick(0.05, 0.03)),
            runs=nk * cfg.fig1_trials,
            params=dict(ks=PAPER_KS, num_trials=cfg.fig1_trials),
        )
    )

    # --- throughput
    n_thr = cfg.throughput_trials
    runs = nk * n_thr
    wide = cfg.wide_chunking()
    padded = wide["batch_size"] * math.ceil(runs / wide["batch_size"])
    add(
        Row(
            "throughput.default",
            "sweep throughput",
            f"sweep Example 2, {nk} k × {n_thr:,} trials, default chunking "
            f"({default_chunking(runs)})",
            lambda: partial(jp.sweep, jax.random.key(2), example2(), fig1_grid, num_trials=n_thr),
            lambda c: (0.5, 3.0 + runs / c.pick(5e3, 2e4), runs / c.pick(5e3, 2e4)),
            runs=runs,
            params=dict(ks=PAPER_KS, num_trials=n_thr),
        )
    )
    add(
        Row(
            "throughput.wide",
            "sweep throughput",
            f"sweep Example 2, {nk} k × {n_thr:,} trials, vector_width={wide['vector_width']}, "
            f"batch_size={wide['batch_size']}",
            lambda: partial(
                jp.sweep,
                jax.random.key(2),
                example2(),
                fig1_grid,
                num_trials=n_thr,
                chunking=jp.Chunking(**wide),
            ),
            lambda c: (
                0.5,
                c.pick(12.0, 10.0) + padded / c.pick(6e3, 1e6),
                padded / c.pick(6e3, 1e6),
            ),
            runs=runs,
            params=dict(ks=PAPER_KS, num_trials=n_thr, **wide),
        )
    )

    # --- dense S = 1000 bounds / evaluate
    S, A, T, k = cfg.dense_states, cfg.dense_actions, cfg.dense_horizon, cfg.dense_k
    dense_label = f"dense S={S}, A={A}, T={T}"

    def dense():
        def build():
            m = jp.examples.random_mdp(jax.random.key(3), num_states=S, num_actions=A, horizon=T)
            priv = jp.privatize(jax.random.key(4), m, jp.Dirichlet(k))
            policy = jp.solve(priv).policy
            return block((priv, policy))

        return ctx.lazy("dense", build)

    def dense_setup(c: Context) -> float:
        return 0.0 if "dense" in c.cache else c.pick(3.0 + 2e-9 * S * S * A * T, 5.0)

    def eval_steady(c: Context) -> float:
        return c.pick(1e-4 + 1.7e-10 * S * S * A * T, 2e-3)

    evaluators = {"eager": jp.evaluate, "jit": jax.jit(jp.evaluate)}
    for mode, fn in evaluators.items():
        add(
            Row(
                f"dense.evaluate.{mode}",
                dense_label,
                f"evaluate ({'eager' if mode == 'eager' else 'jax.jit'})",
                lambda fn=fn: partial(fn, *dense()),
                lambda c: (dense_setup(c), 2.0 + eval_steady(c), eval_steady(c)),
                params=dict(S=S, A=A, T=T),
            )
        )

    def jitted_cop(bound: str, aware: bool):
        mech, uset = jp.Dirichlet(k), uncertainty_set(bound, aware)
        return jax.jit(lambda m, p: jp.cost_of_privacy(m, p, mech, uset))

    # Eager and jitted for each set; the support-aware sets (the release records its
    # support) under jax.jit only: the user's path that the "every set ≤ 5× evaluate" target times.
    for mode, aware in (("eager", False), ("jit", False), ("jit", True)):
        for bound in BOUNDS:
            if mode == "eager":

                def make(bound=bound):
                    d = dense()
                    mech, uset = jp.Dirichlet(k), uncertainty_set(bound)
                    return lambda: jp.cost_of_privacy(d[0], d[1], mech, uset)

                factor = pick(15.0, 5.0)
            else:

                def make(bound=bound, aware=aware):
                    d, f = dense(), jitted_cop(bound, aware)
                    return lambda: f(d[0], d[1])

                factor = pick(130.0, 20.0)
            opts = "support_aware=True" if aware else ""
            add(
                Row(
                    f"dense.cop.{bound}{'.aware' if aware else ''}.{mode}",
                    dense_label,
                    f"cost_of_privacy(Dirichlet({k:g}), {SET_NAMES[bound]}({opts})) "
                    f"({'eager' if mode == 'eager' else 'jax.jit'})",
                    make,
                    lambda c, factor=factor: (
                        dense_setup(c),
                        4.0 + factor * eval_steady(c),
                        (factor + 1.0) * eval_steady(c),  # + the interleaved evaluate
                    ),
                    baseline=f"dense.evaluate.{mode}",
                    baseline_make=lambda mode=mode: partial(evaluators[mode], *dense()),
                    params=dict(S=S, A=A, T=T, k=k, bound=bound, mode=mode, aware=aware),
                )
            )

    # --- gridworlds
    def grid(n: int):
        return ctx.lazy(f"grid{n}", lambda: block(jp.examples.gridworld(n, n)))

    def grid_setup(c: Context, n: int) -> float:
        return 0.0 if f"grid{n}" in c.cache else 0.2 + 6e-6 * n * n

    def scaled(c: Context, op: str, n: int, default: tuple[float, float]) -> tuple[float, float]:
        """(first, steady) scaled linearly in S from this op at the previous grid size."""
        sizes = [m for m in cfg.grid_sizes if m < n]
        for m in reversed(sizes):
            r = c.measured(f"grid.{m}.{op}")
            if r is not None:
                steady = 1.2 * r["median_s"] * (n * n) / (m * m)
                return r["compile_s"] + steady, steady
        return default

    g_sweep_runs = nk * cfg.grid_sweep_trials
    for n in cfg.grid_sizes:
        sz = n * n
        label = f"gridworld {n}×{n} (S={sz:,})"
        add(
            Row(
                f"grid.{n}.solve",
                label,
                "solve",
                lambda n=n: partial(jp.solve, grid(n)),
                lambda c, n=n, sz=sz: (
                    grid_setup(c, n),
                    *scaled(
                        c,
                        "solve",
                        n,
                        (2.0 + pick(1.5e-5, 2e-7) * sz, pick(1.5e-5, 2e-7) * sz),
                    ),
                ),
                params=dict(height=n, width=n),
            )
        )
        add(
            Row(
                f"grid.{n}.synthesize",
                label,
                f"synthesize(Dirichlet({cfg.grid_k:g}), CertifiedSet(support_aware=True))",
                lambda n=n: partial(
                    jp.synthesize,
                    jax.random.key(5),
                    grid(n),
                    jp.Dirichlet(cfg.grid_k),
                    uncertainty_set("certified", True),
                ),
                lambda c, n=n, sz=sz: (
                    grid_setup(c, n),
                    *scaled(
                        c,
                        "synthesize",
                        n,
                        (10.0 + pick(2e-4, 5e-7) * sz, pick(2e-4, 5e-7) * sz),
                    ),
                ),
                params=dict(height=n, width=n, k=cfg.grid_k, bound="certified"),
            )
        )
        add(
            Row(
                f"grid.{n}.sweep",
                label,
                f"sweep {nk} k × {cfg.grid_sweep_trials} trials, PaperSet(support_aware=True)",
                lambda n=n: partial(
                    jp.sweep,
                    jax.random.key(6),
                    grid(n),
                    fig1_grid,
                    uncertainty_set("paper", True),
                    num_trials=cfg.grid_sweep_trials,
                ),
                lambda c, n=n, sz=sz: (
                    grid_setup(c, n),
                    *scaled(
                        c,
                        "sweep",
                        n,
                        (
                            12.0 + pick(2e-4, 3e-7) * sz * g_sweep_runs,
                            pick(2e-4, 3e-7) * sz * g_sweep_runs,
                        ),
                    ),
                ),
                runs=g_sweep_runs,
                params=dict(height=n, width=n, ks=PAPER_KS, num_trials=cfg.grid_sweep_trials),
            )
        )

    # --- float32 vs float64
    kx = cfg.x64_k

    def x64_base():
        def build():
            m = jp.examples.random_mdp(jax.random.key(0), horizon=10, dtype="float32")
            priv = jp.privatize(jax.random.key(7), m, jp.Dirichlet(kx))
            policy = np.asarray(jp.solve(priv).policy)
            return priv, policy

        return ctx.lazy("x64", build)

    for bound in BOUNDS:
        add(
            Row(
                f"x64.{bound}",
                "float32 vs float64",
                f"cost_of_privacy(Dirichlet({kx:g}), {SET_NAMES[bound]}()), Example 2 (T=10): "
                "float32 brackets float64?",
                lambda bound=bound: lambda: x64_check(x64_base(), kx, bound),
                lambda c: (0.0 if "x64" in c.cache else 2.0, c.pick(6.0, 8.0), 0.0),
                kind="check",
                params=dict(k=kx, bound=bound, horizon=10),
            )
        )

    # Run order (what the budget keeps first): one row of every kind at the smallest sizes,
    # then the other bounds, then the larger gridworlds; the gridworld sweeps last, the
    # largest (1000²) the very last, so it is the first row the budget drops.
    small = cfg.grid_sizes[0]
    first_keys = [
        "fig1",
        *(f"x64.{b}" for b in BOUNDS),
        "dense.evaluate.eager",
        "dense.evaluate.jit",
        "dense.cop.paper.eager",
        "dense.cop.paper.jit",
        "throughput.default",
        "throughput.wide",
        f"grid.{small}.solve",
        f"grid.{small}.synthesize",
        *(f"dense.cop.{b}.{m}" for b in BOUNDS[1:] for m in ("eager", "jit")),
        *(f"dense.cop.{b}.aware.jit" for b in BOUNDS),
        f"grid.{small}.sweep",
    ]

    def rank(row: Row) -> tuple:
        if row.key in first_keys:
            return (0, first_keys.index(row.key))
        if row.key.startswith("grid."):
            _, n, op = row.key.split(".")
            return (2, int(n)) if op == "sweep" else (1, int(n))
        return (3, 0)

    return sorted(rows, key=rank)  # stable: keeps the order of rows within a rank


def default_chunking(total: int) -> str:
    """The chunking ``sweep`` picks on this backend for Example 2 (``_chunks.plan_chunks``)."""
    import jax
    import numpy as np

    import jaxprivmdp as jp
    from jaxprivmdp.experiments._chunks import plan_chunks

    mdp = jp.examples.random_mdp(jax.random.key(0))
    grid = jp.Dirichlet(np.asarray(PAPER_KS), sampler="fast")
    plan = plan_chunks(mdp, total, grid, jp.Chunking())
    return f"vector_width={plan.vector_width}, batch_size={plan.batch_size}"


@contextlib.contextmanager
def x64_enabled():
    """``jax_enable_x64`` on inside, restored after (public ``jax.config.update``)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    was = jnp.asarray(1.0).dtype == np.float64
    jax.config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        jax.config.update("jax_enable_x64", was)


def x64_check(base: tuple[Any, Any], k: float, bound: str) -> dict[str, Any]:
    """Float32 bounds (x64 as the process has it, float32 model) vs float64 (x64 on, the same
    P̄ cast exactly to float64, the same policy)."""
    import jax
    import numpy as np

    import jaxprivmdp as jp

    priv32, policy = base
    mech, uset = jp.Dirichlet(k), uncertainty_set(bound)
    r32 = jax.device_get(jp.cost_of_privacy(priv32, policy, mech, uset))
    p32 = np.asarray(r32.lower, np.float64)
    o32 = np.asarray(r32.upper, np.float64)
    dtype32 = str(np.asarray(r32.lower).dtype)

    def f64(x):
        return None if x is None else np.asarray(x, np.float64)

    def host(name):
        x = getattr(priv32, name, None)
        return None if x is None else np.asarray(x)

    with x64_enabled():
        priv64 = jp.make_mdp(  # the same P̄, rewards and mask, cast exactly to float64
            f64(priv32.transitions),
            f64(priv32.rewards),
            terminal_reward=f64(getattr(priv32, "terminal_reward", None)),
            horizon=priv32.horizon,
            discount=float(priv32.discount),
            action_mask=host("action_mask"),
            initial_state=int(priv32.initial_state),
            support=host("support"),
            dtype="float64",
        )
        r64 = jax.device_get(jp.cost_of_privacy(priv64, policy, mech, uset))
        p64 = np.asarray(r64.lower, np.float64)
        o64 = np.asarray(r64.upper, np.float64)
        dtype64 = str(np.asarray(r64.lower).dtype)
    finite = bool(np.all(np.isfinite(p32)) and np.all(np.isfinite(o32)))
    finite = finite and bool(np.all(np.isfinite(p64)) and np.all(np.isfinite(o64)))
    viol_p = float(np.max(p32 - p64))  # > 0: float32 pessimistic above float64's
    viol_o = float(np.max(o64 - o32))  # > 0: float32 optimistic below float64's
    violation = max(viol_p, viol_o, 0.0)
    slack = max(float(np.max(p64 - p32)), float(np.max(o32 - o64)), 0.0)
    ok = finite and violation <= 0.0
    result = (
        f"{'brackets: yes' if ok else 'brackets: NO'}; max violation {violation:.3g}"
        f" (pessimistic {max(viol_p, 0.0):.3g}, optimistic {max(viol_o, 0.0):.3g});"
        f" float32 slack ≤ {slack:.3g}"
        + ("" if finite else "; non-finite values")
        + f" [{dtype32} vs {dtype64}, shape {list(p64.shape)}]"
    )
    return dict(
        ok=ok,
        result=result,
        max_violation=violation,
        violation_lower=viol_p,
        violation_upper=viol_o,
        max_slack=slack,
        dtypes=[dtype32, dtype64],
        shape=list(p64.shape),
    )


# ----------------------------------------------------------------------------- output


def fmt_time(seconds: float | None) -> str:
    if seconds is None or seconds != seconds:
        return "n/a"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if abs(seconds) >= scale or unit == "ns":
            value = seconds / scale
            return f"{value:.3g} {unit}" if value < 1000 else f"{value:.0f} {unit}"
    raise AssertionError


def cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def result_text(res: dict[str, Any]) -> str:
    if res["status"] == "error":
        return f"**ERROR** {res['error']}"
    if res["status"] == "skipped":
        return res["result"]
    parts = []
    if res.get("runs_per_s") is not None:
        parts.append(f"{res['runs_per_s']:,.0f} runs/s")
    if res.get("ratio") is not None:
        mode = res["ratio_to"].rsplit(".", 1)[-1]
        base = res.get("baseline_median_s")
        how = f"interleaved, evaluate {fmt_time(base)}" if base is not None else "separate rows"
        parts.append(f"{res['ratio']:.3g}× evaluate {mode} ({how})")
    if res.get("result"):
        parts.append(res["result"])
    return "; ".join(parts)


def backend_info() -> dict[str, Any]:
    import jax
    import jax.numpy as jnp

    import jaxprivmdp as jp

    info: dict[str, Any] = {}
    dev = jax.devices()[0]
    info["device_kind"] = dev.device_kind
    info["platform"] = dev.platform
    info["device_count"] = jax.device_count()
    info["jax"] = jax.__version__
    try:
        import jaxlib

        info["jaxlib"] = getattr(jaxlib, "__version__", None)
    except ImportError:
        info["jaxlib"] = None
    info["python"] = platform.python_version()
    info["dtype"] = str(jnp.asarray(1.0).dtype)
    info["jaxprivmdp"] = getattr(jp, "__version__", None)
    info["jaxprivmdp_path"] = str(Path(jp.__file__).resolve().parent)
    try:
        stats = dev.memory_stats()
        if stats and stats.get("bytes_limit"):
            info["device_memory_gib"] = round(stats["bytes_limit"] / 2**30, 1)
    except Exception:  # noqa: BLE001 - not every backend has memory stats
        pass
    info["host"] = platform.node()
    info["cpu_count"] = os.cpu_count()
    try:
        info["load_average_1m"] = os.getloadavg()[0]
    except OSError:
        pass
    try:
        commit = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        info["commit"] = (commit + ("+dirty" if dirty else "")) or None
    except Exception:  # noqa: BLE001 - not a git checkout, or no git
        info["commit"] = None
    return info


def print_report(info: dict[str, Any], cfg: Config, rows: list[dict[str, Any]], total: float):
    mode = "quick" if cfg.quick else "full"
    print(
        f"# jaxprivmdp on {info['device_kind']} ({info['platform']}, "
        f"{info['device_count']} device{'s' if info['device_count'] != 1 else ''})\n"
    )
    mem = f", {info['device_memory_gib']} GiB" if info.get("device_memory_gib") else ""
    print(
        f"JAX {info['jax']} (jaxlib {info['jaxlib']}), Python {info['python']}, default dtype "
        f"{info['dtype']}{mem}; jaxprivmdp {info['jaxprivmdp']} at commit {info['commit']}; "
        f"host {info['host']} ({info['cpu_count']} CPUs, load {info.get('load_average_1m')}).\n"
        f"Mode {mode}, budget {cfg.budget_s:.0f} s, wall {total:.1f} s. Times: first call "
        "(tracing + compilation + one run) and the median of the later calls "
        "(`jax.block_until_ready`); compile ≈ first − median.\n"
    )
    headers = ("section", "row", "after compile (median)", "first call", "compile ≈", "n", "result")
    print("| " + " | ".join(headers) + " |")
    print("|" + "---|" * len(headers))
    for r in rows:
        cells = (
            r["section"],
            r["name"],
            fmt_time(r["median_s"]) if r["median_s"] is not None else "",
            fmt_time(r["first_s"]) if r["first_s"] is not None else "",
            fmt_time(r["compile_s"]) if r["compile_s"] is not None else "",
            r["repeats"] if r["kind"] == "timed" and r["status"] == "ok" else "",
            result_text(r),
        )
        print("| " + " | ".join(cell(c) for c in cells) + " |")
    print()
    by = {r["key"]: r for r in rows}
    d, w = by.get("throughput.default"), by.get("throughput.wide")
    if d and w and d.get("runs_per_s") and w.get("runs_per_s"):
        print(
            f"Throughput: wide chunking / default = {w['runs_per_s'] / d['runs_per_s']:.3g}× "
            "(target: defaults within 1.5× of the best chunking).\n"
        )
    checks = [r for r in rows if r["kind"] == "check" and r["status"] == "ok"]
    if checks:
        bad = [r["params"]["bound"] for r in checks if not r.get("ok")]
        print(
            "float32 vs float64: "
            + (f"float32 does NOT bracket float64 for {bad}" if bad else "brackets for every bound")
            + f" ({len(checks)} of {len(BOUNDS)} bounds checked).\n"
        )


# ----------------------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="small sizes (< 60 s on a 2-core CPU)")
    p.add_argument("--json", type=Path, default=None, help="write the rows to this JSON file")
    p.add_argument(
        "--budget-s",
        type=float,
        default=None,
        help="total seconds; rows estimated to exceed what is left are skipped "
        "(default 240, 55 with --quick)",
    )
    p.add_argument(
        "--only",
        action="append",
        default=None,
        metavar="TEXT",
        help="run only rows whose key or name contains TEXT (repeatable; e.g. fig1, x64, "
        "dense, throughput, grid.300, sweep)",
    )
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    cfg = Config.make(args.quick, args.budget_s)
    sys.path.insert(0, str(REPO))  # the library of this checkout, installed or not
    import jax

    log(f"JAX {jax.__version__}, devices {jax.devices()}")
    info = backend_info()
    ctx = Context(cfg=cfg, accelerator=info["platform"] != "cpu")
    rows = build_rows(ctx)
    if args.only:
        wanted = [s.lower() for s in args.only]
        rows = [r for r in rows if any(w in r.key.lower() or w in r.name.lower() for w in wanted)]
    log(f"{len(rows)} rows, budget {cfg.budget_s:.0f} s ({'quick' if cfg.quick else 'full'})")
    results = run_rows(rows, ctx)
    total = time.perf_counter() - T0
    print_report(info, cfg, results, total)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        payload = dict(
            command=" ".join(["python", "benchmarks/gpu.py", *sys.argv[1:]])
            if argv is None
            else " ".join(["python", "benchmarks/gpu.py", *argv]),
            backend=info,
            config=dataclasses.asdict(cfg),
            wall_s=total,
            rows=results,
        )
        args.json.write_text(json.dumps(payload, indent=2, default=str) + "\n")
        log(f"wrote {args.json}")
    log(f"total {total:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
