"""The paper's bounds and the support-aware bounds on a 20×20 gridworld (README numbers).

Run: ``python docs/gridworld_bounds.py``: prints the README's table and writes
``docs/gridworld.png``. A sparse model (S = 400, A = 4, K = 3), T = 60, reward −1 per step,
slip 0.1; 50 trials per k; means (± std) over trials at the start state.
"""

import time
from pathlib import Path

import jax
import matplotlib
import numpy as np

import jaxprivmdp as jp

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

KS = [10.0, 40.0, 200.0, 1000.0]
TRIALS = 50
FIELDS = ("lower", "true_value", "private_value", "upper", "cost")


def main() -> None:
    g = jp.examples.gridworld(20, 20, horizon=60, discount=1.0)
    optimum = float(jp.solve(g).values[0, 0])
    print(f"gridworld 20x20: S={g.num_states}, A={g.num_actions}, K={g.max_successors}")
    print(f"non-private optimum V*(s0) = {optimum:.2f}")
    print("| k | set | " + " | ".join(FIELDS) + " |")
    print("|---|---|" + "---|" * len(FIELDS))
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True, constrained_layout=True)
    for ax, aware in zip(axes, (False, True), strict=True):
        t0 = time.perf_counter()
        r = jp.sweep(
            jax.random.key(0),
            g,
            jp.Dirichlet.grid(KS, sampler="fast"),
            jp.PaperSet(0.1, support_aware=aware),
            num_trials=TRIALS,
        )
        jax.block_until_ready(r)
        took = time.perf_counter() - t0
        name = "support-aware" if aware else "paper"
        mean = {f: np.asarray(getattr(r, f)).mean(axis=1) for f in FIELDS}
        std = {f: np.asarray(getattr(r, f)).std(axis=1, ddof=1) for f in FIELDS}
        for i, k in enumerate(KS):
            row = " | ".join(f"{mean[f][i]:.2f}" for f in FIELDS)
            print(f"| {k:g} | {name} | {row} |")
        print(f"({name}: {len(KS) * TRIALS} runs in {took:.1f} s including compilation)")
        ax.fill_between(KS, mean["lower"], mean["upper"], color="#cae9ff", alpha=0.6)
        for f, style in (
            ("upper", dict(color="#5fa8d3", marker="v")),
            ("lower", dict(color="#5fa8d3", marker="^")),
            ("private_value", dict(color="#1b4965", marker="o")),
            ("true_value", dict(color="#2a9d8f", marker="s", linestyle="--")),
        ):
            ax.errorbar(KS, mean[f], yerr=std[f], capsize=3, markersize=4, label=f, **style)
        ax.axhline(optimum, color="#e63946", linestyle=":", label="non-private optimum")
        ax.set_xscale("log")
        ax.set_xlabel("$k$ (larger = weaker privacy)")
        ax.set_title(f"20×20 gridworld, T = 60: {name} set")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("value at $s_0$")
    axes[1].legend(fontsize=7, loc="lower right")
    out = Path(__file__).with_name("gridworld.png")
    fig.savefig(out, dpi=130)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
