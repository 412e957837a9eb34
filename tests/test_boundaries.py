"""The rooms' import rules, as docs/architecture.md states them: this test reads the doc's table
(between the ``import-rules`` markers) and walks every module's imports with ``ast``."""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ARCHITECTURE = ROOT / "docs" / "architecture.md"
ANYTHING = "anything"


def rules() -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """``{room path: (allowed names, forbidden names)}`` from the doc's table."""
    block = re.search(
        r"<!-- import-rules:start -->\n(.*?)<!-- import-rules:end -->", ARCHITECTURE.read_text(encoding="utf-8"), re.S
    )
    assert block, "docs/architecture.md has no import-rules table"
    table: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
    for line in block.group(1).strip().splitlines()[2:]:
        room, allowed, forbidden = (cell.strip() for cell in line.strip().strip("|").split("|"))
        names = lambda cell: tuple(re.findall(r"`([^`]+)`", cell)) + ((ANYTHING,) if cell.startswith(ANYTHING) else ())  # noqa: E731
        table[room.strip("`")] = (names(allowed), names(forbidden))
    return table


RULES = rules()


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path) -> Iterator[tuple[str, tuple[str, ...]]]:
    """Each import of ``path`` (at its top, under ``TYPE_CHECKING`` or in a function) as ``(module, names)``:
    the names a ``from`` import takes (``()`` for ``import module``), relative modules resolved to absolute."""
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from ((alias.name, ()) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            names = tuple(alias.name for alias in node.names)
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                yield ".".join(base + ([node.module] if node.module else [])), names
            else:
                yield node.module or "", names


def imports(path: Path) -> set[str]:
    """Every module ``path`` imports, relative imports resolved to absolute names."""
    return {module for module, _ in imported(path)}


def import_graph(package: Path) -> dict[str, set[str]]:
    """``{module: the modules of the package it imports}``: ``from a import b`` is module ``a.b`` when there
    is one. A package's ``__init__`` is not counted as imported by its modules (Python runs it first, but
    it depends on them, not they on it)."""
    paths = {module_name(path): path for path in package.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        found: set[str] = set()
        for module, names in imported(path):
            submodules = {f"{module}.{n}" for n in names if f"{module}.{n}" in paths}
            found |= submodules or ({module} if module in paths else set())
        graph[name] = found - {name}
    return graph


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The graph's cycles: each set of modules that reach each other (strongly connected), sorted."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's algorithm
        order[node] = low[node] = len(order)
        stack.append(node)
        for after in sorted(graph.get(node, ())):
            if after not in order:
                visit(after)
                low[node] = min(low[node], low[after])
            elif after in stack:
                low[node] = min(low[node], order[after])
        if low[node] == order[node]:
            component = [stack.pop()]
            while component[-1] != node:
                component.append(stack.pop())
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in order:
            visit(node)
    return sorted(found)


def _longest(name: str, prefixes: tuple[str, ...]) -> int:
    """Length of the longest prefix ``name`` falls under (``anything``: 0; none: -1)."""
    return max(
        (0 if p == ANYTHING else len(p) for p in prefixes if p == ANYTHING or name == p or name.startswith(p + ".")),
        default=-1,
    )


def room_of(path: Path) -> str | None:
    relative = path.relative_to(ROOT).as_posix()
    rooms = [room for room in RULES if relative == room + ".py" or relative.startswith(room + "/")]
    return max(rooms, key=len, default=None)


def violations(path: Path) -> list[str]:
    room = room_of(path)
    if room is None:
        return []
    allowed, forbidden = RULES[room]
    return sorted(
        name
        for name in imports(path)
        if name.split(".")[0] not in sys.stdlib_module_names and _longest(name, allowed) <= _longest(name, forbidden)
    )


def test_the_table_covers_every_room_of_the_repository():
    assert set(RULES) >= {
        "tiered_jobs",
        "tiered_jobs/contract",
        "tiered_jobs/runtime",
        "tiered_jobs/handlers",
        "tiered_jobs/replay",
        "tiered_jobs/stage",
        "tiered_jobs/operations",
        "tiered_jobs/publisher",
        "infra",
        "functions",
        "functions/jobs",
        "demo",
        "emulator",
        "bench",
    }
    assert all((ROOT / room).is_dir() for room in RULES)


@pytest.mark.parametrize("room", sorted(RULES))
def test_every_module_keeps_its_rooms_import_rules(room):
    modules = [p for p in (ROOT / room).rglob("*.py") if room_of(p) == room]
    assert modules
    offenders = {str(p.relative_to(ROOT)): found for p in modules if (found := violations(p))}
    assert offenders == {}


def test_the_rules_catch_what_they_forbid(tmp_path, monkeypatch):
    """The walker itself: a relative import that climbs out of the package is seen, by its absolute name."""
    assert _longest("tiered_jobs.runtime.aws", RULES["functions/jobs"][0]) > 0
    assert _longest("infra.app", RULES["tiered_jobs"][0]) == -1
    assert _longest("tiered_jobs.operations", RULES["tiered_jobs/publisher"][0]) == -1
    assert _longest("functions.jobs", RULES["emulator"][0]) <= _longest("functions.jobs", RULES["emulator"][1])
    assert _longest("infra.app", RULES["emulator"][0]) <= _longest("infra.app", RULES["emulator"][1])
    assert _longest("emulator.session", RULES["infra"][0]) == -1 and _longest("emulator", RULES["demo"][0]) == 0
    assert _longest("tests.support.tier", RULES["bench"][0]) > _longest("tests.support.tier", RULES["bench"][1])
    assert _longest("tests.emulator", RULES["bench"][0]) <= _longest("tests.emulator", RULES["bench"][1])
    fake = ROOT / "tiered_jobs" / "runtime" / "_boundary_probe.py"
    monkeypatch.setattr(
        Path, "read_text", lambda self, encoding=None: "from ..publisher import Publisher\nimport aws_cdk\n"
    )
    assert violations(fake) == ["aws_cdk", "tiered_jobs.publisher"]


def test_the_librarys_import_graph_has_no_cycle():
    """Every import counts, however late it runs: one under ``TYPE_CHECKING`` or inside a function defers
    a cycle, it does not open it (a reader still cannot take one module without the other)."""
    assert cycles(import_graph(ROOT / "tiered_jobs")) == []


def test_the_cycle_finder_finds_a_cycle_through_any_kind_of_import(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("from .a import A\n")
    (package / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\n")
    (package / "b.py").write_text("def later():\n    from . import c\n")
    (package / "c.py").write_text("from pkg.a import A\nimport json\n")
    (package / "d.py").write_text("from . import a\n")
    graph = import_graph(package)
    assert graph["pkg.d"] == {"pkg.a"} and graph["pkg.c"] == {"pkg.a"}
    assert cycles(graph) == [["pkg.a", "pkg.b", "pkg.c"]]
