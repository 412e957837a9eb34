"""mypy follows every aws_cdk module the code uses, and skips the rest (pyproject.toml says why).

A module the construct starts to use but the list misses would be skipped: its types read as Any
and mypy would check nothing of them. This test keeps the list and the imports in step.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHECKED = ("tiered_jobs", "infra", "functions", "demo", "emulator")


def _cdk_modules_used() -> set[str]:
    used: set[str] = set()
    for folder in CHECKED:
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.module == "aws_cdk":
                    used.update(f"aws_cdk.{a.name}" for a in node.names if a.name.startswith("aws_"))
                elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("aws_cdk."):
                    used.add(node.module or "")
                elif isinstance(node, ast.Import):
                    used.update(a.name for a in node.names if a.name.startswith("aws_cdk."))
    return used


def _followed() -> set[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return {
        module
        for override in config["tool"]["mypy"]["overrides"]
        if override.get("follow_imports") == "normal"
        for module in override["module"]
    }


def test_every_aws_cdk_module_the_code_imports_is_followed_by_mypy():
    used = _cdk_modules_used()
    assert "aws_cdk.aws_sqs" in used  # the walk sees the construct's imports
    assert used - _followed() == set(), "add these to the followed aws_cdk modules in pyproject.toml"
