"""docs/local.md and the README agree on how to run things: the same demo duration, and commands
named where ``make setup`` puts them (``tiered-jobs`` is not on PATH)."""

from __future__ import annotations

import re

from emulator.deploy import REPO_ROOT

README = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
LOCAL = (REPO_ROOT / "docs" / "local.md").read_text(encoding="utf-8")


def demo_duration(text: str) -> str:
    (line,) = [line for line in text.splitlines() if line.startswith("make demo ")]
    match = re.search(r"~\s?(\d+ (?:s|minutes?))", line)
    assert match, line
    return match.group(1)


def code_lines(text: str) -> list[str]:
    blocks = re.findall(r"```bash\n(.*?)```", text, flags=re.DOTALL)
    return [line.strip() for block in blocks for line in block.splitlines()]


def test_the_demo_duration_is_the_same_in_the_readme_and_in_local_md():
    assert demo_duration(README) == demo_duration(LOCAL)


def test_local_md_runs_the_cli_from_the_virtualenv():
    bare = [line for line in code_lines(LOCAL) if line.startswith("tiered-jobs ")]
    assert bare == []
    assert any(line.startswith(".venv/bin/python -m emulator up") for line in code_lines(LOCAL))
    assert "source .venv/bin/activate" in LOCAL
