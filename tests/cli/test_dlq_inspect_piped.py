"""``dlq inspect`` in a pipe at ``COLUMNS=80``: its first line and every group's row each on one line, times whole."""

from __future__ import annotations

import re

from typer.testing import CliRunner

from tests.cli.test_cli import _dead_letter

TIME = r"\d{4}-\d\d-\d\d \d\d:\d\d"


def test_piped_at_80_columns_the_summary_and_each_row_are_one_line_with_their_times(deployment):
    from tiered_jobs.cli import app

    message = "payload field 'amount' must be >= 1, got -5, and the partner's ledger said so at length"
    _dead_letter(deployment, "critical", "k1", error_message=message)

    result = CliRunner(env={"COLUMNS": "80"}).invoke(app, ["--stage", "test", "dlq", "inspect", "critical"])

    lines = result.stdout.splitlines()
    assert result.exit_code == 0, result.output
    assert lines[0].startswith("1 letter(s) read from the critical DLQ") and lines[0].endswith("DLQ)."), lines
    (row,) = [line for line in lines if "payments.update_balance" in line]
    assert "must be >= <n>, got <n>, and the partner's ledger said so at length" in row
    assert len(re.findall(TIME, row)) == 2, row  # first failed and dead-lettered, whole
