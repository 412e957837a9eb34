"""``tiered-jobs publish --at``, ``cancel`` and ``schedules`` against the miniature stack in moto."""

from __future__ import annotations

import json
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

    cancelled, nothing = cli("cancel", "payments.capture", "cap-1"), cli("cancel", "payments.capture", "cap-1")
    assert cancelled.exit_code == 0 and "Cancelled payments.capture (key 'cap-1')" in cancelled.output
    assert nothing.exit_code == 1 and "no pending scheduled job payments.capture (key 'cap-1')" in nothing.output


def test_publish_at_a_time_within_a_minute_reports_the_next_whole_minute(cli, scheduling):
    at = (datetime.now(timezone.utc) + timedelta(hours=2)).replace(second=30, microsecond=0)
    result = cli("publish", "payments.capture", "--key", "cap-30", "--at", at.isoformat())
    fires = at.replace(second=0) + timedelta(minutes=1)
    assert result.exit_code == 0 and f" at {fires.isoformat()} (one-time schedule" in result.output
    schedule = scheduling.get_schedule(Name=one_time_schedule_name("payments.capture", "cap-30"), GroupName=GROUP)
    assert schedule["ScheduleExpression"] == f"at({fires.strftime('%Y-%m-%dT%H:%M:%S')})"


def test_cancel_of_a_job_whose_time_has_come_says_it_was_sent(cli, scheduling, deployment):
    """Its schedule lingers after the fire (Scheduler deletes it later): cancel must not claim it."""
    name = one_time_schedule_name("payments.capture", "cap-due")
    due = (datetime.now(timezone.utc) - timedelta(seconds=30)).replace(microsecond=0)
    create_fired_one_time_schedule(scheduling, name, due)
    result = cli("cancel", "payments.capture", "cap-due")
    assert result.exit_code == 1 and "Cancelled" not in result.output
    assert "not cancelled" in result.output and "already sent (or is being sent)" in result.output
    assert scheduling.get_schedule(Name=name, GroupName=GROUP)["Name"] == name  # left to Scheduler


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
