"""benchmarks/gpu.py (the one-command backend benchmark) works on CPU: its row guard and
budget, and one end-to-end run of two of its cheapest rows. Nothing here is timed."""

import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path

import jax
import pytest

pytestmark = pytest.mark.integration

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "gpu.py"


@pytest.fixture(scope="module")
def gpu():
    spec = importlib.util.spec_from_file_location("gpu_benchmark", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


def _row(gpu, key, make, estimate=(0.0, 0.01, 0.001), **kw):
    return gpu.Row(key, "test", key, make, lambda c: estimate, **kw)


@pytest.mark.slow  # 7 s; test_quick_run_end_to_end runs the script by default
def test_rows_are_guarded_and_budgeted(gpu):
    ctx = gpu.Context(cfg=gpu.Config.make(True, 30.0), accelerator=False)
    ctx.start = time.perf_counter()

    def oom():
        raise MemoryError("RESOURCE_EXHAUSTED: out of memory | while allocating")

    def bad_setup():
        raise RuntimeError("setup failed")

    rows = [
        _row(gpu, "base", lambda: lambda: 1.0),
        _row(gpu, "ratio", lambda: lambda: [2.0], baseline="base", runs=10),
        _row(gpu, "oom", lambda: oom),
        _row(gpu, "setup", bad_setup),
        _row(gpu, "huge", lambda: lambda: 1.0, estimate=(0.0, 1e6, 1.0)),
        _row(gpu, "check", lambda: lambda: dict(ok=True, result="fine"), kind="check"),
    ]
    for i, row in enumerate(rows):
        row.order = i
    out = {r["key"]: r for r in gpu.run_rows(rows, ctx)}
    assert out["base"]["status"] == "ok" and out["base"]["repeats"] >= 1
    assert out["base"]["median_s"] is not None and out["base"]["compile_s"] >= 0
    assert out["ratio"]["ratio"] > 0 and out["ratio"]["runs_per_s"] > 0
    assert out["oom"]["status"] == "error" and "MemoryError" in out["oom"]["error"]
    assert out["setup"]["status"] == "error" and "setup failed" in out["setup"]["error"]
    assert out["huge"]["status"] == "skipped" and "budget" in out["huge"]["result"]
    assert out["check"]["status"] == "ok" and out["check"]["ok"] is True
    # The error's "|" is escaped, so the markdown table keeps its columns.
    assert "\\|" in gpu.cell(gpu.result_text(out["oom"]))


def test_quick_run_end_to_end(tmp_path):
    """Two of the quickest rows of ``--quick`` (a 30×30 gridworld ``solve`` and the
    float32-vs-float64 check of the paper's set, which switches x64 on and off), in a
    subprocess since the check changes JAX's configuration."""
    out = tmp_path / "gpu.json"
    cmd = [sys.executable, str(SCRIPT), "--quick", "--budget-s", "120", "--json", str(out)]
    cmd += ["--only", "grid.30.solve", "--only", "x64.paper"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    platform = jax.default_backend()  # the script labels whatever backend it finds
    assert "| section | row |" in proc.stdout and f"({platform}, " in proc.stdout
    data = json.loads(out.read_text())
    assert data["backend"]["platform"] == platform and data["backend"]["dtype"] == "float32"
    rows = {r["key"]: r for r in data["rows"]}
    assert set(rows) == {"grid.30.solve", "x64.paper"}
    assert rows["grid.30.solve"]["status"] == "ok", rows["grid.30.solve"]
    assert rows["grid.30.solve"]["median_s"] > 0
    check = rows["x64.paper"]
    assert check["status"] == "ok", check
    assert check["dtypes"] == ["float32", "float64"]
    assert check["ok"] and check["max_violation"] == 0.0
