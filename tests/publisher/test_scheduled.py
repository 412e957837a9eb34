"""Jobs for later: one-time EventBridge Scheduler schedules on moto, checked against Scheduler's API model."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone

import boto3
import botocore.session
import pytest

from tests.support.stack import received_bodies
from tiered_jobs.contract.names import Schedules, Ssm
from tiered_jobs.contract.routing import Routes
from tiered_jobs.contract.schedules import one_time_schedule_name
from tiered_jobs.discovery import DiscoveryError
from tiered_jobs.publisher import InvalidJobError, Publisher
from tiered_jobs.scheduling import SchedulingTarget

NOW = datetime(2030, 5, 1, 12, 0, 0, tzinfo=timezone.utc)
GROUP = Schedules.group_name("test")
ROLE_ARN = "arn:aws:iam::123456789012:role/one-time"


@pytest.fixture
def scheduler(aws):
    client = boto3.client("scheduler")
    client.create_schedule_group(Name=GROUP)
    return client


@pytest.fixture
def target(deployment, sqs) -> SchedulingTarget:
    arns = {tier: sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
            for tier, url in deployment.queue_urls.items()}
    dlq = sqs.create_queue(QueueName="schedules-dlq")["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    return SchedulingTarget(group_name=GROUP, role_arn=ROLE_ARN, dlq_arn=dlq_arn, queue_arns=arns)


@pytest.fixture
def later(deployment, sqs, scheduler, target) -> Publisher:
    return Publisher(deployment.queue_urls, Routes(deployment.routes), sqs=sqs, scheduler=scheduler,
                     scheduling=target, clock=lambda: NOW)


def _schedules(scheduler) -> list[dict]:
    names = [s["Name"] for s in scheduler.list_schedules(GroupName=GROUP)["Schedules"]]
    return [scheduler.get_schedule(Name=name, GroupName=GROUP) for name in names]


def _nothing_anywhere(scheduler, deployment) -> bool:
    return _schedules(scheduler) == [] and all(received_bodies(url) == [] for url in deployment.queue_urls.values())


def test_a_job_at_a_time_beyond_15_minutes_becomes_a_one_time_schedule(later, scheduler, target, deployment):
    at = NOW + timedelta(hours=3)
    result = later.publish("payments.capture", {"order": "o1"}, "cap-1", at=at)

    assert result.ok and not result.already_scheduled and result.message_id is None
    assert result.schedule_name == one_time_schedule_name("payments.capture", "cap-1") and result.fire_at == at
    (schedule,) = _schedules(scheduler)
    assert schedule["ScheduleExpression"] == "at(2030-05-01T15:00:00)"
    assert schedule["ScheduleExpressionTimezone"] == "UTC"
    assert schedule["ActionAfterCompletion"] == "DELETE"
    assert schedule["FlexibleTimeWindow"] == {"Mode": "OFF"}
    assert schedule["Target"]["Arn"] == target.queue_arns["critical"]  # routed: payments.* -> critical
    assert schedule["Target"]["RoleArn"] == ROLE_ARN
    assert schedule["Target"]["DeadLetterConfig"] == {"Arn": target.dlq_arn}
    body = json.loads(schedule["Target"]["Input"])
    assert (body["type"], body["idempotency_key"], body["payload"]) == ("payments.capture", "cap-1", {"order": "o1"})
    assert received_bodies(deployment.queue_urls["critical"]) == []  # nothing in SQS yet


def test_an_aware_time_in_another_zone_is_written_in_utc(later, scheduler):
    from zoneinfo import ZoneInfo

    later.publish("analytics.page_view", {}, "k", at=datetime(2030, 5, 2, 9, 30, tzinfo=ZoneInfo("Europe/Paris")))
    assert _schedules(scheduler)[0]["ScheduleExpression"] == "at(2030-05-02T07:30:00)"  # CEST = UTC+2


def test_a_delay_beyond_15_minutes_is_scheduled_and_within_stays_on_sqs(later, scheduler, sqs, deployment):
    scheduled = later.publish("analytics.page_view", {}, "late", delay=timedelta(minutes=16))
    near = later.publish("analytics.page_view", {}, "soon", delay=900)
    near_at = later.publish("analytics.page_view", {}, "soon-at", at=NOW + timedelta(minutes=10))

    assert scheduled.fire_at == NOW + timedelta(minutes=16)
    assert [s["ScheduleExpression"] for s in _schedules(scheduler)] == ["at(2030-05-01T12:16:00)"]
    assert near.message_id and near_at.message_id and near.schedule_name is None
    delayed = sqs.get_queue_attributes(QueueUrl=deployment.queue_urls["bulk"],
                                       AttributeNames=["ApproximateNumberOfMessagesDelayed"])["Attributes"]
    assert delayed["ApproximateNumberOfMessagesDelayed"] == "2"


def test_publishing_the_same_job_again_is_already_scheduled(later, scheduler):
    first = later.publish("payments.capture", {}, "cap-1", at=NOW + timedelta(hours=1))
    again = later.publish("payments.capture", {}, "cap-1", at=NOW + timedelta(hours=2))

    assert first.ok and again.ok and again.already_scheduled
    assert "already scheduled" in again.describe()
    assert [s["ScheduleExpression"] for s in _schedules(scheduler)] == ["at(2030-05-01T13:00:00)"]  # the first one


def test_cancel_removes_a_pending_job_once(later, scheduler):
    later.publish("payments.capture", {}, "cap-1", at=NOW + timedelta(hours=1))
    later.publish("payments.capture", {}, "cap-2", at=NOW + timedelta(hours=1))

    assert later.cancel("payments.capture", "cap-1") is True
    assert later.cancel("payments.capture", "cap-1") is False  # nothing pending any more
    assert later.cancel("payments.capture", "never") is False
    assert [s["Name"] for s in _schedules(scheduler)] == [one_time_schedule_name("payments.capture", "cap-2")]


@pytest.mark.parametrize(
    ("when", "message"),
    [
        ({"at": datetime(2030, 5, 1, 15, 0)}, "is a naive datetime: give it a time zone"),
        ({"at": NOW - timedelta(seconds=1)}, "is not in the future (now 2030-05-01T12:00:00+00:00)"),
        ({"at": NOW}, "is not in the future"),
        (
            {"at": datetime(2200, 1, 1, tzinfo=timezone.utc)},
            "beyond EventBridge Scheduler's range (up to the year 2199)",
        ),
        ({"at": "2030-05-01T15:00:00Z"}, "at must be a datetime with a time zone, got str"),
        ({"at": NOW + timedelta(hours=1), "delay": 60}, "give either delay or at, not both"),
        ({"delay": timedelta(days=365 * 200)}, "beyond EventBridge Scheduler's range"),
    ],
)
def test_a_bad_time_is_refused_and_nothing_is_sent(later, scheduler, deployment, when, message):
    with pytest.raises(InvalidJobError) as caught:
        later.publish_batch(
            [
                {
                    "job_type": "analytics.page_view",
                    "payload": {},
                    "idempotency_key": "good",
                    "at": NOW + timedelta(hours=1),
                },
                {"job_type": "analytics.page_view", "payload": {}, "idempotency_key": "bad", **when},
            ]
        )
    assert message in str(caught.value) and "job #1" in str(caught.value)
    assert _nothing_anywhere(scheduler, deployment)


def test_a_lower_threshold_schedules_short_delays_too(deployment, sqs, scheduler, target):
    publisher = Publisher(deployment.queue_urls, Routes(deployment.routes), sqs=sqs, scheduler=scheduler,
                          scheduling=target, clock=lambda: NOW, schedule_beyond_seconds=0)
    assert publisher.publish("demo.flaky", {"fail_times": 0}, "d1", delay=5).schedule_name is not None
    assert publisher.publish("demo.flaky", {"fail_times": 0}, "d2").message_id is not None  # no delay: SQS
    with pytest.raises(ValueError, match="schedule_beyond_seconds must be 0-900"):
        Publisher(deployment.queue_urls, Routes(deployment.routes), schedule_beyond_seconds=901)


def test_without_scheduling_configured_a_later_job_fails_before_anything_is_sent(deployment, sqs, scheduler):
    publisher = Publisher(deployment.queue_urls, Routes(deployment.routes), sqs=sqs, clock=lambda: NOW)
    with pytest.raises(DiscoveryError, match="no scheduling configured"):
        publisher.publish_batch(
            [
                {"job_type": "analytics.page_view", "payload": {}, "idempotency_key": "now"},
                {
                    "job_type": "analytics.page_view",
                    "payload": {},
                    "idempotency_key": "later",
                    "at": NOW + timedelta(hours=1),
                },
            ]
        )
    assert _nothing_anywhere(scheduler, deployment)


def test_from_stage_finds_the_scheduling_parts_in_ssm_on_first_need(deployment, sqs, scheduler, target):
    ssm = boto3.client("ssm")
    calls: list[list[str]] = []
    ssm.meta.events.register("before-parameter-build.ssm.GetParameters",
                             lambda params, **_: calls.append(params["Names"]))
    for key, value in ((Schedules.SSM_GROUP_NAME, GROUP), (Schedules.SSM_ROLE_ARN, ROLE_ARN),
                       (Schedules.SSM_DLQ_ARN, target.dlq_arn)):
        ssm.put_parameter(Name=Schedules.ssm(deployment.stage, key), Value=value, Type="String")
    for tier, arn in target.queue_arns.items():
        ssm.put_parameter(Name=Ssm.tier(deployment.stage, tier, Ssm.TIER_QUEUE_ARN), Value=arn, Type="String")

    publisher = Publisher.from_stage(deployment.stage, ssm=ssm, sqs=sqs, scheduler=scheduler)
    publisher.publish("payments.capture", {}, "now")
    looked_up_for_queues = len(calls)
    publisher.publish("payments.capture", {}, "later", delay=timedelta(hours=2))

    assert len(calls) > looked_up_for_queues  # scheduling looked up only when first needed
    (schedule,) = _schedules(scheduler)
    assert schedule["Target"]["Arn"] == target.queue_arns["critical"]


def test_one_time_schedule_names_fit_schedulers_rules():
    shape = botocore.session.get_session().get_service_model("scheduler").shape_for("Name")
    pattern, longest = shape.metadata["pattern"], shape.metadata["max"]
    names = {one_time_schedule_name("payments.capture", key) for key in ("a", "b", "x" * 256, "ü/é:*")}
    assert len(names) == 4
    for name in names:
        assert re.fullmatch(pattern, name) and len(name) <= longest
    assert one_time_schedule_name("a.b", "k") == one_time_schedule_name("a.b", "k")
    assert one_time_schedule_name("a.b", "k") != one_time_schedule_name("a.c", "k")
