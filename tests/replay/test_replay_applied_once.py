"""End to end with a job that has an effect (``testjobs.effect``): a replayed duplicate is absorbed, the
effect happens once.

The worst case for a replay: the job took effect, then the consumer died before it could record
success, again and again, until SQS's redrive policy moved the message to the DLQ. The operator
replays it (and, after a crash between send and delete, replays it again): the main queue now
holds two copies of a job that already took effect. The consumer must apply nothing.
(``tests/example/test_replay_payments.py`` plays the same story on the example app's payments job.)
"""

from __future__ import annotations

from typing import Any

import pytest

from tiered_jobs.contract.names import DeadLetter, Replay
from tiered_jobs.replay import TierQueues, parse_event, run


class SimulatedCrash(BaseException):
    """The Lambda dies: nothing in the handler can catch it."""


class Crashing:
    """A client whose ``operation`` dies when ``when(kwargs)`` says so."""

    def __init__(self, real: Any, operation: str, when=lambda kwargs: True, error: BaseException | None = None):
        self._real, self._operation, self._when = real, operation, when
        self._error = error or SimulatedCrash()

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._real, name)
        if name != self._operation:
            return method

        def call(**kwargs: Any) -> Any:
            if self._when(kwargs):
                raise self._error
            return method(**kwargs)

        return call


class Context:
    def __init__(self, remaining_ms: int):
        self.remaining_ms = remaining_ms

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


def test_a_replayed_job_that_already_took_effect_is_applied_once(tier):
    tiers = {"critical": TierQueues(tier.queue_url, tier.dlq_url, idempotency_ttl_seconds=18 * 86400)}
    tier.publish("testjobs.effect", {"counter": "acc-r", "amount": 42}, "pay-replay")

    # 1. The effect happens, then the process dies before its idempotency record completes
    #    (1 ms left: the in-progress record has expired by the next attempt, as after a timeout).
    dies_after_effect = Crashing(tier.dynamodb, "update_item", lambda kw: kw.get("TableName") == tier.idempotency_table)
    crashing = tier.consumer(client={"sqs": tier.sqs, "dynamodb": dies_after_effect}.__getitem__)
    with pytest.raises(SimulatedCrash):
        crashing.handle(tier.event(tier.receive()), Context(remaining_ms=1))  # received with visibility 0
    assert tier.counter("acc-r") == 42

    # 2. It keeps timing out until the redrive policy (maxReceiveCount 5) moves it to the DLQ.
    while tier.sqs.receive_message(QueueUrl=tier.queue_url, VisibilityTimeout=0).get("Messages"):
        pass
    inspected = run(parse_event({"tier": "critical", "action": "inspect"}), sqs=tier.sqs, tiers=tiers, wait_seconds=0)
    [group] = inspected["groups"]
    assert (group["job_type"], group["reason"], group["error_type"], group["count"]) == (
        "testjobs.effect",
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

    # 4. The healthy consumer takes both copies: both succeed, the effect happens once.
    assert tier.run_batch(tier.consumer()) == {"batchItemFailures": []}
    assert tier.counter("acc-r") == 42
    assert tier.receive() == [] and tier.dlq_messages() == []
