"""ruff (lint and import order) and mypy (strict for what runs in Lambda and the contract) have zero findings.

Both read their settings from pyproject.toml; the versions are pinned in requirements.txt.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_finds_nothing():
    result = _run("ruff", "check", "--no-cache", ".")
    assert result.returncode == 0, f"ruff check . found:\n{result.stdout}{result.stderr}"


@pytest.mark.timeout(900)  # a cold mypy cache checks the whole tree, a minute or two
def test_mypy_finds_nothing():
    result = _run("mypy")
    assert result.returncode == 0, f"mypy found:\n{result.stdout}{result.stderr}"
