"""Executes the tutorial notebook end to end at small size: it fails if any cell errors."""

import os
from pathlib import Path

import pytest

pytestmark = pytest.mark.notebook

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "tutorial_investment.ipynb"


# Marked slow (15 CPU s: a kernel, every cell's compilation); CI's second pass runs it.
@pytest.mark.slow
def test_tutorial_investment_runs(monkeypatch, tmp_path):
    # The kernel inherits this process's environment; PYTHONPATH finds this checkout's
    # package even when it is not installed.
    path = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", str(ROOT) + (os.pathsep + path if path else ""))
    monkeypatch.setenv("JAXPRIVMDP_NOTEBOOK_SMALL", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()  # raises CellExecutionError on the first failing cell
    errors = [
        out
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.outputs
        if out.output_type == "error"
    ]
    assert not errors
