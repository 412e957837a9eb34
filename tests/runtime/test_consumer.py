"""The consumer's rules, each on a real SQS event from moto."""

from __future__ import annotations

import json
import threading
from datetime import datetime

import pytest
from botocore.exceptions import ClientError

from tests.support.crash_stories import a_crash_after_the_effect_keeps_it_once
from tiered_jobs.contract.names import DeadLetter, Metrics
from tiered_jobs.runtime.errors import PermanentError, TransientError
from tiered_jobs.runtime.registry import JobRegistry


class Faulty:
    """Wraps a boto3 client; ``faults[operation]`` is a callable(kwargs) that may raise."""

    def __init__(self, real, **faults):
        self._real, self._faults, self.calls = real, faults, []

    def __getattr__(self, name):
        method = getattr(self._real, name)

        def call(**kwargs):
            self.calls.append((name, kwargs))
            if name in self._faults:
                self._faults[name](kwargs)
            return method(**kwargs)

        return call


def client_error(code: str, status: int) -> ClientError:
    return ClientError(
        {"Error": {"Code": code, "Message": f"{code} injected"}, "ResponseMetadata": {"HTTPStatusCode": status}},
        "Injected",
    )


def attrs(message: dict) -> dict[str, str]:
    return {k: v["StringValue"] for k, v in message.get("MessageAttributes", {}).items()}


def emf_documents(capsys) -> list[dict]:
    """The EMF documents printed by the consumer, with each metric's values summed."""
    docs = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]
    return [{k: sum(v) if isinstance(v, list) else v for k, v in d.items()} for d in docs]


# --- success and duplicates -------------------------------------------------------------


def test_effect_applies_once_and_batch_succeeds(tier):
    tier.publish("testjobs.effect", {"counter": "acc-1", "amount": 150}, "pay-1")
    response = tier.run_batch(tier.consumer())
    assert response == {"batchItemFailures": []}
    assert tier.counter("acc-1") == 150
    assert tier.receive() == [] and tier.dlq_messages() == []


def test_duplicates_in_one_batch_apply_once(tier, capsys):
    for _ in range(3):
        tier.publish("testjobs.effect", {"counter": "acc-1", "amount": 100}, "pay-dup")
    response = tier.run_batch(tier.consumer())
    assert response["batchItemFailures"] == []
    assert tier.counter("acc-1") == 100
    (doc,) = emf_documents(capsys)
    assert doc[Metrics.PROCESSED] == 3 and doc[Metrics.SUCCEEDED] == 3 and doc[Metrics.DUPLICATE] == 2


def test_duplicates_across_batches_and_containers_apply_once(tier):
    tier.publish("testjobs.effect", {"counter": "acc-2", "amount": 7}, "pay-x")
    tier.run_batch(tier.consumer())
    tier.publish("testjobs.effect", {"counter": "acc-2", "amount": 7}, "pay-x")
    tier.run_batch(tier.consumer())  # a new consumer: a new container, no local cache
    assert tier.counter("acc-2") == 7


def test_in_container_duplicate_costs_no_dynamodb_call(tier, recorded):
    dynamodb = Faulty(tier.dynamodb)
    consumer = tier.consumer(client={"sqs": tier.sqs, "dynamodb": dynamodb}.__getitem__)
    tier.publish("testjobs.ok", {"label": "signup"}, "evt-1")
    tier.run_batch(consumer)
    calls_after_first = len(dynamodb.calls)
    tier.publish("testjobs.ok", {"label": "signup"}, "evt-1")
    tier.run_batch(consumer)
    assert calls_after_first == 2  # PutItem (in progress) + UpdateItem (completed)
    assert len(dynamodb.calls) == calls_after_first
    assert recorded == [("evt-1", {"label": "signup"})]  # the job ran once


def test_same_key_with_another_payload_is_a_permanent_conflict(tier):
    tier.publish("testjobs.effect", {"counter": "acc-3", "amount": 5}, "pay-c")
    tier.run_batch(tier.consumer())
    tier.publish("testjobs.effect", {"counter": "acc-3", "amount": 500}, "pay-c")
    assert tier.run_batch(tier.consumer())["batchItemFailures"] == []
    (letter,) = tier.dlq_messages()
    assert attrs(letter)[DeadLetter.REASON] == DeadLetter.REASON_PERMANENT
    assert attrs(letter)[DeadLetter.ERROR_TYPE] == "IdempotencyConflictError"
    assert "already used" in attrs(letter)[DeadLetter.ERROR_MESSAGE]
    assert tier.counter("acc-3") == 5


