"""The tiers' view of ``up`` and the demo, and the demo's tables: whole at 80 columns (columns dropped, no value
cut) and at full width in a pipe, whatever ``COLUMNS`` says."""

from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table

from emulator.full_width import FullWidth, FullWidthLive
from emulator.view import COLUMNS, table
from tiered_jobs.operations.status import TierStatus

ROWS = [
    TierStatus(
        tier,
        visible=1234,
        in_flight=20,
        delayed=3,
        dlq=12,
        oldest_age_seconds=3725.0,
        alarms={"dlq-depth": "ALARM", "errors": "OK", "age": "OK"},
        succeeded=10234.0,
        retried=33.0,
        failed=3.0,
    )
    for tier in ("critical", "transactional", "bulk")
]


def _lines(console: Console) -> list[str]:
    assert isinstance(console.file, io.StringIO)
    return console.file.getvalue().splitlines()


def test_at_80_columns_the_view_drops_columns_and_cuts_no_value():
    console = Console(file=io.StringIO(), width=80, force_terminal=True, color_system=None)

    console.print(table(None, "Tiers", ROWS))  # a snapshot given: no session is read

    lines = _lines(console)
    assert max(len(line) for line in lines) <= 80
    assert not any("…" in line for line in lines), lines
    for row in ROWS:  # each row whole on one line: tier, time, counts
        assert any(row.tier in line and "1h 2m" in line and "10234" in line for line in lines), lines


def test_piped_the_live_views_last_table_has_every_column_one_line_per_tier():
    console = Console(file=io.StringIO(), width=80, force_terminal=False)

    with FullWidthLive(table(None, "Tiers", ROWS), console=console) as live:
        live.update(table(None, "Tiers (final)", ROWS))

    lines = _lines(console)
    header = next(line for line in lines if "tier" in line)
    assert all(column in header for column in COLUMNS), header
    assert len([line for line in lines if "1h 2m" in line]) == len(ROWS)
    assert not any("…" in line for line in lines), lines


def test_a_demo_table_printed_in_a_pipe_is_not_cropped_at_the_consoles_width():
    wide = Table(title="Summary")
    for column in ("step", "expectation", "result"):
        wide.add_column(column)
    claim = "every job ran once, the balances are exact and no letter was left in any DLQ at the end of the story"
    wide.add_row("end", claim, "ok")
    console = Console(file=io.StringIO(), width=80, force_terminal=False)

    console.print(FullWidth(wide))

    assert any(claim in line and line.rstrip().endswith("│") for line in _lines(console)), _lines(console)
