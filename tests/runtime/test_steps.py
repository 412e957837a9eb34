"""Jobs longer than one invocation: ``return ctx.checkpoint(state)`` continues the job as its next step,
under the same key, with the state; each step runs once, a duplicate of an earlier step runs nothing,
a failed step is retried (or replayed) from its checkpoint, and the step count is bounded."""

from __future__ import annotations

import json

import pytest

from tests.support.context import lambda_context
from tiered_jobs.contract import steps as contract
from tiered_jobs.contract.idempotency import RecordAttributes, RecordStatus, record_id
from tiered_jobs.contract.names import Attributes, DeadLetter
from tiered_jobs.runtime import consumer as consumer_module
from tiered_jobs.runtime.errors import PermanentError, TransientError
from tiered_jobs.runtime.registry import JobContext, JobRegistry

ITEMS = 5  # the work of t.stepped: items 0..4, two per step, so steps 0, 1, 2


@pytest.fixture(autouse=True)
def no_continuation_delay(monkeypatch):
    """The next step is delayed 1 s in production (its record's write lands first); here it is at once."""
    monkeypatch.setattr(consumer_module, "CONTINUATION_DELAY_SECONDS", 0)


def jobs(done: list, *, fail_at: dict | None = None, max_steps: int = 100) -> JobRegistry:
    """``t.stepped``: two items per step; ``done`` records (step, item, attempt) per item applied."""
    registry = JobRegistry()
    failures = dict(fail_at or {})

    @registry.job("t.stepped", max_steps=max_steps)
    def stepped(payload, ctx: JobContext):
        cursor = (ctx.state or {}).get("cursor", 0)
        if failures.get(ctx.step):
            kind = failures[ctx.step]
            failures[ctx.step] = None  # once
            raise (TransientError if kind == "transient" else PermanentError)(f"step {ctx.step} failed")
        for item in range(cursor, min(cursor + 2, payload["items"])):
            done.append((ctx.step, item, ctx.attempt))
        cursor += 2
        if cursor < payload["items"]:
            return ctx.checkpoint({"cursor": cursor})
        return {"items": payload["items"], "steps": ctx.step + 1}

    @registry.job("t.forever", max_steps=max_steps)
    def forever(payload, ctx: JobContext):
        done.append(ctx.step)
        return ctx.checkpoint({"step": ctx.step})

    @registry.job("t.plain", idempotent=False)
    def plain(payload, ctx: JobContext):
        return ctx.checkpoint({})

    return registry


def drain(tier, consumer, rounds: int = 20) -> list[dict]:
    """Run batches until the queue is empty; the messages each batch received."""
    seen = []
    for _ in range(rounds):
        messages = tier.receive_for_batch()
        if not messages:
            return seen
        seen += messages
        tier.run_messages(consumer, messages, lambda_context())
        tier.make_visible()  # a retried step comes back at once
    raise AssertionError("the queue never emptied")


def record(tier, job_type: str, key: str) -> dict:
    return tier.dynamodb.get_item(
        TableName=tier.idempotency_table, Key={RecordAttributes.KEY: {"S": record_id(job_type, key)}}
    ).get("Item", {})


def test_a_job_checkpoints_and_continues_under_the_same_key_each_step_once(tier):
    done: list = []
    consumer = tier.consumer(registry=jobs(done))
    tier.publish("t.stepped", {"items": ITEMS}, "export-1")

    seen = drain(tier, consumer)

    assert done == [(0, 0, 1), (0, 1, 1), (1, 2, 1), (1, 3, 1), (2, 4, 1)]  # every item once, attempts untouched
    steps = [contract.step_of(message.get("MessageAttributes")) for message in seen]
    assert steps == [0, 1, 2]  # one message per step, each carrying its step
    item = record(tier, "t.stepped", "export-1")
    assert item[RecordAttributes.STATUS]["S"] == RecordStatus.COMPLETED
    assert json.loads(item[RecordAttributes.DATA]["S"]) == {"items": ITEMS, "steps": 3}
    assert contract.RECORD_STEP not in item and contract.RECORD_STATE not in item  # finished: no step left
    assert not tier.dlq_messages()


