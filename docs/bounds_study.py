"""Width and coverage of the three bound sets ("paper", "exact", "certified") across k.

Run: ``python docs/bounds_study.py`` (CPU, a few minutes). Writes ``docs/bounds_study.png``
and ``docs/bounds_study.json`` and prints a table.

For Example 1 (investment), Example 2 (random MDP, S=20, A=5, T=10) and a 20x20 gridworld
(T=60, support-aware sets), one ``jp.sweep`` per bound with 500 trials per k and beta=0.1.
Per (model, bound, k): the mean width v̄ − v̲ at s0, and the coverage, the fraction of
trials with v̲(s0) ≤ V^π̄(s0) ≤ v̄(s0) on the true MDP (± its Monte-Carlo standard error).
Only "certified" promises coverage ≥ 1 − beta; "paper" and "exact" bound E[V | P̄].
"""

import json
import time
from pathlib import Path

import jax
import matplotlib
import numpy as np

import jaxprivmdp as jp

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

TRIALS = 500
BETA = 0.1
BOUNDS = {"paper": jp.PaperSet, "exact": jp.ExactSet, "certified": jp.CertifiedSet}
KS_DENSE = [1, 5, 10, 20, 40, 100, 1000]
MODELS = [  # name, model, grid of k, support-aware sets, sweep options
    ("Example 1", jp.examples.investment(), KS_DENSE, False, dict(support="nonzero")),
    ("Example 2", jp.examples.random_mdp(jax.random.key(0)), KS_DENSE, False, {}),
    (
        "Gridworld 20x20",
        jp.examples.gridworld(20, 20, horizon=60, discount=1.0),
        [50, 200, 1000, 5000],
        True,
        {},
    ),
]


def summarize(r: jp.SweepResult) -> dict:
    """Per-k statistics (lists over k) of one sweep."""
    a = {f: np.asarray(getattr(r, f), np.float64) for f in ("true_value", "lower")}
    a |= {f: np.asarray(getattr(r, f), np.float64) for f in ("upper", "cost")}
    rob = {f: np.asarray(getattr(r.robust, f), np.float64) for f in r.robust._fields}
    cover = (a["lower"] <= a["true_value"]) & (a["true_value"] <= a["upper"])
    rcover = (rob["lower"] <= rob["true_value"]) & (rob["true_value"] <= rob["upper"])
    p = cover.mean(axis=1)
    out = {
        "k": np.asarray(r.ks).tolist(),
        "width_mean": a["cost"].mean(axis=1),
        "width_std": a["cost"].std(axis=1, ddof=1),
        "lower_mean": a["lower"].mean(axis=1),
        "upper_mean": a["upper"].mean(axis=1),
        "true_value_mean": a["true_value"].mean(axis=1),
        "coverage": p,
        "coverage_se": np.sqrt(p * (1 - p) / cover.shape[1]),
        "robust_true_value_mean": rob["true_value"].mean(axis=1),
        "robust_lower_mean": rob["lower"].mean(axis=1),
        "robust_coverage": rcover.mean(axis=1),
        "all_converged": bool(np.asarray(r.converged).all()),
        "optimal_value": float(r.optimal_value),
    }
    return {f: v.tolist() if isinstance(v, np.ndarray) else v for f, v in out.items()}


def main() -> None:
    t_start = time.perf_counter()
    results: dict = {}
    for m, (name, mdp, ks, aware, opts) in enumerate(MODELS):
        grid = jp.Dirichlet.grid(ks, sampler="fast")
        key = jax.random.fold_in(jax.random.key(0), m)
        results[name] = {}
        for bound in BOUNDS:
            t0 = time.perf_counter()
            uset = BOUNDS[bound](BETA, support_aware=aware)
            r = jp.sweep(key, mdp, grid, uset, num_trials=TRIALS, robust=True, **opts)
            jax.block_until_ready(r)
            results[name][bound] = summarize(r) | {"seconds": time.perf_counter() - t0}
            print(f"  {name} / {bound}: {results[name][bound]['seconds']:.1f} s", flush=True)
    wall = time.perf_counter() - t_start

    head = ("model", "bound", "k", "width", "coverage", "pess", "true V", "rob pess", "rob V")
    print("\n{:<16} {:<9} {:>5} {:>8} {:>13} {:>9} {:>9} {:>9} {:>9}".format(*head))
    for name, per_bound in results.items():
        print(f"{name}: non-private optimum V*(s0) = {per_bound['paper']['optimal_value']:.3f}")
        for bound, s in per_bound.items():
            for i, k in enumerate(s["k"]):
                cov = f"{s['coverage'][i]:.3f}±{s['coverage_se'][i]:.3f}"
                vals = [s[f][i] for f in ("lower_mean", "true_value_mean")]
                vals += [s[f][i] for f in ("robust_lower_mean", "robust_true_value_mean")]
                print(
                    f"{name:<16} {bound:<9} {k:>5g} {s['width_mean'][i]:>8.3f} {cov:>13} "
                    + " ".join(f"{v:>9.3f}" for v in vals)
                )
    print(f"wall time {wall:.1f} s")

    fig, axes = plt.subplots(len(MODELS), 2, figsize=(11, 3.4 * len(MODELS)), dpi=150)
    for row, (name, per_bound) in zip(axes, results.items(), strict=True):
        for bound, s in per_bound.items():
            row[0].plot(s["k"], s["width_mean"], marker="o", label=bound)
            yerr = 2 * np.asarray(s["coverage_se"])
            row[1].errorbar(s["k"], s["coverage"], yerr=yerr, marker="o", capsize=3, label=bound)
        row[1].axhline(1 - BETA, color="k", linestyle="--", label=r"$1-\beta$")
        row[0].set(title=f"{name}: mean width $\\bar v - \\underline{{v}}$ at $s_0$")
        row[1].set(title=f"{name}: coverage of $V^{{\\bar\\pi}}(s_0)$ (±2 SE)", ylim=(0.5, 1.01))
        for ax in row:
            ax.set(xscale="log", xlabel="$k$")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
    fig.suptitle(f"Bound sets: {TRIALS} trials per k, $\\beta$ = {BETA}")
    fig.tight_layout()
    here = Path(__file__).parent
    fig.savefig(here / "bounds_study.png", dpi=150)

    meta = {"command": "python docs/bounds_study.py", "trials": TRIALS, "beta": BETA}
    meta |= {"jax_version": jax.__version__, "wall_time_s": wall, "results": results}
    (here / "bounds_study.json").write_text(json.dumps(meta, indent=1) + "\n")


if __name__ == "__main__":
    main()
