"""Coverage of the certified bounds: every model kind, mechanism, noise level and dtype.

Run: ``python docs/validity_study.py`` (CPU, a few minutes: float64 runs in a second process
beside float32). Writes ``docs/validity_study.json`` and ``docs/validity_study.png`` and
prints a markdown table. ``--trials`` sets the releases per cell (default 1000).

``bound="certified"`` promises that with probability ``>= 1 − β`` over the mechanism,
``v̲_t(s) <= V_t^π̄(s) <= v̄_t(s)`` on the true MDP at every stage and state at once. Each
cell of the grid (model × horizon × dense/sparse × mechanism × noise parameter ×
support_aware × float32/float64) draws ``trials`` releases with ``jp.synthesize``
(``β = 0.1``), computes ``π̄``'s true value exactly (float64 NumPy on the model as stored) and
records the joint coverage over all stages and states, the exact one-sided binomial p-value
of "coverage < 1 − β", the mean width ``v̄_0(s_0) − v̲_0(s_0)`` and the largest miss.
``tests/test_validity.py`` runs a small version of this grid in the test suite.

Models: the validity model of the tests (tiny 1e-4 and 1e-3 entries, dominant ones,
structural zeros, masked actions, rows whose only way to the reward is a tiny entry; T = 4
and γ = 0.9), the issue's 5-state chain (every entry 1e-4 or dominant, T = 200), a row
(0, 0.1, 0.9) to a goal (T = 1), and the paper's Examples 1 and 2.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jax
import numpy as np
from scipy import stats

import jaxprivmdp as jp

BETA = 0.1
TRIALS = 1000
CHUNK = 200
PARAMETERS = {
    "dirichlet": [2.0, 20.0, 200.0],  # k
    "gaussian": [0.01, 0.05, 0.2],  # σ
    "laplace": [0.01, 0.05, 0.2],  # λ
}
HERE = Path(__file__).parent
# The models and the exact-value oracle are the test suite's (tests/test_validity.py).
sys.path.insert(0, str(HERE.parent / "tests"))
from test_validity import chain, exact_values, stored, validity_model  # noqa: E402


def small_entry(dtype):
    P = np.zeros((3, 1, 3))
    P[0, 0] = [0.0, 0.1, 0.9]
    P[1, 0, 1] = P[2, 0, 2] = 1.0
    return jp.make_mdp(P, np.zeros((3, 1)), horizon=1, terminal_reward=[0, 1, 0], dtype=dtype)


MODELS = {  # name -> dtype -> dense model
    "validity, T = 4": lambda dtype: validity_model(dtype, 4),
    "validity, γ = 0.9": lambda dtype: validity_model(dtype, None),
    "chain, T = 200": chain,
    "row (0, .1, .9), T = 1": small_entry,
    "Example 1": lambda dtype: jp.examples.investment(dtype=dtype),
    "Example 2": lambda dtype: jp.examples.random_mdp(jax.random.key(0), dtype=dtype),
}


def run_cell(model, true_model, mech, k, aware, keys, support):
    def one(key):
        out = jp.synthesize(
            key,
            model,
            {"dirichlet": jp.Dirichlet, "gaussian": jp.Gaussian, "laplace": jp.Laplace}[mech](k),
            jp.CertifiedSet(BETA, support_aware=aware),
            support=support,
        )
        return out.policy, out.lower, out.upper, out.cost

    # Chunks of CHUNK releases: jaxlib 0.10.2's batched LU (the discounted evaluation) splits
    # larger batches over XLA:CPU's thread pool and blocks on them, which can deadlock it.
    parts = [jax.device_get(jax.vmap(one)(keys[i : i + CHUNK])) for i in range(0, len(keys), CHUNK)]
    policy, low, high, cost = (np.concatenate(x) for x in zip(*parts, strict=True))
    true = exact_values(*stored(true_model), true_model.horizon, policy)
    low, high = np.asarray(low, np.float64), np.asarray(high, np.float64)
    held = ((low <= true) & (true <= high)).reshape(len(keys), -1).all(axis=1)
    covered = int(held.sum())
    p = stats.binomtest(covered, len(keys), 1 - BETA, alternative="less").pvalue
    miss = float(max((low - true).max(), (true - high).max()))
    return dict(
        covered=covered,
        coverage=covered / len(keys),
        p_value=float(p),
        width_mean=float(np.mean(cost)),
        worst_miss=miss,
    )


def run_dtype(dtype: str, trials: int) -> list[dict]:
    """Every cell of one dtype (float64: call with x64 on)."""
    rows = []
    keys = jax.random.split(jax.random.key(0), trials)
    for name, build in MODELS.items():
        dense = build(dtype)
        zeros = bool(np.any(np.asarray(dense.transitions)[np.asarray(dense.action_mask)] == 0))
        models = {"dense": dense, "sparse": jp.to_sparse(dense)}
        for kind, model in models.items():
            support = "nonzero" if kind == "dense" and zeros else None
            for mech, params in PARAMETERS.items():
                for aware in (False, True):
                    t0 = time.perf_counter()
                    for k in params:
                        cell = run_cell(model, dense, mech, k, aware, keys, support)
                        rows.append(
                            dict(
                                model=name,
                                dtype=dtype,
                                kind=kind,
                                mechanism=mech,
                                parameter=k,
                                support_aware=aware,
                                trials=trials,
                                **cell,
                            )
                        )
                    low = min(r["coverage"] for r in rows[-len(params) :])
                    print(
                        f"  {dtype} {name} / {kind} / {mech} / aware={aware}: lowest coverage "
                        f"{low:.3f} ({time.perf_counter() - t0:.1f} s)",
                        flush=True,
                    )
    return rows


def markdown(rows: list[dict]) -> str:
    """One row per (model, mechanism): the lowest coverage over the noise parameters, as
    float32 / float64, for each of dense / sparse × whole simplex / support-aware."""
    cols = [("dense", False), ("dense", True), ("sparse", False), ("sparse", True)]
    head = ["model", "mechanism (parameters)"]
    head += [f"{k}{', support-aware' if a else ''}" for k, a in cols]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name in MODELS:
        for mech, params in PARAMETERS.items():
            cells = []
            for kind, aware in cols:
                got = []
                for dtype in ("float32", "float64"):
                    sel = [
                        r
                        for r in rows
                        if r["model"] == name
                        and r["mechanism"] == mech
                        and r["kind"] == kind
                        and r["support_aware"] == aware
                        and r["dtype"] == dtype
                    ]
                    worst = min(sel, key=lambda r: r["coverage"])
                    text = f"{worst['coverage']:.3f}"
                    got.append(f"**{text}**" if worst["p_value"] < 1e-3 else text)
                cells.append(" / ".join(got))
            param = ", ".join(f"{p:g}" for p in params)
            lines.append(f"| {name} | {mech} ({param}) | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def figure(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import TwoSlopeNorm

    row_keys = [(m, mech, k) for m in MODELS for mech, ps in PARAMETERS.items() for k in ps]
    col_keys = [
        (kind, aware, dtype)
        for kind in ("dense", "sparse")
        for aware in (False, True)
        for dtype in ("float32", "float64")
    ]
    index = {
        (r["model"], r["mechanism"], r["parameter"], r["kind"], r["support_aware"], r["dtype"]): r
        for r in rows
    }
    grid = np.array([[index[rk + ck]["coverage"] for ck in col_keys] for rk in row_keys])
    fig, ax = plt.subplots(figsize=(8, 0.22 * len(row_keys) + 2))
    norm = TwoSlopeNorm(vmin=0.0, vcenter=1 - BETA, vmax=1.0)  # red below 1 − β
    im = ax.imshow(grid, norm=norm, cmap="RdYlGn", aspect="auto")
    for i in range(grid.shape[0]):
        for j in range(grid.shape[1]):
            ax.text(j, i, f"{grid[i, j]:.2f}", ha="center", va="center", fontsize=6)
    ax.set_xticks(range(len(col_keys)))
    labels = [f"{k}{' SA' if a else ''}\n{d}" for k, a, d in col_keys]
    ax.set_xticklabels(labels, fontsize=7)
    ax.set_yticks(range(len(row_keys)))
    ax.set_yticklabels([f"{m} · {mech} {k:g}" for m, mech, k in row_keys], fontsize=6)
    ax.set_title(
        r"Certified coverage of $V^{\bar\pi}$ on the true MDP (all stages and states), "
        f"1 − β = {1 - BETA:g}",
        fontsize=9,
    )
    fig.colorbar(im, ax=ax, fraction=0.03)
    fig.tight_layout()
    fig.savefig(path, dpi=130)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=TRIALS)
    parser.add_argument("--dtype", choices=["float32", "float64"], help=argparse.SUPPRESS)
    parser.add_argument("--part", help=argparse.SUPPRESS)  # a child's output file
    args = parser.parse_args()
    if args.dtype:  # the child process of one dtype
        jax.config.update("jax_enable_x64", args.dtype == "float64")
        Path(args.part).write_text(json.dumps(run_dtype(args.dtype, args.trials)))
        return

    t_start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        part = Path(tmp) / "float64.json"
        env = dict(os.environ, JAX_ENABLE_X64="1")
        cmd = [sys.executable, __file__, "--dtype", "float64", "--part", str(part)]
        child = subprocess.Popen([*cmd, "--trials", str(args.trials)], env=env)
        rows = run_dtype("float32", args.trials)
        if child.wait() != 0:
            raise SystemExit("the float64 process failed")
        rows += json.loads(part.read_text())
    wall = time.perf_counter() - t_start

    failing = [r for r in rows if r["p_value"] < 1e-3]
    out = dict(
        beta=BETA,
        trials=args.trials,
        parameters=PARAMETERS,
        seconds=wall,
        lowest_coverage=min(r["coverage"] for r in rows),
        cells_significantly_below=len(failing),
        cells=rows,
    )
    (HERE / "validity_study.json").write_text(json.dumps(out, indent=1))
    figure(rows, HERE / "validity_study.png")
    print(f"\n{len(rows)} cells, {args.trials} releases each, β = {BETA}, {wall:.0f} s")
    print(
        f"lowest coverage {out['lowest_coverage']:.3f}; significantly below 1 − β: {len(failing)}"
    )
    for r in failing:
        print(f"  {r}")
    print()
    print(markdown(rows))


if __name__ == "__main__":
    main()
