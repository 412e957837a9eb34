"""Unique jobs on the publisher's side: one conditional write per job in the stage's unique-jobs table (moto)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import boto3
import pytest

from bench.calls import CallCounter
from tests.support.aws_faults import conflict_response, lose_answers, refuse
from tests.support.clock import ManualClock
from tests.support.stack import FlakySqs, received_bodies
from tiered_jobs.contract import unique
from tiered_jobs.contract.routing import Routes
from tiered_jobs.publisher import InvalidJobError, Job, Publisher, PublishError
from tiered_jobs.stage.discovery import DiscoveryError, from_ssm

NOW = datetime(2030, 5, 1, 12, 0, 0, tzinfo=timezone.utc)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(NOW)


@pytest.fixture
def dynamodb(aws):
    return boto3.client("dynamodb")


@pytest.fixture
def unique_publisher(deployment, sqs, dynamodb, clock, counter, waits) -> Publisher:
    return Publisher(
        deployment.queue_urls,
        Routes(deployment.routes),
        sqs=counter.attach(sqs),
        dynamodb=counter.attach(dynamodb),
        unique_table=deployment.unique_table,
        clock=clock,
        sleep=waits.append,
        random=lambda: 0.5,
    )


def _lock(dynamodb, table: str, job_type: str, key: str) -> dict | None:
    found = dynamodb.get_item(TableName=table, Key={unique.KEY_ATTRIBUTE: {"S": unique.lock_key(job_type, key)}})
    return found.get("Item")


def test_a_second_publish_within_the_window_is_already_queued_and_sends_nothing(unique_publisher, deployment, dynamodb):
    first = unique_publisher.publish("payments.capture", {"n": 1}, "cap-1", unique_for=600)
    second = unique_publisher.publish("payments.capture", {"n": 2}, "cap-1", unique_for=600)

    assert first.ok and first.message_id and not first.already_queued
    assert first.unique_until == NOW + timedelta(seconds=600)
    assert second.ok and second.already_queued and second.message_id is None  # a result, not an exception
    assert second.unique_until == NOW + timedelta(seconds=600)  # the pending job's lock
    assert "already queued (unique until 2030-05-01T12:10:00+00:00): nothing sent" in second.describe()
    (body,) = received_bodies(deployment.queue_urls["critical"])
    assert body["payload"] == {"n": 1}  # first wins
    lock = _lock(dynamodb, deployment.unique_table, "payments.capture", "cap-1")
    assert lock is not None and body["unique_lock"] == lock[unique.TOKEN_ATTRIBUTE]["S"]
    assert lock[unique.EXPIRES_ATTRIBUTE]["N"] == str(int((NOW + timedelta(seconds=600)).timestamp()))


def test_another_key_or_another_type_is_not_held_by_the_lock(unique_publisher, deployment):
    results = [
        unique_publisher.publish("payments.capture", {}, "cap-1", unique_for=60),
        unique_publisher.publish("payments.capture", {}, "cap-2", unique_for=60),
        unique_publisher.publish("payments.refund", {}, "cap-1", unique_for=60),
    ]
    assert [r.already_queued for r in results] == [False, False, False]
    assert len(received_bodies(deployment.queue_urls["critical"])) == 3


def test_once_the_window_has_passed_the_job_is_sent_again_with_a_lock_of_its_own(
    unique_publisher, deployment, dynamodb, clock
):
    """DynamoDB's TTL deletes expired items days later: the write's condition, not the TTL, ends the window."""
    first = unique_publisher.publish("payments.capture", {}, "cap-1", unique_for=timedelta(minutes=5))
    clock.now = NOW + timedelta(minutes=5)  # the window's last second has passed
    again = unique_publisher.publish("payments.capture", {}, "cap-1", unique_for=timedelta(minutes=5))

    assert first.message_id and again.message_id and not again.already_queued
    bodies = received_bodies(deployment.queue_urls["critical"])
    assert len(bodies) == 2 and bodies[0]["unique_lock"] != bodies[1]["unique_lock"]
    lock = _lock(dynamodb, deployment.unique_table, "payments.capture", "cap-1")
    assert lock[unique.TOKEN_ATTRIBUTE]["S"] == bodies[1]["unique_lock"]


def test_a_timedelta_window_is_rounded_up_to_whole_seconds(unique_publisher):
    result = unique_publisher.publish("payments.capture", {}, "cap-1", unique_for=timedelta(seconds=1.2))
    assert result.unique_until == NOW + timedelta(seconds=2)


def test_a_batch_packs_its_locks_in_transactions_and_refuses_only_the_jobs_already_queued(
    unique_publisher, deployment, counter
):
    queued_before = {7, 150, 233}
    for n in sorted(queued_before):
        assert unique_publisher.publish("payments.capture", {"n": n}, f"k{n}", unique_for=3600).message_id
    received_bodies(deployment.queue_urls["critical"])
    counter.reset()

    results = unique_publisher.publish_batch(
        [Job("payments.capture", {"n": n}, f"k{n}", unique_for=3600) for n in range(250)]
    )

    assert [n for n, r in enumerate(results) if r.already_queued] == sorted(queued_before)
    assert all(r.ok for r in results)
    sent = received_bodies(deployment.queue_urls["critical"])
    assert sorted(body["payload"]["n"] for body in sent) == [n for n in range(250) if n not in queued_before]
    # Groups of 100, 100 and 50, each holding one job already queued: one transaction more each.
    assert counter.by_operation("dynamodb") == {"TransactWriteItems": 6}
    assert counter.by_operation("sqs") == {"SendMessageBatch": 25}


def test_two_jobs_of_one_type_and_key_in_a_batch_send_the_first(unique_publisher, deployment, counter):
    results = unique_publisher.publish_batch(
        [
            Job("payments.capture", {"n": 1}, "same", unique_for=60),
            Job("payments.capture", {"n": 2}, "other", unique_for=60),
            Job("payments.capture", {"n": 3}, "same", unique_for=60),
        ]
    )
    assert [r.already_queued for r in results] == [False, False, True]
    assert results[2].unique_until == results[0].unique_until
    assert sorted(b["payload"]["n"] for b in received_bodies(deployment.queue_urls["critical"])) == [1, 2]
    assert counter.by_operation("dynamodb") == {"TransactWriteItems": 1}  # one write per distinct lock


def test_a_job_without_unique_for_makes_no_call_to_the_table(unique_publisher, counter):
    unique_publisher.publish("payments.capture", {}, "plain")
    unique_publisher.publish_batch([Job("payments.capture", {}, f"plain-{n}") for n in range(30)])
    assert counter.by_operation("dynamodb") == {}
    assert "unique_lock" not in json.dumps(counter.by_operation("sqs"))


def test_a_job_whose_send_failed_gives_its_lock_back(deployment, sqs, dynamodb, clock, waits):
    flaky = FlakySqs(sqs, {"cap-1": 99}, code="AccessDenied", sender_fault=True)
    publisher = Publisher(
        deployment.queue_urls,
        Routes(deployment.routes),
        sqs=flaky,
        dynamodb=dynamodb,
        unique_table=deployment.unique_table,
        clock=clock,
        sleep=waits.append,
    )
    with pytest.raises(PublishError) as caught:
        publisher.publish_batch(
            [Job("payments.capture", {}, "cap-1", unique_for=60), Job("payments.capture", {}, "cap-2", unique_for=60)]
        )
    assert [r.ok for r in caught.value.results] == [False, True]
    assert _lock(dynamodb, deployment.unique_table, "payments.capture", "cap-1") is None  # given back
    assert _lock(dynamodb, deployment.unique_table, "payments.capture", "cap-2") is not None  # its job is queued
    flaky.remaining.clear()
    assert publisher.publish("payments.capture", {}, "cap-1", unique_for=60).message_id  # publishing again works


def test_a_transaction_cancelled_by_a_conflict_is_written_again_after_a_wait(deployment, sqs, dynamodb, clock, waits):
    publisher = Publisher(
        deployment.queue_urls,
        Routes(deployment.routes),
        sqs=sqs,
        dynamodb=dynamodb,
        unique_table=deployment.unique_table,
        clock=clock,
        sleep=waits.append,
        random=lambda: 0.5,
    )
    conflict = lambda params: conflict_response(len(params["TransactItems"]), conflicted=0)  # noqa: E731
    with refuse(dynamodb, "TransactWriteItems", conflict) as conflicted:
        results = publisher.publish_batch([Job("payments.capture", {}, f"k{n}", unique_for=60) for n in range(3)])
    assert all(r.message_id for r in results) and conflicted.count == 1
    assert waits == [0.05]  # the publisher's full jitter: 0.5 x 0.1 s


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"unique_for": 0}, "unique_for must be 1-2592000 seconds, got 0"),
        ({"unique_for": -30}, "unique_for must be 1-2592000 seconds, got -30"),
        ({"unique_for": timedelta(days=31)}, "unique_for must be 1-2592000 seconds, got 2678400"),
        ({"unique_for": 1.5}, "unique_for must be whole seconds (int) or a timedelta, got float"),
        ({"unique_for": True}, "unique_for must be whole seconds (int) or a timedelta, got bool"),
        ({"unique_for": 60, "debounce": 60}, "give either unique_for (the first publish wins"),
    ],
    ids=["zero", "negative", "over-30-days", "float", "bool", "with-debounce"],
)
def test_a_bad_window_is_refused_before_any_call(unique_publisher, deployment, counter, options, message):
    with pytest.raises(InvalidJobError) as caught:
        unique_publisher.publish("payments.capture", {}, "cap-1", **options)
    assert message in str(caught.value)
    assert counter.counts == {}  # nothing locked, nothing sent


def test_a_publisher_that_knows_no_table_says_so_before_sending_anything(deployment, sqs, counter):
    publisher = Publisher(deployment.queue_urls, Routes(deployment.routes), sqs=counter.attach(sqs))
    with pytest.raises(DiscoveryError, match="knows no unique-jobs table"):
        publisher.publish_batch(
            [Job("payments.capture", {}, "plain"), Job("payments.capture", {}, "cap-1", unique_for=60)]
        )
    assert counter.counts == {}


def test_discovery_reads_the_table_name_in_the_same_call_as_the_other_names(deployment, aws):
    ssm = boto3.client("ssm")
    counting = CallCounter()
    found = from_ssm(deployment.stage, ssm=counting.attach(ssm))
    assert found.unique_table_name == deployment.unique_table
    assert counting.by_operation("ssm") == {"GetParameters": 2}  # as before: the names, then the tiers' queues


def test_after_commit_takes_the_lock_when_it_sends_and_a_rollback_takes_none(unique_publisher, deployment, dynamodb):
    from tiered_jobs.publisher.after_commit import AfterCommitBuffer

    rolled_back = AfterCommitBuffer(unique_publisher)
    rolled_back.add("payments.capture", {}, "order-1", unique_for=600)
    assert rolled_back.discard() == 1
    assert _lock(dynamodb, deployment.unique_table, "payments.capture", "order-1") is None  # validated, not locked

    with AfterCommitBuffer(unique_publisher) as jobs:
        jobs.add("payments.capture", {}, "order-1", unique_for=600)
    again = AfterCommitBuffer(unique_publisher)
    again.add("payments.capture", {}, "order-1", unique_for=600)
    (result,) = again.flush()

    assert result.already_queued
    assert len(received_bodies(deployment.queue_urls["critical"])) == 1


def test_a_lock_whose_answer_was_lost_is_taken_and_its_job_sent(unique_publisher, deployment, dynamodb):
    """botocore sends the applied PutItem again: it meets the publish's own lock, which is taken, not held."""
    with lose_answers(dynamodb, "PutItem") as lost:
        result = unique_publisher.publish("payments.capture", {"n": 1}, "cap-1", unique_for=600)

    assert lost.count == 1
    assert result.ok and result.message_id and not result.already_queued
    (body,) = received_bodies(deployment.queue_urls["critical"])
    lock = _lock(dynamodb, deployment.unique_table, "payments.capture", "cap-1")
    assert lock is not None and lock[unique.TOKEN_ATTRIBUTE]["S"] == body["unique_lock"]
    again = unique_publisher.publish("payments.capture", {"n": 2}, "cap-1", unique_for=600)
    assert again.already_queued  # the lock still holds the key for its job