def test_a_duplicate_of_an_earlier_step_runs_nothing_and_a_later_one_waits_for_its_record(tier):
    done: list = []
    consumer = tier.consumer(registry=jobs(done))
    tier.publish("t.stepped", {"items": ITEMS}, "export-2")
    first = tier.receive_for_batch()
    tier.run_messages(consumer, first, lambda_context())  # step 0 ran; step 1 is queued
    step_one = tier.receive_for_batch()
    assert [contract.step_of(m.get("MessageAttributes")) for m in step_one] == [1]

    # SQS delivers step 0 again (at-least-once), and the publisher sends the same job again.
    tier.publish("t.stepped", {"items": ITEMS}, "export-2")
    tier.run_messages(consumer, first + tier.receive_for_batch(), lambda_context())
    assert done == [(0, 0, 1), (0, 1, 1)]  # the duplicates ran nothing
    assert record(tier, "t.stepped", "export-2")[contract.RECORD_STEP]["N"] == "1"

    tier.run_messages(consumer, step_one, lambda_context())  # step 1 runs, sends step 2
    tier.run_messages(consumer, step_one, lambda_context())  # and again: its record is at step 2 now
    assert done == [(0, 0, 1), (0, 1, 1), (1, 2, 1), (1, 3, 1)]
    drain(tier, consumer)
    assert [item for _, item, _ in done] == [0, 1, 2, 3, 4]


def test_a_failed_step_is_retried_from_its_checkpoint_not_from_the_start(tier):
    done: list = []
    consumer = tier.consumer(registry=jobs(done, fail_at={1: "transient"}))
    tier.publish("t.stepped", {"items": ITEMS}, "export-3")

    drain(tier, consumer)

    assert [item for _, item, _ in done] == [0, 1, 2, 3, 4]  # step 0's items once, though step 1 failed
    assert [attempt for step, _, attempt in done if step == 1] == [2, 2]  # its retry: an attempt, as any
    assert json.loads(record(tier, "t.stepped", "export-3")[RecordAttributes.DATA]["S"])["steps"] == 3


def test_a_step_dead_lettered_keeps_its_step_and_its_replay_continues_from_the_checkpoint(tier):
    done: list = []
    consumer = tier.consumer(registry=jobs(done, fail_at={1: "permanent"}))
    tier.publish("t.stepped", {"items": ITEMS}, "export-4")
    drain(tier, consumer)
    assert [item for _, item, _ in done] == [0, 1]
    (letter,) = tier.dlq_messages()
    assert letter["MessageAttributes"][DeadLetter.REASON]["StringValue"] == DeadLetter.REASON_PERMANENT
    assert contract.step_of(letter["MessageAttributes"]) == 1  # the letter keeps its step

    # A native replay moves the letter back with every attribute (tiered_jobs.replay: mode native).
    tier.sqs.send_message(
        QueueUrl=tier.queue_url, MessageBody=letter["Body"], MessageAttributes=letter["MessageAttributes"]
    )
    drain(tier, consumer)
    assert [item for _, item, _ in done] == [0, 1, 2, 3, 4]  # continued at step 1, never from the start


def test_past_max_steps_the_job_is_dead_lettered_with_reason_too_many_steps(tier):
    done: list = []
    consumer = tier.consumer(registry=jobs(done, max_steps=3))
    tier.publish("t.forever", {}, "loop-1")

    drain(tier, consumer)

    assert done == [0, 1, 2]  # steps 0, 1, 2 ran; the checkpoint asking for a fourth is refused
    (letter,) = tier.dlq_messages()
    reasons = letter["MessageAttributes"]
    assert reasons[DeadLetter.REASON]["StringValue"] == contract.REASON_TOO_MANY_STEPS
    assert "max_steps (3)" in reasons[DeadLetter.ERROR_MESSAGE]["StringValue"]
    assert contract.step_of(reasons) == 2  # replayed after the bound is raised, it continues there
    assert record(tier, "t.forever", "loop-1")[contract.RECORD_STEP]["N"] == "2"


