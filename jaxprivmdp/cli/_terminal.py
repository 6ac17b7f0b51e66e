"""What the commands show on the terminal: notes and progress on stderr, tables on stdout."""

from __future__ import annotations

import math
import sys
import time

from ._interrupts import checkpoint


def note(msg: str) -> None:
    """One line on stderr (notes, warnings, progress, the files written)."""
    print(msg, file=sys.stderr, flush=True)


# Seconds between progress lines (the first and the last chunk are always shown).
PROGRESS_EVERY_S = 2.0


def _seconds(s: float) -> str:
    return f"{s:.1f} s" if s < 120 else f"{s / 60:.1f} min"


def progress(label: str, *, every: float = PROGRESS_EVERY_S):
    """A ``report(done, total)`` callback: every ``every`` seconds at most, the runs done,
    the time so far, the rate and the time left. The rate leaves out the first chunk, which
    pays for compiling: its line has no rate and no ETA."""
    start = time.perf_counter()
    state = {"first": None, "shown": -math.inf}

    def report(done: int, total: int) -> None:
        now = time.perf_counter()
        if state["first"] is None:
            state["first"] = (now, done)
        if done >= total or now - state["shown"] >= every:
            state["shown"] = now
            t1, d1 = state["first"]
            line = f"  [{label}] {done}/{total} runs ({100 * done / total:.0f}%)  "
            line += _seconds(now - start)
            if done > d1 and now > t1:  # a rate and an ETA from a compiled chunk only
                rate = (done - d1) / (now - t1)
                line += f"  {rate:.3g} runs/s  ETA {_seconds((total - done) / rate)}"
            elif done < total:
                line += "  (first chunk, with compilation: no ETA yet)"
            note(line)
        checkpoint()  # between chunks nothing runs: a deferred Ctrl-C stops here

    return report


def frontier_progress():
    """A ``report(mechanism, done, total)`` callback: one :func:`progress` per mechanism,
    each timing from its own start."""
    reporters = {}

    def report(mechanism: str, done: int, total: int) -> None:
        if mechanism not in reporters:
            reporters[mechanism] = progress(mechanism)
        reporters[mechanism](done, total)

    return report


def _format_log10(log_value: float) -> str:
    """``exp(log_value)`` in scientific notation, also far below float64's range."""
    if not math.isfinite(log_value):
        return "nan" if math.isnan(log_value) else ("0" if log_value < 0 else "inf")
    exponent = log_value / math.log(10)
    e = math.floor(exponent)
    mantissa = 10 ** (exponent - e)
    if mantissa >= 9.995:
        mantissa, e = 1.0, e + 1
    return f"{mantissa:.2f}e{e:+d}"


def format_table(rows: list[dict]) -> str:
    """A plain-text table with columns ``k``, ``epsilon``, ``delta``, ``gamma``.

    Args:
      rows: dicts with ``k``, ``epsilon``, ``delta`` and ``log_gamma`` (None or NaN where
        there is no good set), one per line.

    Returns:
      The table as a string (no trailing newline).
    """
    lines = [f"{'k':>10}  {'epsilon':>12}  {'delta':>10}  {'gamma':>12}"]
    for r in rows:
        log_delta = math.log(r["delta"]) if r["delta"] > 0 else -math.inf
        log_gamma = math.nan if r["log_gamma"] is None else r["log_gamma"]
        lines.append(
            f"{r['k']:>10.4g}  {r['epsilon']:>12.6g}  {_format_log10(log_delta):>10}  "
            f"{_format_log10(log_gamma):>12}"
        )
    return "\n".join(lines)


def _worst_case_note(rows: list[dict]) -> str:
    """Which bound is the worst case of the rows' objective (:func:`_report.summarize`)."""
    from ..properties.core import worst_end_name

    return f"worst_case = {worst_end_name(rows[0].get('objective') == 'minimize')}"


def print_sweep_tables(tables: dict, objective: str | None = None) -> None:
    """Each sweep's means over trials per ``k`` (``tables``: name -> summary rows);
    ``objective``: what was optimized (``objective: maximizing reward``), shown first."""
    cols = ("lower", "private_value", "true_value", "upper", "cost")
    if objective is not None:
        print(f"\n{objective}")
    for name, rows in tables.items():
        print(
            f"\n{name}  (mean over trials; {_worst_case_note(rows)}; non-private optimum "
            f"{rows[0]['optimal_value']:.4f})"
        )
        robust = "robust_true_value_mean" in rows[0]
        extra = ("robust_worst_case", "robust_true_value") if robust else ()
        widths = [max(15, len(c) + 2) for c in cols + extra]
        header = "".join(f"{c:>{w}}" for c, w in zip(cols + extra, widths, strict=True))
        print(f"     k {header}{'covered_fraction':>18}")
        for r in rows:
            cells = "".join(
                f"{r[c + '_mean']:{w}.4f}" for c, w in zip(cols + extra, widths, strict=True)
            )
            print(f"{r['k']:6g} {cells}{r['covered_fraction']:18.3f}")


def print_frontier(name: str, result, delta: float, objective: str | None = None) -> None:
    """A frontier's mean true values per target ε, its floors and its whole-MDP ε;
    ``objective``: what was optimized (``objective: minimizing reward "steps"``)."""
    if objective is not None:
        print(f"\n{objective}")
    print(
        f"\n{name}: mean true value of the private policy (non-private optimum "
        f"{result.optimal_value:.4f}); '-' = the mechanism cannot reach that ε"
    )
    print("  epsilon " + "".join(f"{m:>14}" for m in result.parameter))
    for i, e in enumerate(result.epsilons):
        cells = "".join(
            f"{float(result.true_value[m][i].mean()):14.4f}"
            if result.reachable[m][i]
            else f"{'-':>14}"
            for m in result.parameter
        )
        print(f"{e:9g}{cells}")
    for m, floor in result.floor.items():
        if floor > 0:
            print(f"  {m}: smallest ε reachable at δ = {delta:g} is about {floor:.4g}")
    print(
        f"\nwhole MDP, when all {result.num_rows} rows may change: ε at δ = {delta:g}, "
        "basic composition / Rényi-DP composition"
    )
    print("  epsilon " + "".join(f"{m:>22}" for m in result.parameter))
    for i, e in enumerate(result.epsilons):
        cells = "".join(
            f"{result.all_rows[m][i, 0]:11.4g} /{result.all_rows[m][i, 1]:9.4g}"
            if result.reachable[m][i]
            else f"{'-':>22}"
            for m in result.parameter
        )
        print(f"{e:9g}{cells}")
