"""The bad-input catalogue: every entry point refuses bad input with a clear error, loses
nothing, and leaves the rest of its batch alone. ``docs/bad-input.md`` documents each case by id
(a test below keeps the two in step).

* publisher -- refused before anything is sent; the error names the job; a batch is all or
  nothing, and the same batch without the bad job goes through;
* consumer  -- a bad message is dead-lettered at once, body byte-for-byte, with its reason; the
  good message next to it in the same batch succeeds;
* replay    -- the event is refused with every problem and the allowed fields; the DLQ is untouched.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pytest

from tiered_jobs.contract.names import DeadLetter, Env

DOC = Path(__file__).resolve().parents[2] / "docs" / "bad-input.md"

#: id -> (job type, payload, key, publish options, expected error)
PUBLISHER = {
    "P1": (
        "testjobs.effect",
        {"counter": "a", "when": datetime.datetime(2026, 11, 29)},
        "k1",
        {},
        "payload['when'] is a datetime, which is not JSON-serialisable",
    ),
    "P2": (
        "testjobs.ok",
        {"label": "e", "blob": "x" * 1_100_000},
        "k2",
        {},
        "over the 1040384-byte limit (SQS's 1048576 less 8192 for the runtime's own attributes); pass IDs",
    ),
    "P3": (
        "testjobs.effect",
        {"counter": "a", "amount": 1},
        "",
        {},
        "'idempotency_key' must be 1-256 characters, got 0",
    ),
    "P4": (
        "testjobs.effect",
        {"counter": "a", "amount": 1},
        "k" * 257,
        {},
        "'idempotency_key' must be 1-256 characters, got 257",
    ),
    "P5": ("reports.build", {}, "k5", {}, "no route for job type 'reports.build'"),
    "P6": ("Payments.Update!", {}, "k6", {}, "'type' must match ^[a-z0-9_]+(\\.[a-z0-9_]+)*$"),
    "P7": ("testjobs.effect", [1, 2], "k7", {}, "'payload' must be a JSON object, got an array"),
    "P8": (
        "testjobs.effect",
        {"counter": "a", "amount": 1},
        "k8",
        {"tier": "gold"},
        "unknown tier 'gold'; known tiers: critical",
    ),
    "P9": (
        "testjobs.effect",
        {"counter": "a", "amount": 1},
        "k9",
        {"delay": -1},
        "delay must be 0 seconds or more, got -1",
    ),
    "P10": (
        "testjobs.effect",
        {"counter": "a", "amount_cents": -5},
        "k10",
        {},
        "payload is missing required field 'amount'",
    ),
    "P11": (
        "testjobs.ok",
        {"label": "e", "data": {"memo": "ab\uffff"}},
        "k11",
        {},
        "payload['data']['memo'] holds U+FFFF at character 2, which SQS does not accept in a message",
    ),
    # A day ahead: through a one-time schedule, so EventBridge Scheduler's own rules apply (not SQS's).
    "P12": (
        "testjobs.ok",
        {"label": "e", "blob": "x" * 300_000},
        "k12",
        {"delay": 86_400},
        "over EventBridge Scheduler's 262144-byte (256 KB) limit on a one-time schedule's input",
    ),
    "P13": (
        "testjobs.ok",
        {"label": "e", "note": "at <aws.scheduler.scheduled-time>"},
        "k13",
        {"delay": 86_400},
        "which EventBridge Scheduler would replace when the one-time schedule fires",
    ),
    # Under SQS's 1 MiB, but no room left for the reasons of its letter or the state of its copies.
    "P14": (
        "testjobs.ok",
        {"label": "e", "data": {"blob": "x" * 1_045_000}},
        "k14",
        {},
        "over the 1040384-byte limit (SQS's 1048576 less 8192 for the runtime's own attributes)",
    ),
}

#: id -> (raw body a non-Python publisher might send, expected DeadLetter.ErrorType, expected message)
CONSUMER = {
    "C1": ("{not json", "EnvelopeError", "the body is not JSON"),
    "C2": ("[1, 2, 3]", "EnvelopeError", "the body must be a JSON object, got an array"),
    "C3": ('{"idempotency_key": "k", "payload": {}}', "EnvelopeError", "missing required field 'type'"),
    "C4": ('{"type": "testjobs.ok", "payload": {}}', "EnvelopeError", "missing required field 'idempotency_key'"),
    "C5": ('{"type": "testjobs.ok", "idempotency_key": "k"}', "EnvelopeError", "missing required field 'payload'"),
    "C6": (
        '{"type": "testjobs.ok", "idempotency_key": 42, "payload": {}}',
        "EnvelopeError",
        "'idempotency_key' must be a string, got a number",
    ),
    "C7": (
        json.dumps({"type": "testjobs.ok", "idempotency_key": "k" * 257, "payload": {}}),
        "EnvelopeError",
        "'idempotency_key' must be 1-256 characters, got 257",
    ),
    "C8": (
        '{"type": "reports.build", "idempotency_key": "k", "payload": {}}',
        "UnknownJobTypeError",
        "unknown job type 'reports.build'; registered: testjobs.ok, testjobs.transient",
    ),
    "C9": (
        # A version above 1 is a newer producer's, held for a newer consumer (test_envelope_too_new.py).
        '{"type": "testjobs.ok", "idempotency_key": "k", "payload": {}, "version": 0}',
        "EnvelopeError",
        "'version' must be 1, got 0",
    ),
    "C10": (
        '{"type": "testjobs.ok", "idempotency_key": "k", "payload": {"x": ' + "[" * 200_000 + "]" * 200_000 + "}}",
        "EnvelopeError",
        "the body is JSON nested too deeply to parse",
    ),
    "C11": (
        '{"type": "testjobs.effect", "idempotency_key": "k", "payload": {"counter": "a", "amount": "10"}}',
        "PayloadValidationError",
        "payload field 'amount' must be an integer, got a string",
    ),
    "C12": (
        '{"type": "testjobs.ok", "idempotency_key": "k", "payload": {"label": "no body", "note": "s"}}',
        "PayloadValidationError",
        "payload field 'label' must match ^[A-Za-z0-9_.:-]{1,64}$, got 'no body'",
    ),
    "C13": (
        # Alone, a field this release does not know is a newer producer's, held (test_envelope_too_new.py).
        '{"type": "testjobs.ok", "idempotency_key": 7, "payload": {}, "priority": "high"}',
        "EnvelopeError",
        "unknown field(s) 'priority'; allowed: type, idempotency_key, payload, version, published_at",
    ),
    "C16": (
        '{"type": "Demo Flaky!", "idempotency_key": "k", "payload": {}}',
        "EnvelopeError",
        "'type' must match ^[a-z0-9_]+(\\.[a-z0-9_]+)*$",
    ),
}

#: id -> (replay event, expected problem)
REPLAY = {
    "R1": ({"tier": "critical", "job_typ": "testjobs.*"}, "unknown field(s) 'job_typ'"),
    "R2": ({"tier": "critical", "max_messages": -5}, "'max_messages' must be a whole number from 1 to 10000, got -5"),
    "R3": ({"tier": "gold"}, "unknown tier 'gold' (this stage has 'critical')"),
    "R4": (
        {"tier": "critical", "action": "purge"},
        "'action' must be one of 'replay', 'inspect', 'discard', 'show', got 'purge'",
    ),
    "R5": ({"tier": "critical", "dry_run": "yes"}, "'dry_run' must be true or false, got the string 'yes'"),
    "R6": ({"tier": "critical", "max_per_second": 0}, "'max_per_second' must be a number above 0 or null (no limit)"),
    "R7": (["critical"], "the event must be a JSON object, got an array"),
    "R8": ({"dry_run": True}, "'tier' is required (one of 'critical')"),
    "R9": ({"tier": "critical", "mode": "native"}, "'mode': 'native' moves every letter however old"),
}


@pytest.fixture
def publisher(tier):
    from tiered_jobs.contract.routing import Routes
    from tiered_jobs.publisher import Publisher

    routes = Routes({"testjobs.*": "critical"})
    return Publisher({"critical": tier.queue_url}, routes, sqs=tier.sqs)


@pytest.mark.parametrize("case", sorted(PUBLISHER, key=lambda c: int(c[1:])))
def test_publisher_refuses_before_sending_and_names_the_job(tier, publisher, case):
    from tiered_jobs.publisher import InvalidJobError, Job

    job_type, payload, key, options, expected = PUBLISHER[case]
    good = Job("testjobs.ok", {"label": "neighbour"}, f"good-{case}")
    bad = Job(job_type, payload, key, **options)
    with pytest.raises(InvalidJobError) as error:
        publisher.publish_batch([good, bad, good])
    assert expected in str(error.value)
    # the bad job is the second of the batch: index 1
    assert all(problem.startswith("job #1 ") for problem in error.value.problems), error.value.problems
    assert tier.receive() == []  # nothing was sent: no half-published batch
    assert [r.ok for r in publisher.publish_batch([good])] == [True]  # the good job is unaffected


@pytest.mark.parametrize("case", sorted(CONSUMER, key=lambda c: int(c[1:])))
def test_consumer_dead_letters_bad_messages_with_their_reason_and_spares_the_neighbour(tier, case):
    from tiered_jobs.runtime.registry import JobRegistry, registry

    body, error_type, expected = CONSUMER[case]
    subset = JobRegistry()  # C8's message lists the registered types: keep that list short and stable
    for name in ("testjobs.ok", "testjobs.transient"):
        definition = registry.get(name)
        subset.job(name, validate=definition.validate)(definition.handler)
    used = subset if case == "C8" else registry
    tier.send_raw(body)
    tier.publish("testjobs.ok", {"label": "neighbour"}, f"neighbour-{case}")
    assert tier.run_batch(tier.consumer(registry=used)) == {"batchItemFailures": []}
    (letter,) = tier.dlq_messages()
    reasons = {k: v["StringValue"] for k, v in letter["MessageAttributes"].items()}
    assert letter["Body"] == body
    assert reasons[DeadLetter.REASON] == DeadLetter.REASON_PERMANENT
    assert reasons[DeadLetter.ATTEMPTS] == "1"
    assert reasons[DeadLetter.ERROR_TYPE] == error_type
    assert expected in reasons[DeadLetter.ERROR_MESSAGE]
    assert tier.receive() == []  # the neighbour succeeded and was deleted, nothing retries


def test_consumer_same_key_with_another_payload(tier):
    """C14: the idempotency record keeps the first payload's hash; a different payload is refused."""
    tier.publish("testjobs.effect", {"counter": "acc", "amount": 5}, "pay-1")
    tier.run_batch(tier.consumer())
    tier.publish("testjobs.effect", {"counter": "acc", "amount": 500}, "pay-1")
    tier.publish("testjobs.ok", {"label": "neighbour"}, "neighbour-c14")
    assert tier.run_batch(tier.consumer())["batchItemFailures"] == []
    (letter,) = tier.dlq_messages()
    reasons = {k: v["StringValue"] for k, v in letter["MessageAttributes"].items()}
    assert reasons[DeadLetter.ERROR_TYPE] == "IdempotencyConflictError"
    assert reasons[DeadLetter.ERROR_MESSAGE] == (
        "idempotency key 'pay-1' was already used for 'testjobs.effect' with a different payload"
    )
    assert tier.counter("acc") == 5


