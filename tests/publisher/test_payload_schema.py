"""The publisher checks a job type's payload schema before sending, as the consumer does."""

from __future__ import annotations

import pytest

from tiered_jobs.publisher import InvalidJobError, Job


@pytest.mark.parametrize(
    "payload, problem",
    [
        ({"counter": "acc_1", "amount_cents": -5}, "payload is missing required field 'amount'"),
        ({"counter": "acc_1", "amount": 0}, "payload field 'amount' must not be 0"),
        ({"counter": "acc_1", "amount": -(10**12) - 1}, "payload field 'amount' must be >= -1000000000000"),
        ({"counter": "acc 1", "amount": 5}, "payload field 'counter' must match"),
    ],
)
def test_a_job_breaking_its_schema_is_refused_and_nothing_is_sent(publisher, batch_calls, payload, problem):
    with pytest.raises(InvalidJobError) as error:
        publisher.publish_batch(
            [Job("testjobs.effect", payload, "pay_1"), Job("testjobs.ok", {"label": "fine"}, "evt_1")]
        )
    (only,) = error.value.problems  # the good neighbour is not blamed, and not sent either
    assert only.startswith(f"job #0 testjobs.effect (key 'pay_1'): {problem}")
    assert batch_calls == []


def test_a_payload_within_the_schema_is_sent(publisher, batch_calls):
    """A negative amount: the schema bounds it on both sides, and allows it."""
    assert publisher.publish("testjobs.effect", {"counter": "acc_1", "amount": -5}, "pay_2").ok
    assert len(batch_calls) == 1


def test_every_problem_of_a_payload_is_named(publisher):
    with pytest.raises(InvalidJobError) as error:
        publisher.validate(Job("testjobs.ok", {"label": "no body", "note": 5}, "mail_1"))
    text = str(error.value)
    assert (
        "payload field 'label' must match" in text and "payload field 'note' must be a string, got an integer" in text
    )


def test_a_type_without_a_schema_is_still_sent_for_the_consumer_to_check(publisher, batch_calls):
    result = publisher.publish("analytics.page_view", {"page_id": 7}, "view_1")  # routed by analytics.*
    assert result.ok and result.tier == "bulk"
    assert len(batch_calls) == 1
