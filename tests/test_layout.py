"""The layout shows the architecture: layers import downward only, rooms stay small.

Subpackages and their layers (a module may import its own subpackage and lower layers):

    0  _checks, _version, _refusals  validation, the version, the refused 0.2 keywords
       _statements                   PRISM text split at ';' (the .props reader, the parser)
    1  models                        dense and sparse MDPs, their public structure
    2  io, privacy, sets, properties files; (ε, δ) accounting; uncertainty sets and boxes;
                                     PRISM properties (checking, and the reward problem)
    3  mechanisms                    privatize, the sets their noise implies, guarantees
    4  planning                      Bellman, the robust kernel, bounds, the robust policy
    5  experiments                   synthesize, sweep, frontier, reports
    6  cli                           the command line
    7  jaxprivmdp (the public API)   re-exports only

``properties`` sits below ``planning``: checking a property needs only a model's rows (it
has its own iteration), while the bounds and the robust policy take a property's reward
problem (``PropertyModel``) in place of a model; so planning imports properties and never
the reverse.

Three more rules. No import cycles, between subpackages or inside one, counting imports
inside functions (the usual way to hide a cycle). No reach-ins: a module imports another
subpackage through its ``__init__`` (the public names) or its ``core`` module (the internal
API: what the other layers use, re-exported), never through its underscore modules; the
layer-0 modules (``_checks`` ...) are shared by all. Modules stay under 400 lines and
functions under 80 code lines.

Read from the source with ``ast`` (no import needed), so a violation names file and line.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "jaxprivmdp"
LAYERS = {
    "_checks": 0,
    "_version": 0,
    "_refusals": 0,
    "_statements": 0,
    "models": 1,
    "io": 2,
    "privacy": 2,
    "sets": 2,
    "properties": 2,
    "mechanisms": 3,
    "planning": 4,
    "experiments": 5,
    "cli": 6,
    "": 7,  # jaxprivmdp/__init__.py and __main__.py
}
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 80  # code lines: from `def` to the end, without the docstring


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        yield path, parts


def _room(parts: tuple[str, ...]) -> str:
    """The layer key of a module: its subpackage, a top-level module, or "" (the API)."""
    inner = parts[1:]
    if not inner or inner[0] in ("__init__", "__main__"):
        return ""
    return inner[0]


def _imported(path: Path, parts: tuple[str, ...]):
    """``(line, target parts)`` for every import of a jaxprivmdp module in ``path``."""
    package = parts[:-1] if parts[-1] != "__init__" else parts[:-1]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                target = base + tuple(node.module.split(".") if node.module else ())
            elif node.module and node.module.split(".")[0] == "jaxprivmdp":
                target = tuple(node.module.split("."))
            else:
                continue
            if not node.module or target == ("jaxprivmdp",):  # `from . import x`: x a room?
                for alias in node.names:
                    yield node.lineno, target + (alias.name,)
            else:
                yield node.lineno, target
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "jaxprivmdp":
                    yield node.lineno, tuple(alias.name.split("."))


def test_imports_flow_down_the_layers():
    wrong = []
    for path, parts in _modules():
        room = _room(parts)
        for line, target in _imported(path, parts):
            other = _room(target)
            if other not in LAYERS:  # a name re-exported by the API, e.g. `from . import x`
                other = ""
            if other == room:
                continue
            if LAYERS[other] >= LAYERS[room]:
                where = f"{path.relative_to(PACKAGE.parent)}:{line}"
                wrong.append(f"{where} ({room or 'api'}) imports {'.'.join(target)}")
    assert not wrong, "upward or sideways imports:\n" + "\n".join(wrong)


def test_no_reach_into_another_subpackage():
    """Another subpackage is imported through its ``__init__`` or ``core``, never through a
    private module: the underscore means "this subpackage's business"."""
    wrong = []
    for path, parts in _modules():
        room = _room(parts)
        for line, target in _imported(path, parts):
            other = _room(target)
            if other == room or other.startswith("_") or other not in LAYERS:
                continue
            if any(p.startswith("_") and not p.startswith("__") for p in target[2:]):
                where = f"{path.relative_to(PACKAGE.parent)}:{line}"
                wrong.append(f"{where} imports {'.'.join(target)}")
    assert not wrong, "private modules of another subpackage:\n" + "\n".join(wrong)


def _import_graph() -> dict[tuple[str, ...], dict[tuple[str, ...], int]]:
    """``module -> {imported module: line}`` over the package's modules (a subpackage's name
    is its ``__init__``; ``from m import name`` is an edge to ``m``)."""
    modules = {parts for _, parts in _modules()}

    def resolve(target):
        for node in (target, (*target, "__init__")):
            if node in modules:
                return node
        return None

    graph = {}
    for path, parts in _modules():
        edges = graph.setdefault(parts, {})
        for line, target in _imported(path, parts):
            node = resolve(target) or resolve(target[:-1])
            if node is not None and node != parts:
                edges.setdefault(node, line)
    return graph


def _find_cycle(graph) -> list[tuple[str, ...]] | None:
    """A cycle ``[m1, m2, ..., m1]`` of the graph, or None (depth-first, iterative)."""
    state = {}  # 1: on the current path, 2: done
    for root in graph:
        if root in state:
            continue
        path, stack = [root], [iter(graph[root])]
        state[root] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            elif nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(graph.get(nxt, {})))
    return None


def test_no_import_cycles():
    graph = _import_graph()
    cycle = _find_cycle(graph)
    if cycle is not None:
        steps = [
            f"{'.'.join(a)}:{graph[a][b]} imports {'.'.join(b)}"
            for a, b in zip(cycle, cycle[1:], strict=False)
        ]
        pytest.fail("import cycle:\n" + "\n".join(steps))


def test_the_cycle_finder_finds_one():
    graph = {("a",): {("b",): 1}, ("b",): {("c",): 2}, ("c",): {("a",): 3}, ("d",): {}}
    assert _find_cycle(graph) == [("a",), ("b",), ("c",), ("a",)]
    assert _find_cycle({("a",): {("b",): 1}, ("b",): {}}) is None


def test_every_module_is_in_a_known_room():
    rooms = {_room(parts) for _, parts in _modules()}
    assert rooms <= set(LAYERS), rooms - set(LAYERS)


def _code_lines(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    lines = fn.end_lineno - fn.lineno + 1
    body = fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        if isinstance(body[0].value.value, str):
            lines -= body[0].end_lineno - body[0].lineno + 1
    return lines


def test_rooms_stay_small():
    big = []
    for path, _ in _modules():
        text = path.read_text()
        name = path.relative_to(PACKAGE.parent)
        if text.count("\n") > MAX_MODULE_LINES:
            big.append(f"{name}: {text.count(chr(10))} lines > {MAX_MODULE_LINES}")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = _code_lines(node)
                if n > MAX_FUNCTION_LINES:
                    big.append(f"{name}:{node.lineno} {node.name}: {n} code lines")
    assert not big, "\n".join(big)


@pytest.mark.parametrize("room", [r for r in LAYERS if r and not r.startswith("_")])
def test_each_subpackage_says_what_lives_there(room):
    doc = ast.get_docstring(ast.parse((PACKAGE / room / "__init__.py").read_text()))
    assert doc and "Imports:" in doc, f"{room}/__init__.py needs a docstring with 'Imports:'"


def test_the_lazy_api_names_what_its_static_imports_name():
    """``jaxprivmdp/__init__.py`` loads lazily: the subpackages' exports (what runs) and the
    imports under ``TYPE_CHECKING`` (what static tools read) must agree, and every name must
    resolve to its subpackage's object."""
    import importlib

    import jaxprivmdp

    tree = ast.parse((PACKAGE / "__init__.py").read_text())
    static = {
        alias.name: node.module or ""
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module != "_version"
        for alias in node.names
    }
    runtime = {**jaxprivmdp._api(), "privacy": ""}
    assert static == runtime
    assert sorted(jaxprivmdp.__all__) == sorted(runtime)
    for name, room in runtime.items():
        home = importlib.import_module(f"jaxprivmdp.{room}" if room else f"jaxprivmdp.{name}")
        expected = getattr(home, name) if room else home
        assert getattr(jaxprivmdp, name) is expected, name
    with pytest.raises(AttributeError, match="no attribute 'solver'"):
        jaxprivmdp.solver  # noqa: B018
