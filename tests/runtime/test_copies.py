"""The copies the consumer sends of a job it does not run now, where the rate limit, the time budget,
the redrive count and replay meet: every job keeps exactly one live copy, its attempts, its first
failure, its enqueue time and its tenant, and never reaches the DLQ without a reason.

Sizes, receive counts and attribute counts are SQS's documented rules (the redrive moves a message
received more than ``maxReceiveCount`` times; a ``SendMessageBatch`` holds at most 10 entries and
1 MiB counting every attribute: ``tiered_jobs.contract.sqs_limits``), checked on what is sent, not on
what moto happens to accept.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import boto3
import pytest
from botocore.stub import Stubber

from tests.runtime.test_ratelimit import FakeTime
from tests.runtime.test_time_budget import MARGIN_MS, TIMEOUT_MS, LambdaClock
from tests.support.recording import Recording
from tests.support.tier import create_rate_limit_table
from tiered_jobs.contract.envelope import build
from tiered_jobs.contract.names import (
    SQS_MAX_BATCH_ENTRIES,
    SQS_MAX_MESSAGE_BYTES,
    Attributes,
    DeadLetter,
    Metrics,
    Replay,
)
from tiered_jobs.contract.rate_limits import RateLimit, RateLimits
from tiered_jobs.contract.sqs_limits import message_size
from tiered_jobs.contract.times import iso_text as iso
from tiered_jobs.runtime.errors import TransientError
from tiered_jobs.runtime.ratelimit import LIMITER_ERROR_HOLD_SECONDS, RESERVE_SECONDS, RateLimiter, turn_text
from tiered_jobs.runtime.registry import JobRegistry

LIMITED, FREE, FAILING, HOG = "t.limited", "t.free", "t.failing", "t.hog"


def registry(runs: list[tuple[str, int]], clock: dict | None = None) -> JobRegistry:
    jobs = JobRegistry()

    @jobs.job(LIMITED)
    @jobs.job(FREE)
    def ok(payload, ctx):
        runs.append((ctx.idempotency_key, ctx.attempt))

    @jobs.job(FAILING)
    def failing(payload, ctx):
        runs.append((ctx.idempotency_key, ctx.attempt))
        raise TransientError("downstream down")

    @jobs.job(HOG)
    def hog(payload, ctx):  # uses the invocation up: every record after it is deferred
        clock["context"].advance(TIMEOUT_MS - MARGIN_MS + 1)

    return jobs


def limited(tier, consumer, clock: FakeTime, per_second: float = 1.0, *, sqs=None, dynamodb=None):
    """Give ``consumer`` a rate limit on ``t.limited`` (``max_wait`` 0: a job without a token now is held)."""
    table = create_rate_limit_table(tier.dynamodb, f"buckets-{id(consumer)}")
    clients = {"sqs": sqs or tier.sqs, "dynamodb": dynamodb or tier.dynamodb}
    consumer.client = clients.__getitem__
    consumer.limiter = RateLimiter(
        RateLimits(None, {LIMITED: RateLimit(per_second, 1)}, max_wait_seconds=0.0),
        "critical",
        table,
        client=clients.__getitem__,
        clock=clock,
    )
    consumer.sleep = clock.sleep
    return consumer


def in_queue(tier) -> int:
    """Every message of the main queue: visible, in flight and delayed (without receiving any)."""
    names = [
        "ApproximateNumberOfMessages",
        "ApproximateNumberOfMessagesNotVisible",
        "ApproximateNumberOfMessagesDelayed",
    ]
    attributes = tier.sqs.get_queue_attributes(QueueUrl=tier.queue_url, AttributeNames=names)["Attributes"]
    return sum(int(attributes[name]) for name in names)


def totals(capsys) -> dict[str, float]:
    found: dict[str, float] = {}
    for line in capsys.readouterr().out.splitlines():
        if line.startswith('{"_aws"'):
            for name, value in json.loads(line).items():
                if isinstance(value, list) and value and isinstance(value[0], (int, float)):
                    found[name] = found.get(name, 0) + sum(value)
                    found[f"max {name}"] = max(found.get(f"max {name}", 0), max(value))
    return found


def reasons(letter: dict) -> dict[str, str]:
    return {name: value.get("StringValue") for name, value in letter["MessageAttributes"].items()}


# -- 2. a rate-limited job is never a failure, at any size ----------------------------------------


def test_held_copies_of_large_jobs_are_packed_by_sqs_size_rule_and_none_is_kept(tier, capsys):
    """Ten 200 KB jobs, one token: nine held copies in one SendMessageBatch would be 1.8 MiB
    (``BatchRequestTooLong``, every round). Packed by the rule, all nine are sent."""
    runs: list = []
    sqs = Recording(tier.sqs)
    consumer = limited(tier, tier.consumer(registry=registry(runs)), FakeTime(), sqs=sqs)
    for i in range(10):
        tier.publish(LIMITED, {"blob": "x" * 200_000}, f"big-{i}")
    response = tier.run_batch(consumer)
    assert response == {"batchItemFailures": []} and len(runs) == 1
    sends = sqs.of("send_message_batch")
    assert sum(len(call["Entries"]) for call in sends) == 9 and len(sends) >= 2
    for call in sends:
        assert len(call["Entries"]) <= SQS_MAX_BATCH_ENTRIES
        assert (
            sum(message_size(e["MessageBody"], e["MessageAttributes"]) for e in call["Entries"])
            <= SQS_MAX_MESSAGE_BYTES
        )
    assert in_queue(tier) == 9 and tier.dlq_messages() == []
    found = totals(capsys)
    assert (found[Metrics.RATE_LIMITED], found[Metrics.REQUEUE_FAILED], found[Metrics.FAILED]) == (9, 0, 0)


def test_a_copy_is_the_job_without_its_letters_history_and_keeps_its_tenant(tier):
    """A letter moved back by native replay still has its ``DeadLetter.*`` and ``Replay.*``
    attributes (and, written by an older version, ``TieredJobs.PriorAttempts``). Its held copy is
    the job: the publisher's attribute, fresh attempts, the letter's first failure, an enqueue time
    of its own, and the envelope's tenant as its group (Lambda did not deliver one)."""
    runs: list = []
    sqs = Recording(tier.sqs)
    clock = FakeTime()
    consumer = limited(tier, tier.consumer(registry=registry(runs)), clock, sqs=sqs)
    tier.publish(LIMITED, {}, "first")  # takes the one token
    first_failed = "2026-11-01T10:00:00.000Z"
    letter_attributes = {
        "team": {"DataType": "String", "StringValue": "growth"},
        **{name: {"DataType": "String", "StringValue": "x"} for name in DeadLetter.ALL},
        DeadLetter.FIRST_FAILED_AT: {"DataType": "String", "StringValue": first_failed},
        Replay.COUNT: {"DataType": "Number", "StringValue": "2"},
    }
    body = build(LIMITED, {}, "replayed", tenant="acme").to_json()
    sent = tier.sqs.send_message(QueueUrl=tier.queue_url, MessageBody=body, MessageAttributes=letter_attributes)
    messages = tier.receive_for_batch()
    for message in messages:
        message["Attributes"].pop("MessageGroupId", None)  # Lambda may not deliver it for a standard queue
    assert tier.run_messages(consumer, messages) == {"batchItemFailures": []}
    ((copy,),) = [call["Entries"] for call in sqs.of("send_message_batch")]
    assert copy["MessageBody"] == body and copy["MessageGroupId"] == "acme"
    (original,) = [m for m in messages if m["MessageId"] == sent["MessageId"]]
    sent_at = datetime.fromtimestamp(int(original["Attributes"]["SentTimestamp"]) / 1000, timezone.utc)
    assert copy["MessageAttributes"] == {
        "team": {"DataType": "String", "StringValue": "growth"},
        Attributes.PRIOR_ATTEMPTS: {"DataType": "Number", "StringValue": "0"},
        Attributes.ENQUEUED_AT: {"DataType": "String", "StringValue": iso(sent_at)},
        Attributes.FIRST_FAILED_AT: {"DataType": "String", "StringValue": first_failed},
        # its token, claimed for a second later (1 job/s): the copy runs then without claiming again
        Attributes.TURN: {"DataType": "String", "StringValue": turn_text(f"critical#type:{LIMITED}", clock() + 1)},
    }


