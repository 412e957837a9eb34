"""Unique jobs on the consumer's side: a finished job releases its lock; nothing else does, and a job
without one makes no call for it (moto, the real publisher and consumer)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone

import boto3
import pytest

from bench.calls import CallCounter
from tests.support.aws_faults import lose_answers
from tests.support.clock import ManualClock
from tiered_jobs.contract import unique
from tiered_jobs.contract.routing import Routes
from tiered_jobs.publisher import Publisher
from tiered_jobs.runtime.consumer import Consumer
from tiered_jobs.runtime.registry import registry

TABLE = "critical-unique"


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(datetime.now(timezone.utc))


@pytest.fixture
def counter() -> CallCounter:
    return CallCounter()


@pytest.fixture
def table(tier) -> str:
    tier.dynamodb.create_table(
        TableName=TABLE,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": unique.KEY_ATTRIBUTE, "AttributeType": "S"}],
        KeySchema=[{"AttributeName": unique.KEY_ATTRIBUTE, "KeyType": "HASH"}],
    )
    return TABLE


@pytest.fixture
def publisher(tier, table, clock) -> Publisher:
    return Publisher(
        {"critical": tier.queue_url},
        Routes({"testjobs.*": "critical"}),
        sqs=tier.sqs,
        dynamodb=tier.dynamodb,
        unique_table=table,
        clock=clock,
    )


def consumer_of(tier, counter: CallCounter, unique_table: str | None = TABLE, **retry) -> Consumer:
    clients = {"sqs": tier.sqs, "dynamodb": counter.attach(tier.dynamodb)}
    config = replace(tier.config(**retry), unique_table=unique_table)
    return Consumer(config, registry, client=clients.__getitem__, rand=lambda: 0.5)


def lock_of(tier, key: str, job_type: str = "testjobs.ok") -> dict | None:
    """Read with a client of its own: the consumer's is counted."""
    return (
        boto3.client("dynamodb", region_name=tier.dynamodb.meta.region_name)
        .get_item(
            TableName=TABLE, Key={unique.KEY_ATTRIBUTE: {"S": unique.lock_key(job_type, key)}}, ConsistentRead=True
        )
        .get("Item")
    )


def test_a_job_that_succeeds_releases_its_lock_and_the_next_publish_is_sent(tier, publisher, counter):
    assert publisher.publish("testjobs.ok", {"label": "a"}, "u-1", unique_for=3600).message_id
    assert publisher.publish("testjobs.ok", {"label": "b"}, "u-1", unique_for=3600).already_queued
    assert lock_of(tier, "u-1") is not None

    tier.run_batch(consumer_of(tier, counter))

    assert lock_of(tier, "u-1") is None
    assert counter.by_table(TABLE) == {"DeleteItem": 1}
    assert publisher.publish("testjobs.ok", {"label": "c"}, "u-1", unique_for=3600).message_id


def test_a_dead_lettered_job_releases_its_lock(tier, publisher, counter):
    publisher.publish("testjobs.permanent", {}, "u-letter", unique_for=3600)
    tier.run_batch(consumer_of(tier, counter))
    (letter,) = tier.dlq_messages()
    assert '"unique_lock"' in letter["Body"]  # a replay sends it again with its token
    assert lock_of(tier, "u-letter", "testjobs.permanent") is None


def test_a_job_that_will_be_retried_keeps_its_lock(tier, publisher, counter):
    publisher.publish("testjobs.transient", {"fail_times": 1}, "u-retry", unique_for=3600)
    consumer = consumer_of(tier, counter)
    tier.run_batch(consumer)
    assert lock_of(tier, "u-retry", "testjobs.transient") is not None  # still pending: a new copy is refused
    assert publisher.publish("testjobs.transient", {"fail_times": 0}, "u-retry", unique_for=3600).already_queued

    tier.make_visible()
    tier.run_batch(consumer)  # the second attempt succeeds
    assert lock_of(tier, "u-retry", "testjobs.transient") is None


