"""The room rules: Lambda code never imports CDK; the contract stays standard-library only."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_functions_never_import_cdk():
    offenders = {
        str(p.relative_to(ROOT)): sorted(_imports(p) & {"aws_cdk", "constructs", "cdk_nag", "infra"})
        for p in (ROOT / "functions").rglob("*.py")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_contract_uses_only_the_standard_library():
    import sys

    allowed = set(sys.stdlib_module_names) | {"tiered_jobs"}
    offenders = {
        str(p.relative_to(ROOT)): sorted(_imports(p) - allowed)
        for p in (ROOT / "tiered_jobs" / "contract").rglob("*.py")
    }
    assert {k: v for k, v in offenders.items() if v} == {}
