"""Tables and figures of sweeps (the paper's Figure 1 and the same for a user's MDP)."""

from __future__ import annotations

import csv
import json
import platform
from collections.abc import Mapping, Sequence
from pathlib import Path

import jax
import numpy as np

from ._synthesis import SweepResult
from ._version import __version__

QUANTITIES = ("optimistic", "pessimistic", "private_value", "true_value", "cost")
LABELS = {
    "optimistic": r"Optimistic $\bar v^{\bar\pi}_0(s_0)$",
    "pessimistic": r"Pessimistic $\underline{v}^{\bar\pi}_0(s_0)$",
    "private_value": r"Private $\bar V^{\bar\pi}_0(s_0)$",
    "true_value": r"True value of $\bar\pi$: $V^{\bar\pi}_0(s_0)$",
    "optimal_value": r"Non-private optimum $V^*_0(s_0)$",
}


def summarize(result: SweepResult) -> list[dict]:
    """One row per ``k``: mean and sample std (ddof=1) over trials of every quantity."""
    rows = []
    for i, k in enumerate(np.asarray(result.ks)):
        row = {"k": float(k), "trials": int(np.asarray(result.cost).shape[1])}
        for q in QUANTITIES:
            x = np.asarray(getattr(result, q)[i], dtype=float)
            row[f"{q}_mean"] = float(x.mean())
            row[f"{q}_std"] = float(x.std(ddof=1)) if x.size > 1 else 0.0
        row["optimal_value"] = float(result.optimal_value)
        row["converged_fraction"] = float(np.mean(np.asarray(result.converged[i])))
        rows.append(row)
    return rows


def environment() -> dict:
    """Versions and machine facts recorded with every table."""
    import matplotlib

    dev = jax.devices()[0]
    return {
        "jaxprivmdp": __version__,
        "jax": jax.__version__,
        "numpy": np.__version__,
        "matplotlib": matplotlib.__version__,
        "python": platform.python_version(),
        "backend": jax.default_backend(),
        "device": getattr(dev, "device_kind", str(dev)),
        "num_devices": jax.device_count(),
        "machine": f"{platform.system()} {platform.machine()}",
    }


def write_tables(path_stem: Path, tables: Mapping[str, list[dict]], meta: dict) -> list[Path]:
    """Writes ``<stem>.csv`` (one row per example and k) and ``<stem>.json`` (with ``meta``)."""
    path_stem.parent.mkdir(parents=True, exist_ok=True)
    csv_path = path_stem.with_suffix(".csv")
    fields = ["example"] + list(next(iter(tables.values()))[0].keys())
    with csv_path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for name, rows in tables.items():
            for row in rows:
                w.writerow({"example": name, **row})
    json_path = path_stem.with_suffix(".json")
    json_path.write_text(json.dumps({**meta, "results": tables}, indent=2) + "\n")
    return [csv_path, json_path]


def _value_panel(ax, rows: Sequence[dict], title: str) -> None:
    ks = np.array([r["k"] for r in rows])
    styles = {
        "optimistic": dict(color="#5fa8d3", marker="v"),
        "pessimistic": dict(color="#5fa8d3", marker="^"),
        "private_value": dict(color="#1b4965", marker="o"),
        "true_value": dict(color="#2a9d8f", marker="s", linestyle="--"),
    }
    lo = np.array([r["pessimistic_mean"] for r in rows])
    hi = np.array([r["optimistic_mean"] for r in rows])
    ax.fill_between(ks, lo, hi, color="#cae9ff", alpha=0.5, linewidth=0)
    for q, style in styles.items():
        mean = np.array([r[f"{q}_mean"] for r in rows])
        std = np.array([r[f"{q}_std"] for r in rows])
        ax.errorbar(ks, mean, yerr=std, capsize=3, markersize=4, label=LABELS[q], **style)
    ax.axhline(
        rows[0]["optimal_value"], color="#e63946", linestyle=":", label=LABELS["optimal_value"]
    )
    ax.set_xlabel("$k$ (larger = weaker privacy)")
    ax.set_ylabel("value at $s_0$")
    ax.set_title(title)
    ax.grid(alpha=0.3)


def plot_sweeps(
    tables: Mapping[str, list[dict]], path_stem: Path, *, beta: float, trials: int
) -> list[Path]:
    """A value panel per sweep and a cost-of-privacy panel for all; PNG and PDF.

    Each value panel shows mean ± std over trials of the optimistic and pessimistic bounds,
    the private value, the true value of the private policy (not in the paper) and the
    non-private optimum. The cost panel labels each curve with its own example (the paper's
    Figure 1c swaps the two labels).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(tables)
    fig, axes = plt.subplots(1, n + 1, figsize=(5.2 * (n + 1), 4.2), constrained_layout=True)
    for ax, (name, rows) in zip(axes, tables.items(), strict=False):
        _value_panel(ax, rows, name)
    axes[0].legend(fontsize=7, loc="lower right")
    ax = axes[-1]
    for name, rows in tables.items():
        ks = [r["k"] for r in rows]
        ax.errorbar(
            ks,
            [r["cost_mean"] for r in rows],
            yerr=[r["cost_std"] for r in rows],
            capsize=3,
            marker="o",
            markersize=4,
            label=name,
        )
    ax.set_xlabel("$k$ (larger = weaker privacy)")
    ax.set_ylabel(r"cost of privacy $\bar v_0(s_0) - \underline{v}_0(s_0)$")
    ax.set_title("Cost of privacy")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.suptitle(f"mean ± std over {trials} trials, β = {beta}", fontsize=9)
    path_stem.parent.mkdir(parents=True, exist_ok=True)
    out = [path_stem.with_suffix(".png"), path_stem.with_suffix(".pdf")]
    for p in out:
        fig.savefig(p, dpi=150)
    plt.close(fig)
    return out