# --- crash safety ------------------------------------------------------------------------


def test_crash_after_side_effect_keeps_the_effect_exactly_once(tier):
    """The process dies after the job's transaction and before the idempotency record
    completes. The message returns; the transaction's marker stops a second application."""
    a_crash_after_the_effect_keeps_it_once(
        tier,
        "testjobs.effect",
        {"counter": "acc-9", "amount": 42},
        "pay-crash",
        effect=lambda: tier.counter("acc-9"),
        expected=42,
    )


def test_record_still_in_progress_elsewhere_is_retried_not_failed(tier, lambda_context):
    registry = JobRegistry()
    started, release = threading.Event(), threading.Event()

    @registry.job("demo.slow")
    def slow(payload, ctx):
        started.set()
        release.wait(5)
        return {"ok": True}

    tier.publish("demo.slow", {}, "slow-1")
    tier.publish("demo.slow", {}, "slow-1")
    messages = tier.sqs.receive_message(
        QueueUrl=tier.queue_url, MaxNumberOfMessages=10, MessageSystemAttributeNames=["All"]
    ).get("Messages", [])
    assert len(messages) == 2
    first = tier.consumer(registry=registry)
    second = tier.consumer(registry=registry)
    results = {}
    worker = threading.Thread(
        target=lambda: results.setdefault("first", first.handle(tier.event(messages[:1]), lambda_context()))
    )
    worker.start()
    assert started.wait(5)
    results["second"] = second.handle(tier.event(messages[1:]), lambda_context())
    release.set()
    worker.join(5)
    assert results["first"]["batchItemFailures"] == []
    assert results["second"]["batchItemFailures"] == [{"itemIdentifier": messages[1]["MessageId"]}]


# --- transient failures and backoff ------------------------------------------------------


@pytest.mark.parametrize("attempt, base", [(1, 5), (2, 30), (3, 120), (4, 600)])
@pytest.mark.parametrize("rand", [0.0, 0.999999])
def test_transient_failure_sets_visibility_to_jittered_backoff(tier, attempt, base, rand):
    sqs = Faulty(tier.sqs)
    consumer = tier.consumer(client={"sqs": sqs, "dynamodb": tier.dynamodb}.__getitem__, rand=lambda: rand)
    tier.publish("testjobs.transient", {"fail_times": 9}, "flaky-1")
    for _ in range(attempt - 1):  # earlier receives, to reach this attempt number
        tier.receive()
    response = tier.run_batch(consumer)
    assert len(response["batchItemFailures"]) == 1
    (entry,) = [kw["Entries"][0] for name, kw in sqs.calls if name == "change_message_visibility_batch"]
    expected = round(base * 0.8) if rand == 0.0 else round(base * 1.2)
    assert entry["VisibilityTimeout"] == expected
    assert tier.dlq_messages() == []


def test_jitter_spreads_delays_within_bounds(tier):
    from tiered_jobs.runtime.backoff import RetryPolicy

    policy = RetryPolicy()
    import random

    rng = random.Random(7)
    delays = {policy.delay(2, rng.random) for _ in range(200)}
    assert min(delays) >= 24 and max(delays) <= 36 and len(delays) > 5


def test_backoff_is_capped_at_twelve_hours():
    from tiered_jobs.runtime.backoff import RetryPolicy

    policy = RetryPolicy(schedule=(43_200,), jitter=0.5)
    assert policy.delay(1, lambda: 1.0) == 43_200


