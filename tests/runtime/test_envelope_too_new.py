"""A consumer behind its producers (a rollback) holds the jobs it cannot read yet, never dead-letters
them as permanent, and never holds them for ever (tiered_jobs/runtime/too_new.py).

The compatibility rule (docs/upgrading.md): a newer release may add optional top-level fields or
raise ``version``; a body that breaks a rule this release knows is malformed, and stays permanent.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime, timedelta, timezone

import pytest

from tests.runtime.test_copies import reasons, totals
from tests.support.recording import Recording
from tiered_jobs.contract.envelope import EnvelopeError, EnvelopeTooNew, build, parse
from tiered_jobs.contract.names import Attributes, DeadLetter, Metrics

OK = "testjobs.ok"


def newer(key: str, **fields: object) -> str:
    """A body a newer producer writes: a valid envelope of today with ``fields`` set or added."""
    body = build(OK, {"label": "v2"}, key).to_dict()
    body.update(fields)
    return json.dumps(body)


@pytest.mark.parametrize(
    "fields",
    [{"version": 2}, {"priority": "high"}, {"version": 3, "payload": {"moved": True}, "trace": {"id": "x"}}],
    ids=["version-2", "an-unknown-field", "version-3-with-new-fields"],
)
def test_an_envelope_from_a_newer_release_is_too_new_not_malformed(fields):
    with pytest.raises(EnvelopeTooNew) as raised:
        parse(newer("k", **fields))
    assert raised.value.problems  # says what this release could not read


@pytest.mark.parametrize(
    "body",
    [
        "not json",
        json.dumps({"idempotency_key": "k", "payload": {}, "version": 2}),  # no type
        json.dumps({"type": OK, "idempotency_key": 7, "payload": {}, "priority": 1}),  # a key of the wrong type
        json.dumps({"type": OK, "idempotency_key": "k", "payload": [], "version": 2}),  # a payload not an object
        newer("k", version=0),
        newer("k", version="2"),
        newer("k", version=True),
        newer("k", published_at="yesterday", priority="high"),  # a known field broken, beside a new one
    ],
    ids=["not-json", "no-type", "key-wrong-type", "payload-wrong-type", "v0", "v-string", "v-bool", "bad-known-field"],
)
def test_a_malformed_envelope_stays_permanent_whatever_new_fields_it_has(body):
    with pytest.raises(EnvelopeError) as raised:
        parse(body)
    assert not isinstance(raised.value, EnvelopeTooNew)


def test_a_too_new_job_is_held_as_a_copy_not_an_attempt_while_the_batch_runs(tier, capsys, recorded):
    """The held record is acknowledged once its copy, delayed by the hold, is in the queue: no attempt,
    no receive, no letter. A job of today beside it runs; a malformed one is still dead-lettered."""
    sqs = Recording(tier.sqs)
    consumer = tier.consumer(client={"sqs": sqs, "dynamodb": tier.dynamodb}.__getitem__)
    held_id = tier.send_raw(newer("from-v2", version=2))
    tier.publish(OK, {"label": "today"}, "today")
    tier.send_raw(json.dumps({"type": OK, "payload": {}, "version": 2}))  # no key: malformed
    response = tier.run_batch(consumer)
    assert response == {"batchItemFailures": []}
    assert [key for key, _ in recorded] == ["today"]
    (call,) = sqs.of("send_message_batch")
    (copy,) = call["Entries"]
    assert json.loads(copy["MessageBody"])["idempotency_key"] == "from-v2"
    assert copy["DelaySeconds"] == consumer.config.too_new_hold_seconds == 900
    assert copy["MessageAttributes"][Attributes.PRIOR_ATTEMPTS]["StringValue"] == "0"
    assert Attributes.ENQUEUED_AT in copy["MessageAttributes"]  # the bound counts from the first publish
    (letter,) = tier.dlq_messages()
    assert reasons(letter)[DeadLetter.REASON] == DeadLetter.REASON_PERMANENT  # only the malformed one
    found = totals(capsys)
    assert found[Metrics.TOO_NEW] == 1 and found[Metrics.FAILED] == 1 and found[Metrics.SUCCEEDED] == 1
    assert held_id not in tier.in_flight  # the original was deleted


def test_held_copies_keep_the_first_enqueue_time_and_past_the_bound_are_dead_lettered_with_the_reason(tier, capsys):
    """Every copy carries when the job entered the queue, so the bound holds across holds: the first
    receive after it dead-letters the job with reason ``envelope_too_new`` (to replay after the upgrade)."""
    sqs = Recording(tier.sqs)
    consumer = tier.consumer(client={"sqs": sqs, "dynamodb": tier.dynamodb}.__getitem__)
    consumer.config = dataclasses.replace(consumer.config, too_new_hold_seconds=0, too_new_max_age_seconds=3600)
    tier.send_raw(newer("from-v2", version=2, trace={"id": "t"}))
    for _ in range(3):  # three holds: one copy at a time, whose enqueue time never moves
        assert tier.run_batch(consumer) == {"batchItemFailures": []}
        assert tier.dlq_messages() == []
    copies = [entry for call in sqs.of("send_message_batch") for entry in call["Entries"]]
    assert len(copies) == 3
    (enqueued,) = {copy["MessageAttributes"][Attributes.ENQUEUED_AT]["StringValue"] for copy in copies}
    consumer.now = lambda: datetime.fromisoformat(enqueued.replace("Z", "+00:00")) + timedelta(seconds=3601)
    assert tier.run_batch(consumer) == {"batchItemFailures": []}
    assert tier.receive() == []
    (letter,) = tier.dlq_messages()
    why = reasons(letter)
    assert why[DeadLetter.REASON] == DeadLetter.REASON_ENVELOPE_TOO_NEW
    assert why[DeadLetter.ERROR_TYPE] == "EnvelopeTooNew" and why[DeadLetter.ATTEMPTS] == "0"
    assert "3600 s bound" in why[DeadLetter.ERROR_MESSAGE] and "replay" in why[DeadLetter.ERROR_MESSAGE]
    assert json.loads(letter["Body"])["version"] == 2  # the body byte for byte: a newer consumer reads it
    found = totals(capsys)
    assert found[Metrics.TOO_NEW] == 4 and found[Metrics.DEAD_LETTERED] == 1 and found[Metrics.PROCESSED] == 0


@pytest.mark.parametrize("receive", [1, 2])
def test_a_too_new_copy_sqs_refused_is_kept_or_on_the_last_receive_dead_lettered_with_reasons(
    redrive_tier, capsys, receive
):
    """As every hold: a refused copy leaves the message in the queue (a receive spent), except on the
    queue's last receive, where SQS's redrive would move it without reasons: ``requeue_failed`` then."""
    tier = redrive_tier(max_receive_count=2)

    class RefusingCopies(Recording):
        def send_message_batch(self, **call):
            failed = [
                {"Id": e["Id"], "Code": "InternalError", "Message": "try later", "SenderFault": False}
                for e in call["Entries"]
            ]
            return {"Successful": [], "Failed": failed}

    consumer = tier.consumer(
        client={"sqs": RefusingCopies(tier.sqs), "dynamodb": tier.dynamodb}.__getitem__, max_attempts=2
    )
    tier.send_raw(newer("from-v2", version=2))
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
        why = reasons(letter)
        assert why[DeadLetter.REASON] == DeadLetter.REASON_REQUEUE_FAILED
        assert "envelope_too_new on the queue's last receive" in why[DeadLetter.ERROR_MESSAGE]
        assert (found[Metrics.REQUEUE_FAILED], found[Metrics.DEAD_LETTERED]) == (1, 1)


def test_the_bound_is_the_jobs_age_not_this_messages(tier):
    """A copy is a new message: only the carried enqueue time can tell a day-old job from a fresh one."""
    consumer = tier.consumer()
    long_ago = datetime.now(timezone.utc) - timedelta(seconds=consumer.config.too_new_max_age_seconds + 60)
    tier.send_raw(newer("old", version=2), **{Attributes.ENQUEUED_AT: long_ago.isoformat()})
    assert tier.run_batch(consumer) == {"batchItemFailures": []}
    (letter,) = tier.dlq_messages()
    assert reasons(letter)[DeadLetter.REASON] == DeadLetter.REASON_ENVELOPE_TOO_NEW


def test_a_held_copy_keeps_the_tenant_of_the_envelope_it_cannot_read(tier):
    """Lambda does not always deliver a standard queue's group id: the copy takes the envelope's tenant."""
    sqs = Recording(tier.sqs)
    consumer = tier.consumer(client={"sqs": sqs, "dynamodb": tier.dynamodb}.__getitem__)
    tier.send_raw(newer("for-acme", version=2, tenant="acme"))
    messages = tier.receive_for_batch()
    for message in messages:
        message["Attributes"].pop("MessageGroupId", None)
    assert tier.run_messages(consumer, messages) == {"batchItemFailures": []}
    (call,) = sqs.of("send_message_batch")
    assert [entry.get("MessageGroupId") for entry in call["Entries"]] == ["acme"]