def test_a_finished_job_leaves_a_lock_a_later_publish_took_after_its_window(tier, publisher, counter, clock):
    publisher.publish("testjobs.ok", {"label": "first"}, "u-late", unique_for=60)
    clock.now += timedelta(seconds=61)  # the first job's window has ended while it waited
    second = publisher.publish("testjobs.ok", {"label": "second"}, "u-late", unique_for=60)
    assert second.message_id

    tier.run_batch(consumer_of(tier, counter), max_messages=1)  # the first job finishes

    remaining = lock_of(tier, "u-late")
    assert remaining is not None  # the second publish's lock: its job is still pending
    assert counter.by_table(TABLE) == {"DeleteItem": 1}  # tried, refused by the token's condition


def test_a_job_without_a_lock_makes_no_call_to_the_table(tier, publisher, counter, recorded):
    publisher.publish("testjobs.ok", {"label": "plain"}, "plain-1")
    publisher.publish("testjobs.permanent", {}, "plain-2")
    tier.run_batch(consumer_of(tier, counter))
    assert [key for key, _ in recorded] == ["plain-1"] and len(tier.dlq_messages()) == 1
    assert counter.by_table(TABLE) == {}


def test_a_tier_that_knows_no_table_runs_the_job_and_leaves_the_lock_to_its_window(tier, publisher, counter):
    publisher.publish("testjobs.ok", {"label": "a"}, "u-old-stack", unique_for=60)
    response = tier.run_batch(consumer_of(tier, counter, unique_table=None))
    assert response == {"batchItemFailures": []}
    assert lock_of(tier, "u-old-stack") is not None


def test_a_release_that_fails_never_fails_the_job(tier, publisher, counter):
    publisher.publish("testjobs.ok", {"label": "a"}, "u-denied", unique_for=60)
    response = tier.run_batch(consumer_of(tier, counter, unique_table="no-such-table"))
    assert response == {"batchItemFailures": []}  # processed: the lock ends with its window
    assert counter.by_table("no-such-table") == {"DeleteItem": 1}


def test_a_job_archived_unrun_releases_its_lock(tier, publisher, counter, clock):
    """An expired (or cancelled) job will not run: a new one of its type and key may be queued."""
    from tiered_jobs.replay.archive import S3Archive

    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket="discard-archive")
    publisher.publish(
        "testjobs.ok", {"label": "late"}, "u-expired", unique_for=3600, expires_at=clock.now + timedelta(seconds=5)
    )
    clients = {"sqs": tier.sqs, "dynamodb": counter.attach(tier.dynamodb)}
    consumer = Consumer(
        replace(tier.config(), unique_table=TABLE),
        registry,
        client=clients.__getitem__,
        now=lambda: clock.now + timedelta(minutes=1),  # past its deadline
        archive=lambda: S3Archive("discard-archive", "discarded/test/critical/", s3),
    )

    assert tier.run_batch(consumer) == {"batchItemFailures": []}

    assert s3.list_objects_v2(Bucket="discard-archive")["KeyCount"] == 1  # archived, not run
    assert lock_of(tier, "u-expired") is None
    assert publisher.publish("testjobs.ok", {"label": "again"}, "u-expired", unique_for=3600).message_id


def test_a_release_whose_answer_was_lost_says_the_lock_is_released(tier, publisher):
    """botocore deletes again: the condition fails on no item at all, and the lock is gone, as released."""
    import logging

    from tiered_jobs.contract.envelope import parse
    from tiered_jobs.runtime.unique import release

    publisher.publish("testjobs.ok", {"label": "a"}, "u-lost", unique_for=3600)
    (message,) = tier.receive()
    with lose_answers(tier.dynamodb, "DeleteItem") as lost:
        released = release(tier.dynamodb, TABLE, parse(message["Body"]), logging.getLogger("test"))
    assert lost.count == 1
    assert released and lock_of(tier, "u-lost") is None


def test_a_release_leaves_a_lock_another_publish_holds_and_says_so(tier, publisher, clock):
    import logging

    from tiered_jobs.contract.envelope import parse
    from tiered_jobs.runtime.unique import release

    publisher.publish("testjobs.ok", {"label": "a"}, "u-later", unique_for=60)
    (message,) = tier.receive()
    clock.now += timedelta(seconds=61)
    publisher.publish("testjobs.ok", {"label": "b"}, "u-later", unique_for=60)  # the window ended: a lock of its own
    assert not release(tier.dynamodb, TABLE, parse(message["Body"]), logging.getLogger("test"))
    assert lock_of(tier, "u-later") is not None