def test_flaky_job_succeeds_after_its_transient_failures(tier, capsys):
    tier.publish("testjobs.transient", {"fail_times": 2}, "flaky-2")
    consumer = tier.consumer()
    for _ in range(2):
        assert len(tier.run_batch(consumer)["batchItemFailures"]) == 1
        tier.make_visible()
    assert tier.run_batch(consumer)["batchItemFailures"] == []
    assert tier.receive() == [] and tier.dlq_messages() == []
    docs = emf_documents(capsys)  # a retry that later succeeds is never a failed job
    assert [(d[Metrics.RETRIED], d[Metrics.FAILED], d[Metrics.SUCCEEDED]) for d in docs] == [
        (1, 0, 0),
        (1, 0, 0),
        (0, 0, 1),
    ]


def test_last_attempt_dead_letters_with_every_reason_attribute(tier):
    tier.publish("testjobs.transient", {"fail_times": 9}, "flaky-3", origin="checkout")
    consumer = tier.consumer(max_attempts=2)
    assert len(tier.run_batch(consumer)["batchItemFailures"]) == 1
    tier.make_visible()
    before = datetime.now().astimezone()
    assert tier.run_batch(consumer)["batchItemFailures"] == []
    (letter,) = tier.dlq_messages()
    a = attrs(letter)
    assert a[DeadLetter.REASON] == DeadLetter.REASON_RETRIES_EXHAUSTED
    assert a[DeadLetter.ERROR_TYPE] == "TransientError"
    assert "failing on purpose, attempt 2 of the first 9" in a[DeadLetter.ERROR_MESSAGE]
    assert a[DeadLetter.ATTEMPTS] == "2"
    assert a[DeadLetter.JOB_TYPE] == "testjobs.transient"
    assert a[DeadLetter.SOURCE_QUEUE] == tier.queue_arn
    first = datetime.fromisoformat(a[DeadLetter.FIRST_FAILED_AT].replace("Z", "+00:00"))
    last = datetime.fromisoformat(a[DeadLetter.LAST_FAILED_AT].replace("Z", "+00:00"))
    assert first <= last and last >= before.replace(microsecond=0)
    assert a["origin"] == "checkout"  # the publisher's own attributes travel along
    assert tier.receive() == []


def test_unknown_exceptions_are_transient_and_declared_ones_permanent(tier):
    class Flaky(Exception):
        pass

    class AccountClosed(Exception):
        pass

    registry = JobRegistry()

    @registry.job("demo.boom")
    def boom(payload, ctx):
        raise Flaky("who knows")

    @registry.job("demo.closed", permanent=(AccountClosed,))
    def closed(payload, ctx):
        raise AccountClosed("account 7 is closed")

    tier.publish("demo.boom", {}, "b-1")
    tier.publish("demo.closed", {}, "c-1")
    response = tier.run_batch(tier.consumer(registry=registry))
    assert len(response["batchItemFailures"]) == 1
    (letter,) = tier.dlq_messages()
    assert attrs(letter)[DeadLetter.ERROR_TYPE] == "AccountClosed"
    assert attrs(letter)[DeadLetter.REASON] == DeadLetter.REASON_PERMANENT


@pytest.mark.parametrize(
    "error, kind",
    [
        (client_error("ThrottlingException", 400), "transient"),
        (client_error("InternalServerError", 500), "transient"),
        (client_error("TooManyRequests", 429), "transient"),
        (client_error("ValidationException", 400), "permanent"),
        (client_error("AccessDeniedException", 403), "permanent"),
        (TimeoutError("read timed out"), "transient"),
        (ConnectionResetError("reset"), "transient"),
        (TransientError("x"), "transient"),
        (PermanentError("x"), "permanent"),
        (KeyError("bug"), "transient"),
    ],
)
def test_error_classification(error, kind):
    from tiered_jobs.runtime.errors import classify

    assert classify(error) == kind


def test_classification_sees_through_wrapped_causes():
    from aws_lambda_powertools.utilities.idempotency.exceptions import (
        IdempotencyPersistenceLayerError,
    )

    from tiered_jobs.runtime.errors import classify

    throttled = client_error("ProvisionedThroughputExceededException", 400)
    try:
        try:
            raise throttled
        except ClientError as exc:
            raise IdempotencyPersistenceLayerError("Failed to save in progress record", exc) from exc
    except IdempotencyPersistenceLayerError as wrapped:
        assert classify(wrapped) == "transient"


