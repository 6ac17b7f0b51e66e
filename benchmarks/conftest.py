"""pytest set-up of the benchmark modules: collected only when asked, x64 before any array.

``python -m pytest`` never comes here (``testpaths = ["tests"]``). ``python -m pytest
benchmarks/ --benchmark-only`` collects the ``bench_*.py`` modules that hold ``test_*``
benchmarks; the study scripts (``SCRIPTS``) are run with ``python`` and skipped here.
"""

from __future__ import annotations

import common
import pytest

# Studies that do not fit pytest-benchmark's model (see README.md); run them with `python`.
SCRIPTS = {
    "bench_lp_baseline.py",
    "bench_memory.py",
    "bench_sampling.py",
    "bench_solvers.py",
    "bench_sparse_sweep.py",
}


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """One process: pytest-benchmark does not time under pytest-xdist, which the project's
    ``addopts`` turn on for the tests (``-n 2``)."""
    if hasattr(config.option, "numprocesses"):
        config.option.numprocesses = 0
        config.option.dist = "no"


def pytest_addoption(parser):
    group = parser.getgroup("jaxprivmdp benchmarks")
    group.addoption(
        "--bench-dtype",
        choices=("float32", "float64"),
        default="float32",
        help="dtype of every array (float64 turns on jax_enable_x64 first); default float32",
    )
    group.addoption(
        "--bench-quick", action="store_true", help="the small sizes only (a quick check)"
    )
    group.addoption(
        "--bench-keep-data",
        action="store_true",
        help="keep every round's time in --benchmark-json (default: statistics only)",
    )


def pytest_configure(config):
    import jax

    # x64 must be set before the first array is created.
    jax.config.update("jax_enable_x64", config.getoption("--bench-dtype") == "float64")
    config._bench_load_at_start = common.load_average()  # machine info is made at the end


def pytest_collect_file(file_path, parent):
    # A module named on the command line is collected by pytest itself.
    if file_path.suffix == ".py" and file_path.name.startswith("bench_"):
        if file_path.name not in SCRIPTS and not parent.session.isinitpath(file_path):
            return pytest.Module.from_parent(parent, path=file_path)
    return None


def pytest_benchmark_update_machine_info(config, machine_info):
    machine_info["jax"] = common.jax_info()
    machine_info["dtype"] = config.getoption("--bench-dtype")
    machine_info["quick"] = config.getoption("--bench-quick")
    machine_info["load_average_1m_at_start"] = getattr(config, "_bench_load_at_start", None)


def pytest_benchmark_update_json(config, benchmarks, output_json):
    output_json["machine_info"]["load_average_1m_at_end"] = common.load_average()
    if not config.getoption("--bench-keep-data"):
        # --benchmark-json keeps every round's time (megabytes for µs calls); results/ is
        # committed, so only the statistics are kept unless asked.
        for b in output_json["benchmarks"]:
            b["stats"].pop("data", None)


@pytest.fixture(scope="session")
def dtype(pytestconfig):
    return pytestconfig.getoption("--bench-dtype")


@pytest.fixture(scope="session")
def quick(pytestconfig):
    return pytestconfig.getoption("--bench-quick")
