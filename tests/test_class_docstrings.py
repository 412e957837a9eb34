"""Every class of the library says what it is in its docstring's first line."""

from __future__ import annotations

import ast
from pathlib import Path

LIBRARY = Path(__file__).resolve().parents[1] / "tiered_jobs"


def test_every_class_of_the_library_has_a_docstring():
    missing = []
    for module in sorted(LIBRARY.rglob("*.py")):
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                first = (ast.get_docstring(node) or "").strip().split("\n", 1)[0]
                if not first:
                    missing.append(f"{module.relative_to(LIBRARY.parent)}:{node.lineno} {node.name}")
    assert not missing, "classes without a docstring:\n  " + "\n  ".join(missing)
