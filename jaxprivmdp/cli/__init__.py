"""The command line: ``jaxprivmdp reproduce | sweep | frontier | privacy | privatize |
synthesize | evaluate``.

``_commands`` holds the entry point :func:`main` (parse, check, run, one-line errors);
``_parser`` builds the arguments and ``_args`` checks them, ``_mdp_files`` reads the
``--mdp`` file; ``_sweep_commands`` runs ``reproduce``, ``sweep`` and ``frontier``,
``_privacy_commands`` runs ``privacy``, ``_release`` runs ``privatize``, ``_policy_commands``
runs ``synthesize`` and ``evaluate`` (``_policy_files`` writes and reads policy tables and
PRISM chains); ``_accounting`` computes the guarantees they record and ``_terminal`` prints
(notes and progress on stderr, tables on stdout).

Imports: the public API (``jaxprivmdp``) and any layer below it.
"""

from ._commands import main as main
from ._mdp_files import load_npz_mdp as load_npz_mdp

__all__ = ["load_npz_mdp", "main"]