def test_http_status_codes_of_other_clients():
    from tiered_jobs.runtime.errors import classify

    class HTTPStatusError(Exception):
        def __init__(self, status):
            self.status_code = status

    assert classify(HTTPStatusError(503)) == "transient"
    assert classify(HTTPStatusError(404)) == "permanent"
    assert classify(HTTPStatusError(408)) == "transient"


def test_idempotency_store_throttling_is_retried(tier):
    def throttle(kwargs):
        raise client_error("ProvisionedThroughputExceededException", 400)

    consumer = tier.consumer(client={"sqs": tier.sqs, "dynamodb": Faulty(tier.dynamodb, put_item=throttle)}.__getitem__)
    tier.publish("testjobs.effect", {"counter": "acc-t", "amount": 3}, "pay-t")
    assert len(tier.run_batch(consumer)["batchItemFailures"]) == 1
    assert tier.counter("acc-t") == 0 and tier.dlq_messages() == []


# --- permanent failures ------------------------------------------------------------------


def test_permanent_failure_goes_to_dlq_on_first_attempt(tier):
    tier.publish("testjobs.ok", {"label": "not a label", "note": "hi"}, "mail-1")
    assert tier.run_batch(tier.consumer())["batchItemFailures"] == []
    (letter,) = tier.dlq_messages()
    a = attrs(letter)
    assert a[DeadLetter.REASON] == DeadLetter.REASON_PERMANENT
    assert a[DeadLetter.ERROR_TYPE] == "PayloadValidationError"
    assert "payload field 'label' must match" in a[DeadLetter.ERROR_MESSAGE]
    assert a[DeadLetter.ATTEMPTS] == "1"
    assert a[DeadLetter.FIRST_FAILED_AT] == a[DeadLetter.LAST_FAILED_AT]
    assert tier.receive() == []


def test_dead_letter_keeps_the_body_byte_for_byte(tier):
    body = '{"type":"testjobs.permanent", "idempotency_key":"k é ✓",  "payload":{"reason":"é ✓ \\u00e9"}}'
    tier.send_raw(body)
    tier.run_batch(tier.consumer())
    (letter,) = tier.dlq_messages()
    assert letter["Body"] == body


def test_dlq_send_failure_keeps_the_message(tier, capsys):
    def refuse(kwargs):
        raise client_error("KMS.AccessDeniedException", 400)

    consumer = tier.consumer(
        client={"sqs": Faulty(tier.sqs, send_message=refuse), "dynamodb": tier.dynamodb}.__getitem__
    )
    message_id = tier.publish("testjobs.permanent", {}, "p-1")
    response = tier.run_batch(consumer)
    assert response["batchItemFailures"] == [{"itemIdentifier": message_id}]
    tier.make_visible()
    assert [m["MessageId"] for m in tier.receive()] == [message_id]
    (doc,) = emf_documents(capsys)
    assert doc[Metrics.FAILED] == 1 and doc[Metrics.DEAD_LETTERED] == 0


def test_poison_record_next_to_good_ones(tier):
    tier.publish("testjobs.effect", {"counter": "acc-p", "amount": 1}, "good-1")
    tier.send_raw("this is not json")
    transient = tier.publish("testjobs.transient", {"fail_times": 3}, "flaky-p")
    tier.publish("testjobs.effect", {"counter": "acc-p", "amount": 2}, "good-2")
    response = tier.run_batch(tier.consumer())
    assert response["batchItemFailures"] == [{"itemIdentifier": transient}]
    assert tier.counter("acc-p") == 3
    (letter,) = tier.dlq_messages()
    assert letter["Body"] == "this is not json"
    assert attrs(letter)[DeadLetter.ERROR_TYPE] == "EnvelopeError"
    assert attrs(letter)[DeadLetter.JOB_TYPE] == "invalid"


def test_batch_where_every_record_fails_is_a_partial_response(tier):
    ids = [tier.publish("testjobs.transient", {"fail_times": 5}, f"all-{i}") for i in range(4)]
    response = tier.run_batch(tier.consumer())
    assert sorted(f["itemIdentifier"] for f in response["batchItemFailures"]) == sorted(ids)


