"""The documentation site runs as written and covers the whole API.

Every ```python block of a page under ``docs/`` runs, the page's blocks in order in one
namespace (as a reader pastes them). A block that cannot run here (a GPU-only example) opts
out with the line ``<!-- docs-test: skip (why) -->`` right above its fence. The API
reference names every public name of ``jaxprivmdp`` and ``jaxprivmdp.privacy``, and every
command-line flag the pages show exists.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import jaxprivmdp as jp

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md"))
SKIP = "<!-- docs-test: skip"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", flags=re.S | re.M)


def blocks(text: str, language: str) -> list[str]:
    """The page's code blocks in ``language``, without those marked to skip."""
    found = []
    for match in FENCE.finditer(text):
        if match.group(1) != language:
            continue
        before = text[: match.start()].rstrip().splitlines()
        if before and before[-1].startswith(SKIP):
            continue
        found.append(match.group(2))
    return found


# A page that shows the README's example verbatim (the home page) leaves running it to
# tests/test_readme.py, which runs the README in the unit tier and in float64.
README_BLOCKS = blocks((ROOT / "README.md").read_text(), "python")
PYTHON_PAGES = [p for p in PAGES if blocks(p.read_text(), "python")]


# The pages' examples are whole pipelines (30 s of the unit tier's CPU time together): the
# integration tier runs them; the README's example runs in the unit tier (tests/test_readme.py).
@pytest.mark.integration
@pytest.mark.parametrize("page", PYTHON_PAGES, ids=lambda p: str(p.relative_to(DOCS)))
def test_page_python_blocks_run(page, capsys):
    own = blocks(page.read_text(), "python")
    if own == README_BLOCKS:
        return
    namespace: dict = {"__name__": f"docs_{page.stem}"}
    for i, block in enumerate(own):
        code = compile(block, f"{page.relative_to(ROOT)} (python block {i + 1})", "exec")
        exec(code, namespace)  # noqa: S102
    capsys.readouterr()


def test_every_page_is_in_the_nav():
    nav = (ROOT / "mkdocs.yml").read_text()
    for page in PAGES:
        assert str(page.relative_to(DOCS)) in nav, f"{page} is not in mkdocs.yml's nav"


def _documented(prefix: str) -> set[str]:
    text = "\n".join(p.read_text() for p in (DOCS / "api").glob("*.md"))
    return set(re.findall(rf"^::: {re.escape(prefix)}\.(\w+)$", text, flags=re.M))


def test_api_reference_covers_the_public_names():
    names = set(jp.__all__) - {"privacy"}  # privacy has its own page, name by name
    missing = names - _documented("jaxprivmdp")
    assert not missing, f"add to docs/api/*.md: {sorted(missing)}"
    stale = _documented("jaxprivmdp") - names - {"privacy"}
    assert not stale, f"docs/api/*.md names what jaxprivmdp no longer exports: {sorted(stale)}"
    privacy = set(jp.privacy.__all__)
    assert privacy == _documented("jaxprivmdp.privacy"), "docs/api/privacy.md vs privacy.__all__"


def test_readme_stays_short():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 300, "the README is the front door; long sections go to docs/"


def test_readme_links_to_pages_that_exist():
    readme = (ROOT / "README.md").read_text()
    links = re.findall(r"\]\((docs/[^)#\s]+)", readme)
    assert links, "the README links to the docs pages"
    for link in links:
        assert (ROOT / link).exists(), link


def _commands_and_flags() -> dict[str, set[str]]:
    """``{command: flags}`` over every ``jaxprivmdp <command> ...`` line of the pages' shell
    blocks (continuation lines included)."""
    found: dict[str, set[str]] = {}
    for page in [*PAGES, ROOT / "README.md"]:
        for block in blocks(page.read_text(), "bash"):
            for line in block.replace("\\\n", " ").splitlines():
                match = re.match(r"\s*jaxprivmdp (\w+)(.*)", line)
                if match:
                    code = match.group(2).split("#")[0]
                    flags = set(re.findall(r"(--[a-z][a-z0-9-]*)", code))
                    found.setdefault(match.group(1), set()).update(flags)
    return found


@pytest.mark.cli
def test_shell_blocks_use_existing_commands_and_flags():
    commands = _commands_and_flags()
    assert {"reproduce", "sweep", "privatize", "check"} <= set(commands)
    for command, flags in sorted(commands.items()):
        out = subprocess.run(
            [sys.executable, "-m", "jaxprivmdp", command, "--help"],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        ).stdout
        unknown = sorted(f for f in flags if f not in out)
        assert not unknown, f"jaxprivmdp {command}: flags the docs show but --help lacks: {unknown}"
