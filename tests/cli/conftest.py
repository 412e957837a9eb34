"""Fixtures: the miniature stack of the publisher tests, a CLI runner with a wide terminal."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner


@pytest.fixture
def cli():
    """``cli("status")`` runs ``tiered-jobs --stage test status`` in-process and returns the result."""
    from tiered_jobs.cli import app

    runner = CliRunner(env={"COLUMNS": "250"})

    def invoke(*args: str, stage: str = "test"):
        return runner.invoke(app, ["--stage", stage, *args])

    return invoke
