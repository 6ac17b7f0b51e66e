"""A griffe extension for the API reference: Sphinx roles in docstrings become code spans.

The docstrings cross-reference each other the Sphinx way (``:func:`solve```,
``:class:`~jaxprivmdp.SparseMDP```), which Markdown would print as is. Each role becomes the
name in backticks (a leading ``~`` keeps the last component, as in Sphinx). Not links: a
target that the reference does not render would fail ``mkdocs build --strict``.
"""

from __future__ import annotations

import re

import griffe

ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|attr|data|exc|obj):`(~?)([^`]+)`")


def _code(match: re.Match) -> str:
    name = match.group(2)
    return f"`{name.rsplit('.', 1)[-1] if match.group(1) else name}`"


class SphinxRoles(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = ROLE.sub(_code, obj.docstring.value)
