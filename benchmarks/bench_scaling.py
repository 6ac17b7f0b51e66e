"""Time vs problem size: synthesis (``solve``) and the bounds (``cost_of_privacy``) per trial.

For random MDPs (rows ``~ Dirichlet(1, …, 1)`` drawn with NumPy, built with ``make_mdp``,
privatized with ``dirichlet_mechanism`` at ``k = 10``), times, after compilation:

* ``solve`` on the privatized MDP (finite-horizon backward induction), expected
  ``O(T·S²·A)``: every stage is a dense ``[S·A, S] @ [S]`` product;
* ``cost_of_privacy`` of the synthesized deterministic policy (both bounds, ``β = 0.1``),
  expected ``O(T·S²)`` plus a sort of ``S`` values per stage: only the chosen action's rows
  are touched, so it should not grow with ``A``. Timed both as the public call and as its
  compiled core (``jaxprivmdp._bounds.bounds_core``) to separate the Python overhead.

Sizes: ``S ∈ {20, 50, 100, 200, 500, 1000, 2000}`` (A = 5, T = 10), ``T ∈ {10, 20, 40}`` and
``A ∈ {5, 10, 20}`` at ``S = 500``. Fits log-log slopes and plots time vs ``S`` to
``benchmarks/results/scaling.png``.

Run: ``python benchmarks/bench_scaling.py [--quick] [--dtype float32|float64]``.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import common

NAME = "bench_scaling"
K = 10.0
BETA = 0.1


def _add_arguments(parser):
    parser.add_argument(
        "--replot", type=Path, default=None, help="only redraw the plot from this JSON output"
    )


args = common.parse_args(
    __doc__.splitlines()[0], default_dtype="float32", add_arguments=_add_arguments
)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import jaxprivmdp as jp  # noqa: E402
from jaxprivmdp import _bounds, _robust  # noqa: E402  (compiled core)

_SAMPLER = "fast"  # the library's default


def privatize(key, P):
    """``dirichlet_mechanism`` with the library's default sampler (setup only, not timed)."""
    return jax.block_until_ready(jp.dirichlet_mechanism(key, P, K))


class Problems:
    """Random MDPs and their privatized transitions, cached by ``(S, A)``."""

    def __init__(self, dtype):
        self.dtype = dtype
        self.cache = {}

    def get(self, S, A, T):
        if (S, A) not in self.cache:
            rng = np.random.default_rng([S, A])
            P = rng.dirichlet(np.ones(S), size=(S, A))
            P /= P.sum(-1, keepdims=True)
            R = rng.uniform(0, 1, size=(S, A))
            RT = rng.uniform(0, 1, size=S)
            mdp = jp.make_mdp(P, R, terminal_reward=RT, horizon=1, dtype=self.dtype)
            del P
            p_bar = privatize(jax.random.key(S * 100 + A), mdp.transitions)
            self.cache = {(S, A): (mdp, p_bar)}  # keep one size in memory at a time
        mdp, p_bar = self.cache[(S, A)]
        true = dataclasses.replace(mdp, horizon=T)
        return true, dataclasses.replace(true, transitions=p_bar)


def measure(problems, S, A, T):
    _, private = problems.get(S, A, T)
    budget = 0.3 if args.quick else 3.0
    solve_first_s, sol = common.time_once(jp.solve, private)  # compiles for a new shape
    policy = sol.policy
    dtype = private.rewards.dtype
    # The arguments cost_of_privacy passes to its jitted core: α in NumPy on the host, tol
    # unused for a finite horizon.
    alpha = np.sqrt(np.log(1 / np.float64(BETA)) / (2 * (np.float64(K) + 1)))
    core_args = (
        private,
        policy,
        jnp.asarray(alpha, dtype),
        jnp.asarray(BETA, dtype),
        jnp.zeros((), dtype),
    )
    core_kw = dict(width=_robust.fill_width(alpha, S), max_iterations=10_000)
    lower_s, compile_s = common.aot_compile_time(_bounds.bounds_core, *core_args, **core_kw)
    # Round-robin, so that the three share the same outside load.
    t = common.time_interleaved(
        {
            "solve": lambda: jp.solve(private),
            "cost_of_privacy": lambda: jp.cost_of_privacy(private, policy, k=K, beta=BETA),
            "bounds_core": lambda: _bounds.bounds_core(*core_args, **core_kw),
        },
        min_repeats=5,
        budget_s=budget,
    )
    t["bounds_core"].compile_s = lower_s + compile_s
    t["solve"].first_s = solve_first_s
    t["solve"].compile_s = max(solve_first_s - t["solve"].median_s, 0.0)
    return dict(
        S=S,
        A=A,
        T=T,
        width=core_kw["width"],
        **{k: v.as_dict() for k, v in t.items()},
    )


def fmt_compile(seconds):
    return "(cached)" if seconds < 5e-3 else common.fmt_time(seconds)


def row(r, key):
    return [
        r[key],
        common.fmt_time(r["solve"]["median_s"]),
        common.fmt_time(r["cost_of_privacy"]["median_s"]),
        common.fmt_time(r["bounds_core"]["median_s"]),
        f"{r['bounds_core']['median_s'] / r['solve']['median_s']:.2f}",
        fmt_compile(r["solve"]["compile_s"]),
        fmt_compile(r["bounds_core"]["compile_s"]),
    ]


