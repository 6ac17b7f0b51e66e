#!/usr/bin/env python
"""``mdp_guarantee`` at S up to 10⁶, this checkout vs a previous commit (issue 15, item 5).

    python benchmarks/bench_mdp_guarantee.py [--before REV] [--sizes 100 1000 ...]

For a ``side × side`` gridworld (a :class:`SparseMDP`, S = side², A = 4), the accounting of
``k = 10``, ``b = 0.1`` with ``eta=None`` (each row's own minimum), ``target_delta = 1e-6``,
``adjacency`` ``"row"`` and ``"all"``, by this checkout's ``privacy._mdp`` and by the module
as it was at ``--before`` (loaded from ``git show``), in one process, alternating. Prints the
CPU time (``time.process_time``) and wall time of each, and checks that ε and δ agree bit
for bit. The library is imported from this checkout.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import jaxprivmdp.privacy  # noqa: E402
from jaxprivmdp.models.examples import gridworld  # noqa: E402
from jaxprivmdp.privacy import _mdp as after  # noqa: E402

PATH = "jaxprivmdp/privacy/_mdp.py"


def load_before(rev: str):
    """The module ``privacy._mdp`` as at ``rev``, in the package (relative imports work)."""
    source = subprocess.run(
        ["git", "show", f"{rev}:{PATH}"], cwd=REPO, check=True, capture_output=True, text=True
    ).stdout
    name = "jaxprivmdp.privacy._mdp_before"
    spec = importlib.util.spec_from_loader(name, loader=None)
    module = importlib.util.module_from_spec(spec)
    module.__package__ = "jaxprivmdp.privacy"
    exec(compile(source, f"{rev}:{PATH}", "exec"), module.__dict__)
    return module


def timed(fn, *args, **kw):
    c0, w0 = time.process_time(), time.perf_counter()
    out = fn(*args, **kw)
    return out, time.process_time() - c0, time.perf_counter() - w0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--before", default="8c2fd12")
    p.add_argument("--sizes", type=int, nargs="+", default=[100, 316, 1000])
    args = p.parse_args()
    before = load_before(args.before)
    assert jaxprivmdp.privacy.mdp_guarantee is after.mdp_guarantee
    print(f"{'S':>9} {'adjacency':>9} {'before cpu/wall s':>18} {'after cpu/wall s':>17} same")
    for side in args.sizes:
        model = gridworld(side, side)
        for adjacency in ("row", "all"):
            kw = dict(b=0.1, target_delta=1e-6, adjacency=adjacency)
            new, c1, w1 = timed(after.mdp_guarantee, 10.0, model, **kw)
            old, c0, w0 = timed(before.mdp_guarantee, 10.0, model, **kw)
            same = (new.epsilon, new.delta, new.num_rows) == (old.epsilon, old.delta, old.num_rows)
            print(
                f"{side * side:>9} {adjacency:>9} {c0:>8.3f} / {w0:<7.3f} {c1:>8.3f} / {w1:<7.3f}"
                f" {same}",
                flush=True,
            )
            del new, old


if __name__ == "__main__":
    main()
