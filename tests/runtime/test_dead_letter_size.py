"""A dead letter's copy fits SQS's 1 MiB with a body close to 1 MiB: the reasons give way, never the body.

SQS counts the body and each attribute's name, data type and value toward the 1 048 576 bytes
("the message size includes the name, type and value of each attribute"). moto counts the body
only, so the consumer's SQS client here refuses what SQS would, and the test measures the copy
by SQS's rule.
"""

from __future__ import annotations

import json

import pytest
from botocore.exceptions import ClientError

from tiered_jobs.contract.names import DeadLetter
from tiered_jobs.runtime.errors import PermanentError
from tiered_jobs.runtime.registry import JobRegistry

SQS_LIMIT = 1_048_576


def sqs_size(body: str, attributes: dict) -> int:
    """SQS's rule, from the API's own shape: body + Σ (name + DataType + StringValue | BinaryValue) bytes."""
    size = len(body.encode("utf-8"))
    for name, value in attributes.items():
        data = value["StringValue"].encode("utf-8") if "StringValue" in value else value["BinaryValue"]
        size += len(name.encode("utf-8")) + len(value["DataType"].encode("utf-8")) + len(data)
    return size


class SqsSizeRule:
    """The tier's SQS client (moto), refusing a SendMessage over 1 MiB as SQS counts it."""

    def __init__(self, real):
        self._real = real
        self.sent: list[dict] = []

    def __getattr__(self, name):
        return getattr(self._real, name)

    def send_message(self, **kwargs):
        if sqs_size(kwargs["MessageBody"], kwargs.get("MessageAttributes", {})) > SQS_LIMIT:
            raise ClientError(
                {
                    "Error": {
                        "Code": "InvalidParameterValue",
                        "Message": "One or more parameters are invalid. "
                        f"Reason: Message must be shorter than {SQS_LIMIT} bytes.",
                    },
                    "ResponseMetadata": {"HTTPStatusCode": 400},
                },
                "SendMessage",
            )
        self.sent.append(kwargs)
        return self._real.send_message(**kwargs)


def rejecting_registry() -> JobRegistry:
    registry = JobRegistry()

    @registry.job("demo.reject")
    def reject(payload, ctx):
        raise PermanentError(payload["message"])

    return registry


def body_of(total_bytes: int, message: str) -> str:
    """An envelope of exactly ``total_bytes`` UTF-8 bytes (with multi-byte characters in it)."""

    def envelope(blob: str) -> str:
        return json.dumps(
            {"type": "demo.reject", "idempotency_key": "big-letter", "payload": {"message": message, "blob": blob}},
            ensure_ascii=False,
        )

    base = len(envelope("é" * 100).encode())
    body = envelope("é" * 100 + "x" * (total_bytes - base))
    assert len(body.encode()) == total_bytes
    return body


@pytest.mark.parametrize("room, message_kept", [(60, False), (900, True)])
def test_a_dead_letter_close_to_one_mib_keeps_its_body_and_shortens_its_reasons(tier, room, message_kept):
    user_attributes = {"origin": "checkout"}
    user_bytes = sqs_size("", {k: {"DataType": "String", "StringValue": v} for k, v in user_attributes.items()})
    body = body_of(SQS_LIMIT - user_bytes - room, message="refused: " + "r" * 3000)
    message_id = tier.send_raw(body, **user_attributes)
    sqs = SqsSizeRule(tier.sqs)
    consumer = tier.consumer(client={"sqs": sqs, "dynamodb": tier.dynamodb}.__getitem__, registry=rejecting_registry())

    assert tier.run_batch(consumer)["batchItemFailures"] == []

    (sent,) = sqs.sent
    assert sent["MessageBody"] == body
    assert sqs_size(sent["MessageBody"], sent["MessageAttributes"]) <= SQS_LIMIT
    (letter,) = tier.dlq_messages()
    assert letter["Body"] == body
    attributes = {k: v["StringValue"] for k, v in letter["MessageAttributes"].items()}
    assert attributes["origin"] == "checkout"
    assert attributes[DeadLetter.REASON] == DeadLetter.REASON_PERMANENT
    if message_kept:
        assert attributes[DeadLetter.ERROR_TYPE] == "PermanentError"
        assert attributes[DeadLetter.ERROR_MESSAGE].startswith("refused: rrr")
        assert attributes[DeadLetter.ERROR_MESSAGE].endswith("…")
        assert len(attributes[DeadLetter.ERROR_MESSAGE]) < DeadLetter.MAX_ERROR_MESSAGE_CHARS
    else:  # 60 bytes of room: only the reason itself fits
        assert set(attributes) == {"origin", DeadLetter.REASON}
    assert [m["MessageId"] for m in tier.receive()] == [], f"{message_id} should have left the queue"


