"""``tiered-jobs status``'s Jobs table: the live counts of each tier and, beneath it, of each job type,
readable on an 80-column terminal and whole when piped; ``--json`` holds them exact."""

from __future__ import annotations

import json
import re
import time
from datetime import datetime, timedelta, timezone

import boto3
import pytest

from tests.cli.test_cli_schedules import TERMINAL_80
from tiered_jobs.cli.counts_table import short
from tiered_jobs.contract.names import Metrics
from tiered_jobs.operations import counts as live
from tiered_jobs.operations.counts import JobTypeCounts, WindowCounts

#: (tier, job type or None for the tier's own series, metric, value, minutes ago).
DATA = (
    ("bulk", None, Metrics.SUCCEEDED, 3, 0),
    ("bulk", None, Metrics.SUCCEEDED, 40, 2),
    ("bulk", None, Metrics.SUCCEEDED, 12_000, 40),
    ("bulk", None, Metrics.FAILED, 1, 20),
    ("bulk", None, Metrics.RATE_LIMITED, 7, 2),
    ("bulk", "analytics.record_event", Metrics.SUCCEEDED, 3, 0),
    ("bulk", "analytics.record_event", Metrics.SUCCEEDED, 40, 2),
    ("bulk", "analytics.record_event", Metrics.SUCCEEDED, 12_000, 40),
    ("bulk", "analytics.record_event", Metrics.FAILED, 1, 20),
    ("bulk", "demo.hello", Metrics.RATE_LIMITED, 7, 2),
    ("critical", "payments.update_balance", Metrics.RETRIED, 2, 1),
)


@pytest.fixture
def counted_jobs(deployment):
    """The datapoints the consumer's EMF becomes, at known minutes (none straddling the minute's end):
    as in every EMF document the consumer writes, each datapoint comes with every other counter at 0."""
    from emulator import moto_patches

    moto_patches.cloudwatch_list_metrics_by_series()  # as CloudWatch lists series (the emulator's gap 16)
    second = datetime.now(timezone.utc).second
    if second >= 45:  # the reads (a console started first included) must fall in the datapoints' minute
        time.sleep(61 - second)
    now = datetime.now(timezone.utc)
    boto3.client("cloudwatch").put_metric_data(
        Namespace=Metrics.NAMESPACE,
        MetricData=[
            {
                "MetricName": counter,
                "Value": float(value if counter == metric else 0),
                "Timestamp": now - timedelta(minutes=minutes_ago),
                "Dimensions": live.job_type_dimensions("test", tier, job_type)
                if job_type
                else live.tier_dimensions("test", tier),
            }
            for tier, job_type, metric, value, minutes_ago in DATA
            for counter in live.COUNTERS.values()
        ],
    )


def _status(env: dict[str, str]) -> list[str]:
    from typer.testing import CliRunner

    from tiered_jobs.cli import app

    result = CliRunner(env=env).invoke(app, ["--stage", "test", "status"])
    assert result.exit_code == 0, result.output
    lines = re.sub(r"\x1b\[[0-9;]*m", "", result.stdout).splitlines()
    start = next(n for n, line in enumerate(lines) if "Jobs · last 1 / 5 / 60 min" in line)
    end = next(n for n, line in enumerate(lines) if n > start + 4 and not line.strip())
    return lines[start:end]


def _rows(table: list[str]) -> dict[str, list[str]]:
    """Title, a blank line, the header, its rule, then the rows."""
    return {line.split()[0]: line.split()[1:] for line in table[4:]}


def test_status_on_80_columns_shows_each_tier_then_its_job_types(counted_jobs):
    table = _status(TERMINAL_80)

    assert max(len(line.rstrip()) for line in table) <= 80, "\n".join(table)
    assert table[2].split() == ["Tier", "/", "job", "type", "Completed", "Failed", "Retried", "Held"]
    rows = _rows(table)
    assert rows["bulk"] == ["3/43/12.0k", "0/0/1", "0/0/0", "0/7/7"]
    assert rows["analytics.record_event"] == ["3/43/12.0k", "0/0/1", "0/0/0", "0/0/0"]
    assert rows["demo.hello"] == ["0/0/0", "0/0/0", "0/0/0", "0/7/7"]
    assert rows["critical"] == ["0/0/0"] * 4  # the tier's own series holds nothing: shown as read
    assert rows["payments.update_balance"] == ["0/0/0", "0/0/0", "0/2/2", "0/0/0"]
    names = [line.split()[0] for line in table[4:]]
    assert names == [
        "critical",
        "payments.update_balance",
        "transactional",
        "bulk",
        "analytics.record_event",
        "demo.hello",
    ]  # each job type under its tier, indented
    assert all(line.startswith("    ") == ("." in line.split()[0]) for line in table[4:])


def test_status_piped_and_as_json_keeps_the_counts_exact(counted_jobs):
    piped = _rows(_status({"COLUMNS": "60"}))
    assert piped["bulk"][0] == "3/43/12.0k"

    from typer.testing import CliRunner

    from tiered_jobs.cli import app

    as_json = json.loads(CliRunner().invoke(app, ["--stage", "test", "status", "--json"]).stdout)
    bulk = next(row for row in as_json["tiers"] if row["tier"] == "bulk")
    assert bulk["counts"]["60m"] == {"completed": 12_043, "failed": 1, "retried": 0, "held": 7}
    assert [(row["tier"], row["job_type"]) for row in as_json["job_types"]] == [
        ("bulk", "analytics.record_event"),
        ("bulk", "demo.hello"),
        ("critical", "payments.update_balance"),
    ]
    assert as_json["job_types"][0]["counts"]["5m"] == {"completed": 43, "failed": 0, "retried": 0, "held": 0}


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0, "0"),
        (9_999, "9999"),
        (10_000, "10.0k"),
        (12_345, "12.3k"),
        (99_960, "100k"),
        (123_456, "123k"),
        (999_999, "1.0M"),
        (2_500_000, "2.5M"),
        (150_000_000, "150M"),
    ],
)
def test_a_count_past_four_digits_is_shortened(value, text):
    assert short(value) == text


def test_on_a_narrow_terminal_a_name_folds_and_no_count_is_cut():
    """Every count at its widest (four digits in every window): the names give way, never a count."""
    from rich.console import Console

    from tiered_jobs.cli.counts_table import jobs_table
    from tiered_jobs.operations.status import StageStatus, TierStatus

    widest = {label: WindowCounts(9_999, 9_999, 9_999, 9_999) for label in live.WINDOWS}
    read = StageStatus(
        "s",
        "src",
        [TierStatus("transactional", 0, 0, 0, 0, counts=widest)],
        job_types=[JobTypeCounts("transactional", "notifications.send_welcome_email_later", widest)],
    )
    console = Console(width=80, force_terminal=False, record=True)
    console.print(jobs_table(read))
    lines = console.export_text().splitlines()

    assert max(len(line.rstrip()) for line in lines) <= 80
    assert sum(line.count("9999/9999/9999") for line in lines) == 8 and "…" not in "".join(lines)
    assert "".join(line.split()[0] for line in lines[5:] if line.strip()).count("notifications") == 1
