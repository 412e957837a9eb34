"""End to end with the example app's payments job: a replayed duplicate is absorbed, the balance moves once.

The worst case for a replay: the payment was applied, then the consumer died before it could
record success, again and again, until SQS's redrive policy moved the message to the DLQ. The
operator replays it (and, after a crash between send and delete, replays it again): the main
queue now holds two copies of a job that already took effect. The consumer must apply nothing: here
the payments job's own marker is what stops the second application (the library's story, on its own
test job: ``tests/replay/test_replay_applied_once.py``).
"""

from __future__ import annotations

import pytest

from tests.replay.test_replay_applied_once import Context, Crashing, SimulatedCrash
from tiered_jobs.contract.names import DeadLetter, Replay
from tiered_jobs.replay import TierQueues, parse_event, run


def test_a_replayed_payment_that_already_took_effect_is_applied_once(tier):
    tiers = {"critical": TierQueues(tier.queue_url, tier.dlq_url, idempotency_ttl_seconds=18 * 86400)}
    tier.publish("payments.update_balance", {"account_id": "acc-r", "amount": 42}, "pay-replay")

    # 1. The payment is applied, then the process dies before its idempotency record completes
    #    (1 ms left: the in-progress record has expired by the next attempt, as after a timeout).
    dies_after_payment = Crashing(
        tier.dynamodb, "update_item", lambda kw: kw.get("TableName") == tier.idempotency_table
    )
    crashing = tier.consumer(client={"sqs": tier.sqs, "dynamodb": dies_after_payment}.__getitem__)
    with pytest.raises(SimulatedCrash):
        crashing.handle(tier.event(tier.receive()), Context(remaining_ms=1))  # received with visibility 0
    assert tier.balance("acc-r") == 42

    # 2. It keeps timing out until the redrive policy (maxReceiveCount 5) moves it to the DLQ.
    while tier.sqs.receive_message(QueueUrl=tier.queue_url, VisibilityTimeout=0).get("Messages"):
        pass
    inspected = run(parse_event({"tier": "critical", "action": "inspect"}), sqs=tier.sqs, tiers=tiers, wait_seconds=0)
    [group] = inspected["groups"]
    assert (group["job_type"], group["reason"], group["error_type"], group["count"]) == (
        "payments.update_balance",
        DeadLetter.REASON_UNKNOWN,
        DeadLetter.REASON_UNKNOWN,
        1,
    )

    # 3. Replay dies between send and delete; the operator replays again.
    with pytest.raises(ConnectionError):
        run(
            parse_event({"tier": "critical"}),
            tiers=tiers,
            wait_seconds=0,
            sqs=Crashing(tier.sqs, "delete_message_batch", error=ConnectionError("died before the delete")),
        )
    assert run(parse_event({"tier": "critical"}), sqs=tier.sqs, tiers=tiers, wait_seconds=0)["moved"] == 1

    copies = tier.receive()
    assert len(copies) == 2
    assert {m["MessageAttributes"][Replay.COUNT]["StringValue"] for m in copies} == {"1"}

    # 4. The healthy consumer takes both copies: both succeed, the balance moves once.
    assert tier.run_batch(tier.consumer()) == {"batchItemFailures": []}
    assert tier.balance("acc-r") == 42
    assert tier.receive() == [] and tier.dlq_messages() == []
