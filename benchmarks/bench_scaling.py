"""Time vs problem size: synthesis (``solve``) and the bounds (``cost_of_privacy``) per trial.

For random MDPs (rows ``~ Dirichlet(1, …, 1)`` drawn with NumPy, built with ``make_mdp``,
privatized with ``Dirichlet(10, sampler="fast")``), pytest-benchmark times, after
compilation:

* ``solve`` on the privatized MDP (finite-horizon backward induction), expected
  ``O(T·S²·A)``: every stage is a dense ``[S·A, S] @ [S]`` product;
* ``cost_of_privacy`` of the synthesized deterministic policy (both bounds, ``β = 0.1``),
  expected ``O(T·S²)`` plus a selection of ``S`` values per stage: only the chosen action's
  rows are touched, so it should not grow with ``A``; both as the public call and as its
  compiled core (``_bounds.bounds_core``), to separate the eager boundary.

Sizes: ``S ∈ {20, 50, 100, 200, 500, 1000, 2000}`` (A = 5, T = 10), ``T ∈ {10, 20, 40}`` and
``A ∈ {5, 10, 20}`` at ``S = 500`` (``--bench-quick``: S ∈ {20, 100, 300}, T ∈ {10, 20},
A ∈ {5, 10} at S = 100). Ahead-of-time compile times of ``solve_core`` and ``bounds_core``
are in ``extra_info``.

Run: ``python -m pytest benchmarks/bench_scaling.py --benchmark-only
--benchmark-json=benchmarks/results/bench_scaling.json``, then
``python benchmarks/bench_scaling.py benchmarks/results/bench_scaling.json`` for the log-log
slopes and the plot ``benchmarks/results/scaling.png`` (read from the JSON, nothing timed).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import sys
from pathlib import Path

import common
import numpy as np
import pytest

K = 10.0
BETA = 0.1
QUANTITIES = ("solve", "cost_of_privacy", "bounds_core")


def configs(quick: bool) -> list[tuple[str, int, int, int]]:
    """``(series, S, A, T)``; a size shared by two series is listed (and timed) once."""
    if quick:
        s_values, t_values, a_values, mid = (20, 100, 300), (10, 20), (5, 10), 100
    else:
        s_values, t_values, a_values = (
            (20, 50, 100, 200, 500, 1000, 2000),
            (10, 20, 40),
            (5, 10, 20),
        )
        mid = 500
    out = [("S", S, 5, 10) for S in s_values]
    out += [("T", mid, 5, T) for T in t_values if T != 10]
    out += [("A", mid, A, 10) for A in a_values if A != 5]
    return out


ALL = sorted(set(configs(False) + configs(True)), key=lambda c: (c[1], c[2], c[3]))


@functools.lru_cache(maxsize=1)  # one size in memory at a time (tests run size by size)
def problem(S: int, A: int, T: int, dtype: str):
    import jax

    import jaxprivmdp as jp

    mdp = common.random_finite_mdp(S, A, T, dtype, seed=[S, A])
    p_bar = jp.dirichlet_mechanism(
        jax.random.key(S * 100 + A), mdp.transitions, jp.Dirichlet(K, sampler="fast")
    )
    private = dataclasses.replace(mdp, transitions=p_bar)
    policy = jp.solve(private).policy
    # The paper's set exactly as cost_of_privacy builds it (`common.prepare_set`).
    params, set_kw = common.set_args(private, K, BETA, "paper")
    return private, policy, (private, policy, params, None), set_kw


@pytest.mark.parametrize("quantity", QUANTITIES)
@pytest.mark.parametrize(
    ("series", "S", "A", "T"), ALL, ids=[f"S{c[1]}-A{c[2]}-T{c[3]}" for c in ALL]
)
def test_scaling(benchmark, dtype, quick, series, S, A, T, quantity):
    if (series, S, A, T) not in configs(quick):
        pytest.skip("not in this configuration")
    import jaxprivmdp as jp
    from jaxprivmdp.planning import _bellman as _planning
    from jaxprivmdp.planning import _bounds

    private, policy, core_args, set_kw = problem(S, A, T, dtype)
    width = set_kw["width"]
    benchmark.group = f"scaling S={S} A={A} T={T}"
    extra = dict(series=series, S=S, A=A, T=T, quantity=quantity, width=width)
    if quantity == "solve":
        extra["aot"] = common.aot_compile_time(_planning.solve_core, private, None, 10_000)
        fn = lambda: jp.solve(private)  # noqa: E731
    elif quantity == "cost_of_privacy":
        mech, uset = jp.Dirichlet(K), jp.PaperSet(BETA)
        fn = lambda: jp.cost_of_privacy(private, policy, mech, uset)  # noqa: E731
    else:
        extra["aot"] = common.aot_compile_time(_bounds.bounds_core, *core_args, 10_000, **set_kw)
        fn = lambda: _bounds.bounds_core(*core_args, 10_000, **set_kw)  # noqa: E731
    common.bench(benchmark, fn, **extra)


# ----------------------------------------------------------------------------- slopes, plot


def loglog_slope(xs, ys) -> float:
    """Least-squares slope of ``log y`` against ``log x``."""
    if len(xs) < 2:
        return float("nan")
    return float(np.polyfit(np.log(np.asarray(xs, float)), np.log(np.asarray(ys, float)), 1)[0])


def summarize(path: Path) -> None:
    """Slopes and plot from a pytest-benchmark JSON of this module (nothing is timed)."""
    data = json.loads(path.read_text())
    med = {}
    for b in data["benchmarks"]:
        e = b["extra_info"]
        med[(e["S"], e["A"], e["T"], e["quantity"])] = b["stats"]["median"]
    sizes = sorted({k[:3] for k in med})
    s_series = sorted(k for k in sizes if k[1:] == (5, 10))
    mid = (
        max(S for S, A, T in sizes if A != 5 or T != 10)
        if any(A != 5 or T != 10 for _, A, T in sizes)
        else None
    )
    t_series = sorted((k for k in sizes if k[0] == mid and k[1] == 5), key=lambda k: k[2])
    a_series = sorted((k for k in sizes if k[0] == mid and k[2] == 10), key=lambda k: k[1])
    fit_from = 200 if max(s[0] for s in s_series) > 300 else 100
    print(f"# Scaling ({path.name}, dtype {data['machine_info'].get('dtype')})\n")
    rows = [
        [
            S,
            A,
            T,
            *(common.fmt_time(med[(S, A, T, q)]) for q in QUANTITIES),
            f"{med[(S, A, T, 'bounds_core')] / med[(S, A, T, 'solve')]:.2f}",
        ]
        for S, A, T in s_series + t_series + a_series
    ]
    common.print_table(
        "Median per call (pytest-benchmark)", ["S", "A", "T", *QUANTITIES, "core / solve"], rows
    )
    rows = []
    for dim, _series, idx, fit in (
        ("S", s_series, 0, [k for k in s_series if k[0] >= fit_from]),
        ("T", t_series, 2, t_series),
        ("A", a_series, 1, a_series),
    ):
        rows.append(
            [dim, ", ".join(str(k[idx]) for k in fit)]
            + [
                f"{loglog_slope([k[idx] for k in fit], [med[(*k, q)] for k in fit]):.2f}"
                for q in QUANTITIES
            ]
        )
    common.print_table("Log-log slopes (least squares)", ["dim", "fit points", *QUANTITIES], rows)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    S = np.array([k[0] for k in s_series], float)
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    labels = ("solve (backward induction)", "cost_of_privacy (public call)", "bounds_core")
    for q, label, style in zip(QUANTITIES, labels, ("o-", "s-", "^-"), strict=True):
        ax.loglog(S, [med[(*k, q)] for k in s_series], style, label=label)
    anchor = med[(*s_series[-1], "solve")]
    for slope, ls in ((2, "--"), (1, ":")):
        ax.loglog(S, anchor * (S / S[-1]) ** slope, "k" + ls, lw=0.8, label=f"∝ S^{slope}")
    ax.set_xlabel("number of states S")
    ax.set_ylabel("seconds per call (median, after compilation)")
    jax_info = data["machine_info"].get("jax", {})
    ax.set_title(
        f"jaxprivmdp scaling, A = 5, T = 10, {data['machine_info'].get('dtype')}, "
        f"{jax_info.get('backend', '?')}"
    )
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    png = path.with_name(path.stem.replace("bench_scaling", "scaling") + ".png")
    fig.savefig(png, dpi=120)
    print(f"wrote {png}")


if __name__ == "__main__":
    summarize(Path(sys.argv[1] if len(sys.argv) > 1 else common.RESULTS_DIR / "bench_scaling.json"))