def test_bodies_sqs_itself_refuses_never_enter_a_queue(tier):
    """C15: a body over 1 MiB, or one that is not valid UTF-8, cannot be enqueued; the envelope
    parser refuses the same for other transports."""
    from botocore.exceptions import ClientError

    from tiered_jobs.contract.envelope import EnvelopeError, parse

    with pytest.raises(ClientError, match="shorter than 1048576 bytes"):
        tier.sqs.send_message(QueueUrl=tier.queue_url, MessageBody="x" * 1_048_577)
    with pytest.raises(EnvelopeError, match="not valid UTF-8"):
        parse(b'{"type": "testjobs.ok", "idempotency_key": "\xff", "payload": {}}')
    assert tier.receive() == []


@pytest.mark.parametrize("case", sorted(REPLAY, key=lambda c: int(c[1:])))
def test_replay_refuses_bad_events_and_leaves_the_dlq_alone(tier, monkeypatch, lambda_context, case):
    from tiered_jobs.handlers.replay import handler
    from tiered_jobs.replay.events import ReplayEventError

    event, expected = REPLAY[case]
    monkeypatch.setenv(
        Env.REPLAY_TIERS, json.dumps({"critical": {"queue_url": tier.queue_url, "dlq_url": tier.dlq_url}})
    )
    tier.sqs.send_message(QueueUrl=tier.dlq_url, MessageBody='{"type": "testjobs.ok"}')
    with pytest.raises(ReplayEventError) as error:
        handler(event, lambda_context())
    assert expected in str(error.value)
    assert "Allowed fields:" in str(error.value)
    assert [m["Body"] for m in tier.dlq_messages()] == ['{"type": "testjobs.ok"}']
    assert tier.receive() == []


def test_the_catalogue_is_documented_case_by_case():
    text = DOC.read_text(encoding="utf-8")
    ids = [*PUBLISHER, *CONSUMER, "C14", "C15", *REPLAY]
    assert len(ids) >= 15
    missing = [case for case in ids if f"| {case} |" not in text]
    assert missing == []
