"""The consumer applies the same payload schema as the publisher: a breach is permanent."""

from __future__ import annotations

import pytest

from tiered_jobs.contract.names import DeadLetter
from tiered_jobs.runtime.registry import JobRegistry


def _reasons(letter: dict) -> dict[str, str]:
    return {k: v["StringValue"] for k, v in letter["MessageAttributes"].items()}


@pytest.mark.parametrize("payload, message", [
    ({"account_id": "acc-1", "amount_cents": -5}, "payload is missing required field 'amount'"),
    ({"account_id": "acc-1", "amount": 0}, "payload field 'amount' must not be 0"),
])
def test_a_payment_breaking_its_schema_is_dead_lettered_at_once(tier, payload, message):
    tier.publish("payments.update_balance", payload, "pay-bad")  # a publisher that skipped the check
    assert tier.run_batch(tier.consumer())["batchItemFailures"] == []
    (letter,) = tier.dlq_messages()
    reasons = _reasons(letter)
    assert reasons[DeadLetter.REASON] == DeadLetter.REASON_PERMANENT
    assert reasons[DeadLetter.ATTEMPTS] == "1"
    assert reasons[DeadLetter.ERROR_TYPE] == "PayloadValidationError"
    assert reasons[DeadLetter.ERROR_MESSAGE] == message
    assert tier.balance("acc-1") == 0


def test_a_debit_is_applied(tier):
    tier.publish("payments.update_balance", {"account_id": "acc-2", "amount": -5}, "pay-debit")
    assert tier.run_batch(tier.consumer())["batchItemFailures"] == []
    assert tier.balance("acc-2") == -5 and tier.dlq_messages() == []


def test_the_schema_runs_before_a_jobs_own_hook():
    seen: list[dict] = []
    registry = JobRegistry()
    registry.job("demo.flaky", validate=seen.append)(lambda payload, ctx: None)
    check = registry.get("demo.flaky").validate
    with pytest.raises(Exception, match="payload field 'fail_times' must be >= 0"):
        check({"fail_times": -1})
    assert seen == []
    check({"fail_times": 1})
    assert seen == [{"fail_times": 1}]
