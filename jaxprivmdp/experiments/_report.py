"""Tables and figures of sweeps (the paper's Figure 1 and the same for a user's MDP)."""

from __future__ import annotations

import contextlib
import csv
import json
import platform
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import jax
import numpy as np

from .._version import __version__
from ..io.core import atomic_path
from ._sweep import SweepResult

QUANTITIES = ("upper", "lower", "private_value", "true_value", "cost", "worst_case", "best_case")
ROBUST_QUANTITIES = ("true_value", "lower", "upper", "cost", "worst_case", "best_case")
LABELS = {
    "upper": r"Upper bound $\bar v^{\bar\pi}_0(s_0)$",
    "lower": r"Lower bound $\underline{v}^{\bar\pi}_0(s_0)$",
    "private_value": r"Private $\bar V^{\bar\pi}_0(s_0)$",
    "true_value": r"True value of $\bar\pi$: $V^{\bar\pi}_0(s_0)$",
    "optimal_value": r"Non-private optimum $V^*_0(s_0)$",
    "robust_worst_case": "Robust policy: worst-case bound",
    "robust_true_value": "Robust policy: true value",
}


def summarize(result: SweepResult) -> list[dict]:
    """One row per ``k``, in increasing ``k``: mean and sample std (ddof=1) over trials.

    The bounds as ``lower``/``upper`` and, relative to the objective's direction,
    ``worst_case``/``best_case``; the direction itself (``objective``: ``"maximize"`` or
    ``"minimize"``). Also the fraction of trials whose bounds held the true value at ``s0``
    (``covered_fraction``) and, for a robust sweep, the robust policy's columns
    (``robust_*``).

    The rows are sorted because tables and figures read them as a curve in ``k``; a sweep
    may have been run over an unsorted grid.
    """
    rows = []
    ks = np.asarray(result.ks)
    for i in np.argsort(ks, kind="stable"):
        row = {"k": float(ks[i]), "trials": int(np.asarray(result.cost).shape[1])}
        for q in QUANTITIES:
            x = np.asarray(getattr(result, q)[i], dtype=float)
            row[f"{q}_mean"] = float(x.mean())
            row[f"{q}_std"] = float(x.std(ddof=1)) if x.size > 1 else 0.0
        if result.robust is not None:
            for q in ROBUST_QUANTITIES:
                x = np.asarray(getattr(result.robust, q)[i], dtype=float)
                row[f"robust_{q}_mean"] = float(x.mean())
                row[f"robust_{q}_std"] = float(x.std(ddof=1)) if x.size > 1 else 0.0
        row["optimal_value"] = float(result.optimal_value)
        minimize = result.minimize is not None and bool(np.any(np.asarray(result.minimize)))
        row["objective"] = "minimize" if minimize else "maximize"
        row["converged_fraction"] = float(np.mean(np.asarray(result.converged[i])))
        # How often the bounds held the true value at s0 (a "certified" bound promises
        # at least 1 − β; the paper's bounds are about another quantity).
        true = np.asarray(result.true_value[i])
        held = (np.asarray(result.lower[i]) <= true) & (true <= np.asarray(result.upper[i]))
        row["covered_fraction"] = float(held.mean())
        rows.append(row)
    return rows


Stage = Callable[[Path], Path]


def _writing(path: Path, stage: Stage | None):
    """The temporary path to write ``path`` through: staged, or atomic on its own."""
    return atomic_path(path) if stage is None else contextlib.nullcontext(stage(path))


def _by_k(rows: Sequence[dict]) -> list[dict]:
    return sorted(rows, key=lambda r: r["k"])


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


def write_tables(
    path_stem: Path,
    tables: Mapping[str, list[dict]],
    meta: dict,
    *,
    stage: Stage | None = None,
) -> list[Path]:
    """Writes ``<stem>.csv`` (one row per example and k) and ``<stem>.json`` (with ``meta``).

    Args:
      path_stem: the files' path without suffix.
      tables: ``{example: rows}`` as :func:`summarize` returns them (sorted by ``k`` here).
      meta: what the JSON records beside the results.
      stage: the ``stage`` of :func:`jaxprivmdp.io._files.atomic_outputs` to write through, so a
        command's files appear together; None writes each file atomically on its own.

    Returns:
      The two paths.
    """
    tables = {name: _by_k(rows) for name, rows in tables.items()}
    csv_path = path_stem.with_suffix(".csv")
    fields = ["example"] + list(next(iter(tables.values()))[0].keys())
    with _writing(csv_path, stage) as tmp, tmp.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for name, rows in tables.items():
            for row in rows:
                w.writerow({"example": name, **row})
    json_path = path_stem.with_suffix(".json")
    with _writing(json_path, stage) as tmp:
        tmp.write_text(json.dumps({**meta, "results": tables}, indent=2) + "\n")
    return [csv_path, json_path]


