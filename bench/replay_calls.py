"""SQS requests per 1 000 replayed messages, next to the naive receive/send/delete-one loop."""

from __future__ import annotations

from typing import Any

from tests.support.tier import chunks, create_tier, payment_bodies
from tiered_jobs.contract.names import DeadLetter

from .calls import CallCounter


def _fill_dlq(tier, count: int) -> None:
    attributes = {
        DeadLetter.REASON: {"DataType": "String", "StringValue": DeadLetter.REASON_PERMANENT},
        DeadLetter.ERROR_TYPE: {"DataType": "String", "StringValue": "TimeoutError"},
    }
    for batch in chunks(payment_bodies(count, prefix="replayed"), 10):
        tier.sqs.send_message_batch(
            QueueUrl=tier.dlq_url,
            Entries=[
                {"Id": str(i), "MessageBody": body, "MessageAttributes": attributes} for i, body in enumerate(batch)
            ],
        )


def _naive_replay(sqs, dlq_url: str, queue_url: str) -> int:
    moved = 0
    while True:
        messages = sqs.receive_message(QueueUrl=dlq_url, MaxNumberOfMessages=1).get("Messages", [])
        if not messages:
            return moved
        sqs.send_message(QueueUrl=queue_url, MessageBody=messages[0]["Body"])
        sqs.delete_message(QueueUrl=dlq_url, ReceiptHandle=messages[0]["ReceiptHandle"])
        moved += 1


#: The replayed letters are seconds old: well inside a tier's default idempotency window.
REPLAY_WINDOW_SECONDS = 18 * 86400


def measure(messages: int = 1000) -> dict[str, Any]:
    from moto import mock_aws

    from tiered_jobs.replay.events import parse_event
    from tiered_jobs.replay.service import run
    from tiered_jobs.replay.tiers import TierQueues

    with mock_aws():
        tier = create_tier("replay")
        _fill_dlq(tier, messages)
        counter = CallCounter()
        sqs = counter.attach(tier.sqs)
        response = run(
            parse_event({"tier": "bench", "max_messages": messages}),
            sqs=sqs,
            tiers={"bench": TierQueues(tier.queue_url, tier.dlq_url, REPLAY_WINDOW_SECONDS)},
        )
        ours = counter.by_operation("sqs")
        assert response["moved"] == messages, response

        tier.sqs.purge_queue(QueueUrl=tier.queue_url)
        _fill_dlq(tier, messages)
        counter.reset()
        moved = _naive_replay(sqs, tier.dlq_url, tier.queue_url)
        naive = counter.by_operation("sqs")
        assert moved == messages
    per_1000 = 1000 / messages
    return {
        "messages": messages,
        "ours_per_1000": sum(ours.values()) * per_1000,
        "ours_by_operation": ours,
        "naive_per_1000": sum(naive.values()) * per_1000,
        "naive_by_operation": naive,
    }
