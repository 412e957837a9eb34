"""The local emulation of EventBridge Scheduler's fires, on moto: what it sends for one schedule."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import boto3

from emulator.scheduler import DEFAULT_INTERVAL_SECONDS, ScheduleRunner
from tests.support.clock import ManualClock
from tiered_jobs.contract.routing import Routes
from tiered_jobs.publisher import Publisher
from tiered_jobs.stage.scheduling import SchedulingTarget


def test_a_one_time_jobs_tenant_is_the_fired_messages_group_id(deployment):
    """The publisher puts the tenant in the schedule's ``SqsParameters.MessageGroupId``; the fire sends with it,
    as Scheduler's SQS target does (a fair-queue message of that tenant), and a job without one sends none."""
    sqs, scheduler = boto3.client("sqs"), boto3.client("scheduler")
    group = "tiered-jobs-test"
    scheduler.create_schedule_group(Name=group)
    arns = {
        tier: sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        for tier, url in deployment.queue_urls.items()
    }
    target = SchedulingTarget(
        group_name=group, role_arn="arn:aws:iam::123456789012:role/one-time", dlq_arn=arns["bulk"], queue_arns=arns
    )
    now = datetime.now(timezone.utc)
    publisher = Publisher(
        deployment.queue_urls,
        Routes(deployment.routes),
        sqs=sqs,
        scheduler=scheduler,
        scheduling=target,
        clock=lambda: now,
        schedule_beyond_seconds=0,
    )
    acme = publisher.publish("payments.capture", {}, "for-acme", delay=60, tenant="acme")
    publisher.publish("payments.capture", {}, "for-nobody", delay=60)

    runner = ScheduleRunner(boto3.client, group, clock=lambda: acme.fire_at + timedelta(seconds=1))
    assert len(runner.poll_once()) == 2
    received = sqs.receive_message(
        QueueUrl=deployment.queue_urls["critical"],
        MaxNumberOfMessages=10,
        MessageSystemAttributeNames=["MessageGroupId"],
    )["Messages"]
    assert sorted(m["Attributes"].get("MessageGroupId", "-") for m in received) == ["-", "acme"]


def test_a_schedule_deleted_between_the_listing_and_its_read_is_gone_not_an_error(aws):
    """The runner's own thread deletes a fired one-time schedule while another reads the group: a read
    of a listed schedule may find it gone (ResourceNotFoundException), and that schedule is skipped."""
    scheduler = boto3.client("scheduler")
    scheduler.create_schedule_group(Name="g")
    for name in ("kept", "fired"):
        scheduler.create_schedule(
            Name=name,
            GroupName="g",
            ScheduleExpression="rate(1 hour)",
            FlexibleTimeWindow={"Mode": "OFF"},
            Target={"Arn": "arn:aws:sqs:us-east-1:123456789012:q", "RoleArn": "arn:aws:iam::123456789012:role/r"},
        )
    real_get = scheduler.get_schedule

    def get_after_a_delete(**kwargs):
        if kwargs["Name"] == "fired":
            scheduler.delete_schedule(Name="fired", GroupName="g")  # the other thread got there first
        return real_get(**kwargs)

    scheduler.get_schedule = get_after_a_delete
    runner = ScheduleRunner(lambda service: scheduler, "g")
    assert [s["Name"] for s in runner.schedules()] == ["kept"]


def test_a_one_time_schedule_fires_once_at_the_first_round_at_its_time_never_before(aws):
    """The local firing precision, on a clock the test moves: what the local-mode test of a one-time job
    asserted in wall-clock seconds, which a loaded machine stretches. A fire goes at the first round whose
    clock has reached its time, so its lag is that round's lateness (one ``interval`` when the loop keeps
    time), and a round before its time sends nothing."""
    sqs, scheduler = boto3.client("sqs"), boto3.client("scheduler")
    url = sqs.create_queue(QueueName="later")["QueueUrl"]
    scheduler.create_schedule_group(Name="g")
    scheduler.create_schedule(
        Name="once",
        GroupName="g",
        ScheduleExpression="at(2030-01-01T04:00:00)",
        FlexibleTimeWindow={"Mode": "OFF"},
        ActionAfterCompletion="DELETE",
        Target={"Arn": "arn:aws:sqs:us-east-1:123456789012:later", "RoleArn": "arn:aws:iam::123456789012:role/r"},
    )
    at = datetime(2030, 1, 1, 4, 0, tzinfo=timezone.utc)
    clock = ManualClock(at - timedelta(milliseconds=1))
    runner = ScheduleRunner(boto3.client, "g", clock=clock)

    assert runner.poll_once() == []  # a millisecond early: nothing
    clock.now = at + timedelta(seconds=DEFAULT_INTERVAL_SECONDS)  # the next round
    (fire,) = runner.poll_once()
    assert (fire.scheduled_time, fire.lag_seconds) == (at, DEFAULT_INTERVAL_SECONDS)
    clock.now = at + timedelta(minutes=5)
    assert runner.poll_once() == []  # fired once, and its schedule deleted (ActionAfterCompletion=DELETE)
    assert scheduler.list_schedules(GroupName="g")["Schedules"] == []
    assert len(sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]) == 1
