"""The entry point ``jaxprivmdp reproduce | sweep | frontier | privacy | privatize |
synthesize | evaluate | check``.

:func:`main` parses and checks the arguments before it reads or computes anything, runs the
command (``_sweep_commands``, ``_privacy_commands``), and reports a bad argument or file as a
one-line error (exit status 2), never a traceback. Every file a command writes appears whole
or not at all (see :func:`jaxprivmdp.io._files.atomic_outputs`).
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings

from ._args import build_parser, check_args
from ._certify_command import cmd_check_or_certify
from ._interrupts import deferred_interrupts
from ._policy_commands import cmd_evaluate, cmd_synthesize
from ._privacy_commands import cmd_privacy
from ._release import cmd_privatize
from ._sweep_commands import cmd_frontier, cmd_reproduce, cmd_sweep
from ._terminal import note


def _setup(args, stack: contextlib.ExitStack) -> None:
    """A computing command's JAX settings: float64 (in ``stack``'s scope only: a caller in
    Python keeps its own setting, global or in a ``jax.enable_x64`` block), and one
    computation across processes."""
    import jax

    if args.dtype == "float64":
        stack.enter_context(jax.enable_x64(True))
    if getattr(args, "coordinator", None) is not None:
        # One sweep across processes (hosts): CPU processes talk through gloo.
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        jax.distributed.initialize(
            args.coordinator, num_processes=args.num_processes, process_id=args.process_id
        )


def _zero_entry_message(e) -> str:
    shown = ", ".join(f"(state {s}, action {a})" for s, a in e.rows[:5])
    more = f" and {len(e.rows) - 5} more" if len(e.rows) > 5 else ""
    return (
        f"transition rows {shown}{more} have zero entries, which the Dirichlet mechanism "
        "cannot privatize: pass --support nonzero to treat the zero pattern as public, or "
        "--smoothing ETA to mix every row with the uniform distribution first"
    )


COMMANDS = {
    "reproduce": cmd_reproduce,
    "sweep": cmd_sweep,
    "privacy": cmd_privacy,
    "privatize": cmd_privatize,
    "frontier": cmd_frontier,
    "synthesize": cmd_synthesize,
    "evaluate": cmd_evaluate,
    "check": cmd_check_or_certify,
}


@contextlib.contextmanager
def _one_line_warnings(command: str):
    """Warnings (a PRISM model without rewards, ...) as one line each on stderr."""
    with warnings.catch_warnings():

        def show(message, category, filename, lineno, file=None, line=None):
            note(f"jaxprivmdp {command}: warning: {' '.join(str(message).split())}")

        warnings.showwarning = show
        yield


def main(argv: list[str] | None = None) -> int:
    """Runs a command; returns its exit status (0, 2 for a bad input, 130 when interrupted).

    Run as the program (``argv`` None), an interrupted command exits at once with 130 after
    flushing its output: the interpreter's teardown is skipped, so nothing XLA may still
    hold is torn down under it.
    """
    status = _run(argv)
    if argv is None and status == 130:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(130)
    return status


def _run(argv: list[str] | None) -> int:
    args = build_parser().parse_args(argv)

    def error(msg) -> None:
        print(f"jaxprivmdp {args.command}: error: {' '.join(str(msg).split())}", file=sys.stderr)

    with deferred_interrupts(), _one_line_warnings(args.command):
        try:
            import jax

            from ..models.core import ZeroEntryError

            try:
                check_args(args)
                with contextlib.ExitStack() as stack:
                    if hasattr(args, "dtype"):
                        _setup(args, stack)
                    files = COMMANDS[args.command](args)
            except ZeroEntryError as e:
                error(_zero_entry_message(e))
                return 2
            except MemoryError:
                error("out of memory: try a smaller --batch-size, fewer --trials or a smaller MDP")
                return 2
            except jax.errors.JaxRuntimeError as e:
                if "RESOURCE_EXHAUSTED" not in str(e):
                    raise  # a bug: its traceback is what to report
                error("out of device memory: try a smaller --batch-size or a smaller MDP")
                return 2
            except (ValueError, OSError) as e:
                error(e)
                return 2
        except KeyboardInterrupt:
            print(f"jaxprivmdp {args.command}: interrupted", file=sys.stderr)
            return 130
    for f in files:
        note(f"wrote {f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
