"""``tiered-jobs publish --at``, ``cancel`` and ``schedules`` against the miniature stack in moto."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from tests.cli.conftest import GROUP, create_fired_one_time_schedule
from tiered_jobs.contract.schedules import one_time_schedule_name


def test_publish_at_schedules_once_and_cancel_removes_it(cli, scheduling):
    at = (datetime.now(timezone.utc) + timedelta(hours=2)).replace(second=0, microsecond=0)
    args = ("publish", "payments.capture", "--key", "cap-1", "--payload", '{"order": "o1"}', "--at", at.isoformat())

    first, again = cli(*args), cli(*args)

    assert first.exit_code == 0, first.output
    assert first.output.startswith("Scheduled: payments.capture (key 'cap-1') to tier critical at ")
    assert "tiered-jobs cancel payments.capture cap-1" in first.output
    assert again.exit_code == 0 and again.output.startswith("Already scheduled:")
    name = one_time_schedule_name("payments.capture", "cap-1")
    assert (
        scheduling.get_schedule(Name=name, GroupName=GROUP)["ScheduleExpression"]
        == f"at({at.strftime('%Y-%m-%dT%H:%M:%S')})"
    )

    cancelled, marked = cli("cancel", "payments.capture", "cap-1"), cli("cancel", "payments.capture", "cap-1")
    assert cancelled.exit_code == 0 and "Cancelled payments.capture (key 'cap-1'): its one-time" in cancelled.output
    # no schedule left: the second cancel writes the job's cancel marker, as for a queued job
    assert marked.exit_code == 0 and "no run of it has started" in marked.output


def test_publish_at_a_time_within_a_minute_reports_the_next_whole_minute(cli, scheduling):
    at = (datetime.now(timezone.utc) + timedelta(hours=2)).replace(second=30, microsecond=0)
    result = cli("publish", "payments.capture", "--key", "cap-30", "--at", at.isoformat())
    fires = at.replace(second=0) + timedelta(minutes=1)
    assert result.exit_code == 0 and f" at {fires.isoformat()} (one-time schedule" in result.output
    schedule = scheduling.get_schedule(Name=one_time_schedule_name("payments.capture", "cap-30"), GroupName=GROUP)
    assert schedule["ScheduleExpression"] == f"at({fires.strftime('%Y-%m-%dT%H:%M:%S')})"


def test_cancel_of_a_job_whose_time_has_come_leaves_its_schedule_and_marks_the_sent_job(cli, scheduling, deployment):
    """Its schedule lingers after the fire (Scheduler deletes it later): cancel must not claim to delete it; the
    job it sent is cancelled in its queue by the marker."""
    name = one_time_schedule_name("payments.capture", "cap-due")
    due = (datetime.now(timezone.utc) - timedelta(seconds=30)).replace(microsecond=0)
    create_fired_one_time_schedule(scheduling, name, due)
    result = cli("cancel", "payments.capture", "cap-due")
    assert scheduling.get_schedule(Name=name, GroupName=GROUP)["Name"] == name  # left to Scheduler
    # it was sent: the job's cancel marker catches it in its queue instead
    assert result.exit_code == 0 and "no run of it has started" in result.output and "archived unrun" in result.output


def test_schedules_lists_periodic_and_one_time_jobs_with_their_next_fire(cli, scheduling):
    at = (datetime.now(timezone.utc) + timedelta(days=3)).replace(second=0, microsecond=0)
    cli(
        "publish",
        "notifications.send_email",
        "-k",
        "trial-end-42",
        "-p",
        '{"to": "a@example.com", "subject": "x"}',
        "--at",
        at.isoformat(),
    )

    result = cli("schedules", "--json")
    assert result.exit_code == 0, result.output
    periodic, one_time = json.loads(result.output)["schedules"]
    assert (periodic["name"], periodic["kind"], periodic["tier"], periodic["job_type"]) == (
        "nightly-report",
        "periodic",
        "bulk",
        "analytics.record_event",
    )
    paris = datetime.fromisoformat(periodic["next_fire"]).astimezone(ZoneInfo("Europe/Paris"))
    assert (paris.hour, paris.minute) == (3, 0)
    assert datetime.fromisoformat(periodic["next_fire"]) > datetime.now(timezone.utc)
    assert (one_time["kind"], one_time["tier"], one_time["idempotency_key"]) == (
        "one-time",
        "transactional",
        "trial-end-42",
    )
    assert datetime.fromisoformat(one_time["next_fire"]) == at

    table = cli("schedules")
    assert table.exit_code == 0 and "nightly-report" in table.output and "trial-end-42" in table.output


@pytest.mark.parametrize(
    ("at", "message"),
    [
        ("2030-05-01T09:00:00", "is a naive datetime: give it a time zone"),
        ("2001-05-01T09:00:00+00:00", "is not in the future"),
        ("next tuesday", "--at 'next tuesday' is not an ISO 8601 date-time"),
    ],
)
def test_a_bad_at_is_refused_with_exit_code_2_and_nothing_scheduled(cli, scheduling, at, message):
    result = cli("publish", "payments.capture", "--key", "k", "--at", at)
    assert result.exit_code == 2 and message in result.output
    assert scheduling.list_schedules(GroupName=GROUP)["Schedules"][0]["Name"] == "nightly-report"
    assert len(scheduling.list_schedules(GroupName=GROUP)["Schedules"]) == 1


# -- the table: readable on an 80-column terminal, whole when piped --------------------------------

#: A terminal of 80 columns, as rich detects one (``TTY_COMPATIBLE``), without colours.
TERMINAL_80 = {"COLUMNS": "80", "TTY_COMPATIBLE": "1", "NO_COLOR": "1", "TERM": "xterm"}


def _schedules_output(env: dict[str, str]) -> str:
    from typer.testing import CliRunner

    from tiered_jobs.cli import app

    result = CliRunner(env=env).invoke(app, ["--stage", "test", "schedules"])
    assert result.exit_code == 0, result.output
    return re.sub(r"\x1b\[[0-9;]*m", "", result.stdout)  # a terminal gets bold headings even without colours


def _publish_a_one_time_job(cli) -> datetime:
    at = (datetime.now(timezone.utc) + timedelta(days=3)).replace(second=0, microsecond=0)
    payload = '{"to": "a@example.com", "subject": "x"}'
    result = cli("publish", "notifications.send_email", "-k", "trial-end-42", "-p", payload, "--at", at.isoformat())
    assert result.exit_code == 0, result.output
    return at


def test_schedules_on_80_columns_splits_no_value(cli, scheduling):
    at = _publish_a_one_time_job(cli)

    output = _schedules_output(TERMINAL_80)

    lines = output.splitlines()
    assert lines and max(len(line.rstrip()) for line in lines) <= 80, output
    # every value is whole on one line: a folded cell would leave a piece of it on the next line
    one_time_name = one_time_schedule_name("notifications.send_email", "trial-end-42")
    for value in (
        "analytics.record_event",
        "notifications.send_email",
        "transactional",
        "trial-end-42",
        at.strftime("%Y-%m-%d %H:%M:%S"),
        "cron(0 3 * * ? *) Europe/Paris",
        one_time_name,
    ):
        assert any(value in line for line in lines), (value, output)
    assert not any(line.strip() and line.strip() in one_time_name and line.strip() != one_time_name for line in lines)


def test_schedules_on_a_wide_terminal_is_a_table_of_one_line_per_schedule(cli, scheduling):
    _publish_a_one_time_job(cli)

    output = _schedules_output({**TERMINAL_80, "COLUMNS": "140"})

    rows = [line for line in output.splitlines() if line.startswith("│")]
    assert len(rows) == 2 and max(len(line) for line in output.splitlines()) <= 140, output
    assert "│ schedule:nightly-report:… " in rows[0] and "│ trial-end-42 " in rows[1]


def test_schedules_piped_prints_every_column_whole_whatever_columns_says(cli, scheduling):
    at = _publish_a_one_time_job(cli)

    output = _schedules_output({"COLUMNS": "40"})

    [header] = [line for line in output.splitlines() if line.startswith("┃")]
    assert [cell.strip() for cell in header.split("┃")[1:-1]] == [
        "Name",
        "Kind",
        "Expression",
        "Time zone",
        "Job type",
        "Tier",
        "Next fire (UTC)",
        "Key",
    ]
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in output.splitlines() if line.startswith("│")]
    assert rows == [
        [
            "nightly-report",
            "periodic",
            "cron(0 3 * * ? *)",
            "Europe/Paris",
            "analytics.record_event",
            "bulk",
            rows[0][6],  # the next 03:00 in Paris: its own test above
            "schedule:nightly-report:<aws.scheduler.scheduled-time>",
        ],
        [
            one_time_schedule_name("notifications.send_email", "trial-end-42"),
            "one-time",
            f"at({at.strftime('%Y-%m-%dT%H:%M:%S')})",
            "UTC",
            "notifications.send_email",
            "transactional",
            at.strftime("%Y-%m-%d %H:%M:%S"),
            "trial-end-42",
        ],
    ]