def test_locks_of_a_transaction_whose_answer_was_lost_are_taken_and_their_jobs_sent(
    unique_publisher, deployment, dynamodb
):
    """The retried transaction carries the same ClientRequestToken (AWS answers it as the first); a service
    that applies it again cancels it on the publish's own locks, which its reasons give back: taken."""
    assert unique_publisher.publish("payments.capture", {"n": 0}, "k0", unique_for=600).message_id
    received_bodies(deployment.queue_urls["critical"])
    with lose_answers(dynamodb, "TransactWriteItems") as lost:
        results = unique_publisher.publish_batch(
            [Job("payments.capture", {"n": n}, f"k{n}", unique_for=600) for n in range(4)]
        )

    assert lost.count == 1
    assert [r.already_queued for r in results] == [True, False, False, False]  # k0 is another publish's
    assert all(r.ok for r in results) and all(r.message_id for r in results[1:])
    tokens = {json.loads(request["body"])["ClientRequestToken"] for request in lost.params}
    assert len(tokens) == 1 and None not in tokens
    sent = received_bodies(deployment.queue_urls["critical"])
    assert sorted(body["payload"]["n"] for body in sent) == [1, 2, 3]


def test_a_lock_given_back_whose_answer_was_lost_is_gone_and_the_job_may_be_published_again(
    deployment, sqs, dynamodb, clock, waits
):
    flaky = FlakySqs(sqs, {"cap-1": 99}, code="AccessDenied", sender_fault=True)
    publisher = Publisher(
        deployment.queue_urls,
        Routes(deployment.routes),
        sqs=flaky,
        dynamodb=dynamodb,
        unique_table=deployment.unique_table,
        clock=clock,
        sleep=waits.append,
    )
    with lose_answers(dynamodb, "DeleteItem") as lost, pytest.raises(PublishError):
        publisher.publish("payments.capture", {}, "cap-1", unique_for=60)
    assert lost.count == 1  # botocore deleted again: no lock there, the condition failed, nothing else
    assert _lock(dynamodb, deployment.unique_table, "payments.capture", "cap-1") is None
    flaky.remaining.clear()
    assert publisher.publish("payments.capture", {}, "cap-1", unique_for=60).message_id
