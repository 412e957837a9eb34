"""A job type's own retry policy (``@job(max_attempts=..., retry_schedule_seconds=..., retry_on=...,
permanent_on=..., unexpected=...)``): each knob on a real tier (moto), and its neighbour on the same
tier keeping the tier's attempts, schedule and classification."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.support.recording import Recording
from tiered_jobs.contract.names import SQS_MAX_VISIBILITY_SECONDS, DeadLetter
from tiered_jobs.runtime.errors import PermanentError, TransientError
from tiered_jobs.runtime.job_policy import JobPolicy
from tiered_jobs.runtime.registry import JobRegistry

#: The ``tier`` fixture's redrive maxReceiveCount, and its consumer's max_attempts.
TIER_ATTEMPTS = 5


def letters(tier) -> dict[str, dict[str, str]]:
    """The DLQ's letters by job type: their ``DeadLetter.*`` attributes."""
    found = {}
    for message in tier.dlq_messages():
        values = {k: v["StringValue"] for k, v in message.get("MessageAttributes", {}).items()}
        found[values[DeadLetter.JOB_TYPE]] = values
    return found


def waiting(tier) -> int:
    """Messages left in the tier's queue (counted without receiving: a receive would spend an attempt)."""
    names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    found = tier.sqs.get_queue_attributes(QueueUrl=tier.queue_url, AttributeNames=names)["Attributes"]
    return sum(int(found[name]) for name in names)


def run_until_settled(tier, consumer, limit: int = 10) -> int:
    """Poll until the queue is empty (skipping backoffs); the number of polls."""
    for polls in range(1, limit + 1):
        tier.run_batch(consumer)
        tier.make_visible()
        if not waiting(tier):
            return polls
    raise AssertionError("the queue never settled")


# --- the consumer honours each knob, and leaves the neighbour alone ----------------------------


def test_a_job_with_fewer_attempts_is_dead_lettered_by_the_consumer_at_its_own_last_attempt(tier):
    registry = JobRegistry()
    seen: dict[str, list[tuple[int, int, bool]]] = {"short": [], "neighbour": []}

    def failing(name: str):
        def run(payload: dict[str, Any], ctx) -> None:
            seen[name].append((ctx.attempt, ctx.max_attempts, ctx.is_last_attempt))
            raise TransientError(f"{name} down")

        return run

    registry.job("policy.short", max_attempts=2)(failing("short"))
    registry.job("policy.neighbour")(failing("neighbour"))
    tier.publish("policy.short", {}, "s-1")
    tier.publish("policy.neighbour", {}, "n-1")
    consumer = tier.consumer(registry=registry)
    polls = run_until_settled(tier, consumer)

    assert seen["short"] == [(1, 2, False), (2, 2, True)]
    assert [attempt for attempt, _, _ in seen["neighbour"]] == list(range(1, TIER_ATTEMPTS + 1))
    assert seen["neighbour"][-1] == (TIER_ATTEMPTS, TIER_ATTEMPTS, True)
    assert polls == TIER_ATTEMPTS
    found = letters(tier)
    # Both letters are the consumer's (with reasons), never SQS's redrive (which would carry none).
    assert found["policy.short"][DeadLetter.REASON] == DeadLetter.REASON_RETRIES_EXHAUSTED
    assert found["policy.short"][DeadLetter.ATTEMPTS] == "2"
    assert found["policy.neighbour"][DeadLetter.REASON] == DeadLetter.REASON_RETRIES_EXHAUSTED
    assert found["policy.neighbour"][DeadLetter.ATTEMPTS] == str(TIER_ATTEMPTS)


def test_a_job_schedule_sets_its_backoffs_and_the_neighbour_keeps_the_tiers(tier):
    registry = JobRegistry()

    @registry.job("policy.scheduled", retry_schedule_seconds=[7, 70])
    def scheduled(payload, ctx):
        raise TransientError("later")

    @registry.job("policy.neighbour")
    def neighbour(payload, ctx):
        raise TransientError("later")

    sqs = Recording(tier.sqs)
    # rand 0.5: the middle of the jitter band, the schedule's own value.
    consumer = tier.consumer(registry=registry, client={"sqs": sqs, "dynamodb": tier.dynamodb}.__getitem__)
    ids = {tier.publish("policy.scheduled", {}, "s-1"): "scheduled", tier.publish("policy.neighbour", {}, "n-1"): "n"}
    delays: dict[str, list[int]] = {"scheduled": [], "n": []}
    for _ in range(3):
        messages = tier.receive_for_batch()
        handles = {m["ReceiptHandle"]: ids[m["MessageId"]] for m in messages}
        before = len(sqs.of("change_message_visibility_batch"))
        tier.run_messages(consumer, messages)
        for call in sqs.of("change_message_visibility_batch")[before:]:
            for entry in call["Entries"]:
                delays[handles[entry["ReceiptHandle"]]].append(entry["VisibilityTimeout"])
        tier.make_visible()
    assert delays["scheduled"] == [7, 70, 70]  # the last entry repeats
    assert delays["n"] == [5, 30, 120]  # the tier's 5 s, 30 s, 2 min