@pytest.mark.parametrize("receive", [1, 2])
def test_the_keep_path_never_spends_the_last_receive(redrive_tier, capsys, receive):
    """A held job whose copy SQS refuses stays in the queue (a receive spent), except on the queue's
    last receive: returned then, SQS's redrive would move it without reasons, so it is dead-lettered
    with reason ``requeue_failed``."""
    tier = redrive_tier(max_receive_count=2)
    runs: list = []

    class RefusingCopies(Recording):
        def send_message_batch(self, **call):
            return {
                "Successful": [],
                "Failed": [
                    {"Id": e["Id"], "Code": "InternalError", "Message": "try later", "SenderFault": False}
                    for e in call["Entries"]
                ],
            }

    consumer = limited(
        tier, tier.consumer(registry=registry(runs), max_attempts=2), FakeTime(), sqs=RefusingCopies(tier.sqs)
    )
    tier.publish(LIMITED, {}, "gets-the-token")
    tier.publish(LIMITED, {}, "held")
    messages = tier.receive_for_batch()
    for message in messages:
        message["Attributes"]["ApproximateReceiveCount"] = str(receive)
    response = tier.run_messages(consumer, messages)
    found = totals(capsys)
    if receive == 1:
        assert len(response["batchItemFailures"]) == 1 and tier.dlq_messages() == []
        assert (found[Metrics.REQUEUE_FAILED], found[Metrics.FAILED]) == (1, 0)
    else:
        assert response == {"batchItemFailures": []}
        (letter,) = tier.dlq_messages()
        assert json.loads(letter["Body"])["idempotency_key"] == "held"
        why = reasons(letter)
        assert why[DeadLetter.REASON] == DeadLetter.REASON_REQUEUE_FAILED
        assert (
            why[DeadLetter.ERROR_TYPE] == "RequeueFailed"
            and "InternalError: try later" in why[DeadLetter.ERROR_MESSAGE]
        )
        assert why[DeadLetter.ATTEMPTS] == "1"  # the receive that held it ran nothing
        assert (found[Metrics.REQUEUE_FAILED], found[Metrics.DEAD_LETTERED]) == (1, 1)


