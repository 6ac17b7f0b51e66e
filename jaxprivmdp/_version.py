"""The one place the version lives (``pyproject.toml`` reads it from here).

``.devN`` while CHANGELOG.md's top section is unreleased; the bare version once released.
"""

__version__ = "1.0.0.dev0"