K_LABEL = "$k$ (larger = weaker privacy)"
PARAMETER_LABELS = {
    "dirichlet": K_LABEL,
    "gaussian": r"$\sigma$ (larger = stronger privacy)",
    "laplace": r"$\lambda$ (larger = stronger privacy)",
}


def _k_axis(ax, xlabel: str, scale: str = "linear") -> None:
    """The grid's axis: ``"linear"`` (the paper's) or ``"log"``."""
    if scale not in ("linear", "log"):
        raise ValueError(f"k_axis must be 'linear' or 'log', got {scale!r}")
    ax.set_xlabel(xlabel)
    ax.set_xscale(scale)


ROBUST_STYLES = {
    "robust_worst_case": dict(color="#f4a261", marker="^", linestyle="-."),
    "robust_true_value": dict(color="#e76f51", marker="D", linestyle="-."),
}


def _value_panel(
    ax, rows: Sequence[dict], title: str, xlabel: str = K_LABEL, k_axis: str = "linear"
) -> None:
    ks = np.array([r["k"] for r in rows])
    styles = {  # the two bounds: each its own colour and line, told apart also in grey
        "upper": dict(color="#5fa8d3", marker="v"),
        "lower": dict(color="#7b2cbf", marker="^", linestyle=":"),
        "private_value": dict(color="#1b4965", marker="o"),
        "true_value": dict(color="#2a9d8f", marker="s", linestyle="--"),
    }
    if "robust_worst_case_mean" in rows[0]:  # a --robust sweep: its policy too
        styles.update(ROBUST_STYLES)
    lo = np.array([r["lower_mean"] for r in rows])
    hi = np.array([r["upper_mean"] for r in rows])
    ax.fill_between(ks, lo, hi, color="#cae9ff", alpha=0.5, linewidth=0)
    for q, style in styles.items():
        mean = np.array([r[f"{q}_mean"] for r in rows])
        std = np.array([r[f"{q}_std"] for r in rows])
        ax.errorbar(ks, mean, yerr=std, capsize=3, markersize=4, label=LABELS[q], **style)
    ax.axhline(
        rows[0]["optimal_value"], color="#e63946", linestyle=":", label=LABELS["optimal_value"]
    )
    _k_axis(ax, xlabel, k_axis)
    ax.set_ylabel("value at $s_0$")
    ax.set_title(title)
    ax.grid(alpha=0.3)


def _cost_panel(ax, tables: Mapping[str, list[dict]], xlabel: str, k_axis: str) -> None:
    """Mean ± std of the cost per sweep; the limits hold every error bar (never clipped)."""
    ends = []
    for name, rows in tables.items():
        mean = np.array([r["cost_mean"] for r in rows])
        std = np.array([r["cost_std"] for r in rows])
        ax.errorbar([r["k"] for r in rows], mean, yerr=std, capsize=3, marker="o", ms=4, label=name)
        ends += [mean - std, mean + std]
    ends = np.concatenate(ends)
    lo, hi = min(0.0, float(ends.min())), float(ends.max())
    pad = 0.08 * (hi - lo) if hi > lo else 1.0
    ax.set_ylim(lo - pad if lo < 0 else 0.0, hi + pad)
    _k_axis(ax, xlabel, k_axis)
    ax.set_ylabel(r"cost of privacy $\bar v_0(s_0) - \underline{v}_0(s_0)$")
    ax.set_title("Cost of privacy")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)


