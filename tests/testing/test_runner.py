"""``tiered_jobs.testing``'s runner: a job run in-process says what its tier's consumer would do,
on the library's test jobs (and, to hold the two to one set of rules, the consumer itself on moto)."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.support.jobs.effect import TABLE, marker_key
from tiered_jobs.contract.names import DeadLetter
from tiered_jobs.runtime.errors import TransientError
from tiered_jobs.runtime.registry import JobRegistry
from tiered_jobs.testing import JobFailed, JobRunner, run_job


class StubDynamoDB:
    """What ``testjobs.effect`` calls, recorded (the SQS/DynamoDB API's own parameter names)."""

    def __init__(self) -> None:
        self.transactions: list[list[dict[str, Any]]] = []

    def transact_write_items(self, TransactItems: list[dict[str, Any]]) -> dict[str, Any]:
        self.transactions.append(TransactItems)
        return {}


def test_a_job_runs_with_its_resources_and_stubbed_clients_and_a_second_run_is_a_duplicate():
    dynamodb = StubDynamoDB()
    runner = JobRunner(resources={TABLE: "counters-table"}, clients={"dynamodb": dynamodb})
    first = runner.run("testjobs.effect", {"counter": "c-1", "amount": 3}, "pay-1")
    assert first.outcome == "succeeded" and first.succeeded and first.error is None
    assert first.result == {"counter": "c-1", "amount": 3, "applied": True}
    ((update, put),) = dynamodb.transactions
    assert update["Update"]["TableName"] == "counters-table"
    assert put["Put"]["Item"]["id"] == {"S": marker_key("testjobs.effect", "pay-1")}

    again = runner.run("testjobs.effect", {"counter": "c-1", "amount": 3}, "pay-1")
    assert again.outcome == "duplicate" and again.result == first.result
    assert len(dynamodb.transactions) == 1  # not run again

    other = runner.run("testjobs.effect", {"counter": "c-1", "amount": 4}, "pay-1")
    assert other.outcome == "permanent" and other.error_type == "IdempotencyConflictError"

    runner.idempotency.forget()
    assert runner.run("testjobs.effect", {"counter": "c-1", "amount": 3}, "pay-1").outcome == "succeeded"
    assert len(dynamodb.transactions) == 2


def test_a_transient_failure_is_retried_with_the_backoff_and_settles_on_a_later_attempt():
    runs = JobRunner().run_until_settled("testjobs.transient", {"fail_times": 2}, "t-1")
    assert [run.outcome for run in runs] == ["retry", "retry", "succeeded"]
    assert [run.retry_in_seconds for run in runs] == [5, 30, None]  # the middle of the jitter band
    assert runs[0].classification == "transient" and runs[0].error_type == "TransientError"
    assert runs[-1].result == {"succeeded_on_attempt": 3}


def test_transient_on_the_last_attempt_is_retries_exhausted():
    run = run_job("testjobs.transient", {"fail_times": 9}, "t-2", attempt=3, max_attempts=3)
    assert run.outcome == DeadLetter.REASON_RETRIES_EXHAUSTED and run.dead_lettered
    assert run.classification == "transient" and run.retry_in_seconds is None


def test_a_failure_raises_with_the_consumers_classification():
    run = run_job("testjobs.permanent", {"reason": "card declined"}, "p-1")
    assert run.outcome == "permanent" and run.classification == "permanent"
    with pytest.raises(JobFailed, match="card declined") as failed:
        run.raise_failure()
    assert failed.value.classification == "permanent" and failed.value.outcome == "permanent"
    assert failed.value.__cause__ is run.error
    run_job("testjobs.ok", {"label": "fine"}, "ok-1").raise_failure()  # a success raises nothing


@pytest.mark.parametrize(
    "job_type, payload, error_type",
    [
        ("testjobs.ok", {}, "PayloadValidationError"),  # its schema: a label is required
        ("testjobs.nothing", {}, "UnknownJobTypeError"),
        ("testjobs.ok", {"label": "x"}, "EnvelopeError"),  # the key below breaks the envelope's rules
    ],
)
def test_what_the_consumer_refuses_before_the_job_runs_is_permanent(job_type, payload, error_type, recorded):
    key = "" if error_type == "EnvelopeError" else "k-1"
    run = run_job(job_type, payload, key)
    assert run.outcome == "permanent" and run.error_type == error_type
    assert recorded == []


def test_a_client_without_a_stub_is_refused_naming_the_service():
    run = run_job("testjobs.effect", {"counter": "c", "amount": 1}, "e-1", resources={TABLE: "t"})
    assert isinstance(run.error, LookupError) and "ctx.client('dynamodb') has no stub" in str(run.error)


def test_a_resource_not_given_is_the_consumers_permanent_error():
    run = run_job("testjobs.effect", {"counter": "c", "amount": 1}, "e-2", clients={"dynamodb": StubDynamoDB()})
    assert run.outcome == "permanent" and run.error_type == "ResourceNotConfiguredError"


def test_the_jobs_own_policy_applies_and_one_the_tier_cannot_honour_is_refused():
    registry = JobRegistry()

    @registry.job("policy.short", max_attempts=2, retry_schedule_seconds=[9])
    def short(payload, ctx):
        raise TransientError("down")

    @registry.job("policy.greedy", max_attempts=9)
    def greedy(payload, ctx):
        return "ran"

    runner = JobRunner(registry=registry, max_attempts=5)
    assert [
        (r.outcome, r.retry_in_seconds, r.max_attempts) for r in runner.run_until_settled("policy.short", {}, "s")
    ] == [
        ("retry", 9, 2),
        (DeadLetter.REASON_RETRIES_EXHAUSTED, None, 2),
    ]
    refused = runner.run("policy.greedy", {}, "g")
    assert refused.outcome == "permanent" and refused.error_type == "JobPolicyError"
    assert "max_attempts=9" in str(refused.error)


class Declined(Exception):
    pass


THROTTLED = ClientError({"Error": {"Code": "ThrottlingException"}, "ResponseMetadata": {"HTTPStatusCode": 400}}, "Put")


def _policy_jobs() -> JobRegistry:
    registry = JobRegistry()

    @registry.job("same.strict", unexpected="permanent")
    def strict(payload, ctx):
        return payload["qty"]

    @registry.job("same.declines", retry_on=(Declined,))
    def declines(payload, ctx):
        raise Declined("later")

    @registry.job("same.throttled", unexpected="permanent")
    def throttled(payload, ctx):
        raise THROTTLED

    @registry.job("same.bug")
    def bug(payload, ctx):
        return payload["qty"]

    return registry


@pytest.mark.parametrize("job_type", ["same.strict", "same.declines", "same.throttled", "same.bug"])
def test_the_runner_and_the_consumer_decide_alike(tier, job_type):
    registry = _policy_jobs()
    tier.publish(job_type, {}, "k-1")
    response = tier.run_batch(tier.consumer(registry=registry))
    letters = tier.dlq_messages()
    consumer_says = (
        "retry" if response["batchItemFailures"] else letters[0]["MessageAttributes"][DeadLetter.REASON]["StringValue"]
    )
    assert JobRunner(registry=registry).run(job_type, {}, "k-1").outcome == consumer_says
