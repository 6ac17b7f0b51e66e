"""The command line: ``jaxprivmdp reproduce | sweep | frontier | privacy | privatize |
synthesize | evaluate``.

``_commands`` holds the entry point :func:`main` (parse, check, run, one-line errors);
``_parser`` builds the arguments and ``_args`` checks them, ``_mdp_files`` reads the
``--mdp`` file; ``_sweep_commands`` runs ``reproduce``, ``sweep`` and ``frontier``,
``_privacy_commands`` runs ``privacy``, ``_release`` runs ``privatize``, ``_policy_commands``
runs ``synthesize`` and ``evaluate`` (``_policy_files`` writes and reads policy tables and
PRISM chains); ``_accounting`` computes the guarantees they record and ``_terminal`` prints
(notes and progress on stderr, tables on stdout).

Imports: the public API (``jaxprivmdp``) and any layer below it. This module itself imports
nothing heavy: :func:`main` loads the commands (and JAX, seconds) under its own Ctrl-C handling.
"""

from __future__ import annotations

import os
import sys

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Runs a command (:func:`jaxprivmdp.cli._commands.main`): exit status 0, 2 or 130.

    A Ctrl-C while the commands and JAX load (the first seconds) ends with one line and 130,
    as one during a command does, not with the interpreter's traceback.
    """
    try:
        from ._commands import main as run

        return run(argv)
    except KeyboardInterrupt:
        print("jaxprivmdp: interrupted", file=sys.stderr)
        if argv is not None:
            return 130
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(130)  # no teardown under half-loaded modules (see _commands.main)
