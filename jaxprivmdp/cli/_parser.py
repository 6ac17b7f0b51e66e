"""The command line's parser: every command, its options and their defaults.

``--help`` shows each option's default; the checks that need more than a type live in
``_args``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .._version import __version__
from ._certify_options import certify_options, release_option
from ._check_options import check_options, labels_option
from ._objective import direction_options
from ._privacy_options import PARAMETER_FLAGS as PARAMETER_FLAGS
from ._privacy_options import PRIVACY_DEFAULT_B as PRIVACY_DEFAULT_B
from ._privacy_options import privacy_options, release_options

PAPER_KS = (1, 5, 10, 15, 20, 25, 30, 35, 40)

_NOT_NEEDED = "only checked; not needed"


def _out_folder(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, default=Path("results"), help="output folder")
    p.add_argument(
        "--force", action="store_true", help="overwrite the results of an earlier run in --out"
    )


def _sweep_options(p: argparse.ArgumentParser) -> None:
    _out_folder(p)
    p.add_argument("--seed", type=int, default=0, help="PRNG seed in [0, 2**63) (experiments)")
    p.add_argument("--trials", type=int, default=50, help="trials per k (>= 2)")
    p.add_argument(
        "--mechanism",
        choices=tuple(PARAMETER_FLAGS),
        default="dirichlet",
        help="the mechanism whose parameter --ks lists",
    )
    p.add_argument(
        "--ks",
        type=float,
        nargs="+",
        default=list(PAPER_KS),
        help="grid of the mechanism's parameter > 0: k (dirichlet), σ (gaussian), λ (laplace)",
    )
    p.add_argument("--beta", type=float, default=0.1, help="β of Lemma 1, in (0, 1)")
    p.add_argument("--k-axis", choices=("linear", "log"), default="linear", help="figure's k axis")
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32", help="floats")
    p.add_argument("--sampler", choices=("fast", "jax"), default="fast", help="gamma sampler")
    p.add_argument(
        "--batch-size",
        type=int,
        default=None,
        help="runs per compiled chunk (memory) (default: one vectorized group per device, so "
        "progress comes every few seconds)",
    )
    p.add_argument(
        "--coordinator",
        default=None,
        help="HOST:PORT of process 0 to run one sweep across processes (jax.distributed); "
        "with --num-processes and --process-id; process 0 writes the outputs (default: none, "
        "one process)",
    )
    p.add_argument(
        "--num-processes", type=int, default=None, help="processes of the job (default: none)"
    )
    p.add_argument(
        "--process-id", type=int, default=None, help="this process, 0 .. N-1 (default: none)"
    )
    p.add_argument(
        "--support-aware",
        action="store_true",
        help="bounds over each row's support only (valid when the zero pattern is public, "
        "e.g. with --support nonzero); default: the paper's set over the whole simplex",
    )
    p.add_argument(
        "--bound",
        choices=("paper", "exact", "certified"),
        default="paper",
        help="uncertainty set of the bounds: the paper's (Lemma 1), exact Beta marginals "
        "(same statement), or certified bounds on the true value w.p. >= 1 - beta",
    )
    p.add_argument(
        "--robust",
        action="store_true",
        help="also synthesize the robust private policy (optimizes its worst-case bound)",
    )


# --horizon and --discount: planned with, recorded in a release, or only checked.
_HORIZON_HELP = {
    "plan": (
        "T (default: the --mdp file's, else none: an infinite horizon, which needs --discount)",
        "γ in [0, 1] (default: the --mdp file's, else 1 with a horizon; an infinite horizon "
        "needs γ < 1: a horizon or a discount is never guessed)",
    ),
    "record": (
        "T to record in the release (default: the --mdp file's, else none)",
        "γ to record in the release (default: the --mdp file's, else 1 with --horizon)",
    ),
    "check": (_NOT_NEEDED + " (default: none)",) * 2,
    "property": (
        "the value of T in the property's step bounds (<=T) (default: the --mdp file's, else none)",
        _NOT_NEEDED + ": PRISM properties are undiscounted (default: none)",
    ),
}


def _property_options(p: argparse.ArgumentParser, *, required: bool) -> None:
    """``--property`` and ``--labels``: a PRISM property, and the labels its formulas use."""
    objective = (
        ""
        if required
        else (
            "; in place of the rewards: the private policy of this step-bounded property, its "
            "bounds and true value (--horizon gives T) (default: none, the model's rewards)"
        )
    )
    p.add_argument(
        "--property",
        required=required,
        default=None,
        help="a PRISM property, e.g. 'Pmax=? [F<=10 \"goal\"]'" + objective,
    )
    labels_option(p)
    if not required:  # synthesize, sweep, frontier: they plan on the model's rewards
        direction_options(p)


def _mdp_options(
    p,
    *,
    use: str,
    required: bool = True,
    group: argparse.ArgumentParser | None = None,
    privatizes: bool = True,
) -> None:
    """``--mdp`` and the MDP's options; ``use``: what ``--horizon`` and ``--discount`` are
    for (``"plan"``, ``"record"`` in a release, or ``"check"`` only).

    ``group``: the parser for the options besides ``--mdp`` when ``p`` is a mutually
    exclusive group (``--mdp`` or ``--example``).
    """
    help_t, help_gamma = _HORIZON_HELP[use]
    mdp_parser, p = p, group or p
    mdp_parser.add_argument(
        "--mdp",
        type=Path,
        required=required,
        default=None,
        help=".npz (transitions, rewards; or next_states, probs, rewards for a sparse model) "
        "or a PRISM/Storm explicit .tra file with its reward files (and .lab) beside it, or a "
        "Storm .drn file" + ("" if required else " (default: none)"),
    )
    p.add_argument(
        "--reward-structure",
        default=None,
        help="PRISM/Storm: the reward structure to use, by name or index (default: the only "
        "one; needed with several)",
    )
    p.add_argument(
        "--deadlocks",
        choices=("error", "self-loop"),
        default="error",
        help="PRISM/Storm: states without transitions are an error, or get a self-loop",
    )
    p.add_argument("--horizon", type=int, default=None, help=help_t)
    p.add_argument("--discount", type=float, default=None, help=help_gamma)
    p.add_argument(
        "--initial-state",
        type=int,
        default=None,
        help="index of s0 (default: 0, or a PRISM model's state labelled init)",
    )
    if privatizes:
        p.add_argument(
            "--support",
            choices=("nonzero",),
            default=None,
            help="privatize nonzero entries only (default: none, every entry; rows with zeros "
            "then need --smoothing)",
        )


def _frontier_options(p: argparse.ArgumentParser) -> None:
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--example",
        choices=("1", "2", "gridworld"),
        default=None,
        help="the paper's Example 1 or 2, or the 20x20 gridworld (T = 60) (default: none; "
        "give it or --mdp)",
    )
    _mdp_options(which, use="plan", required=False, group=p)
    p.add_argument("--epsilons", type=float, nargs="+", required=True, help="target ε values (> 0)")
    p.add_argument("--delta", type=float, default=1e-3, help="target δ in (0, 1)")
    p.add_argument(
        "--mechanisms",
        nargs="+",
        choices=("dirichlet", "gaussian", "laplace"),
        default=["dirichlet", "gaussian", "laplace"],
        help="mechanisms to compare",
    )
    p.add_argument("--trials", type=int, default=50, help="releases per (mechanism, ε) (>= 2)")
    p.add_argument("--beta", type=float, default=0.1, help="β of the bounds, in (0, 1)")
    p.add_argument("--b", type=float, default=0.1, help="adjacency bound b in (0, 1]")
    p.add_argument(
        "--eta",
        type=float,
        default=None,
        help="public lower bound on row entries (Dirichlet accounting; default: the "
        "smallest positive entry, then treated as public)",
    )
    p.add_argument(
        "--bound", choices=("paper", "exact", "certified"), default="paper", help="bounds' set"
    )
    p.add_argument("--support-aware", action="store_true", help="bounds over each support")
    p.add_argument("--seed", type=int, default=0, help="PRNG seed in [0, 2**63)")
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32", help="floats")
    _out_folder(p)


def _smoothing_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--smoothing",
        type=float,
        default=None,
        help="mix rows with uniform: (1-nη)p + η (default: none, the rows as given)",
    )


CHECK_JSON = (
    "check.json: an infinite value or error bound (an expected reward whose goal is not "
    "reached surely, printed 'inf' as PRISM does) is null in its field, and true in the "
    "field of the same name ending in '_infinite' (a list beside a list): values_infinite, "
    "error_bound_infinite, value_at_initial_state_infinite, "
    "error_bound_at_initial_state_infinite."
)


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows every option's default: its value, ``off`` for a switch, ``required``; an
    option without a value (None) says its default in its own words."""

    def _get_help_string(self, action):
        if action.required:
            return f"{action.help} (required)"
        if isinstance(action.default, bool):
            return f"{action.help} (default: {'on' if action.default else 'off'})"
        if action.default is None or action.default == argparse.SUPPRESS:
            return action.help
        return super()._get_help_string(action)