def test_failure_rate_metrics_per_tier_and_job_type(tier, capsys):
    """JobsFailed counts jobs failed for good; a retried attempt counts only JobsRetried."""
    tier.publish("testjobs.effect", {"counter": "a", "amount": 1}, "m-1")
    tier.publish("testjobs.transient", {"fail_times": 1}, "m-2")
    tier.publish("testjobs.transient", {"fail_times": -1}, "m-3")  # refused by its schema: failed for good
    tier.publish("testjobs.permanent", {}, "m-4")
    tier.run_batch(tier.consumer())
    docs = {d[Metrics.DIM_JOB_TYPE]: d for d in emf_documents(capsys)}
    assert set(docs) == {"testjobs.effect", "testjobs.transient", "testjobs.permanent"}

    def counts(job_type: str) -> tuple[int, ...]:
        doc = docs[job_type]
        return (
            doc[Metrics.PROCESSED],
            doc[Metrics.SUCCEEDED],
            doc[Metrics.FAILED],
            doc[Metrics.RETRIED],
            doc[Metrics.DEAD_LETTERED],
            doc[Metrics.DEFERRED],
        )

    assert counts("testjobs.transient") == (2, 0, 1, 1, 1, 0)
    assert counts("testjobs.permanent") == (1, 0, 1, 0, 1, 0)
    assert counts("testjobs.effect") == (1, 1, 0, 0, 0, 0)
    flaky = docs["testjobs.transient"]
    directive = flaky["_aws"]["CloudWatchMetrics"][0]
    assert directive["Namespace"] == Metrics.NAMESPACE
    assert [Metrics.DIM_STAGE, Metrics.DIM_TIER, Metrics.DIM_SERVICE] in [
        sorted(d) for d in directive["Dimensions"]
    ] or sorted([Metrics.DIM_SERVICE, Metrics.DIM_STAGE, Metrics.DIM_TIER]) in [
        sorted(d) for d in directive["Dimensions"]
    ]
    assert sorted([Metrics.DIM_STAGE, Metrics.DIM_TIER, Metrics.DIM_JOB_TYPE]) in [
        sorted(d) for d in directive["Dimensions"]
    ]
    assert flaky[Metrics.DIM_TIER] == "critical" and flaky[Metrics.DIM_SERVICE] == Metrics.SERVICE


# --- malformed bodies (the full catalogue: test_bad_input_catalogue.py) ---------------------


def test_oversized_and_non_utf8_bodies_are_rejected_by_the_envelope():
    from tiered_jobs.contract.envelope import EnvelopeError, parse

    big = json.dumps({"type": "testjobs.ok", "idempotency_key": "k", "payload": {"blob": "x" * 1_048_576}})
    with pytest.raises(EnvelopeError, match="over the 1048576-byte limit; pass IDs, not objects"):
        parse(big)
    with pytest.raises(EnvelopeError, match="not valid UTF-8"):
        parse(b'{"type": "\xff"}')


def test_one_mib_body_within_the_limit_is_processed(tier, lambda_context, recorded):
    envelope = {"type": "testjobs.ok", "idempotency_key": "big", "payload": {"label": "e"}}
    filler = 1_048_576 - len(json.dumps({**envelope, "payload": {"label": "e", "blob": ""}})) - 1024
    body = json.dumps({**envelope, "payload": {"label": "e", "blob": "x" * filler}})
    record = {
        "messageId": "m-big",
        "receiptHandle": "r",
        "body": body,
        "attributes": {"ApproximateReceiveCount": "1"},
        "messageAttributes": {},
        "md5OfBody": "",
        "eventSource": "aws:sqs",
        "eventSourceARN": tier.queue_arn,
        "awsRegion": "us-east-1",
    }
    assert tier.consumer().handle({"Records": [record]}, lambda_context()) == {"batchItemFailures": []}
    assert recorded == [("big", {"label": "e", "blob": "x" * filler})]


def test_missing_environment_is_a_clear_configuration_error(monkeypatch):
    from tiered_jobs.runtime.config import ConfigurationError, TierConfig

    with pytest.raises(ConfigurationError, match="TIERED_JOBS_QUEUE_URL"):
        TierConfig.from_env({"TIERED_JOBS_STAGE": "dev", "TIERED_JOBS_TIER": "bulk"})
