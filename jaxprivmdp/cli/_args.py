"""The command line's arguments: the parser and the checks that run before anything else.

:func:`check_args` runs before any file is read or anything is computed, so a typo costs
nothing and never leaves an output behind. Every message names a flag.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from .._checks import check_int, check_range
from ..io._files import check_output_file, check_output_folder

PAPER_KS = (1, 5, 10, 15, 20, 25, 30, 35, 40)
# Counts become int32 shapes and loop bounds inside JAX; beyond this they overflow.
MAX_COUNT = 2**31 - 1
# `jax.random.key` takes a seed that fits a signed 64-bit integer.
SEED_LIMIT = 2**63
# The files each folder-writing command writes into --out.
OUTPUT_FILES = {
    "reproduce": ("figure1.png", "figure1.pdf", "figure1.csv", "figure1.json"),
    "sweep": ("sweep.png", "sweep.pdf", "sweep.csv", "sweep.json"),
    "privacy": ("privacy.json", "privacy_epsilon.png"),
    "frontier": ("frontier.png", "frontier.pdf", "frontier.csv", "frontier.json"),
}
# Relative slack for "eta = 1/n" and "smoothing = 1/n" typed as decimals (0.333...).
ONE_OVER_N_RTOL = 1e-12


def check_number(flag: str, value: float, **interval) -> None:
    """A finite number in the interval of :func:`jaxprivmdp._checks.check_range`.

    Raises:
      ValueError: naming ``flag`` and the allowed range.
    """
    check_range(flag, value, scalar=True, **interval)


def check_integer(flag: str, value: int, *, low: int, high: int = MAX_COUNT, why="") -> None:
    """Refuses integers outside ``[low, high]``.

    Raises:
      ValueError: naming ``flag``, the allowed range and ``why``.
    """
    try:
        check_int(flag, value, low=low, high=high + 1)
    except ValueError as e:
        raise ValueError(f"{e}{why}") from None


def sorted_grid(flag: str, values, *, high: float) -> list[float]:
    """The values of a grid of ``k``, each in ``(0, high]``, sorted ascending, no repeats.

    A figure and a table of ε against ``k`` need increasing ``k``; a repeated value is
    almost always a typo, so it is refused rather than dropped.

    Raises:
      ValueError: an empty grid, a bad value or a repeated one, naming ``flag``.
    """
    if not values:
        raise ValueError(f"{flag} needs at least one value")
    for v in values:
        check_number(flag, v, low=0.0, high=high, low_open=True)
    grid = sorted(float(v) for v in values)
    for a, b in zip(grid, grid[1:], strict=False):
        if a == b:
            raise ValueError(f"{flag} lists {a:g} twice")
    return grid


def _one_over_n(flag: str, value: float, n: int) -> None:
    if value * n > 1 + ONE_OVER_N_RTOL:
        raise ValueError(
            f"{flag} {value:g} exceeds 1/n = {1 / n:.6g} for --n {n}: no row of {n} entries "
            f"has every entry >= {value:g}"
        )


def check_args(args: argparse.Namespace) -> None:
    """Validates every argument of a command, sorts grids of ``k``, checks ``--out``.

    Modifies ``args`` in place only to sort ``--ks`` and ``--k`` lists.

    Raises:
      ValueError: one line naming the flag: a number that is not finite or out of range,
        a repeated ``k``, flags that exclude each other, or an ``--out`` that cannot be
        written (or would overwrite ``--mdp``).
    """
    get = vars(args).get
    dtype_max = float(np.finfo(get("dtype") or "float64").max)
    distributed = [get("coordinator"), get("num_processes"), get("process_id")]
    if any(v is not None for v in distributed):
        if any(v is None for v in distributed):
            raise ValueError("--coordinator, --num-processes and --process-id go together")
        check_integer("--num-processes", args.num_processes, low=1)
        check_integer("--process-id", args.process_id, low=0, high=args.num_processes - 1)
    if get("seed") is not None:
        check_integer("--seed", args.seed, low=0, high=SEED_LIMIT - 1)
    if get("trials") is not None:
        check_integer("--trials", args.trials, low=2, why=" (a standard deviation needs 2)")
    if get("batch_size") is not None:
        check_integer("--batch-size", args.batch_size, low=1)
    if get("horizon") is not None:
        check_integer("--horizon", args.horizon, low=1)
    if get("initial_state") is not None:
        check_integer("--initial-state", args.initial_state, low=0)
    if get("n") is not None:
        check_integer("--n", args.n, low=2)
    if get("ks") is not None:
        args.ks = sorted_grid("--ks", args.ks, high=dtype_max)
    if get("epsilons") is not None:
        args.epsilons = sorted_grid("--epsilons", args.epsilons, high=dtype_max)
    if isinstance(get("k"), list):
        args.k = sorted_grid("--k", args.k, high=dtype_max)
    elif get("k") is not None:
        check_number("--k", args.k, low=0.0, high=dtype_max, low_open=True)
    if get("beta") is not None:
        check_number("--beta", args.beta, low=0.0, high=1.0, low_open=True, high_open=True)
    if get("discount") is not None:
        check_number("--discount", args.discount, low=0.0, high=1.0)
        if args.command == "sweep" and args.horizon is None and args.discount == 1:
            raise ValueError("--discount 1 needs --horizon: an infinite horizon needs γ < 1")
    if get("b") is not None:
        check_number("--b", args.b, low=0.0, high=1.0, low_open=True)
    if get("delta") is not None:
        check_number("--delta", args.delta, low=0.0, high=1.0, low_open=True, high_open=True)
    # A privatized row has n >= 2 entries, so a lower bound on all of them is at most 1/2.
    for flag, value in (("--eta", get("eta")), ("--smoothing", get("smoothing"))):
        if value is not None:
            check_number(flag, value, low=0.0, high=0.5, low_open=True)
            if get("n") is not None:
                _one_over_n(flag, value, args.n)
    if get("smoothing") is not None and get("support") is not None:
        raise ValueError(
            "--smoothing and --support nonzero exclude each other: smoothing fills the zeros "
            "that --support nonzero keeps"
        )
    if args.command == "privacy":
        if args.mdp is not None and args.n is not None:
            raise ValueError("--n is for one row; with --mdp the rows come from the file")
        if args.mdp is None and (args.n is None or (args.eta is None and args.smoothing is None)):
            raise ValueError("give --n and --eta (or --smoothing) for one row, or --mdp FILE.npz")
    if args.command in ("privatize", "privacy") and args.eta is None and args.smoothing is None:
        # One rule for both: an ε computed from a data-derived η is not a guarantee.
        raise ValueError(
            "a guarantee needs a public lower bound on the rows: pass --eta (or --smoothing, "
            "which implies it); an eta derived from the data would leak the data"
        )
    _check_out(args)


def _check_out(args: argparse.Namespace) -> None:
    mdp = vars(args).get("mdp")
    if args.command == "privatize":
        check_output_file(args.out, flag="--out", force=args.force, inputs=[mdp])
    else:
        check_output_folder(
            args.out,
            flag="--out",
            names=OUTPUT_FILES[args.command],
            inputs=[mdp],
            force=args.force,
        )


# --------------------------------------------------------------------------- parser

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
    p.add_argument("--ks", type=float, nargs="+", default=list(PAPER_KS), help="grid of k > 0")
    p.add_argument("--beta", type=float, default=0.1, help="β of Lemma 1, in (0, 1)")
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32", help="floats")
    p.add_argument("--sampler", choices=("fast", "jax"), default="fast", help="gamma sampler")
    p.add_argument("--batch-size", type=int, default=None, help="runs per chunk (memory)")
    p.add_argument(
        "--coordinator",
        default=None,
        help="HOST:PORT of process 0 to run one sweep across processes (jax.distributed); "
        "with --num-processes and --process-id; process 0 writes the outputs",
    )
    p.add_argument("--num-processes", type=int, default=None, help="processes of the job")
    p.add_argument("--process-id", type=int, default=None, help="this process, 0 .. N-1")
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
        help="also synthesize the robust private policy (maximizes the pessimistic value)",
    )


def _mdp_options(
    p, *, planning: bool, required: bool = True, group: argparse.ArgumentParser | None = None
) -> None:
    """``--mdp`` and the MDP's options; without ``planning`` they are only checked.

    ``group``: the parser for the options besides ``--mdp`` when ``p`` is a mutually
    exclusive group (``--mdp`` or ``--example``).
    """
    help_t = "T (omit for infinite horizon)" if planning else _NOT_NEEDED
    help_gamma = "γ in [0, 1] (None: 1 with --horizon, else 0.95)" if planning else _NOT_NEEDED
    mdp_parser, p = p, group or p
    mdp_parser.add_argument(
        "--mdp",
        type=Path,
        required=required,
        default=None,
        help=".npz (transitions, rewards; or next_states, probs, rewards for a sparse model) "
        "or a PRISM/Storm explicit .tra file with its reward files (and .lab) beside it",
    )
    p.add_argument(
        "--reward-structure",
        default=None,
        help="PRISM/Storm: the reward structure to use, by name or index (needed with several)",
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
    p.add_argument(
        "--support", choices=("nonzero",), default=None, help="privatize nonzero entries only"
    )


def _privacy_options(p: argparse.ArgumentParser, *, many_k: bool) -> None:
    if many_k:
        p.add_argument("--k", type=float, nargs="+", required=True, help="values of k > 0")
    else:
        p.add_argument("--k", type=float, required=True, help="the mechanism's k > 0")
    p.add_argument("--b", type=float, default=0.1, help="adjacency bound b in (0, 1]")
    p.add_argument("--eta", type=float, default=None, help="public lower bound on row entries")
    p.add_argument("--delta", type=float, default=1e-3, help="target delta in (0, 1)")
    p.add_argument("--adjacency", choices=("row", "all"), default="row", help="rows that differ")


def _frontier_options(p: argparse.ArgumentParser) -> None:
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--example",
        choices=("1", "2", "gridworld"),
        default=None,
        help="the paper's Example 1 or 2, or the 20x20 gridworld (T = 60)",
    )
    _mdp_options(which, planning=True, required=False, group=p)
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
        "--smoothing", type=float, default=None, help="mix rows with uniform: (1-nη)p + η"
    )


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows every default, except where there is none to show (None, a required flag)."""

    def _get_help_string(self, action):
        if action.default is None or action.required or isinstance(action.default, bool):
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
    sub = parser.add_subparsers(dest="command", required=True)  # of the same _Parser class
    p = sub.add_parser("reproduce", help="reproduce the paper's Figure 1 into --out", **fmt)
    _sweep_options(p)
    p = sub.add_parser("sweep", help="Figure-1-style sweep on your own MDP (.npz)", **fmt)
    _mdp_options(p, planning=True)
    _smoothing_option(p)
    _sweep_options(p)
    p = sub.add_parser(
        "frontier", help="value against epsilon: every mechanism at the same (ε, δ)", **fmt
    )
    _frontier_options(p)
    p = sub.add_parser("privacy", help="(epsilon, delta) per k: table, plot, JSON", **fmt)
    _privacy_options(p, many_k=True)
    _smoothing_option(p)
    p.add_argument("--n", type=int, default=None, help="row dimension (one row, no --mdp)")
    _mdp_options(p, planning=False, required=False)
    _out_folder(p)
    p = sub.add_parser("privatize", help="release a privatized MDP (OS-entropy randomness)", **fmt)
    _mdp_options(p, planning=False)
    _privacy_options(p, many_k=False)
    _smoothing_option(p)
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32", help="floats")
    p.add_argument("--out", type=Path, required=True, help="output .npz (private data only)")
    p.add_argument("--force", action="store_true", help="overwrite --out")
    return parser
