"""Scheduled jobs in local mode: the real stack's schedules, fired by the local emulation into the tier queues.

One session serves the module; it declares a periodic job (``rate(1 minute)``: its first fire is
at creation, so no test waits a minute) and a cron job in a half-hour-offset time zone.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from emulator.session import LocalSession
from emulator.view import job_total
from tests.emulator.local_support import TEST_TIER_SETTINGS, wait_until
from tiered_jobs.contract.names import Alarms, Metrics, Schedules
from tiered_jobs.contract.schedules import (
    one_time_schedule_name,
    periodic_idempotency_key,
)
from tiered_jobs.publisher import Publisher

pytestmark = pytest.mark.e2e

#: A bound for each wait, far above an honest run on a loaded machine.
PATIENCE_SECONDS = 300

SCHEDULES = {
    "heartbeat": {"expression": "rate(1 minute)", "job_type": "demo.flaky", "payload": {"fail_times": 0}},
    "kolkata-daily": {
        "expression": "cron(30 9 * * ? *)",
        "timezone": "Asia/Kolkata",
        "job_type": "notifications.send_email",
        "payload": {"to": "ops@example.com", "subject": "daily"},
    },
}


@pytest.fixture(scope="module")
def session():
    local = LocalSession(
        alarm_interval_seconds=0.5, tier_settings=TEST_TIER_SETTINGS, settings={"schedules": SCHEDULES}
    ).start()
    yield local
    local.stop()


@pytest.fixture(scope="module")
def later(session):
    """A publisher that sends every later job through a one-time schedule (so tests need not wait 15 minutes)."""
    return Publisher.from_stage(
        session.deployment.stage,
        ssm=session.clients("ssm"),
        sqs=session.clients("sqs"),
        scheduler=session.clients("scheduler"),
        schedule_beyond_seconds=0,
    )


def fires_of(session, name):
    return [fire for fire in session.scheduler.fires if fire.schedule_name == name]


def succeeded(session) -> int:
    return job_total(session, "transactional", Metrics.SUCCEEDED, "demo.flaky")


def test_the_declared_schedules_are_deployed_in_the_stage_group(session):
    group = session.deployment.outputs[Schedules.OUTPUT_GROUP_NAME]
    assert group == Schedules.group_name(session.deployment.stage)
    found = {s["Name"]: s for s in session.scheduler.schedules()}
    assert set(found) == set(SCHEDULES)
    assert found["kolkata-daily"]["ScheduleExpressionTimezone"] == "Asia/Kolkata"


def test_a_rate_schedule_fires_at_creation_into_its_queue_and_the_job_runs(session):
    wait_until(lambda: fires_of(session, "heartbeat"), PATIENCE_SECONDS, "the first heartbeat fire")
    wait_until(
        lambda: succeeded(session) >= 1,
        PATIENCE_SECONDS,
        "the heartbeat job done",
        seen=lambda: session.scheduler.fires,
    )
    fire = fires_of(session, "heartbeat")[0]
    transactional = session.deployment.tiers["transactional"].queue_url
    assert fire.queue_url.rsplit("/", 1)[-1] == transactional.rsplit("/", 1)[-1]  # demo.* -> transactional
    # Created during the deployment, before the runner started: this first fire is caught up, not skipped.
    # How late depends on how long the rest of the deployment took (the machine's load), so no bound on it.
    assert fire.lag_seconds >= 0, fire
    print(f"heartbeat's first fire caught up {fire.lag_seconds:.1f} s after its time")


def emails(session, metric) -> int:
    return job_total(session, "transactional", metric, "notifications.send_email")


def test_a_fire_delivered_twice_runs_once_and_carries_the_scheduled_time(session):
    schedule = next(s for s in session.scheduler.schedules() if s["Name"] == "kolkata-daily")
    when = datetime(2030, 1, 1, 4, 0, tzinfo=timezone.utc)  # 09:30 in Kolkata (UTC+5:30); never fires by itself here

    def outcomes() -> dict[str, int]:
        return {metric: emails(session, metric) for metric in (Metrics.SUCCEEDED, Metrics.DUPLICATE)}

    first = session.scheduler.fire(schedule, when)
    wait_until(
        lambda: emails(session, Metrics.SUCCEEDED) >= 1, PATIENCE_SECONDS, "the first delivery done", seen=outcomes
    )
    again = session.scheduler.fire(schedule, when)  # Scheduler is at-least-once: the same fire again
    # The consumer counts an answer from the idempotency store as succeeded *and* duplicate (one EMF line),
    # so both deliveries are done at two successes. Not an exact count of duplicates: on a loaded machine
    # a batch may pass the local timeout and be received again, one more duplicate; the promise is one run.
    wait_until(
        lambda: emails(session, Metrics.SUCCEEDED) >= 2, PATIENCE_SECONDS, "the second delivery done", seen=outcomes
    )
    assert emails(session, Metrics.DUPLICATE) >= 1, outcomes()
    assert emails(session, Metrics.SUCCEEDED) - emails(session, Metrics.DUPLICATE) == 1, outcomes()
    assert first.body == again.body and first.message_id != again.message_id
    assert json.loads(first.body) == {
        "type": "notifications.send_email",
        "payload": {"to": "ops@example.com", "subject": "daily"},
        "version": 1,
        "idempotency_key": periodic_idempotency_key("kolkata-daily", "2030-01-01T04:00:00Z"),
        "published_at": "2030-01-01T04:00:00Z",
    }


def test_a_one_time_job_fires_at_its_time_and_deletes_its_schedule(session, later):
    asked = datetime.now(timezone.utc) + timedelta(seconds=2)
    result = later.publish("demo.flaky", {"fail_times": 0}, "later-1", at=asked)
    cancelled = later.publish("demo.flaky", {"fail_times": 0}, "later-2", at=asked)
    assert result.schedule_name == one_time_schedule_name("demo.flaky", "later-1")
    assert later.publish("demo.flaky", {"fail_times": 0}, "later-1", at=asked).already_scheduled
    assert later.cancel("demo.flaky", "later-2") is True
    at = result.fire_at  # the next whole minute: Scheduler fires within an at()'s minute, never before it
    assert at is not None and at >= asked and (at.second, at.microsecond) == (0, 0)

    wait_until(
        lambda: fires_of(session, result.schedule_name),
        (at - asked).total_seconds() + PATIENCE_SECONDS,
        "the one-time fire",
        seen=lambda: session.scheduler.fires,
    )
    (fire,) = fires_of(session, result.schedule_name)
    # Fired once, for its time, never before it. How soon after is the runner's round on this machine's
    # load (Scheduler itself documents 60 s): the precision is proven on a clock the test moves,
    # tests/emulator/test_scheduler_emulation.py, and this run's lag is printed, not bounded.
    assert fire.scheduled_time == at and fire.lag_seconds >= 0, fire
    print(f"local firing lag: {fire.lag_seconds * 1000:.0f} ms")
    names = {s["Name"] for s in session.scheduler.schedules()}
    assert result.schedule_name not in names  # ActionAfterCompletion=DELETE
    assert fires_of(session, cancelled.schedule_name) == []


def test_an_undeliverable_fire_is_dead_lettered_and_pages(session, inbox_states=None):
    scheduler, sqs = session.clients("scheduler"), session.clients("sqs")
    group = session.deployment.outputs[Schedules.OUTPUT_GROUP_NAME]
    dlq_arn = session.deployment.outputs[Schedules.OUTPUT_DLQ_ARN]
    scheduler.create_schedule(
        Name="to-nowhere",
        GroupName=group,
        ScheduleExpression="rate(1 minute)",
        FlexibleTimeWindow={"Mode": "OFF"},
        Target={
            "Arn": dlq_arn.rsplit(":", 1)[0] + ":no-such-queue",
            "RoleArn": "arn:aws:iam::123456789012:role/x",
            "Input": "{}",
            "DeadLetterConfig": {"Arn": dlq_arn},
        },
    )
    wait_until(lambda: fires_of(session, "to-nowhere"), PATIENCE_SECONDS, "the failed fire")
    assert fires_of(session, "to-nowhere")[0].error
    dlq_url = session.deployment.outputs[Schedules.OUTPUT_DLQ_URL]
    (letter,) = sqs.receive_message(QueueUrl=dlq_url, MessageAttributeNames=["All"], VisibilityTimeout=0)["Messages"]
    assert letter["MessageAttributes"]["TARGET_ARN"]["StringValue"].endswith(":no-such-queue")
    name = Schedules.dlq_alarm_name(session.deployment.stage)
    cloudwatch = session.clients("cloudwatch")
    wait_until(
        lambda: cloudwatch.describe_alarms(AlarmNames=[name])["MetricAlarms"][0]["StateValue"] == "ALARM",
        PATIENCE_SECONDS,
        "the schedules DLQ alarm",
        seen=lambda: cloudwatch.describe_alarms(AlarmNames=[name])["MetricAlarms"][0]["StateValue"],
    )
    assert name.startswith(Alarms.prefix(session.deployment.stage))
    scheduler.delete_schedule(Name="to-nowhere", GroupName=group)
