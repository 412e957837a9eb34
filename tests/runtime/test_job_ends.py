"""Jobs that end without running: expired (the envelope's deadline passed) and cancelled (a marker in
the job's idempotency record). Each is archived whole with its reason, never run, never a failure, never a
letter while the archive takes it; the deadline holds on every copy the job can become (a retry, a held
copy, a deferred copy, a replay), and a job that never uses either feature costs no call more."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import boto3
import pytest

from tests.runtime.test_copies import FREE, HOG, LIMITED, in_queue, limited, reasons, totals
from tests.runtime.test_copies import registry as copies_registry
from tests.runtime.test_ratelimit import FakeTime
from tests.runtime.test_time_budget import MARGIN_MS, TIMEOUT_MS, LambdaClock
from tests.support.recording import Recording
from tiered_jobs.contract import job_ends
from tiered_jobs.contract.envelope import build
from tiered_jobs.contract.idempotency import RecordAttributes, record_id
from tiered_jobs.contract.names import DeadLetter, Metrics
from tiered_jobs.contract.times import iso_text
from tiered_jobs.replay import TierQueues, parse_event, run
from tiered_jobs.replay.archive import S3Archive
from tiered_jobs.runtime.errors import PermanentError, TransientError
from tiered_jobs.runtime.registry import JobRegistry
from tiered_jobs.stage.cancelling import MarkTarget, mark_cancelled

BUCKET = "discard-archive"
PREFIX = "discarded/test/critical/"
WINDOW = 3600


def jobs(runs: list[str], *, cancel_midway=None) -> JobRegistry:
    registry = JobRegistry()

    @registry.job("t.ok")
    def ok(payload, ctx):
        runs.append(ctx.idempotency_key)
        return {"ran": ctx.idempotency_key}

    @registry.job("t.flaky")
    def flaky(payload, ctx):
        runs.append(ctx.idempotency_key)
        raise TransientError("downstream down")

    @registry.job("t.broken")
    def broken(payload, ctx):
        runs.append(ctx.idempotency_key)
        raise PermanentError("bad data")

    @registry.job("t.long")
    def long(payload, ctx):
        seen = [ctx.cancelled()]
        cancel_midway()
        seen.append(ctx.cancelled())
        runs.append(ctx.idempotency_key)
        return {"cancelled_seen": seen}

    return registry


@pytest.fixture
def archive(tier):
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket=BUCKET)
    return S3Archive(BUCKET, PREFIX, s3)


def archived(archive) -> list[dict]:
    s3 = archive.s3
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix=PREFIX).get("Contents", [])]
    lines = []
    for key in sorted(keys):
        lines += [json.loads(line) for line in s3.get_object(Bucket=BUCKET, Key=key)["Body"].read().splitlines()]
    return lines


def with_archive(consumer, archive, now: datetime | None = None):
    consumer._archive_factory = lambda: archive
    if now is not None:
        consumer.now = lambda: now
    return consumer


def publish(tier, job_type: str, key: str, expires_at: datetime | None = None, payload: dict | None = None) -> str:
    body = build(job_type, payload or {}, key, expires_at=iso_text(expires_at) if expires_at else None).to_json()
    return tier.send_raw(body)


def record(tier, job_type: str, key: str) -> dict:
    return tier.dynamodb.get_item(
        TableName=tier.idempotency_table, Key={RecordAttributes.KEY: {"S": record_id(job_type, key)}}
    ).get("Item", {})


def stored(item: dict):
    return json.loads(item[RecordAttributes.DATA]["S"]) if RecordAttributes.DATA in item else None


NOW = datetime.now(timezone.utc)


# -- expiry ---------------------------------------------------------------------------------------


def test_an_expired_job_is_archived_unrun_and_is_neither_a_failure_nor_a_letter(tier, archive, capsys):
    runs: list[str] = []
    consumer = with_archive(tier.consumer(registry=jobs(runs)), archive, NOW)
    late = publish(tier, "t.ok", "late", expires_at=NOW - timedelta(seconds=1))
    publish(tier, "t.ok", "in-time", expires_at=NOW + timedelta(minutes=5))
    publish(tier, "t.ok", "no-deadline")
    assert tier.run_batch(consumer) == {"batchItemFailures": []}
    assert sorted(runs) == ["in-time", "no-deadline"]
    (line,) = archived(archive)
    assert (line["reason"], line["message_id"], line["job_type"], line["tier"]) == ("expired", late, "t.ok", "critical")
    assert json.loads(line["body"])["idempotency_key"] == "late" and "deadline" in line["error_message"]
    assert in_queue(tier) == 0 and tier.dlq_messages() == []
    found = totals(capsys)
    assert found[Metrics.EXPIRED] == 1 and found[Metrics.PROCESSED] == 2
    assert found[Metrics.FAILED] == found[Metrics.DEAD_LETTERED] == found[Metrics.CANCELLED] == 0
    # its record says so (``tiered-jobs job``), for the idempotency window
    assert job_ends.marker_kind(stored(record(tier, "t.ok", "late"))) == job_ends.EXPIRED


def test_the_deadline_holds_after_a_retry(tier, archive, capsys):
    runs: list[str] = []
    registry = jobs(runs)
    publish(tier, "t.flaky", "k", expires_at=NOW + timedelta(seconds=30))
    tier.run_batch(with_archive(tier.consumer(registry=registry), archive, NOW))  # attempt 1 fails: retried
    tier.make_visible()
    tier.run_batch(with_archive(tier.consumer(registry=registry), archive, NOW + timedelta(seconds=31)))
    assert runs == ["k"] and [line["reason"] for line in archived(archive)] == ["expired"]
    assert in_queue(tier) == 0 and tier.dlq_messages() == []
    found = totals(capsys)
    assert (found[Metrics.RETRIED], found[Metrics.EXPIRED], found[Metrics.FAILED]) == (1, 1, 0)


def test_the_deadline_holds_on_a_held_copy_and_an_expired_job_takes_no_token(tier, archive):
    runs: list[tuple[str, int]] = []
    sqs = Recording(tier.sqs)
    clock = FakeTime()
    # One job per 2 s: the held copy's turn is 2 s away, so SQS delays it (a second before its turn).
    registry = copies_registry(runs)
    consumer = limited(tier, with_archive(tier.consumer(registry=registry), archive, NOW), clock, 0.5, sqs=sqs)
    publish(tier, LIMITED, "first", expires_at=NOW + timedelta(minutes=1))
    publish(tier, LIMITED, "second", expires_at=NOW + timedelta(minutes=1))
    publish(tier, LIMITED, "gone", expires_at=NOW - timedelta(minutes=1))
    tier.run_batch(consumer)  # one token: one runs, one is held as a copy, the expired one is archived
    assert len(runs) == 1 and [line["reason"] for line in archived(archive)] == ["expired"]
    ((copy,),) = [call["Entries"] for call in sqs.of("send_message_batch")]
    assert json.loads(copy["MessageBody"])["expires_at"] == iso_text(NOW + timedelta(minutes=1))
    tier.sqs.send_message(QueueUrl=tier.queue_url, MessageBody=copy["MessageBody"])  # its turn, after the deadline
    later = with_archive(tier.consumer(registry=copies_registry(runs)), archive, NOW + timedelta(minutes=2))
    tier.run_batch(later)
    assert len(runs) == 1 and [line["reason"] for line in archived(archive)] == ["expired", "expired"]


def test_the_deadline_holds_on_a_deferred_copy(tier, archive):
    runs: list[tuple[str, int]] = []
    sqs = Recording(tier.sqs)
    clock = {"context": LambdaClock(TIMEOUT_MS)}
    consumer = tier.consumer(
        registry=copies_registry(runs, clock),
        margin_ms=MARGIN_MS,
        client={"sqs": sqs, "dynamodb": tier.dynamodb}.__getitem__,
    )
    with_archive(consumer, archive, NOW)
    publish(tier, HOG, "hog")
    publish(tier, FREE, "behind", expires_at=NOW + timedelta(seconds=10))
    messages = sorted(tier.receive_for_batch(), key=lambda m: HOG not in m["Body"])
    tier.run_messages(consumer, messages, clock["context"])  # the hog spends the budget: "behind" is deferred
    ((copy,),) = [call["Entries"] for call in sqs.of("send_message_batch")]
    assert json.loads(copy["MessageBody"])["expires_at"] == iso_text(NOW + timedelta(seconds=10))
    later = with_archive(tier.consumer(registry=copies_registry(runs)), archive, NOW + timedelta(seconds=11))
    tier.run_batch(later)
    assert runs == [] and [json.loads(line["body"])["idempotency_key"] for line in archived(archive)] == ["behind"]


def test_the_deadline_holds_after_a_replay(tier, archive):
    runs: list[str] = []
    registry = jobs(runs)
    publish(tier, "t.broken", "k", expires_at=NOW + timedelta(minutes=10))
    tier.run_batch(with_archive(tier.consumer(registry=registry), archive, NOW))  # permanent: a letter
    tiers = {"critical": TierQueues(tier.queue_url, tier.dlq_url, idempotency_ttl_seconds=86400)}
    request = parse_event({"action": "replay", "tier": "critical"}, tiers=tiers)
    answer = run(request, sqs=tier.sqs, tiers=tiers, wait_seconds=0, now=lambda: NOW + timedelta(minutes=5))
    assert answer["moved"] == 1
    tier.run_batch(with_archive(tier.consumer(registry=registry), archive, NOW + timedelta(minutes=11)))
    assert runs == ["k"] and [line["reason"] for line in archived(archive)] == ["expired"]
    assert tier.dlq_messages() == []


def test_without_an_archive_an_expired_job_is_dead_lettered_with_its_reason_never_dropped(tier, capsys):
    runs: list[str] = []
    consumer = tier.consumer(registry=jobs(runs))
    consumer.now = lambda: NOW
    publish(tier, "t.ok", "late", expires_at=NOW - timedelta(seconds=1))
    assert tier.run_batch(consumer) == {"batchItemFailures": []}
    (letter,) = tier.dlq_messages()
    why = reasons(letter)
    assert (why[DeadLetter.REASON], why[DeadLetter.ERROR_TYPE]) == (DeadLetter.REASON_EXPIRED, "JobExpired")
    assert "no discard archive" in why[DeadLetter.ERROR_MESSAGE] and runs == []
    found = totals(capsys)
    assert (found[Metrics.EXPIRED], found[Metrics.FAILED]) == (1, 0)


def test_a_job_that_uses_neither_feature_makes_no_call_more(tier):
    runs: list[str] = []
    dynamodb = Recording(tier.dynamodb)
    consumer = tier.consumer(registry=jobs(runs), client={"sqs": tier.sqs, "dynamodb": dynamodb}.__getitem__)
    consumer._archive_factory = lambda: pytest.fail("no job ended unrun: the archive is never built")
    publish(tier, "t.ok", "plain")
    tier.run_batch(consumer)
    assert runs == ["plain"] and [name for name, _ in dynamodb.calls] == ["put_item", "update_item"]


# -- cancel ---------------------------------------------------------------------------------------


def marks(tier) -> MarkTarget:
    return MarkTarget(tier.idempotency_table, {"critical": WINDOW})


def test_a_cancelled_queued_job_is_archived_unrun_and_its_marker_ends_with_the_window(tier, archive, capsys):
    runs: list[str] = []
    publish(tier, "t.ok", "doomed")
    publish(tier, "t.ok", "kept")
    answer = mark_cancelled(tier.dynamodb, marks(tier), "critical", "t.ok", "doomed")
    assert answer.outcome == "marked" and answer.cancelled
    until = answer.until.timestamp()
    assert int(record(tier, "t.ok", "doomed")[RecordAttributes.EXPIRATION]["N"]) == pytest.approx(until, abs=1)
    assert until - datetime.now(timezone.utc).timestamp() == pytest.approx(WINDOW, abs=5)
    assert tier.run_batch(with_archive(tier.consumer(registry=jobs(runs)), archive)) == {"batchItemFailures": []}
    assert runs == ["kept"]
    (line,) = archived(archive)
    assert line["reason"] == "cancelled" and json.loads(line["body"])["idempotency_key"] == "doomed"
    found = totals(capsys)
    assert (found[Metrics.CANCELLED], found[Metrics.PROCESSED], found[Metrics.FAILED]) == (1, 1, 0)
    assert found[Metrics.SUCCEEDED] == 1  # the cancelled one is not answered as a duplicate
    # a second cancel says so, and writes nothing
    assert mark_cancelled(tier.dynamodb, marks(tier), "critical", "t.ok", "doomed").outcome == "already cancelled"


def test_a_cancel_of_a_finished_or_unknown_tier_job_is_a_clear_answer_that_writes_nothing(tier, archive):
    runs: list[str] = []
    publish(tier, "t.ok", "done")
    tier.run_batch(with_archive(tier.consumer(registry=jobs(runs)), archive))
    before = record(tier, "t.ok", "done")
    answer = mark_cancelled(tier.dynamodb, marks(tier), "critical", "t.ok", "done")
    assert (answer.outcome, answer.cancelled) == ("already done", False)
    assert "already ran" in answer_text(answer, "t.ok", "done")
    assert record(tier, "t.ok", "done") == before  # the finished record is left as it was
    # a duplicate delivery is still answered from the stored result
    publish(tier, "t.ok", "done")
    tier.run_batch(with_archive(tier.consumer(registry=jobs(runs)), archive))
    assert runs == ["done"] and archived(archive) == []
    from tiered_jobs.stage.cancelling import CancelError

    with pytest.raises(CancelError, match="idempotency window of tier 'bulk' is unknown"):
        mark_cancelled(tier.dynamodb, marks(tier), "bulk", "t.ok", "other")
    assert record(tier, "t.ok", "other") == {}


def answer_text(answer, job_type, key) -> str:
    from tiered_jobs.stage.cancelling import JobCancellation

    return JobCancellation(answer.outcome, record_expires=answer.record_expires).describe(job_type, key)


def test_a_running_job_sees_its_cancel_through_ctx_cancelled(tier, archive):
    runs: list[str] = []
    answers = []
    cancel = lambda: answers.append(mark_cancelled(tier.dynamodb, marks(tier), "critical", "t.long", "busy"))  # noqa: E731
    publish(tier, "t.long", "busy")
    tier.run_batch(with_archive(tier.consumer(registry=jobs(runs, cancel_midway=cancel)), archive))
    assert [a.outcome for a in answers] == ["running"] and runs == ["busy"]
    assert stored(record(tier, "t.long", "busy")) == {"cancelled_seen": [False, True]}