class _Parser(argparse.ArgumentParser):
    """Reports a bad command line on one line, as the commands report their errors."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The ``jaxprivmdp`` parser; ``args.command`` names the command to run."""
    fmt = {"formatter_class": _HelpFormatter}
    parser = _Parser(
        prog="jaxprivmdp", description="Privacy-preserving policy synthesis in MDPs (JAX).", **fmt
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)  # of the same _Parser class
    p = sub.add_parser("reproduce", help="reproduce the paper's Figure 1 into --out", **fmt)
    _sweep_options(p)
    p = sub.add_parser(
        "sweep", help="Figure-1-style sweep on your own MDP (.npz, .tra or .drn)", **fmt
    )
    _mdp_options(p, use="plan")
    _smoothing_option(p)
    _sweep_options(p)
    _property_options(p, required=False)
    p = sub.add_parser(
        "frontier", help="value against epsilon: every mechanism at the same (ε, δ)", **fmt
    )
    _frontier_options(p)
    _property_options(p, required=False)
    p = sub.add_parser(
        "check",
        help="a PRISM property's value in every state, as PRISM and Storm answer",
        epilog=CHECK_JSON,
        **fmt,
    )
    which = p.add_mutually_exclusive_group(required=True)  # --mdp or --release
    _mdp_options(which, use="property", required=False, group=p, privatizes=False)
    release_option(which)
    check_options(p)  # --property, --props, --labels, --variables, --dtype
    certify_options(p)  # --set, --beta, --support-aware (with --release)
    _out_folder(p)
    p = sub.add_parser(
        "privacy",
        help="(epsilon, delta) per k, or of release files composed: table, plot, JSON",
        **fmt,
    )
    privacy_options(p)
    _smoothing_option(p)
    p.add_argument(
        "--n", type=int, default=None, help="row dimension (one row, no --mdp) (default: none)"
    )
    _mdp_options(p, use="check", required=False)
    _out_folder(p)
    p = sub.add_parser("privatize", help="release a privatized MDP (OS-entropy randomness)", **fmt)
    _mdp_options(p, use="record")
    release_options(p)
    _smoothing_option(p)
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32", help="floats")
    p.add_argument(
        "--out",
        type=Path,
        required=True,
        help="output .npz (private data only), or .drn / .tra (Storm's or PRISM's explicit "
        "format) with the release's metadata in OUT.json",
    )
    p.add_argument("--force", action="store_true", help="overwrite --out")
    _policy_parsers(sub, fmt)
    return parser


def _set_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--robust",
        action="store_true",
        help="also the robust private policy, over the set of the release's mechanism",
    )
    p.add_argument(
        "--bound", choices=("paper", "exact", "certified"), default="paper", help="robust set"
    )
    p.add_argument("--beta", type=float, default=0.1, help="β of the set, in (0, 1)")
    p.add_argument("--support-aware", action="store_true", help="the set over each support")


def _policy_parsers(sub, fmt: dict) -> None:
    p = sub.add_parser(
        "synthesize",
        help="the private (and robust) policy of a release: CSV table and PRISM chain",
        **fmt,
    )
    _mdp_options(p, use="plan", privatizes=False)
    _set_options(p)
    _property_options(p, required=False)
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32", help="floats")
    _out_folder(p)
    p = sub.add_parser(
        "evaluate", help="a policy table's value on a model (e.g. the true one)", **fmt
    )
    _mdp_options(p, use="plan", privatizes=False)
    p.add_argument(
        "--policy", type=Path, required=True, help="policy table (CSV) as synthesize writes it"
    )
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32", help="floats")
    _out_folder(p)