@pytest.mark.parametrize("rand, bound", [(0.0, 0.8), (1.0, 1.2)])
def test_a_job_schedule_keeps_the_tiers_jitter(tier, rand, bound):
    registry = JobRegistry()

    @registry.job("policy.scheduled", retry_schedule_seconds=[100])
    def scheduled(payload, ctx):
        raise TransientError("later")

    sqs = Recording(tier.sqs)
    consumer = tier.consumer(
        registry=registry, client={"sqs": sqs, "dynamodb": tier.dynamodb}.__getitem__, rand=lambda: rand
    )
    tier.publish("policy.scheduled", {}, "s-1")
    tier.run_batch(consumer)
    (call,) = sqs.of("change_message_visibility_batch")
    assert call["Entries"][0]["VisibilityTimeout"] == round(100 * bound)


def test_unexpected_permanent_dead_letters_a_bug_at_once_and_the_neighbour_still_retries_it(tier):
    registry = JobRegistry()

    @registry.job("policy.strict", unexpected="permanent")
    def strict(payload, ctx):
        return payload["qty"]  # KeyError: a bug no retry fixes

    @registry.job("policy.neighbour")
    def neighbour(payload, ctx):
        return payload["qty"]

    tier.publish("policy.strict", {}, "s-1")
    tier.publish("policy.neighbour", {}, "n-1")
    response = tier.run_batch(tier.consumer(registry=registry))
    assert len(response["batchItemFailures"]) == 1  # the neighbour's KeyError is retried
    found = letters(tier)
    assert set(found) == {"policy.strict"}
    assert found["policy.strict"][DeadLetter.REASON] == DeadLetter.REASON_PERMANENT
    assert found["policy.strict"][DeadLetter.ERROR_TYPE] == "KeyError"
    assert found["policy.strict"][DeadLetter.ATTEMPTS] == "1"


def test_retry_on_and_permanent_on_override_the_library_rules_for_that_job_only(tier):
    class Declined(Exception):
        pass

    validation = ClientError(
        {"Error": {"Code": "ValidationException", "Message": "bad"}, "ResponseMetadata": {"HTTPStatusCode": 400}},
        "PutItem",
    )
    registry = JobRegistry()

    # The partner's API answers ValidationException while it reindexes: this job retries it.
    @registry.job("policy.retries_validation", retry_on=(ClientError,))
    def retries_validation(payload, ctx):
        raise validation

    @registry.job("policy.declines", permanent_on=(Declined,))
    def declines(payload, ctx):
        raise Declined("card declined")

    @registry.job("policy.neighbour")
    def neighbour(payload, ctx):
        raise {"validation": validation, "declined": Declined("card declined")}[payload["raise"]]

    tier.publish("policy.retries_validation", {}, "r-1")
    tier.publish("policy.declines", {}, "d-1")
    tier.publish("policy.neighbour", {"raise": "validation"}, "n-1")
    tier.publish("policy.neighbour", {"raise": "declined"}, "n-2")
    response = tier.run_batch(tier.consumer(registry=registry))
    found = set(letters(tier))
    # Retried: the job's ClientError, and the neighbour's unknown Declined; dead-lettered: the
    # job's Declined, and the neighbour's ValidationException (the AWS catalogue's permanent).
    assert len(response["batchItemFailures"]) == 2
    assert found == {"policy.declines", "policy.neighbour"}
    (neighbour_letter,) = [
        m
        for m in tier.dlq_messages()
        if m["MessageAttributes"][DeadLetter.JOB_TYPE]["StringValue"] == "policy.neighbour"
    ]
    assert neighbour_letter["MessageAttributes"][DeadLetter.ERROR_TYPE]["StringValue"] == "ClientError"


def test_the_older_permanent_argument_still_declares_permanent_exceptions(tier):
    class Gone(Exception):
        pass

    registry = JobRegistry()

    @registry.job("policy.older", permanent=(Gone,))
    def older(payload, ctx):
        raise Gone("customer gone")

    tier.publish("policy.older", {}, "o-1")
    assert tier.run_batch(tier.consumer(registry=registry))["batchItemFailures"] == []
    assert letters(tier)["policy.older"][DeadLetter.REASON] == DeadLetter.REASON_PERMANENT


