"""A job's deadline and its cancel, on the publisher's side: the deadline travels in the envelope of a job
sent now, delayed or scheduled (and of each job of a batch), a deadline that could never be met is refused
with nothing sent, and ``cancel`` deletes a pending schedule or marks a queued job, answering clearly for a
job that already ran or cannot be found."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import boto3
import pytest

from tests.publisher.conftest import GROUP
from tests.publisher.test_scheduled import NOW
from tests.support.stack import IDEMPOTENCY_TTL_SECONDS, received_bodies
from tiered_jobs.contract import job_ends
from tiered_jobs.contract.idempotency import RecordAttributes, record_id
from tiered_jobs.contract.routing import Routes, UnknownRouteError
from tiered_jobs.contract.times import iso_text
from tiered_jobs.publisher import InvalidJobError, Job, Publisher
from tiered_jobs.stage import cancelling, discovery


@pytest.fixture
def publisher(deployment, sqs, scheduler, target) -> Publisher:
    found = discovery.from_stack_outputs(deployment.stack_name, stage=deployment.stage)
    return Publisher(
        deployment.queue_urls,
        Routes(deployment.routes),
        sqs=sqs,
        scheduler=scheduler,
        scheduling=target,
        dynamodb=boto3.client("dynamodb"),
        cancel_marks=lambda: cancelling.from_ssm(deployment.stage, found, ssm=boto3.client("ssm")),
        clock=lambda: NOW,
    )


def sent(sqs) -> list[dict]:
    """The bodies of every entry the publisher sends on ``sqs`` (delayed ones too), seen by a botocore hook."""
    bodies: list[dict] = []
    sqs.meta.events.register(
        "before-parameter-build.sqs.SendMessageBatch",
        lambda params, **_: bodies.extend(json.loads(e["MessageBody"]) for e in params["Entries"]),
    )
    return bodies


def record(deployment, job_type: str, key: str) -> dict:
    return (
        boto3.client("dynamodb")
        .get_item(TableName=deployment.idempotency_table, Key={RecordAttributes.KEY: {"S": record_id(job_type, key)}})
        .get("Item", {})
    )


# -- the deadline ---------------------------------------------------------------------------------


def test_the_deadline_travels_in_the_envelope_counted_from_when_the_job_is_due(publisher, sqs, scheduler):
    bodies_sent = sent(sqs)
    publisher.publish("payments.capture", {}, "now", expires_in=60)
    publisher.publish("payments.capture", {}, "delayed", delay=30, expires_in=timedelta(seconds=60))
    deadline = NOW + timedelta(hours=1)
    publisher.publish("payments.capture", {}, "until", expires_at=deadline.astimezone(timezone(timedelta(hours=2))))
    publisher.publish("payments.capture", {}, "plain")
    bodies = {body["idempotency_key"]: body for body in bodies_sent}
    assert bodies["now"]["expires_at"] == iso_text(NOW + timedelta(seconds=60))
    assert bodies["delayed"]["expires_at"] == iso_text(NOW + timedelta(seconds=90))
    assert bodies["until"]["expires_at"] == iso_text(deadline) == "2030-05-01T13:00:00.000Z"
    assert "expires_at" not in bodies["plain"]  # no deadline, no field: older consumers read it as before
    # a job for later: its schedule's input carries the deadline, counted from its (whole-minute) time
    publisher.publish("payments.capture", {}, "later", at=NOW + timedelta(hours=3), expires_in=600)
    (name,) = [s["Name"] for s in scheduler.list_schedules(GroupName=GROUP)["Schedules"]]
    body = json.loads(scheduler.get_schedule(Name=name, GroupName=GROUP)["Target"]["Input"])
    assert body["expires_at"] == iso_text(NOW + timedelta(hours=3, minutes=10))


def test_each_job_of_a_batch_carries_its_own_deadline(publisher, deployment):
    publisher.publish_batch(
        [
            Job("payments.capture", {}, "a", expires_in=10),
            {"job_type": "payments.capture", "payload": {}, "idempotency_key": "b", "expires_at": NOW + timedelta(1)},
            Job("payments.capture", {}, "c"),
        ]
    )
    bodies = {
        body["idempotency_key"]: body.get("expires_at") for body in received_bodies(deployment.queue_urls["critical"])
    }
    assert bodies == {"a": iso_text(NOW + timedelta(seconds=10)), "b": iso_text(NOW + timedelta(days=1)), "c": None}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"expires_at": NOW - timedelta(seconds=1)}, "expires_at 2030-05-01T11:59:59.000Z has passed"),
        ({"expires_at": NOW}, "has passed"),
        ({"expires_in": 0}, "expires_in must be more than 0 seconds, got 0"),
        ({"expires_in": -5}, "expires_in must be more than 0 seconds, got -5"),
        ({"expires_in": timedelta(seconds=-1)}, "expires_in must be more than 0 seconds"),
        ({"expires_in": 1.5}, "expires_in must be whole seconds"),
        ({"expires_at": datetime(2031, 1, 1)}, "expires_at must be an aware datetime"),
        ({"expires_in": 60, "expires_at": NOW + timedelta(1)}, "give either expires_at"),
        ({"delay": 600, "expires_at": NOW + timedelta(seconds=300)}, "is not after the job is due"),
        ({"at": NOW + timedelta(hours=3), "expires_at": NOW + timedelta(hours=2)}, "is not after the job is due"),
    ],
)
def test_a_deadline_that_could_never_be_met_is_refused_and_nothing_is_sent(
    publisher,
    deployment,
    scheduler,
    options,
    message,
):
    with pytest.raises(InvalidJobError, match=message):
        publisher.publish_batch([Job("payments.capture", {}, "ok"), Job("payments.capture", {}, "bad", **options)])
    assert all(received_bodies(url) == [] for url in deployment.queue_urls.values())
    assert scheduler.list_schedules(GroupName=GROUP)["Schedules"] == []


# -- cancel ---------------------------------------------------------------------------------------


def test_cancel_marks_a_queued_job_for_its_tiers_idempotency_window(publisher, deployment):
    publisher.publish("payments.capture", {}, "queued", delay=120)  # SQS's own delay: no schedule to delete
    found = publisher.cancellation("payments.capture", "queued")
    assert (found.outcome, found.cancelled) == ("marked", True)
    assert found.until == datetime.fromtimestamp(int(NOW.timestamp()) + IDEMPOTENCY_TTL_SECONDS, timezone.utc)
    item = record(deployment, "payments.capture", "queued")
    assert job_ends.marker_kind(json.loads(item[RecordAttributes.DATA]["S"])) == job_ends.CANCELLED
    assert "archived unrun" in found.describe("payments.capture", "queued")
    again = publisher.cancellation("payments.capture", "queued")
    assert (again.outcome, again.cancelled) == ("already cancelled", False)


def test_cancel_of_a_scheduled_job_deletes_its_schedule_and_writes_no_marker(publisher, deployment, scheduler):
    publisher.publish("payments.capture", {}, "later", at=NOW + timedelta(hours=3))
    assert publisher.cancel("payments.capture", "later") is True
    assert scheduler.list_schedules(GroupName=GROUP)["Schedules"] == []
    assert record(deployment, "payments.capture", "later") == {}


def test_cancel_of_a_job_that_ran_or_of_an_unroutable_type_is_a_clear_answer_that_writes_nothing(publisher, deployment):
    dynamodb = boto3.client("dynamodb")
    done = {
        RecordAttributes.KEY: {"S": record_id("payments.capture", "done")},
        RecordAttributes.STATUS: {"S": "COMPLETED"},
        RecordAttributes.EXPIRATION: {"N": str(int(NOW.timestamp()) + 600)},
        RecordAttributes.DATA: {"S": '{"captured": true}'},
    }
    dynamodb.put_item(TableName=deployment.idempotency_table, Item=done)
    found = publisher.cancellation("payments.capture", "done")
    assert (found.outcome, found.cancelled) == ("already done", False)
    assert "already ran" in found.describe("payments.capture", "done")
    assert record(deployment, "payments.capture", "done") == done
    with pytest.raises(UnknownRouteError):
        publisher.cancel("nobody.routes_this", "k")
    assert record(deployment, "nobody.routes_this", "k") == {}


def test_a_publisher_that_knows_no_idempotency_table_still_cancels_schedules_only(deployment, sqs, scheduler, target):
    plain = Publisher(
        deployment.queue_urls,
        Routes(deployment.routes),
        sqs=sqs,
        scheduler=scheduler,
        scheduling=target,
        clock=lambda: NOW,
    )
    assert plain.cancellation("payments.capture", "queued").outcome == "not found"
    none = Publisher(deployment.queue_urls, Routes(deployment.routes), sqs=sqs)
    with pytest.raises(discovery.DiscoveryError, match="can cancel nothing"):
        none.cancel("payments.capture", "queued")
