"""The command line: ``jaxprivmdp reproduce | sweep | frontier | privacy | privatize``.

``_args`` builds and checks the arguments, ``_mdp_files`` reads the ``--mdp`` file,
``_commands`` runs each command (progress on stderr, atomic writes).

Imports: the public API (``jaxprivmdp``) and any layer below it.
"""

from ._commands import main as main
from ._mdp_files import load_npz_mdp as load_npz_mdp

__all__ = ["load_npz_mdp", "main"]
