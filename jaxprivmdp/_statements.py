"""PRISM text split into statements: ``;`` separates them except inside a quoted string.

Shared by the ``.props`` reader (:mod:`jaxprivmdp.io`) and the properties' parser
(:mod:`jaxprivmdp.properties`), which sit side by side in the layers: one rule for where a
property ends, so ``"a;b"`` is one label in a file and on the command line alike.
"""

from __future__ import annotations


def split_statements(text: str) -> list[str]:
    """``text`` split at each ``;`` outside double quotes, each part stripped.

    Every part is kept, empty ones included (``"a;;b"`` gives ``["a", "", "b"]``, ``"a;"``
    gives ``["a", ""]``): the caller decides whether an empty statement is an error.
    """
    parts, current, quoted = [], [], False
    for ch in text:
        if ch == '"':
            quoted = not quoted
        if ch == ";" and not quoted:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return [p.strip() for p in parts]
