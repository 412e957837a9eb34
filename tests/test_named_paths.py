"""Every repository path that a doc or a docstring names exists: a move leaves no stale pointer behind.

Read: the prose of README.md, CHANGELOG.md and docs/*.md, and the docstrings and comments of every
Python module. A path is a word that starts with one of the repository's top-level folders. Two
kinds are not claims about the tree, and pass:

- a file a page shows the reader how to write: the first line of one of its fenced blocks names it
  (a comment holding the path), so the page may name it anywhere;
- an output the repository ignores (a folder of ``.gitignore``, such as the bench's results), written
  by a command.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOP = sorted(p.name for p in ROOT.iterdir() if p.is_dir() and not p.name.startswith("."))
PATH = re.compile(r"(?<![\w./-])((?:%s)/[\w./-]*\w)" % "|".join(map(re.escape, TOP)))
SKIPPED_PARTS = {".venv", "node_modules", "cdk.out", ".local", "build", "dist"}
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)


def ignored_folders() -> list[str]:
    lines = (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
    return [line.strip("/") + "/" for line in lines if line.endswith("/") and "/" in line.rstrip("/")]


def page_texts() -> Iterator[tuple[str, str, set[str]]]:
    """Each page's prose (fenced blocks left out) and the files its blocks show how to write."""
    pages = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
    for page in pages:
        text = page.read_text(encoding="utf-8")
        written = set()
        for block in FENCE.finditer(text):
            first = block.group(1).split("\n", 1)[0]
            written.update(m.group(1) for m in PATH.finditer(first) if first.lstrip().startswith(("#", "//")))
        yield str(page.relative_to(ROOT)), FENCE.sub("", text), written


def module_texts() -> Iterator[tuple[str, str, set[str]]]:
    """Each module's docstrings and comments."""
    for module in sorted(ROOT.rglob("*.py")):
        if SKIPPED_PARTS.intersection(module.relative_to(ROOT).parts):
            continue
        source = module.read_text(encoding="utf-8")
        nodes = ast.walk(ast.parse(source))
        kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
        docstrings = [ast.get_docstring(node) or "" for node in nodes if isinstance(node, kinds)]
        comments = [line.split("#", 1)[1] for line in source.splitlines() if "#" in line]
        yield str(module.relative_to(ROOT)), "\n".join(docstrings + comments), set()


def exists(path: str) -> bool:
    """The path, or a module's attribute named as ``folder/module.attribute``."""
    module, _, attribute = path.rpartition(".")
    return (ROOT / path).exists() or bool(module and attribute.isidentifier() and (ROOT / f"{module}.py").exists())


def stale_paths() -> dict[str, list[str]]:
    outputs = ignored_folders()
    stale: dict[str, list[str]] = {}
    for where, text, written in [*page_texts(), *module_texts()]:
        for match in PATH.finditer(text):
            path = match.group(1).rstrip(".")
            if path in written or path.startswith(tuple(outputs)) or exists(path):
                continue
            stale.setdefault(where, []).append(path)
    return stale


def test_every_path_a_doc_or_docstring_names_exists():
    stale = stale_paths()
    assert not stale, "paths that do not exist:\n" + "\n".join(f"  {where}: {paths}" for where, paths in stale.items())


def test_the_check_finds_a_stale_path_and_passes_the_allowed_kinds():
    assert PATH.findall("see `tiered_jobs/nowhere.py` and tests/x/y.py.") == ["tiered_jobs/nowhere.py", "tests/x/y.py"]
    assert "bench/results/" in ignored_folders()
    assert exists("tests/support/aws_faults.lose_answers") and not exists("tests/support/aws_faults.py.gone")
    assert "tiered_jobs" in TOP and "docs" in TOP
