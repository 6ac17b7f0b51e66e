"""The options of the privacy commands: ``privacy`` (one row, a model, or release files)
and ``privatize`` (a release's mechanism, its parameter or target, and the adjacency)."""

from __future__ import annotations

import argparse
from pathlib import Path

# The flag that gives each mechanism's parameter in `privatize`.
PARAMETER_FLAGS = {"dirichlet": "--k", "gaussian": "--sigma", "laplace": "--scale"}
# `privacy`'s --b without release files (with them, theirs).
PRIVACY_DEFAULT_B = 0.1


def privacy_options(p: argparse.ArgumentParser) -> None:
    releases = p.add_argument(
        "releases",
        type=Path,
        nargs="*",
        help="release files of privatize (.npz, or .drn/.tra with their .json): their "
        "composition, one (epsilon, delta) for all (default: none; give --k instead)",
    )
    releases.required = False  # argparse requires a `*` positional without a default
    p.add_argument(
        "--k",
        type=float,
        nargs="+",
        default=None,
        help="values of k > 0 (default: none; required without release files)",
    )
    recorded = "; with release files: the one they record"
    p.add_argument(
        "--b",
        type=float,
        default=None,
        help=f"adjacency bound b in (0, 1] (default: {PRIVACY_DEFAULT_B}{recorded})",
    )
    p.add_argument(
        "--eta",
        type=float,
        default=None,
        help="public lower bound on row entries (default: none; needed unless --smoothing"
        f"{recorded})",
    )
    p.add_argument("--delta", type=float, default=1e-3, help="target delta in (0, 1)")
    p.add_argument(
        "--adjacency",
        choices=("row", "all"),
        default=None,
        help=f"rows that differ (default: row{recorded})",
    )


def release_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--mechanism",
        choices=tuple(PARAMETER_FLAGS),
        default=None,
        help="the mechanism (default: the one whose parameter is given; dirichlet with --epsilon)",
    )
    which = p.add_mutually_exclusive_group(required=True)
    one = " (default: none; one of --k, --sigma, --scale, --epsilon is required)"
    which.add_argument("--k", type=float, default=None, help="dirichlet: k > 0 (less noise)" + one)
    which.add_argument(
        "--sigma", type=float, default=None, help="gaussian: σ > 0 (more noise)" + one
    )
    which.add_argument(
        "--scale", type=float, default=None, help="laplace: λ > 0 (more noise)" + one
    )
    which.add_argument(
        "--epsilon",
        type=float,
        default=None,
        help="calibrate the mechanism's parameter to this target ε (with --delta)" + one,
    )
    p.add_argument("--b", type=float, default=0.1, help="adjacency bound b in (0, 1]")
    p.add_argument(
        "--eta",
        type=float,
        default=None,
        help="public lower bound on row entries (default: none; dirichlet needs it or --smoothing)",
    )
    p.add_argument("--delta", type=float, default=1e-3, help="target delta in (0, 1)")
    p.add_argument("--adjacency", choices=("row", "all"), default="row", help="rows that differ")
    seed = "a key from this integer, for tests and CI; NOT for real releases (guessable noise)"
    p.add_argument("--seed", type=int, default=None, help=seed + " (default: OS entropy)")