def test_a_job_without_idempotency_cannot_checkpoint(tier):
    consumer = tier.consumer(registry=jobs([]))
    tier.publish("t.plain", {}, "plain-1")
    drain(tier, consumer)
    (letter,) = tier.dlq_messages()
    assert letter["MessageAttributes"][DeadLetter.ERROR_TYPE]["StringValue"] == "StepsNeedIdempotency"


def test_a_held_or_deferred_copy_of_a_step_carries_its_step_and_refuses_to_lose_it():
    from tiered_jobs.runtime.received import read
    from tiered_jobs.runtime.requeue import Copy

    raw = {
        "messageId": "m1",
        "body": "{}",
        "attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": "0"},
        "messageAttributes": {contract.STEP_ATTRIBUTE: {"dataType": "Number", "stringValue": "4"}},
    }
    copy = Copy(read(raw, set()), 0).attributes()
    assert copy is not None and copy[contract.STEP_ATTRIBUTE]["StringValue"] == "4"
    crowded = {f"user{i}": {"dataType": "String", "stringValue": "x"} for i in range(9)}
    raw["messageAttributes"] = {**crowded, contract.STEP_ATTRIBUTE: {"dataType": "Number", "stringValue": "4"}}
    # Nine of the publisher's own leave room for the attempts but not the step: no copy, rather than step 0.
    assert Copy(read(raw, set()), 0).attributes() is None
    assert Attributes.PRIOR_ATTEMPTS != contract.STEP_ATTRIBUTE


@pytest.mark.parametrize(
    ("state", "error", "says"),
    [
        ({"when": object()}, TypeError, "must be JSON"),
        ({"nan": float("nan")}, TypeError, "must be JSON"),
        ({"rows": "x" * contract.STATE_MAX_BYTES}, ValueError, "over the 16384-byte limit"),
    ],
)
def test_a_checkpoint_refuses_a_state_that_is_not_json_or_too_big_at_the_call(state, error, says):
    ctx = JobContext("t.x", "k", 1, 3, "critical", "m", None, lambda_remaining_ms=lambda: 1000)
    with pytest.raises(error, match=says):
        ctx.checkpoint(state)
    assert ctx.checkpoint({"cursor": 1}).step == 1


@pytest.mark.parametrize("max_steps", [0, -1, 1.5, True, contract.MAX_STEPS_LIMIT + 1])
def test_max_steps_is_checked_when_the_job_registers(max_steps):
    with pytest.raises(ValueError, match="max_steps must be a whole number from 1 to"):
        JobRegistry().job("t.bad", max_steps=max_steps)


def test_a_cancel_between_two_steps_is_recorded_and_the_next_step_sees_it(tier):
    from tiered_jobs.stage.cancelling import MarkTarget, mark_cancelled

    registry = JobRegistry()
    seen: list[tuple[int, bool]] = []

    @registry.job("t.cancellable")
    def cancellable(payload, ctx: JobContext):
        seen.append((ctx.step, ctx.cancelled()))
        if ctx.cancelled():
            return {"stopped_at": ctx.step}  # the job's own way to stop: it ends here
        return ctx.checkpoint({"step": ctx.step})

    consumer = tier.consumer(registry=registry)
    tier.publish("t.cancellable", {}, "long-1")
    tier.run_messages(consumer, tier.receive_for_batch(), lambda_context())  # step 0 ran, step 1 is due
    assert record(tier, "t.cancellable", "long-1")[RecordAttributes.STATUS]["S"] == RecordStatus.COMPLETED

    answer = mark_cancelled(
        tier.dynamodb, MarkTarget(tier.idempotency_table, {"critical": 3600}), "critical", "t.cancellable", "long-1"
    )
    assert answer.outcome == "running" and answer.cancelled  # not "already done": the job has not finished

    drain(tier, consumer)
    assert seen == [(0, False), (1, True)]
    item = record(tier, "t.cancellable", "long-1")
    assert json.loads(item[RecordAttributes.DATA]["S"]) == {"stopped_at": 1}
    assert contract.RECORD_STEP not in item  # finished
    # Asked again once it has finished: its record says so.
    again = mark_cancelled(
        tier.dynamodb, MarkTarget(tier.idempotency_table, {"critical": 3600}), "critical", "t.cancellable", "long-1"
    )
    assert again.outcome == "already done"
