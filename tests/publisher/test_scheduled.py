"""Jobs for later: one-time EventBridge Scheduler schedules on moto, checked against Scheduler's API model."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone

import boto3
import botocore.session
import pytest

from tests.publisher.conftest import GROUP, ROLE_ARN
from tests.support.stack import received_bodies
from tiered_jobs.contract.names import SQS_MAX_MESSAGE_BYTES, Schedules, Ssm
from tiered_jobs.contract.routing import Routes
from tiered_jobs.contract.schedules import MAX_TARGET_INPUT_BYTES, one_time_problems, one_time_schedule_name
from tiered_jobs.publisher import InvalidJobError, Job, Publisher
from tiered_jobs.stage.discovery import DiscoveryError

NOW = datetime(2030, 5, 1, 12, 0, 0, tzinfo=timezone.utc)


@pytest.fixture
def later(deployment, sqs, scheduler, target) -> Publisher:
    return Publisher(
        deployment.queue_urls,
        Routes(deployment.routes),
        sqs=sqs,
        scheduler=scheduler,
        scheduling=target,
        clock=lambda: NOW,
    )


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
    delayed = sqs.get_queue_attributes(
        QueueUrl=deployment.queue_urls["bulk"], AttributeNames=["ApproximateNumberOfMessagesDelayed"]
    )["Attributes"]
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
        # Rounded up to its next whole minute, the last half-minute of 2199 is in 2200.
        ({"at": datetime(2199, 12, 31, 23, 59, 30, tzinfo=timezone.utc)}, "beyond EventBridge Scheduler's range"),
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
    publisher = Publisher(
        deployment.queue_urls,
        Routes(deployment.routes),
        sqs=sqs,
        scheduler=scheduler,
        scheduling=target,
        clock=lambda: NOW,
        schedule_beyond_seconds=0,
    )
    assert publisher.publish("testjobs.ok", {"label": "a"}, "d1", delay=5).schedule_name is not None
    assert publisher.publish("testjobs.ok", {"label": "a"}, "d2").message_id is not None  # no delay: SQS
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
    ssm.meta.events.register(
        "before-parameter-build.ssm.GetParameters", lambda params, **_: calls.append(params["Names"])
    )
    for key, value in (
        (Schedules.SSM_GROUP_NAME, GROUP),
        (Schedules.SSM_ROLE_ARN, ROLE_ARN),
        (Schedules.SSM_DLQ_ARN, target.dlq_arn),
    ):
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


# -- Scheduler's own limits, before anything is sent --------------------------------------------


def test_a_time_within_a_minute_is_rounded_up_so_the_job_never_runs_early(later, scheduler):
    """Scheduler fires an at() anywhere within its minute: a job asked for 15:00:20 would run at 15:00:0x."""
    from zoneinfo import ZoneInfo

    paris = datetime(2030, 5, 1, 17, 0, 20, 500_000, tzinfo=ZoneInfo("Europe/Paris"))  # 15:00:20.5 UTC
    asked = later.publish("payments.capture", {}, "rounded", at=paris)
    delayed = later.publish("analytics.page_view", {}, "late", delay=timedelta(minutes=16, seconds=1))
    on_the_minute = later.publish("analytics.page_view", {}, "whole", at=NOW + timedelta(hours=2))

    assert asked.fire_at == datetime(2030, 5, 1, 17, 1, tzinfo=ZoneInfo("Europe/Paris"))  # in the caller's zone
    assert asked.fire_at.utcoffset() == paris.utcoffset()
    assert delayed.fire_at == NOW + timedelta(minutes=17) and on_the_minute.fire_at == NOW + timedelta(hours=2)
    assert sorted(s["ScheduleExpression"] for s in _schedules(scheduler)) == [
        "at(2030-05-01T12:17:00)",
        "at(2030-05-01T14:00:00)",
        "at(2030-05-01T15:01:00)",
    ]
    assert "scheduled for 2030-05-01T17:01:00+02:00" in asked.describe()


def _payload_of(body_bytes: int) -> dict:
    """A payload whose one-time envelope is about ``body_bytes`` long."""
    return {"blob": "x" * body_bytes}


def test_a_one_time_body_over_schedulers_256_kb_is_refused_before_anything_is_sent(later, scheduler, deployment):
    with pytest.raises(InvalidJobError) as caught:
        later.publish_batch(
            [
                Job("analytics.page_view", {}, "small", at=NOW + timedelta(hours=1)),
                Job("analytics.page_view", _payload_of(MAX_TARGET_INPUT_BYTES), "big", at=NOW + timedelta(hours=1)),
            ]
        )
    (problem,) = caught.value.problems
    assert problem.startswith("job #1 ") and "'big'" in problem
    assert f"over EventBridge Scheduler's {MAX_TARGET_INPUT_BYTES}-byte (256 KB) limit" in problem
    assert _nothing_anywhere(scheduler, deployment)
    # The same job due within 15 minutes goes to SQS, whose limit is 1 MiB: the rule is the schedule's only.
    assert MAX_TARGET_INPUT_BYTES < SQS_MAX_MESSAGE_BYTES
    assert later.publish("analytics.page_view", _payload_of(MAX_TARGET_INPUT_BYTES), "big", delay=60).message_id


def test_the_scheduler_input_limit_counts_utf8_bytes():
    assert one_time_problems("x" * MAX_TARGET_INPUT_BYTES) == []
    assert "262145 bytes" in one_time_problems("x" * (MAX_TARGET_INPUT_BYTES + 1))[0]
    assert one_time_problems("é" * (MAX_TARGET_INPUT_BYTES // 2)) == []  # two bytes each
    assert one_time_problems("é" * (MAX_TARGET_INPUT_BYTES // 2) + "x")


def test_the_scheduler_input_limit_is_beyond_what_botocore_checks():
    """botocore's model bounds ``Target.Input`` below only: the 256 KB quota is the contract's to enforce."""
    shape = botocore.session.get_session().get_service_model("scheduler").shape_for("TargetInput")
    assert shape.metadata == {"min": 1}


@pytest.mark.parametrize("where", ["payload", "key"])
def test_a_one_time_job_containing_a_scheduler_context_attribute_is_refused(later, scheduler, deployment, where):
    """Scheduler replaces ``<aws.scheduler.…>`` in the input when it fires: the job would arrive changed."""
    payload = {"note": "sent at <aws.scheduler.scheduled-time>"} if where == "payload" else {}
    key = "k-<aws.scheduler.execution-id>" if where == "key" else "k"
    with pytest.raises(InvalidJobError, match="which EventBridge Scheduler would replace when the one-time schedule"):
        later.publish("analytics.page_view", payload, key, at=NOW + timedelta(hours=1))
    assert _nothing_anywhere(scheduler, deployment)
    assert later.publish("analytics.page_view", payload, key).message_id  # straight to SQS: nothing replaces it


def _at(later, clock) -> Publisher:
    """The same stage's publisher, with another clock."""
    return Publisher(
        later.queues,
        later.routes,
        sqs=later.sqs,
        scheduler=later.scheduler,
        scheduling=later.scheduling_target(),
        clock=lambda: clock,
    )


