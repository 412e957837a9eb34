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
from tests.support.recording import Recording
from tiered_jobs.contract.names import Attributes, DeadLetter, Metrics
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
        super().__init__(
            function_name="tiered-jobs-test-consumer",
            memory_mb=256,
            invoked_function_arn=f"arn:aws:lambda:{REGION}:123456789012:function:tiered-jobs-test-consumer",
            request_id="manual",
            deadline_ms=0,
            log_group_name="/aws/lambda/test",
            log_stream_name="test",
        )
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
    consumer = tier.consumer(
        registry=slow_registry(clock, runs),
        margin_ms=MARGIN_MS,
        client={"sqs": Recording(tier.sqs, sqs_calls), "dynamodb": tier.dynamodb}.__getitem__,
    )
    for i in range(10):  # 10 records of 4 s in a 30 s function: 7 fit before the 3 s margin
        tier.publish("demo.slow", {"ms": 4_000}, f"slow-{i}")
    seen = drain(tier, consumer, clock)
    assert seen["killed"] == 0
    assert runs == {f"slow-{i}": 1 for i in range(10)}
    assert tier.receive() == [] and tier.dlq_messages() == []
    first, second = emf(capsys)
    assert (
        first[Metrics.PROCESSED],
        first[Metrics.SUCCEEDED],
        first[Metrics.DEFERRED],
        first[Metrics.FAILED],
        first[Metrics.RETRIED],
    ) == (7, 7, 3, 0, 0)
    assert (second[Metrics.PROCESSED], second[Metrics.DEFERRED]) == (3, 0)
    # Sent again as fresh copies, visible at once, carrying no attempt (the deferring receive ran nothing);
    # nothing is returned as a batch item failure, so no receive is spent.
    (copies,) = [kw["Entries"] for name, kw in sqs_calls if name == "send_message_batch"]
    assert [e["DelaySeconds"] for e in copies] == [0, 0, 0]
    assert {e["MessageAttributes"][Attributes.PRIOR_ATTEMPTS]["StringValue"] for e in copies} == {"0"}
    assert seen["deferred_or_failed"] == 0
    assert not [name for name, _ in sqs_calls if name == "change_message_visibility_batch"]


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


def deferring_registry(clock: dict, attempts: list[int]) -> JobRegistry:
    """``demo.hog`` uses up the invocation (every record after it is deferred); ``demo.after``
    records the attempt it ran as and fails transiently."""
    registry = JobRegistry()

    @registry.job("demo.hog")
    def hog(payload, ctx):
        clock["context"].advance(TIMEOUT_MS - MARGIN_MS + 1)

    @registry.job("demo.after")
    def after(payload, ctx):
        from tiered_jobs.runtime.errors import TransientError

        attempts.append(ctx.attempt)
        raise TransientError("downstream blip")

    return registry


def run_behind_a_hog(tier, consumer, clock: dict, hog_key: str) -> None:
    """One invocation whose batch starts with a hog: every other record of it is deferred."""
    tier.publish("demo.hog", {}, hog_key)
    messages = sorted(tier.receive_for_batch(), key=lambda m: "demo.hog" not in m["Body"])
    assert any("demo.after" in m["Body"] for m in messages), "the deferred job is not in the queue"
    clock["context"] = LambdaClock(TIMEOUT_MS)
    tier.run_messages(consumer, messages, clock["context"])


def test_a_job_deferred_on_every_receive_never_reaches_the_dlq_through_redrive(redrive_tier):
    """maxReceiveCount 2: returned as a batch item failure, the deferred job's third receive would be
    SQS's redrive to the DLQ, without reasons and without ever running. Sent again as a fresh copy,
    it spends no receive, however often it is deferred."""
    tier = redrive_tier(max_receive_count=2)
    clock, attempts = {}, []
    consumer = tier.consumer(registry=deferring_registry(clock, attempts), margin_ms=MARGIN_MS, max_attempts=2)
    tier.publish("demo.after", {}, "after-1")
    for round_ in range(4):
        run_behind_a_hog(tier, consumer, clock, f"hog-{round_}")
    assert tier.dlq_messages() == [] and attempts == []


def test_a_deferral_is_not_an_attempt(redrive_tier):
    """Deferred twice, then run: its first run is attempt 1, and its letter says 2 attempts of 2."""
    tier = redrive_tier(max_receive_count=2)
    clock, attempts = {}, []
    consumer = tier.consumer(registry=deferring_registry(clock, attempts), margin_ms=MARGIN_MS, max_attempts=2)
    tier.publish("demo.after", {}, "after-1")
    for round_ in range(2):
        run_behind_a_hog(tier, consumer, clock, f"hog-{round_}")
    for _ in range(2):  # now alone in its batches: it runs, fails, runs again, fails for good
        tier.make_visible()
        clock["context"] = LambdaClock(TIMEOUT_MS)
        tier.run_messages(consumer, tier.receive_for_batch(), clock["context"])
    assert attempts == [1, 2]
    (letter,) = tier.dlq_messages()
    reasons = {k: v["StringValue"] for k, v in letter["MessageAttributes"].items()}
    assert (reasons[DeadLetter.REASON], reasons[DeadLetter.ATTEMPTS]) == (DeadLetter.REASON_RETRIES_EXHAUSTED, "2")


def test_job_context_time_api():
    clock = ManualContext(TIMEOUT_MS)
    ctx = JobContext(
        job_type="demo.x",
        idempotency_key="k",
        attempt=1,
        max_attempts=5,
        tier="bulk",
        message_id="m",
        logger=None,
        lambda_remaining_ms=clock.get_remaining_time_in_millis,
        time_limit_seconds=5,
        margin_ms=MARGIN_MS,
    )
    assert ctx.remaining_time_ms() == 5_000
    clock.advance(4_000)
    assert ctx.remaining_time_ms() == 1_000
    ctx.check_time()
    clock.advance(1_000)
    with pytest.raises(JobTimeout, match="time limit of 5 s"):
        ctx.check_time()
    unlimited = JobContext(
        job_type="demo.x",
        idempotency_key="k",
        attempt=1,
        max_attempts=5,
        tier="bulk",
        message_id="m",
        logger=None,
        lambda_remaining_ms=clock.get_remaining_time_in_millis,
        margin_ms=MARGIN_MS,
    )
    assert unlimited.remaining_time_ms() == TIMEOUT_MS - 5_000 - MARGIN_MS
    clock.advance(TIMEOUT_MS)
    assert unlimited.remaining_time_ms() == 0


@pytest.mark.parametrize("limit", [0, -1, 901, True, "5"])
def test_time_limit_must_be_seconds_within_lambdas_timeout(limit):
    with pytest.raises(ValueError, match="time_limit_seconds"):
        JobRegistry().job("demo.x", time_limit_seconds=limit)
