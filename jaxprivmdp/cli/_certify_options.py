"""The options of ``check --release``: the release, and the set of its interval model (the
command is ``_certify_command``'s)."""

from __future__ import annotations

import argparse
from pathlib import Path


def release_option(p) -> None:
    """``--release``: in ``check``'s group with ``--mdp`` (one of the two)."""
    p.add_argument(
        "--release",
        type=Path,
        default=None,
        help="a release of 'jaxprivmdp privatize' (.npz, or .tra/.drn with its .json): "
        "certify the TRUE model's value of --property from it, over the interval model of "
        "--set (default: none; give it or --mdp)",
    )


def certify_options(p: argparse.ArgumentParser) -> None:
    """``--set``, ``--beta`` and ``--support-aware`` of ``check --release``."""
    p.add_argument(
        "--set",
        choices=("paper", "exact", "certified"),
        default=None,
        help="with --release: the uncertainty set of the interval model; only 'certified' "
        "holds every row at once, which a property's value needs (default: certified)",
    )
    p.add_argument(
        "--beta",
        type=float,
        default=None,
        help="with --release: the set's failure probability β in (0, 1): the interval "
        "holds with probability >= 1 - β over the mechanism's noise (default: 0.1)",
    )
    p.add_argument(
        "--support-aware",
        action="store_true",
        help="with --release: the set over each row's public support only",
    )
