"""Numbers in the JSON files jaxprivmdp writes: JSON has no infinity and no NaN.

One convention for every file (``docs/cli.md``, "JSON numbers"): a number that is not finite
is written as ``null``. Where an infinity is an answer rather than a missing number (an
expected reward that is infinite, as PRISM prints ``inf``), the file says so in a boolean
field beside it, ``<name>_infinite``; elsewhere ``null`` means "no finite number" (no finite
ε, an unreachable target, an unknown bound).
"""

from __future__ import annotations

import math


def json_number(x) -> float | None:
    """``x`` as a float for JSON, or None (``null``) where it is infinite or NaN.

    Args:
      x: a Python or NumPy/JAX scalar.

    Returns:
      ``float(x)`` if finite, else None.
    """
    x = float(x)
    return x if math.isfinite(x) else None
