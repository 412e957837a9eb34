"""The time limits SQS enforces on a job's retries: a backoff within 12 hours of the receive, and the
retries of a job within its queue's retention (else SQS deletes it mid-backoff, with no letter)."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import botocore.session
import pytest

from tests.support.aws_faults import refuse
from tiered_jobs.contract.names import SQS_MAX_VISIBILITY_SECONDS, DeadLetter, Env
from tiered_jobs.runtime.config import TierConfig
from tiered_jobs.runtime.consumer import Consumer
from tiered_jobs.runtime.errors import TransientError
from tiered_jobs.runtime.registry import JobRegistry

TIMEOUT, WINDOW = 60, 5


def _documented(operation: str) -> str:
    """The operation's documentation in botocore's SQS model, as plain text."""
    model = botocore.session.get_session().get_service_model("sqs")
    return re.sub(r"<[^>]+>", "", model.operation_model(operation).documentation)


def _time_left_rule(elapsed: int):
    """SQS's rule for ``ChangeMessageVisibilityBatch`` when ``elapsed`` seconds have passed since the
    receive: an entry asking more than the 12 hours' remainder fails (the others are applied)."""
    from tests.support.aws_faults import error_response

    def answer(params: dict[str, Any]):
        over = [e for e in params["Entries"] if e["VisibilityTimeout"] > SQS_MAX_VISIBILITY_SECONDS - elapsed]
        if not over:
            return None
        http, parsed = error_response("unused", status=200)
        parsed.pop("Error")
        parsed["Successful"] = []
        parsed["Failed"] = [
            {"Id": e["Id"], "SenderFault": True, "Code": "InvalidParameterValue", "Message": "past 12 hours"}
            for e in over
        ]
        return http, parsed

    return answer


def test_sqs_documents_that_a_visibility_past_the_time_left_since_the_receive_is_refused():
    text = _documented("ChangeMessageVisibility")
    assert "The maximum is 12 hours" in text
    assert "greater than the maximum time left, Amazon SQS returns an error" in text


def test_the_consumer_caps_a_backoff_at_12_hours_less_its_timeout_and_batching_window():
    env = {
        Env.STAGE: "t",
        Env.TIER: "bulk",
        Env.QUEUE_URL: "q",
        Env.DLQ_URL: "d",
        Env.IDEMPOTENCY_TABLE: "i",
        Env.RETRY_SCHEDULE: str(SQS_MAX_VISIBILITY_SECONDS),
        Env.TIMEOUT_SECONDS: str(TIMEOUT),
        Env.BATCHING_WINDOW_SECONDS: str(WINDOW),
    }
    retry = TierConfig.from_env(env).retry
    assert retry.delay(1, lambda: 1.0) == SQS_MAX_VISIBILITY_SECONDS - TIMEOUT - WINDOW
    assert retry.bounds(1)[1] == SQS_MAX_VISIBILITY_SECONDS - TIMEOUT - WINDOW


def test_a_jobs_12_hour_backoff_set_at_the_end_of_its_attempt_is_one_sqs_accepts(tier):
    registry = JobRegistry()

    @registry.job("limits.slow_retry", retry_schedule_seconds=[SQS_MAX_VISIBILITY_SECONDS])
    def slow(payload, ctx):
        raise TransientError("down")

    config = dataclasses.replace(tier.config(), timeout_seconds=TIMEOUT, batching_window_seconds=WINDOW)
    consumer = Consumer(
        config, registry, client={"sqs": tier.sqs, "dynamodb": tier.dynamodb}.__getitem__, rand=lambda: 1.0
    )
    tier.publish("limits.slow_retry", {}, "s-1")
    # The worst case: the mapping held the record its whole window, the attempt ran its whole timeout.
    with refuse(tier.sqs, "ChangeMessageVisibilityBatch", _time_left_rule(WINDOW + TIMEOUT)) as refused:
        response = tier.run_batch(consumer)
    assert len(response["batchItemFailures"]) == 1  # retried: its backoff is set
    assert refused.count == 0, refused.params


def test_a_job_whose_retries_outlive_its_queues_retention_is_dead_lettered_naming_the_setting(tier):
    registry = JobRegistry()
    ran: list[str] = []

    @registry.job("limits.outlives", max_attempts=5, retry_schedule_seconds=[40_000])
    def outlives(payload, ctx):
        ran.append("outlives")

    @registry.job("limits.fits", max_attempts=5, retry_schedule_seconds=[30_000])
    def fits(payload, ctx):
        ran.append("fits")

    # Two days: four backoffs of 40 000 s at +20 % jitter (each capped at 43 135 s: 172 865 s with the
    # attempts) do not fit; of 30 000 s they do.
    config = dataclasses.replace(
        tier.config(), retention_seconds=2 * 86_400, timeout_seconds=TIMEOUT, batching_window_seconds=WINDOW
    )
    consumer = Consumer(config, registry, client={"sqs": tier.sqs, "dynamodb": tier.dynamodb}.__getitem__)
    tier.publish("limits.outlives", {}, "o-1")
    tier.publish("limits.fits", {}, "f-1")
    assert tier.run_batch(consumer)["batchItemFailures"] == []
    assert ran == ["fits"]
    (letter,) = tier.dlq_messages()
    reasons = {name: value["StringValue"] for name, value in letter["MessageAttributes"].items()}
    assert reasons[DeadLetter.REASON] == DeadLetter.REASON_PERMANENT
    assert reasons[DeadLetter.ERROR_TYPE] == "JobPolicyError"
    message = reasons[DeadLetter.ERROR_MESSAGE]
    assert "retry_schedule_seconds=[40000]" in message and "up to 172865 s" in message
    assert "past its retention of 172800 s" in message and "tiers.critical.retention_days" in message


@pytest.mark.parametrize("schedule, attempts", [([43_200], 29), ([1_000, 43_200], 30)])
def test_retries_past_sqs_longest_retention_are_refused_when_the_job_registers(schedule, attempts):
    registry = JobRegistry()
    with pytest.raises(ValueError, match="past SQS's longest retention") as refused:
        registry.job("limits.never", retry_schedule_seconds=schedule, max_attempts=attempts)
    assert "@job('limits.never')" in str(refused.value)
    assert "limits.never" not in registry
