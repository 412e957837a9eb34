"""The rooms' import rules, as docs/architecture.md states them: this test reads the doc's table
(between the ``import-rules`` markers) and walks every module's imports with ``ast``."""

from __future__ import annotations

import ast
import re
import sys
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


def imports(path: Path) -> set[str]:
    """Every module ``path`` imports, relative imports resolved to absolute names."""
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                found.add(".".join(base + ([node.module] if node.module else [])))
            else:
                found.add(node.module or "")
    return found


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
        "example",
        "example/jobs",
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
    assert _longest("tiered_jobs.runtime.aws", RULES["example/jobs"][0]) > 0
    assert _longest("example.app", RULES["tiered_jobs"][0]) == -1
    assert _longest("tiered_jobs.operations", RULES["tiered_jobs/publisher"][0]) == -1
    assert _longest("example.jobs", RULES["emulator"][0]) <= _longest("example.jobs", RULES["emulator"][1])
    assert _longest("tests.support.tier", RULES["bench"][0]) > _longest("tests.support.tier", RULES["bench"][1])
    assert _longest("tests.emulator", RULES["bench"][0]) <= _longest("tests.emulator", RULES["bench"][1])
    fake = ROOT / "tiered_jobs" / "runtime" / "_boundary_probe.py"
    monkeypatch.setattr(
        Path, "read_text", lambda self, encoding=None: "from ..publisher import Publisher\nimport aws_cdk\n"
    )
    assert violations(fake) == ["aws_cdk", "tiered_jobs.publisher"]