def test_cancel_once_the_time_has_come_says_already_sent_and_leaves_the_schedule(later, scheduler):
    """``ActionAfterCompletion=DELETE`` is not immediate: a fired job's schedule lingers, and deleting it then
    would claim a cancel that did not happen."""
    later.publish("payments.capture", {}, "cap-1", at=NOW + timedelta(hours=1))
    later.publish("payments.capture", {}, "cap-2", at=NOW + timedelta(hours=1))

    fired = _at(later, NOW + timedelta(hours=1, seconds=5))
    outcome = fired.cancellation("payments.capture", "cap-1")
    assert (outcome.outcome, outcome.fire_at) == ("already sent", NOW + timedelta(hours=1))
    assert fired.cancel("payments.capture", "cap-1") is False
    assert len(_schedules(scheduler)) == 2  # left to Scheduler
    assert _at(later, NOW + timedelta(minutes=59, seconds=59)).cancel("payments.capture", "cap-2") is True
    assert later.cancellation("payments.capture", "never").outcome == "not found"


def test_a_one_time_schedule_keeps_the_tenant(later, scheduler):
    """The envelope always carries the tenant; the target's ``SqsParameters.MessageGroupId`` makes the message
    a fair-queue message of that tenant, as a direct send's ``MessageGroupId`` does."""
    later.publish("payments.capture", {}, "for-acme", at=NOW + timedelta(hours=1), tenant="acme")
    later.publish("payments.capture", {}, "for-nobody", at=NOW + timedelta(hours=1))
    by_key = {json.loads(s["Target"]["Input"])["idempotency_key"]: s["Target"] for s in _schedules(scheduler)}
    assert by_key["for-acme"]["SqsParameters"] == {"MessageGroupId": "acme"}
    assert json.loads(by_key["for-acme"]["Input"])["tenant"] == "acme"
    assert "SqsParameters" not in by_key["for-nobody"]