def sweep_figure(
    tables: Mapping[str, list[dict]],
    *,
    beta: float,
    trials: int,
    mechanism: str = "dirichlet",
    settings: str = "",
    k_axis: str = "linear",
):
    """The figure of :func:`plot_sweeps` (a ``matplotlib.figure.Figure``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tables = {name: _by_k(rows) for name, rows in tables.items()}  # a curve needs sorted k
    n = len(tables)
    fig, axes = plt.subplots(1, n + 1, figsize=(5.2 * (n + 1), 4.4), constrained_layout=True)
    xlabel = PARAMETER_LABELS.get(mechanism, "parameter")
    for ax, (name, rows) in zip(axes, tables.items(), strict=False):
        _value_panel(ax, rows, name, xlabel, k_axis)
    axes[0].legend(fontsize=7, loc="lower right")
    _cost_panel(axes[-1], tables, xlabel, k_axis)
    what = f"; {settings}" if settings else ""
    fig.suptitle(f"mean ± std over {trials} trials, β = {beta}{what}", fontsize=9)
    return fig


def plot_sweeps(
    tables: Mapping[str, list[dict]],
    path_stem: Path,
    *,
    beta: float,
    trials: int,
    stage: Stage | None = None,
    mechanism: str = "dirichlet",
    settings: str = "",
    k_axis: str = "linear",
) -> list[Path]:
    """A value panel per sweep and a cost-of-privacy panel for all; PNG and PDF.

    Each value panel shows mean ± std over trials of the upper and lower bounds,
    the private value, the true value of the private policy (not in the paper), for a
    robust sweep the robust policy's worst-case bound and true value, and the non-private
    optimum, against increasing ``k`` (a linear axis, as the paper's, or ``k_axis="log"``). The
    cost panel labels each curve with its own example (the paper's Figure 1c swaps the two
    labels) and holds every error bar.

    Args:
      tables: ``{example: rows}`` as :func:`summarize` returns them.
      path_stem: the figures' path without suffix.
      beta: ``β`` of the sweeps, for the title.
      trials: trials per ``k``, for the title.
      stage: as in :func:`write_tables`.
      mechanism: the mechanism whose parameter the x axis shows.
      settings: what else the title states (the command line's set options).
      k_axis: ``"linear"`` (the paper's Figure 1) or ``"log"``, for both panels.

    Returns:
      The PNG and PDF paths.
    """
    import matplotlib.pyplot as plt

    fig = sweep_figure(
        tables, beta=beta, trials=trials, mechanism=mechanism, settings=settings, k_axis=k_axis
    )
    out = [path_stem.with_suffix(".png"), path_stem.with_suffix(".pdf")]
    try:
        for p in out:
            with _writing(p, stage) as tmp:
                fig.savefig(tmp, dpi=150, format=p.suffix[1:])
    finally:
        plt.close(fig)
    return out


MECHANISM_STYLES = {
    "dirichlet": dict(color="#1b4965", marker="o"),
    "gaussian": dict(color="#e76f51", marker="s"),
    "laplace": dict(color="#2a9d8f", marker="^"),
}


def frontier_panel(ax, result, title: str) -> None:
    """Value against ε per mechanism on ``ax`` (see :func:`plot_frontier`)."""
    eps = np.asarray(result.epsilons)
    finite = [np.nanmin(v) for v in result.lower.values() if np.isfinite(v).any()]
    bottom = min(finite + [result.optimal_value])
    for name, ok in result.reachable.items():
        style = MECHANISM_STYLES.get(name, {})
        tv = np.where(ok[:, None], result.true_value[name], 0.0)
        mean = np.where(ok, tv.mean(axis=1), np.nan)
        std = np.where(ok, tv.std(axis=1, ddof=1) if tv.shape[1] > 1 else 0.0, np.nan)
        worst = np.where(ok[:, None], result.worst_case[name], 0.0)
        pess = np.where(ok, worst.mean(1), np.nan)
        label = name if ok.all() else f"{name} (unreachable below ε ≈ {result.floor[name]:.3g})"
        ax.errorbar(eps, mean, yerr=std, capsize=3, markersize=5, label=label, **style)
        ax.plot(eps, pess, linestyle="--", color=style.get("color"), alpha=0.6)
        if not ok.all():
            ax.plot(eps[~ok], np.full((~ok).sum(), bottom), "x", color=style.get("color"), ms=9)
    ax.plot([], [], linestyle="--", color="gray", alpha=0.6, label="mean worst-case bound")
    ax.axhline(result.optimal_value, color="#e63946", linestyle=":", label="non-private optimum")
    ax.set_xscale("log")
    ax.set_xlabel(f"target ε (δ = {result.delta:g}; Laplace: δ = 0)")
    ax.set_ylabel("value at $s_0$")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)


def plot_frontier(
    result, path_stem: Path, *, title: str, stage: Stage | None = None, settings: str = ""
):
    """Value against ε per mechanism: mean ± std of the private policy's true value (solid),
    the mean worst-case bound (dashed: the lower bound of a reward, the upper of a cost) and
    the non-private optimum (dotted).

    A target a mechanism cannot reach is drawn as an ``x`` at the bottom, with the
    mechanism's floor in the legend, so it is never silently missing. ``settings`` (the
    command line's set options) goes under the title. Returns the PNG and PDF paths.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.4), constrained_layout=True)
    what = f"\n{settings}" if settings else ""
    frontier_panel(ax, result, f"{title} (one row differs by ≤ b = {result.b:g}){what}")
    paths = []
    try:
        for suffix in (".png", ".pdf"):
            path = path_stem.with_suffix(suffix)
            with _writing(path, stage) as tmp:
                fig.savefig(tmp, dpi=150, format=suffix[1:])
            paths.append(path)
    finally:
        plt.close(fig)
    return paths


def write_frontier(result, path_stem: Path, meta: dict, *, stage: Stage | None = None):
    """``<stem>.csv`` (one row per mechanism and ε) and ``<stem>.json`` (with ``meta``)."""
    rows = result.rows()
    csv_path = path_stem.with_suffix(".csv")
    with _writing(csv_path, stage) as tmp, tmp.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    summary = {
        "floor_epsilon": result.floor,
        "n": result.n,
        "eta": result.eta,
        "b": result.b,
        "optimal_value": result.optimal_value,
    }
    json_path = path_stem.with_suffix(".json")
    with _writing(json_path, stage) as tmp:
        tmp.write_text(json.dumps({**meta, **summary, "results": rows}, indent=2) + "\n")
    return [csv_path, json_path]
