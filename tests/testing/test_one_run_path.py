"""One way to run a job: every kind of job, run by ``tiered_jobs.testing``'s runner and by the consumer on
moto, ends the same way (each attempt's outcome, its step, its progress, what it saw of a cancel)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.support.context import lambda_context
from tiered_jobs.contract import progress as progress_records
from tiered_jobs.contract import steps as step_records
from tiered_jobs.contract.idempotency import RecordAttributes, record_id
from tiered_jobs.contract.names import DeadLetter
from tiered_jobs.runtime import consumer as consumer_module
from tiered_jobs.runtime.errors import PermanentError, TransientError
from tiered_jobs.runtime.registry import JobContext, JobRegistry
from tiered_jobs.stage.cancelling import MarkTarget, mark_cancelled
from tiered_jobs.testing import JobRunner

#: How each side asks for a job to be cancelled while it runs (set by the test before the run).
cancel_now: list[Callable[[], None]] = []


def kinds() -> JobRegistry:
    """One job of each kind the consumer runs differently."""
    registry = JobRegistry()

    @registry.job("kinds.plain")
    def plain(payload: dict[str, Any], ctx: JobContext) -> Any:
        return {"n": payload["n"], "attempt": ctx.attempt, "max_attempts": ctx.max_attempts}

    @registry.job("kinds.transient")
    def transient(payload: dict[str, Any], ctx: JobContext) -> Any:
        raise TransientError(f"down on attempt {ctx.attempt}")

    @registry.job("kinds.permanent")
    def permanent(payload: dict[str, Any], ctx: JobContext) -> Any:
        raise PermanentError("refused")

    @registry.job("kinds.stepped", max_steps=3)
    def stepped(payload: dict[str, Any], ctx: JobContext) -> Any:
        cursor = (ctx.state or {}).get("cursor", 0) + 1
        if cursor < payload["steps"]:
            return ctx.checkpoint({"cursor": cursor})
        return {"cursor": cursor, "step": ctx.step}

    @registry.job("kinds.progress")
    def progress(payload: dict[str, Any], ctx: JobContext) -> Any:
        ctx.progress(3, 10, "a third")
        return "reported"

    @registry.job("kinds.cancel_aware")
    def cancel_aware(payload: dict[str, Any], ctx: JobContext) -> Any:
        before = ctx.cancelled()
        cancel_now[0]()
        return {"before": before, "after": ctx.cancelled()}

    @registry.job("kinds.policy", max_attempts=2, retry_schedule_seconds=[9])
    def policy(payload: dict[str, Any], ctx: JobContext) -> Any:
        raise TransientError("down")

    return registry


#: (job type, payload): every kind, and the bound a stepped job meets.
CASES = [
    ("kinds.plain", {"n": 1}),
    ("kinds.transient", {}),
    ("kinds.permanent", {}),
    ("kinds.stepped", {"steps": 3}),
    ("kinds.stepped", {"steps": 5}),  # past max_steps: too_many_steps
    ("kinds.progress", {}),
    ("kinds.cancel_aware", {}),
    ("kinds.policy", {}),
]


@pytest.fixture(autouse=True)
def no_continuation_delay(monkeypatch):
    """The next step is delayed 1 s in production (its record's write lands first); here it is at once."""
    monkeypatch.setattr(consumer_module, "CONTINUATION_DELAY_SECONDS", 0)


def consumer_runs(tier, registry: JobRegistry, job_type: str, payload: Any, key: str) -> list[tuple[Any, ...]]:
    """Each attempt or step the consumer makes of the job until it ends: (outcome, step, result or reason)."""
    consumer = tier.consumer(registry=registry)
    target = MarkTarget(tier.idempotency_table, {"critical": 3600})
    cancel_now[:] = [lambda: mark_cancelled(tier.dynamodb, target, "critical", job_type, key)]
    tier.publish(job_type, payload, key)
    seen: list[tuple[Any, ...]] = []
    for _ in range(10):
        messages = tier.receive_for_batch()
        if not messages:
            return seen
        (message,) = messages
        step = int(message.get("MessageAttributes", {}).get(step_records.STEP_ATTRIBUTE, {}).get("StringValue", 0))
        response = tier.run_messages(consumer, messages, lambda_context())
        letters = tier.dlq_messages()
        if response["batchItemFailures"]:
            seen.append(("retry", step, None))
            tier.make_visible()
        elif letters:
            seen.append((letters[0]["MessageAttributes"][DeadLetter.REASON]["StringValue"], step, None))
        elif tier.receive(max_messages=1):
            seen.append(("checkpointed", step, None))
        else:
            seen.append(("succeeded", step, stored_result(tier, job_type, key)))
    raise AssertionError("the job never ended")


def stored_result(tier, job_type: str, key: str) -> Any:
    import json

    item = tier.dynamodb.get_item(
        TableName=tier.idempotency_table, Key={RecordAttributes.KEY: {"S": record_id(job_type, key)}}
    )["Item"]
    return json.loads(item[RecordAttributes.DATA]["S"])


def runner_runs(registry: JobRegistry, job_type: str, payload: Any, key: str) -> list[tuple[Any, ...]]:
    runner = JobRunner(registry=registry)
    cancel_now[:] = [lambda: runner.cancel(job_type, key)]
    runs = runner.run_until_settled(job_type, payload, key)
    return [(run.outcome, run.step, run.result if run.outcome == "succeeded" else None) for run in runs]


@pytest.mark.parametrize("job_type, payload", CASES)
def test_the_runner_and_the_consumer_run_every_kind_of_job_alike(tier, job_type, payload):
    registry = kinds()
    expected = consumer_runs(tier, registry, job_type, payload, "k-1")
    assert runner_runs(registry, job_type, payload, "k-1") == expected


def test_a_checkpointing_job_is_not_reported_succeeded_on_its_first_step(tier):
    registry = kinds()
    runner = JobRunner(registry=registry)
    first = runner.run("kinds.stepped", {"steps": 2}, "s-1")
    assert (first.outcome, first.next_step, first.succeeded) == ("checkpointed", 1, False)
    last = runner.run("kinds.stepped", {"steps": 2}, "s-1", step=1)
    assert (last.outcome, last.result) == ("succeeded", {"cursor": 2, "step": 1})


def test_progress_is_kept_as_the_consumer_keeps_it(tier):
    registry = kinds()
    consumer_runs(tier, registry, "kinds.progress", {}, "p-1")
    item = tier.dynamodb.get_item(
        TableName=tier.idempotency_table, Key={RecordAttributes.KEY: {"S": record_id("kinds.progress", "p-1")}}
    )["Item"]
    kept = progress_records.of_item(item)
    runner = JobRunner(registry=registry)
    runner.run("kinds.progress", {}, "p-1")
    in_memory = runner.progress("kinds.progress", "p-1")
    assert kept is not None and in_memory is not None
    assert (in_memory.done, in_memory.total, in_memory.note) == (kept.done, kept.total, kept.note) == (3, 10, "a third")


def test_a_job_cancelled_before_it_runs_is_cancelled_unrun_by_both(tier):
    registry = kinds()
    target = MarkTarget(tier.idempotency_table, {"critical": 3600})
    mark_cancelled(tier.dynamodb, target, "critical", "kinds.plain", "c-1")
    tier.publish("kinds.plain", {"n": 1}, "c-1")
    tier.run_batch(tier.consumer(registry=registry))
    (letter,) = tier.dlq_messages()  # no archive here: the consumer letters it with its reason
    assert letter["MessageAttributes"][DeadLetter.REASON]["StringValue"] == "cancelled"
    runner = JobRunner(registry=registry)
    runner.cancel("kinds.plain", "c-1")
    run = runner.run("kinds.plain", {"n": 1}, "c-1")
    assert run.outcome == "cancelled" and not run.succeeded and run.result is None
