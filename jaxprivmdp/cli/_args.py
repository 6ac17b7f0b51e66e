"""The command line's arguments: the checks that run before anything else (the parser is
``_parser``'s).

:func:`check_args` runs before any file is read or anything is computed, so a typo costs
nothing and never leaves an output behind. Every message names a flag.
"""

from __future__ import annotations

import argparse

import numpy as np

from .._checks import check_int, check_range
from ..io.core import check_output_file, check_output_folder, sidecar_path
from ._parser import PARAMETER_FLAGS, PRIVACY_DEFAULT_B
from ._parser import build_parser as build_parser

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
    "synthesize": tuple(
        f"{name}{suffix}"
        for name in ("policy", "robust_policy")
        for suffix in (".csv", ".tra", ".lab", ".srew")
    )
    + ("synthesize.json",),
    "evaluate": ("evaluate.json",),
    "check": ("check.json",),
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
    _check_counts(args)
    _check_numbers(args)
    _check_combinations(args)
    _check_out(args)


def _check_counts(args: argparse.Namespace) -> None:
    """The integer flags (and the distributed ones, which go together)."""
    get = vars(args).get
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


def _check_numbers(args: argparse.Namespace) -> None:
    """The real-valued flags and grids (sorted in place), finite and in range."""
    get = vars(args).get
    dtype_max = float(np.finfo(get("dtype") or "float64").max)
    if get("ks") is not None:
        args.ks = sorted_grid("--ks", args.ks, high=dtype_max)
    if get("epsilons") is not None:
        args.epsilons = sorted_grid("--epsilons", args.epsilons, high=dtype_max)
    if isinstance(get("k"), list):
        args.k = sorted_grid("--k", args.k, high=dtype_max)
    for flag in ("--k", "--sigma", "--scale", "--epsilon"):
        value = get(flag[2:])
        if value is not None and not isinstance(value, list):
            check_number(flag, value, low=0.0, high=dtype_max, low_open=True)
    if get("beta") is not None:
        check_number("--beta", args.beta, low=0.0, high=1.0, low_open=True, high_open=True)
    if get("discount") is not None:
        check_number("--discount", args.discount, low=0.0, high=1.0)
        if args.command in ("sweep", "synthesize") and args.horizon is None and args.discount == 1:
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


def _check_combinations(args: argparse.Namespace) -> None:
    """Flags that exclude or need each other, per command."""
    get = vars(args).get
    if get("smoothing") is not None and get("support") is not None:
        raise ValueError(
            "--smoothing and --support nonzero exclude each other: smoothing fills the zeros "
            "that --support nonzero keeps"
        )
    if args.command == "privacy":
        if args.releases:
            _release_files(args)
            return
        args.b = PRIVACY_DEFAULT_B if args.b is None else args.b
        args.adjacency = "row" if args.adjacency is None else args.adjacency
        if args.k is None:
            raise ValueError("give --k (the values of k to account), or release files")
        if args.mdp is not None and args.n is not None:
            raise ValueError("--n is for one row; with --mdp the rows come from the file")
        if args.mdp is None and (args.n is None or (args.eta is None and args.smoothing is None)):
            raise ValueError("give --n and --eta (or --smoothing) for one row, or --mdp FILE.npz")
    if args.command == "privatize":
        _release_mechanism(args)
    needs_eta = args.command == "privacy" or get("mechanism") == "dirichlet"
    if (
        args.command in ("privatize", "privacy")
        and needs_eta
        and args.eta is None
        and (args.smoothing is None)
    ):
        # One rule for both: an ε computed from a data-derived η is not a guarantee.
        raise ValueError(
            "a guarantee needs a public lower bound on the rows: pass --eta (or --smoothing, "
            "which implies it); an eta derived from the data would leak the data"
        )


def _release_files(args: argparse.Namespace) -> None:
    """``privacy RELEASE ...``: the releases hold the rows, the mechanism and the setting."""
    given = [f for f in ("k", "mdp", "n", "smoothing", "support") if vars(args).get(f) is not None]
    if given:
        flags = ", ".join(f"--{f}" for f in given)
        raise ValueError(
            f"{flags}: not with release files, which record their rows, mechanism and "
            "smoothing (--b, --eta and --adjacency, when given, replace the recorded ones)"
        )


def _release_mechanism(args: argparse.Namespace) -> None:
    """Resolves ``privatize --mechanism`` (default: the one whose parameter flag is given,
    else the Dirichlet) and refuses a parameter flag of another mechanism."""
    given = [(m, f) for m, f in PARAMETER_FLAGS.items() if getattr(args, f[2:]) is not None]
    if args.mechanism is None:
        args.mechanism = given[0][0] if given else "dirichlet"
    elif given and given[0][0] != args.mechanism:
        raise ValueError(
            f"{given[0][1]} is the {given[0][0]} mechanism's parameter; --mechanism "
            f"{args.mechanism} takes {PARAMETER_FLAGS[args.mechanism]} (or --epsilon)"
        )


def _check_out(args: argparse.Namespace) -> None:
    mdp = vars(args).get("mdp")
    if args.command == "privatize":
        check_output_file(args.out, flag="--out", force=args.force, inputs=[mdp])
        # An explicit release writes its companions and its metadata sidecar too.
        companions = {".tra": (".lab", ".srew", ".trew")}.get(args.out.suffix, ())
        if args.out.suffix in (".drn", ".tra"):
            others = [args.out.with_suffix(s) for s in companions] + [sidecar_path(args.out)]
            for other in others:
                check_output_file(other, flag="--out", force=args.force, inputs=[mdp])
    else:
        check_output_folder(
            args.out,
            flag="--out",
            names=OUTPUT_FILES[args.command],
            inputs=[mdp, vars(args).get("policy")],
            force=args.force,
        )
