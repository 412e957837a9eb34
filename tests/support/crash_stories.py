"""The two crash stories every job with a side effect must survive, told once for any job.

The library tells them on its own test job (``testjobs.effect``) and the example app on its
payments job; each passes its job and how to read its effect. Both stories end the same way: the
effect happened once, nothing is left in the queue or the DLQ.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.support.context import lambda_context
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


def _crash_after_the_effect(tier, job_type: str, payload: dict, key: str) -> None:
    """Publish the job, run it, and die after its effect, before its idempotency record completes.

    1 ms left: the in-progress record has expired by the next attempt, as after a real timeout."""
    tier.publish(job_type, payload, key)
    dies = Crashing(tier.dynamodb, "update_item", lambda kw: kw.get("TableName") == tier.idempotency_table)
    crashing = tier.consumer(client={"sqs": tier.sqs, "dynamodb": dies}.__getitem__)
    with pytest.raises(SimulatedCrash):  # received with visibility 0: visible again at once
        crashing.handle(tier.event(tier.receive()), lambda_context(remaining_ms=1))


def a_crash_after_the_effect_keeps_it_once(
    tier, job_type: str, payload: dict, key: str, effect: Callable[[], Any], expected: Any
) -> None:
    """The message returns after the crash; the job's own guard (not the store) stops a second effect."""
    _crash_after_the_effect(tier, job_type, payload, key)
    assert effect() == expected
    tier.make_visible()  # the visibility timeout passes
    assert tier.run_batch(tier.consumer()) == {"batchItemFailures": []}
    assert effect() == expected
    assert tier.receive() == [] and tier.dlq_messages() == []


def a_replayed_job_that_took_effect_runs_once(
    tier, job_type: str, payload: dict, key: str, effect: Callable[[], Any], expected: Any
) -> None:
    """The worst case for a replay: the job took effect, then the consumer died before it could
    record success, again and again, until SQS's redrive moved the message to the DLQ (no reasons).
    The operator replays it; the replay dies between send and delete; the operator replays again.
    The main queue now holds two copies of a job that already took effect: both succeed, the
    effect does not happen again."""
    tiers = {"critical": TierQueues(tier.queue_url, tier.dlq_url, idempotency_ttl_seconds=18 * 86400)}
    _crash_after_the_effect(tier, job_type, payload, key)
    assert effect() == expected

    while tier.sqs.receive_message(QueueUrl=tier.queue_url, VisibilityTimeout=0).get("Messages"):
        pass  # it keeps timing out until the redrive policy (maxReceiveCount 5) moves it
    inspected = run(parse_event({"tier": "critical", "action": "inspect"}), sqs=tier.sqs, tiers=tiers, wait_seconds=0)
    [group] = inspected["groups"]
    assert (group["job_type"], group["reason"], group["error_type"], group["count"]) == (
        job_type,
        DeadLetter.REASON_UNKNOWN,
        DeadLetter.REASON_UNKNOWN,
        1,
    )

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

    assert tier.run_batch(tier.consumer()) == {"batchItemFailures": []}
    assert effect() == expected
    assert tier.receive() == [] and tier.dlq_messages() == []