# -- 3. one copy per job, whatever the order of checks -------------------------------------------


def test_a_held_record_is_never_deferred_too(tier, capsys):
    """Three limited jobs whose bucket this container saw busy (held with their turns before anything
    runs) and a free one, behind a job that spends the invocation: the free one has no time left
    (deferred, and it claimed nothing). Each job has exactly one copy in the queue and the batch
    reports no failure."""
    runs: list = []
    clock = {"context": LambdaClock(TIMEOUT_MS)}
    consumer = limited(tier, tier.consumer(registry=registry(runs, clock), margin_ms=MARGIN_MS), FakeTime())
    bucket = consumer.limiter.bucket(consumer.limiter.limits.bucket_for("critical", LIMITED))
    assert bucket.claim(2, 10.0).granted == 2  # another batch of this container's took the next two seconds
    tier.publish(HOG, {}, "hog")
    for i in range(3):
        tier.publish(LIMITED, {}, f"limited-{i}")
    tier.publish(FREE, {}, "free")
    messages = sorted(tier.receive_for_batch(), key=lambda m: HOG not in m["Body"])
    response = tier.run_messages(consumer, messages, clock["context"])
    assert response == {"batchItemFailures": []}
    assert in_queue(tier) == 4 and runs == []
    found = totals(capsys)
    assert (found[Metrics.RATE_LIMITED], found[Metrics.DEFERRED], found[Metrics.PROCESSED]) == (3, 1, 1)


