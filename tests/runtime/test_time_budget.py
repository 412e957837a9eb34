"""The time budget per invocation (Celery's ``soft_time_limit``), on a clock the test moves.

A slow job calls ``context.advance(ms)`` instead of sleeping. When the clock passes the
function's timeout, Lambda stops the invocation: :class:`Killed` is raised from inside the job,
nothing after it in the batch runs, and no record of the batch is deleted.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from emulator.worker import LambdaContext
from tiered_jobs.contract.names import DeadLetter, Metrics
from tiered_jobs.runtime.errors import JobTimeout
from tiered_jobs.runtime.registry import JobContext, JobRegistry

TIMEOUT_MS = 30_000
MARGIN_MS = 3_000
REGION = "us-east-1"


class ManualContext(LambdaContext):
    """The local runtime's Lambda context on a clock the test moves: slow jobs call
    ``advance(ms)`` instead of sleeping. ``overrun`` records whether the invocation ran past
    its timeout (Lambda would have killed it)."""

    def __init__(self, timeout_ms: int):
        super().__init__(function_name="tiered-jobs-test-consumer", memory_mb=256,
                         invoked_function_arn=f"arn:aws:lambda:{REGION}:123456789012:function:tiered-jobs-test-consumer",
                         request_id="manual", deadline_ms=0, log_group_name="/aws/lambda/test", log_stream_name="test")
        self.timeout_ms = timeout_ms
        self.elapsed_ms = 0

    def get_remaining_time_in_millis(self) -> int:
        return max(0, self.timeout_ms - self.elapsed_ms)

    def advance(self, ms: int) -> None:
        self.elapsed_ms += ms

    @property
    def overrun(self) -> bool:
        return self.elapsed_ms > self.timeout_ms


class Killed(BaseException):
    """Lambda stopped the invocation at its timeout: no handler code runs after this."""


class LambdaClock(ManualContext):
    def advance(self, ms: int) -> None:
        super().advance(ms)
        if self.overrun:
            raise Killed(f"timed out after {self.timeout_ms} ms")


def emf(capsys) -> list[dict]:
    docs = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]
    return [{k: sum(v) if isinstance(v, list) else v for k, v in d.items()} for d in docs]


def slow_registry(clock: dict, runs: Counter) -> JobRegistry:
    """``demo.slow`` works ``payload["ms"]`` on the current invocation's clock."""
    registry = JobRegistry()

    @registry.job("demo.slow")
    def slow(payload, ctx):
        clock["context"].advance(payload["ms"])
        runs[ctx.idempotency_key] += 1
        return {"done": True}

    @registry.job("demo.poison")
    def poison(payload, ctx):
        from tiered_jobs.runtime.errors import PermanentError

        raise PermanentError("never works")

    @registry.job("demo.stepper", time_limit_seconds=3)
    def stepper(payload, ctx):
        for _ in range(10 if ctx.attempt == 1 else 2):  # the first attempt needs 10 s: over its 3 s limit
            ctx.check_time()
            clock["context"].advance(1_000)
        runs[ctx.idempotency_key] += 1
        return {"attempt": ctx.attempt}

    @registry.job("demo.patient")  # no limit of its own: only the invocation's budget stops it
    def patient(payload, ctx):
        for _ in range(60):
            ctx.check_time()
            clock["context"].advance(1_000)
        runs[ctx.idempotency_key] += 1

    return registry


def waiting(tier) -> int:
    """Messages in the queue, visible or not (without receiving: a receive counts as an attempt)."""
    names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    attributes = tier.sqs.get_queue_attributes(QueueUrl=tier.queue_url, AttributeNames=names)["Attributes"]
    return sum(int(attributes[name]) for name in names)


def drain(tier, consumer, clock: dict, rounds: int = 6) -> dict[str, int]:
    """Poll like the event source mapping until the queue is empty; a fresh invocation each time."""
    seen = Counter()
    for _ in range(rounds):
        if not waiting(tier):
            break
        tier.make_visible()  # deferred records come back after 1 s, retries after their backoff
        clock["context"] = LambdaClock(TIMEOUT_MS)
        try:
            response = tier.run_batch(consumer, context=clock["context"])
            seen["invocations"] += 1
            seen["deferred_or_failed"] += len(response["batchItemFailures"])
        except Killed:
            seen["killed"] += 1
    return seen


