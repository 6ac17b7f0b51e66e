"""Markdown tables from a pytest-benchmark JSON of this folder (for RESULTS.md); times nothing.

Run: ``python benchmarks/summarize.py benchmarks/results/bench_overhead.json``.
pytest-benchmark prints its own tables (and ``pytest-benchmark compare`` compares runs); this
adds the numbers our benchmarks keep in ``extra_info`` (interleaved ratios, compile times).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import common


def header(data: dict) -> str:
    m, c = data["machine_info"], data["commit_info"]
    j = m.get("jax", {})
    return (
        f"- git {c.get('id', '?')[:7]}{' (dirty working tree)' if c.get('dirty') else ''}, "
        f"{data['datetime'][:16]} UTC\n"
        f"- machine: {m['cpu'].get('brand_raw', m['processor'])}, {j.get('cpu_count')} CPUs; "
        f"{j.get('backend')} backend, jax {j.get('jax')}, dtype {m.get('dtype')}, "
        f"quick {m.get('quick')}\n"
        f"- load average (1 min): {m.get('load_average_1m_at_start')} at start, "
        f"{m.get('load_average_1m_at_end')} at end\n"
    )


def overhead(data: dict) -> None:
    rows = []
    for b in data["benchmarks"]:
        e = b["extra_info"]
        if "public_over_core" not in e:
            continue
        st = e["interleaved"]
        rows.append(
            [
                e["S"],
                f"`{e['function']}`",
                common.fmt_time(st["public"]["median"]),
                common.fmt_time(st["core"]["median"]),
                common.fmt_time(st["user_jit"]["median"]),
                f"{e['public_over_core']:.2f}×",
                f"{e['user_jit_over_core']:.2f}×",
                common.fmt_time(e["public_minus_core_s"]),
                st["core"]["rounds"],
            ]
        )
    common.print_table(
        "Public boundary vs jitted core (interleaved medians)",
        [
            "S",
            "function",
            "public",
            "core",
            "user jax.jit",
            "public / core",
            "user jit / core",
            "public − core",
            "rounds",
        ],
        rows,
    )


def bounds(data: dict) -> None:
    rows, old, pieces = [], [], []
    for b in data["benchmarks"]:
        e = b["extra_info"]
        if "ratio_core" in e:
            st = e["interleaved"]
            rows.append(
                [
                    e["S"],
                    e["kind"],
                    e["width"],
                    common.fmt_time(st["evaluate_core"]["median"]),
                    common.fmt_time(st["bounds_core"]["median"]),
                    f"{e['ratio_core']:.2f}",
                    common.fmt_time(st["evaluate"]["median"]),
                    common.fmt_time(st["cost_of_privacy"]["median"]),
                    f"{e['ratio_public']:.2f}",
                    f"{e['jit_traced_k_over_core']:.1f}×" if "jit_traced_k_over_core" in e else "",
                    common.verdict(e["target_met"]),
                ]
            )
        elif "old_over_library" in e:
            old.append(
                [
                    e["S"],
                    common.fmt_time(e["interleaved"]["library"]["median"]),
                    common.fmt_time(e["interleaved"]["old"]["median"]),
                    f"{e['old_over_library']:.2f}×",
                    f"{e['max_abs_diff_vs_library']:.1e}",
                ]
            )
        elif "piece" in e:
            pieces.append([e["S"], e["piece"], common.fmt_time(b["stats"]["median"])])
    common.print_table(
        "bounds / evaluate (interleaved medians)",
        [
            "S",
            "policy",
            "width",
            "evaluate_core",
            "bounds_core",
            "ratio",
            "evaluate",
            "cost_of_privacy",
            "ratio",
            "jit, traced k / core",
            "core ratio <= 5",
        ],
        rows,
    )
    common.print_table(
        "Previous (argsort) version vs the library's core (interleaved)",
        ["S", "library core", "old version", "old / library", "max |Δ|"],
        old,
    )
    common.print_table(
        "Pieces of a stage, over T stages (pytest-benchmark median)",
        ["S", "piece", "median"],
        pieces,
    )


def bound_sets(data: dict) -> None:
    """``test_bound_set`` / ``test_bound_set_sparse``: bounds_core of each set / evaluate_core."""
    rows = []
    for b in data["benchmarks"]:
        e = b["extra_info"]
        if "bound" not in e or "ratio_core" not in e:
            continue
        st, r, prep = e["interleaved"], e["ratios_to_evaluate_core"], e["prepare_set"]
        rows.append(
            [
                e.get("n") and f"{e['n']}×{e['n']}" or "dense",
                e["S"],
                f"`{e['bound']}`",
                e.get("support_aware", False),
                e["width"],
                common.fmt_time(st["evaluate_core"]["median"]),
                common.fmt_time(st["bounds_core"]["median"]),
                f"{e['ratio_core']:.2f}",
                f"{r['paper_core']:.2f}" if "paper_core" in r else "",
                f"{r['paper_box_width_S']:.2f}" if "paper_box_width_S" in r else "",
                f"{r['row_box_only']:.2f}" if "row_box_only" in r else "",
                common.fmt_time(prep["first_s"]),
                common.fmt_time(prep["cached_s"]),
                f"{e['cost_s0']:.4g} / {e['cost_s0_paper']:.4g}",
                st["evaluate_core"]["rounds"],
                e["load_average_1m"],
                common.verdict(e["target_met"]),
            ]
        )
    if not rows:
        return
    common.print_table(
        "bounds_core of each set / evaluate_core (interleaved medians; ratios to evaluate_core)",
        [
            "model",
            "S",
            "bound",
            "support_aware",
            "width",
            "evaluate_core",
            "bounds_core",
            "ratio",
            "paper core",
            "paper box, width = S",
            "row_box alone",
            "prepare_set first",
            "prepare_set cached",
            "cost at s0 (this / paper)",
            "rounds",
            "load 1m",
            "ratio <= 5",
        ],
        rows,
    )


def generic(data: dict) -> None:
    rows = []
    for b in data["benchmarks"]:
        s, e = b["stats"], b["extra_info"]
        scalars = {
            k: (f"{v:.3g}" if isinstance(v, float) else v)
            for k, v in e.items()
            if isinstance(v, int | float | str | bool) and k not in ("load_average_1m",)
        }
        rows.append(
            [
                b["name"],
                common.fmt_time(s["median"]),
                common.fmt_time(s["iqr"]),
                s["rounds"],
                ", ".join(f"{k}={v}" for k, v in scalars.items()),
            ]
        )
    common.print_table("All benchmarks", ["name", "median", "IQR", "rounds", "extra_info"], rows)


def main(path: Path) -> None:
    data = json.loads(path.read_text())
    print(f"# {path.name}\n")
    print(header(data))
    if "overhead" in path.name:
        overhead(data)
    if "bounds_vs_bellman" in path.name:
        bounds(data)
    bound_sets(data)
    generic(data)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