def test_more_attempts_than_the_tier_dead_letters_that_type_naming_the_setting_and_runs_its_neighbours(tier):
    registry = JobRegistry()
    ran: list[str] = []

    @registry.job("policy.greedy", max_attempts=TIER_ATTEMPTS + 2)
    def greedy(payload, ctx):
        ran.append(ctx.idempotency_key)

    @registry.job("policy.neighbour")
    def neighbour(payload, ctx):
        ran.append(ctx.idempotency_key)

    tier.publish("policy.greedy", {}, "g-1")
    tier.publish("policy.neighbour", {}, "n-1")
    consumer = tier.consumer(registry=registry)  # building the consumer never fails for one job's policy
    assert tier.run_batch(consumer)["batchItemFailures"] == []
    assert ran == ["n-1"]  # the refused job never ran
    letter = letters(tier)["policy.greedy"]
    assert letter[DeadLetter.REASON] == DeadLetter.REASON_PERMANENT
    assert letter[DeadLetter.ERROR_TYPE] == "JobPolicyError"
    message = letter[DeadLetter.ERROR_MESSAGE]
    assert f"max_attempts={TIER_ATTEMPTS + 2}" in message and "tiers.critical.max_attempts" in message
    assert f"at most {TIER_ATTEMPTS}" in message
    assert waiting(tier) == 0


# --- what the policy says on its own is refused when the job registers --------------------------


@pytest.mark.parametrize(
    "options, named",
    [
        ({"max_attempts": 0}, "max_attempts must be at least 1"),
        ({"max_attempts": 2.5}, "max_attempts must be a whole number"),
        ({"max_attempts": True}, "max_attempts must be a whole number"),
        ({"retry_schedule_seconds": []}, "retry_schedule_seconds must be a non-empty list"),
        ({"retry_schedule_seconds": [5, -1]}, "retry_schedule_seconds must be a non-empty list"),
        ({"retry_schedule_seconds": "5,30"}, "retry_schedule_seconds must be a list of seconds"),
        ({"retry_schedule_seconds": [5, SQS_MAX_VISIBILITY_SECONDS + 1]}, "longest visibility timeout"),
        ({"retry_on": ("KeyError",)}, "retry_on must be exception classes"),
        ({"permanent_on": (dict,)}, "permanent_on must be exception classes"),
        ({"retry_on": (KeyError,), "permanent_on": (KeyError,)}, "KeyError is in both retry_on and permanent_on"),
        ({"unexpected": "ignore"}, "unexpected must be one of 'retry', 'permanent'"),
        ({"permanent": (KeyError,), "permanent_on": (ValueError,)}, "give permanent_on only"),
    ],
)
def test_a_policy_no_queue_can_honour_is_refused_when_the_job_registers(options, named):
    registry = JobRegistry()
    with pytest.raises(ValueError, match="policy.bad") as refused:
        registry.job("policy.bad", **options)
    assert named in str(refused.value)
    assert "policy.bad" not in registry


def test_the_most_specific_declared_class_wins_and_raised_job_errors_mean_what_they_say():
    policy = JobPolicy.declare(
        "policy.files", retry_on=(OSError,), permanent_on=(FileNotFoundError,), unexpected="permanent"
    )
    assert policy.classify(FileNotFoundError("gone")) == "permanent"
    assert policy.classify(ConnectionResetError("reset")) == "transient"  # an OSError
    assert policy.classify(KeyError("qty")) == "permanent"  # unexpected
    assert policy.classify(TimeoutError("slow")) == "transient"  # an OSError too
    # Raised on purpose, the library's own classes keep their meaning whatever the job declares.
    broad = JobPolicy.declare("policy.broad", permanent_on=(Exception,))
    assert broad.classify(TransientError("try again")) == "transient"
    assert JobPolicy.declare("policy.broad", retry_on=(Exception,)).classify(PermanentError("no")) == "permanent"


def test_unexpected_permanent_leaves_the_library_rules_for_known_transient_failures():
    policy = JobPolicy.declare("policy.strict", unexpected="permanent")
    throttled = ClientError(
        {"Error": {"Code": "ThrottlingException"}, "ResponseMetadata": {"HTTPStatusCode": 400}}, "Query"
    )
    assert policy.classify(throttled) == "transient"
    assert policy.classify(ConnectionError("refused")) == "transient"
    try:
        try:
            raise TimeoutError("read timed out")
        except TimeoutError as cause:
            raise RuntimeError("fetch failed") from cause
    except RuntimeError as wrapped:
        assert policy.classify(wrapped) == "transient"  # its cause decides
    assert policy.classify(TypeError("bug")) == "permanent"