def test_unstarted_records_come_back_and_complete_and_no_invocation_times_out(tier, capsys):
    clock, runs = {}, Counter()
    sqs_calls = []
    consumer = tier.consumer(registry=slow_registry(clock, runs), margin_ms=MARGIN_MS,
                             client={"sqs": _Recording(tier.sqs, sqs_calls), "dynamodb": tier.dynamodb}.__getitem__)
    for i in range(10):  # 10 records of 4 s in a 30 s function: 7 fit before the 3 s margin
        tier.publish("demo.slow", {"ms": 4_000}, f"slow-{i}")
    seen = drain(tier, consumer, clock)
    assert seen["killed"] == 0
    assert runs == {f"slow-{i}": 1 for i in range(10)}
    assert tier.receive() == [] and tier.dlq_messages() == []
    first, second = emf(capsys)
    assert (first[Metrics.PROCESSED], first[Metrics.SUCCEEDED], first[Metrics.DEFERRED], first[Metrics.FAILED],
            first[Metrics.RETRIED]) == (7, 7, 3, 0, 0)
    assert (second[Metrics.PROCESSED], second[Metrics.DEFERRED]) == (3, 0)
    (visibility,) = [kw["Entries"] for name, kw in sqs_calls if name == "change_message_visibility_batch"]
    assert [e["VisibilityTimeout"] for e in visibility] == [1, 1, 1]  # they come back promptly


def test_nothing_is_dead_lettered_twice_when_a_batch_runs_long(tier):
    """Without the budget, the invocation is killed after the poison record was dead-lettered:
    the whole batch comes back and the poison record is dead-lettered again. Jobs of 9 s that
    never check the time need a margin above 9 s (the tier's ``time_budget_margin_ms``)."""
    clock, runs = {}, Counter()
    consumer = tier.consumer(registry=slow_registry(clock, runs), margin_ms=10_000)
    tier.publish("demo.poison", {}, "poison-1")
    for i in range(4):
        tier.publish("demo.slow", {"ms": 9_000}, f"slow-{i}")
    seen = drain(tier, consumer, clock)
    assert seen["killed"] == 0
    assert len(tier.dlq_messages()) == 1
    assert runs == {f"slow-{i}": 1 for i in range(4)}


def test_a_job_past_its_time_limit_gets_a_transient_timeout_and_its_retry_completes(tier, capsys):
    clock, runs = {}, Counter()
    consumer = tier.consumer(registry=slow_registry(clock, runs), margin_ms=MARGIN_MS)
    tier.publish("demo.stepper", {}, "stepper-1")
    seen = drain(tier, consumer, clock)
    assert seen["killed"] == 0 and runs == {"stepper-1": 1}
    assert tier.dlq_messages() == []
    first, second = emf(capsys)
    assert (first[Metrics.RETRIED], first[Metrics.FAILED], second[Metrics.SUCCEEDED]) == (1, 0, 1)


def test_a_job_that_checks_the_time_stops_before_the_invocation_does(tier):
    clock, runs = {}, Counter()
    consumer = tier.consumer(registry=slow_registry(clock, runs), margin_ms=MARGIN_MS, max_attempts=2)
    tier.publish("demo.patient", {}, "patient-1")  # needs 60 s, the function has 30 s
    seen = drain(tier, consumer, clock)
    assert seen["killed"] == 0 and runs == {}
    (letter,) = tier.dlq_messages()
    attributes = {k: v["StringValue"] for k, v in letter["MessageAttributes"].items()}
    assert attributes[DeadLetter.ERROR_TYPE] == "JobTimeout"
    assert attributes[DeadLetter.REASON] == DeadLetter.REASON_RETRIES_EXHAUSTED
    assert "ran out of the invocation's time" in attributes[DeadLetter.ERROR_MESSAGE]


def test_job_context_time_api():
    clock = ManualContext(TIMEOUT_MS)
    ctx = JobContext(job_type="demo.x", idempotency_key="k", attempt=1, max_attempts=5, tier="bulk", message_id="m",
                     logger=None, lambda_remaining_ms=clock.get_remaining_time_in_millis, time_limit_seconds=5,
                     margin_ms=MARGIN_MS)
    assert ctx.remaining_time_ms() == 5_000
    clock.advance(4_000)
    assert ctx.remaining_time_ms() == 1_000
    ctx.check_time()
    clock.advance(1_000)
    with pytest.raises(JobTimeout, match="time limit of 5 s"):
        ctx.check_time()
    unlimited = JobContext(job_type="demo.x", idempotency_key="k", attempt=1, max_attempts=5, tier="bulk",
                           message_id="m", logger=None, lambda_remaining_ms=clock.get_remaining_time_in_millis,
                           margin_ms=MARGIN_MS)
    assert unlimited.remaining_time_ms() == TIMEOUT_MS - 5_000 - MARGIN_MS
    clock.advance(TIMEOUT_MS)
    assert unlimited.remaining_time_ms() == 0


@pytest.mark.parametrize("limit", [0, -1, 901, True, "5"])
def test_time_limit_must_be_seconds_within_lambdas_timeout(limit):
    with pytest.raises(ValueError, match="time_limit_seconds"):
        JobRegistry().job("demo.x", time_limit_seconds=limit)


class _Recording:
    def __init__(self, real, calls: list):
        self._real, self._calls = real, calls

    def __getattr__(self, name):
        method = getattr(self._real, name)

        def call(**kwargs):
            self._calls.append((name, kwargs))
            return method(**kwargs)

        return call