def test_fit_to_size_drops_reasons_in_order_and_never_the_originals():
    from tiered_jobs.runtime.deadletter import fit_to_size, message_bytes

    reasons = {name: {"DataType": "String", "StringValue": "v" * 100} for name in DeadLetter.ALL}
    original = {"origin": {"DataType": "Binary", "BinaryValue": b"\x00" * 10}}
    body = "b" * 1000
    attributes = {**original, **reasons}
    full = message_bytes(body, attributes)
    fitted, changed = fit_to_size(body, attributes, limit=message_bytes(body, original))
    assert fitted == original and changed[0] == DeadLetter.ERROR_MESSAGE and changed[-1] == DeadLetter.REASON
    fitted, changed = fit_to_size(body, attributes, limit=full - 30)
    assert changed == [DeadLetter.ERROR_MESSAGE]
    assert fitted[DeadLetter.ERROR_MESSAGE]["StringValue"] == "v" * 67 + "…"
    assert message_bytes(body, fitted) <= full - 30
    assert fit_to_size(body, attributes, limit=full) == (attributes, [])


def test_a_job_the_publisher_accepts_always_reaches_the_dlq_with_every_reason_whole():
    """The publisher leaves ``RUNTIME_ATTRIBUTES_HEADROOM_BYTES`` of each message to the runtime: the
    largest reasons a letter can carry (every value at its bound, each character 4 UTF-8 bytes) fit in
    it, and so does the state of a held or deferred copy."""
    from datetime import datetime, timezone

    from tiered_jobs.contract import letter_traceback
    from tiered_jobs.contract.envelope import MAX_JOB_TYPE_CHARS
    from tiered_jobs.contract.names import SQS_MAX_MESSAGE_ATTRIBUTES, Attributes
    from tiered_jobs.contract.sqs_limits import MAX_JOB_MESSAGE_BYTES, RUNTIME_ATTRIBUTES_HEADROOM_BYTES, attribute_size
    from tiered_jobs.runtime.deadletter import MAX_ERROR_TYPE_CHARS, DeadLetterReason, fit_to_size
    from tiered_jobs.runtime.tracebacks import letter_traceback as bounded_traceback

    wide = "\U0001f600"  # 4 bytes in UTF-8
    try:
        raise ValueError(wide * 5000)
    except ValueError as exc:
        largest_traceback = bounded_traceback(exc, bounded_traceback).encode()
    assert len(largest_traceback.encode()) > letter_traceback.MAX_BYTES - 8  # the cap, filled
    moment = datetime(2026, 12, 31, 23, 59, 59, 999000, tzinfo=timezone.utc)
    longest_arn = "arn:aws-us-gov:sqs:us-gov-west-1:123456789012:" + "q" * 80  # queue names: 80 characters at most
    reasons = DeadLetterReason(
        reason=max(
            (DeadLetter.REASON_PERMANENT, DeadLetter.REASON_RETRIES_EXHAUSTED, DeadLetter.REASON_REQUEUE_FAILED),
            key=len,
        ),
        error_type=wide * (MAX_ERROR_TYPE_CHARS + 10),
        error_message=wide * 5000,
        attempts=10**6,
        first_failed_at=moment,
        last_failed_at=moment,
        source_queue=longest_arn,
        job_type="j" * MAX_JOB_TYPE_CHARS,
        traceback=largest_traceback,
    ).attributes()
    as_sent = {name: {"DataType": "String", "StringValue": value} for name, value in reasons.items()}
    reasons_bytes = sum(attribute_size(name, value) for name, value in as_sent.items())
    copy_state = {
        Attributes.PRIOR_ATTEMPTS: {"DataType": "Number", "StringValue": str(10**6)},
        Attributes.ENQUEUED_AT: {"DataType": "String", "StringValue": "2026-12-31T23:59:59.999Z"},
        Attributes.FIRST_FAILED_AT: {"DataType": "String", "StringValue": "2026-12-31T23:59:59.999Z"},
    }
    assert reasons_bytes <= RUNTIME_ATTRIBUTES_HEADROOM_BYTES
    assert sum(attribute_size(name, value) for name, value in copy_state.items()) <= RUNTIME_ATTRIBUTES_HEADROOM_BYTES
    assert len(as_sent) <= SQS_MAX_MESSAGE_ATTRIBUTES
    body = "x" * MAX_JOB_MESSAGE_BYTES  # the largest body the publisher sends
    fitted, shortened = fit_to_size(body, as_sent)
    assert shortened == [] and fitted == as_sent