HEADERS = [
    "solve",
    "cost_of_privacy",
    "bounds core",
    "core / solve",
    "solve compile",
    "core compile",
]


def slopes(results, key, fit_from):
    pts = [r for r in results if r[key] >= fit_from]
    xs = [r[key] for r in pts]
    return {
        q: common.loglog_slope(xs, [r[q]["median_s"] for r in pts])
        for q in ("solve", "cost_of_privacy", "bounds_core")
    }


def plot(s_results, path, dtype=None, backend=None):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    S = np.array([r["S"] for r in s_results], float)
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    series = [
        ("solve", "solve (backward induction)", "o-"),
        ("cost_of_privacy", "cost_of_privacy (public call)", "s-"),
        ("bounds_core", "cost_of_privacy compiled core", "^-"),
    ]
    for q, label, style in series:
        ax.loglog(S, [r[q]["median_s"] for r in s_results], style, label=label)
    anchor_s, anchor_t = S[-1], s_results[-1]["solve"]["median_s"]
    for slope, ls in ((2, "--"), (1, ":")):
        ax.loglog(
            S,
            anchor_t * (S / anchor_s) ** slope,
            "k" + ls,
            lw=0.8,
            label=f"∝ S^{slope} (reference)",
        )
    A, T = s_results[0]["A"], s_results[0]["T"]
    ax.set_xlabel("number of states S")
    ax.set_ylabel("seconds per trial (after compilation)")
    dtype = dtype or args.dtype
    backend = backend or jax.default_backend()
    ax.set_title(f"jaxprivmdp scaling, A = {A}, T = {T}, {dtype}, {backend}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"wrote {os.path.relpath(path)}")


def main():
    if args.replot is not None:
        with open(args.replot) as f:
            saved = json.load(f)
        env = saved["environment"]
        # bench_scaling[_quick].json -> scaling[_quick].png; other names -> same stem.
        stem = args.replot.stem.replace(NAME, "scaling")
        plot(saved["vs_S"], args.replot.with_name(stem + ".png"), env["dtype"], env["backend"])
        return
    env = common.environment(args)
    dtype = jnp.dtype(args.dtype)
    if args.quick:
        s_values, t_values, a_values, s_mid = (20, 100, 300), (10, 20), (5, 10), 100
    else:
        s_values = (20, 50, 100, 200, 500, 1000, 2000)
        t_values, a_values, s_mid = (10, 20, 40), (5, 10, 20), 500
    common.print_header(
        "Scaling of synthesis (solve) and of the bounds (cost_of_privacy) with S, T, A",
        env,
        notes=[
            f"random MDPs, rows ~ Dirichlet(1,…,1) (NumPy), privatized at k = {K:g}; bounds "
            f"with β = {BETA} for the deterministic policy solve returns",
            "per trial, after compilation: median of repeated calls, each ended by "
            "jax.block_until_ready, the three callables of a size called round-robin; compile "
            "times separately (solve: first call − median; core: lower + compile; "
            "'(cached)' = compiled for an earlier row of the same shapes)",
        ],
    )
    problems = Problems(dtype)
    s_results = [measure(problems, S, 5, 10) for S in s_values]
    t_results = [measure(problems, s_mid, 5, T) for T in t_values]
    a_results = [measure(problems, s_mid, A, 10) for A in a_values]
    print(f"(privatized with dirichlet_mechanism(sampler={_SAMPLER!r}))\n")

    common.print_table(
        "Time vs S (A = 5, T = 10)", ["S", *HEADERS], [row(r, "S") for r in s_results]
    )
    common.print_table(
        f"Time vs T (S = {s_mid}, A = 5)", ["T", *HEADERS], [row(r, "T") for r in t_results]
    )
    common.print_table(
        f"Time vs A (S = {s_mid}, T = 10)", ["A", *HEADERS], [row(r, "A") for r in a_results]
    )

    fit_from = 200 if not args.quick else 100
    fits = {
        "S": slopes(s_results, "S", fit_from),
        "T": slopes(t_results, "T", 0),
        "A": slopes(a_results, "A", 0),
    }
    expected = {
        "S": ("2 (T·S²·A)", "2 (T·S², + T·S log S)"),
        "T": ("1", "1"),
        "A": ("1", "0 (only the chosen rows)"),
    }
    rows = []
    for dim, fit in fits.items():
        rng = f"S >= {fit_from}" if dim == "S" else f"{dim} ∈ {{...}}"
        rows.append(
            [
                dim,
                rng,
                f"{fit['solve']:.2f}",
                expected[dim][0],
                f"{fit['cost_of_privacy']:.2f}",
                f"{fit['bounds_core']:.2f}",
                expected[dim][1],
            ]
        )
    common.print_table(
        "Log-log slopes (least squares)",
        [
            "dim",
            "fit range",
            "solve",
            "expected",
            "cost_of_privacy",
            "bounds core",
            "expected (bounds)",
        ],
        rows,
    )
    png = common.output_path("scaling", args, ".png")
    plot(s_results, png if args.out is None else Path(args.out).with_suffix(".png"))
    common.write_json(
        NAME,
        dict(
            environment=env,
            k=K,
            beta=BETA,
            sampler=_SAMPLER,
            vs_S=s_results,
            vs_T=t_results,
            vs_A=a_results,
            slopes=fits,
            slope_fit_min_S=fit_from,
        ),
        args.out,
    )


if __name__ == "__main__":
    main()