# -- 4. a limiter outage is not a job failure -------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "status"), [("ProvisionedThroughputExceededException", 400), ("InternalServerError", 500)]
)
def test_a_limiter_outage_holds_its_jobs_briefly_and_runs_the_others(tier, capsys, code, status):
    runs: list = []
    sqs = Recording(tier.sqs)
    broken = boto3.client("dynamodb", region_name="us-east-1")
    stub = Stubber(broken)
    stub.add_client_error("get_item", code, "injected", status)
    consumer = limited(tier, tier.consumer(registry=registry(runs)), FakeTime(), sqs=sqs, dynamodb=broken)
    consumer.client = {"sqs": sqs, "dynamodb": tier.dynamodb}.__getitem__  # the jobs' idempotency table works
    for i in range(2):
        tier.publish(LIMITED, {}, f"limited-{i}")
    tier.publish(FREE, {}, "free")
    with stub:
        response = tier.run_batch(consumer)
    assert response == {"batchItemFailures": []}  # no receive spent, the batch not failed
    assert runs == [("free", 1)]
    ((*copies,),) = [call["Entries"] for call in sqs.of("send_message_batch")]
    low, high = LIMITER_ERROR_HOLD_SECONDS
    assert len(copies) == 2 and all(low <= e["DelaySeconds"] <= high for e in copies)
    assert {e["MessageAttributes"][Attributes.PRIOR_ATTEMPTS]["StringValue"] for e in copies} == {"0"}
    found = totals(capsys)
    assert (found[Metrics.RATE_LIMITER_ERRORS], found[Metrics.RATE_LIMITED], found[Metrics.FAILED]) == (2, 2, 0)


# -- 7 and 9. what a job carries across holds and replays ----------------------------------------


def test_a_natively_replayed_letter_gets_its_full_attempts_and_keeps_its_first_failure(tier):
    """``StartMessageMoveTask`` moves a letter back with every attribute: its reasons, and a
    ``TieredJobs.PriorAttempts`` an older version left on it. A new run: attempts 1..max again."""
    runs: list = []
    consumer = tier.consumer(registry=registry(runs), max_attempts=3)
    first_failed = "2026-11-01T10:00:00.000Z"
    moved = {
        name: {"DataType": "String", "StringValue": value}
        for name, value in {
            DeadLetter.REASON: DeadLetter.REASON_RETRIES_EXHAUSTED,
            DeadLetter.ATTEMPTS: "4",
            DeadLetter.FIRST_FAILED_AT: first_failed,
            DeadLetter.LAST_FAILED_AT: "2026-11-01T10:13:00.000Z",
        }.items()
    }
    moved[Attributes.PRIOR_ATTEMPTS] = {"DataType": "Number", "StringValue": "3"}
    tier.sqs.send_message(
        QueueUrl=tier.queue_url, MessageBody=build(FAILING, {}, "again").to_json(), MessageAttributes=moved
    )
    for _ in range(3):
        tier.run_batch(consumer)
        tier.make_visible()
    assert runs == [("again", 1), ("again", 2), ("again", 3)]
    (letter,) = tier.dlq_messages()
    why = reasons(letter)
    assert (why[DeadLetter.ATTEMPTS], why[DeadLetter.FIRST_FAILED_AT]) == ("3", first_failed)
    assert Attributes.PRIOR_ATTEMPTS not in why  # a letter folds the runtime's state into its reasons


