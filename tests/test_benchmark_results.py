"""benchmarks/RESULTS.md quotes its numbers from benchmarks/results/*.json faithfully.

Every number RESULTS.md links into a result file must equal the file's value to the precision
it is printed with (benchmarks/check_results.py; the standard library only, nothing timed).
"""

import importlib.util
import json
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _checker():
    spec = importlib.util.spec_from_file_location("check_results", BENCH / "check_results.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_results_md_matches_the_json_files():
    count, problems = _checker().check(BENCH / "RESULTS.md")
    assert not problems, "\n".join(problems)
    assert count >= 50  # the tables quote from the files, not from memory


def test_results_md_is_short():
    assert len((BENCH / "RESULTS.md").read_text(encoding="utf-8").splitlines()) <= 200


def test_the_checker_catches_a_wrong_number(tmp_path):
    (tmp_path / "results").mkdir()
    data = {"benchmarks": [{"name": "test_x[1]", "stats": {"median": 0.0123}}], "v": [{"k": 2}]}
    (tmp_path / "results" / "r.json").write_text(json.dumps(data))
    md = tmp_path / "RESULTS.md"
    md.write_text(
        "[12.3](results/r.json#test_x[1]/stats/median*1e3) ms, "
        "[12.4](results/r.json#test_x[1]/stats/median*1e3) ms, "
        "[2](results/r.json#/v/k=2/k), [1,000](results/r.json#/v/0/k*500), "
        "[3](results/r.json#/v/0/missing)\n"
    )
    count, problems = _checker().check(md)
    assert count == 4
    assert len(problems) == 2
    assert "12.4" in problems[0] and "missing" in problems[1]
