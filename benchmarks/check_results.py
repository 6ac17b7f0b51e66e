#!/usr/bin/env python
"""Check that every number RESULTS.md quotes from ``results/*.json`` matches the file.

    python benchmarks/check_results.py [RESULTS.md]

A quoted number is a Markdown link into a result file, e.g.
``[2.56](results/bench_bound_sets.json#test_bound_set[1000-paper]/extra_info/ratio_core)``:
the link text is the number as printed (``1,234``, ``2.56×``, ``90.8 ms`` and ``45%`` all
parse), the fragment says where it is in the JSON. In a pytest-benchmark file the first
component is a benchmark's ``name``; a fragment that starts with ``/`` is a path from the
file's root. Components are dict keys (``%20`` for a space), list indices, or
``key=value`` to pick the list item whose ``key`` is ``value``. A trailing ``*1e3`` (or any
factor) scales the JSON value before comparing (seconds quoted in ms). The number must equal
the scaled value rounded to the printed precision (its decimals).

Only the standard library: this runs in the unit test tier (``tests/test_benchmark_results.py``).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from urllib.parse import unquote

BENCH_DIR = Path(__file__).resolve().parent
LINK = re.compile(r"\[([^\]]+)\]\((results/[^)#\s]+\.json)#([^)\s]+)\)")
NUMBER = re.compile(r"^[^\d\-]*(-?[\d,]*\.?\d+)")


def resolve(data, fragment: str):
    """The value at ``fragment`` (see the module docstring) and its scale factor."""
    scale = 1.0
    if "*" in fragment:
        fragment, factor = fragment.rsplit("*", 1)
        scale = float(factor)
    parts = [unquote(p) for p in fragment.split("/")]
    node = data
    if parts[0]:  # a pytest-benchmark benchmark's name
        (node,) = [b for b in data["benchmarks"] if b["name"] == parts[0]]
    for part in parts[1:]:
        if isinstance(node, list):
            if "=" in part:
                key, value = part.split("=", 1)
                (node,) = [x for x in node if str(x.get(key)) == value]
            else:
                node = node[int(part)]
        else:
            node = node[part]
    return node, scale


def check(results_md: Path) -> tuple[int, list[str]]:
    """``(numbers checked, problems)`` for the file ``results_md``."""
    text = results_md.read_text(encoding="utf-8")
    cache: dict[str, object] = {}
    problems, count = [], 0
    for lineno, line in enumerate(text.splitlines(), 1):
        for shown, target, fragment in LINK.findall(line):
            where = f"{results_md.name}:{lineno}: [{shown}]({target}#{fragment})"
            path = results_md.parent / target
            if not path.is_file():
                problems.append(f"{where}: no file {target}")
                continue
            if target not in cache:
                cache[target] = json.loads(path.read_text(encoding="utf-8"))
            try:
                value, scale = resolve(cache[target], fragment)
                value = float(value) * scale
            except (KeyError, IndexError, ValueError, TypeError) as exc:
                problems.append(f"{where}: not found in the JSON ({type(exc).__name__}: {exc})")
                continue
            m = NUMBER.match(shown)
            if not m:
                problems.append(f"{where}: the link text is not a number")
                continue
            digits = m.group(1).replace(",", "")
            decimals = len(digits.split(".")[1]) if "." in digits else 0
            printed = float(digits)
            count += 1
            if abs(printed - value) > 0.5 * 10.0**-decimals * (1 + 1e-9) + 1e-12 * abs(value):
                problems.append(f"{where}: the JSON says {value!r}")
    return count, problems


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    path = Path(args[0]) if args else BENCH_DIR / "RESULTS.md"
    count, problems = check(path)
    for p in problems:
        print(p)
    print(f"{count} numbers checked against results/*.json, {len(problems)} problems")
    return 1 if problems or count == 0 else 0


if __name__ == "__main__":
    raise SystemExit(main())