def test_the_first_failure_and_the_enqueue_time_survive_a_hold(tier, capsys):
    """Failed once, then held: the copy carries the first failure (the original's first receive)
    and the original's enqueue time; its letter and its ``JobAge`` count from them."""
    runs: list = []
    sqs = Recording(tier.sqs)
    jobs = registry(runs)
    tier.publish(FAILING, {}, "k")
    plain = tier.consumer(registry=jobs, max_attempts=3)
    tier.run_batch(plain)  # attempt 1 fails: retried
    tier.make_visible()
    (original,) = messages = tier.receive_for_batch()  # its receive 2
    first_receive = datetime.fromtimestamp(
        int(original["Attributes"]["ApproximateFirstReceiveTimestamp"]) / 1000, timezone.utc
    )
    sent_at = datetime.fromtimestamp(int(original["Attributes"]["SentTimestamp"]) / 1000, timezone.utc)
    clock = FakeTime()
    held = limited(tier, tier.consumer(registry=jobs, max_attempts=3), clock, sqs=sqs)
    held.limiter.limits = RateLimits(None, {FAILING: RateLimit(1, 1)}, max_wait_seconds=0.0)
    reserved_ahead = clock() + RESERVE_SECONDS + 60  # no token within what a claim may reserve
    held.limiter.bucket(held.limiter.limits.bucket_for("critical", FAILING)).last_tat_us = int(reserved_ahead * 1e6)
    assert tier.run_messages(held, messages) == {"batchItemFailures": []}  # held: no token for 16 minutes
    ((copy,),) = [call["Entries"] for call in sqs.of("send_message_batch")]
    assert copy["MessageAttributes"][Attributes.PRIOR_ATTEMPTS]["StringValue"] == "1"
    assert copy["MessageAttributes"][Attributes.FIRST_FAILED_AT]["StringValue"] == iso(first_receive)
    assert copy["MessageAttributes"][Attributes.ENQUEUED_AT]["StringValue"] == iso(sent_at)
    # the copy, sent without its delay, runs attempts 2 and 3 and is dead-lettered
    tier.sqs.send_message(
        QueueUrl=tier.queue_url, MessageBody=copy["MessageBody"], MessageAttributes=copy["MessageAttributes"]
    )
    later = tier.consumer(registry=jobs, max_attempts=3)
    later.now = lambda: sent_at + timedelta(minutes=7)
    for _ in range(2):
        tier.run_batch(later)
        tier.make_visible()
    assert [attempt for _, attempt in runs] == [1, 2, 3]
    (letter,) = tier.dlq_messages()
    assert reasons(letter)[DeadLetter.FIRST_FAILED_AT] == iso(first_receive)
    assert totals(capsys)[f"max {Metrics.JOB_AGE}"] == pytest.approx(420, abs=1)


def test_a_deferred_copy_keeps_its_enqueue_time(tier):
    runs: list = []
    sqs = Recording(tier.sqs)
    clock = {"context": LambdaClock(TIMEOUT_MS)}
    consumer = tier.consumer(
        registry=registry(runs, clock), margin_ms=MARGIN_MS, client={"sqs": sqs, "dynamodb": tier.dynamodb}.__getitem__
    )
    tier.publish(HOG, {}, "hog")
    tier.publish(FREE, {}, "behind")
    messages = sorted(tier.receive_for_batch(), key=lambda m: HOG not in m["Body"])
    (behind,) = [m for m in messages if HOG not in m["Body"]]
    tier.run_messages(consumer, messages, clock["context"])
    ((copy,),) = [call["Entries"] for call in sqs.of("send_message_batch")]
    sent_at = datetime.fromtimestamp(int(behind["Attributes"]["SentTimestamp"]) / 1000, timezone.utc)
    assert copy["MessageAttributes"][Attributes.ENQUEUED_AT]["StringValue"] == iso(sent_at)
    assert copy["DelaySeconds"] == 0 and Attributes.FIRST_FAILED_AT not in copy["MessageAttributes"]
