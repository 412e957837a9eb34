"""The consumer applies the same payload schema as the publisher: a breach is permanent."""

from __future__ import annotations

import json

import pytest

from tiered_jobs.contract.names import DeadLetter
from tiered_jobs.runtime.registry import JobRegistry


def _reasons(letter: dict) -> dict[str, str]:
    return {k: v["StringValue"] for k, v in letter["MessageAttributes"].items()}


@pytest.mark.parametrize(
    "payload, message",
    [
        ({"counter": "acc-1", "amount_cents": -5}, "payload is missing required field 'amount'"),
        ({"counter": "acc-1", "amount": 0}, "payload field 'amount' must not be 0"),
    ],
)
def test_an_effect_breaking_its_schema_is_dead_lettered_at_once(tier, payload, message):
    tier.publish("testjobs.effect", payload, "pay-bad")  # a publisher that skipped the check
    assert tier.run_batch(tier.consumer())["batchItemFailures"] == []
    (letter,) = tier.dlq_messages()
    reasons = _reasons(letter)
    assert reasons[DeadLetter.REASON] == DeadLetter.REASON_PERMANENT
    assert reasons[DeadLetter.ATTEMPTS] == "1"
    assert reasons[DeadLetter.ERROR_TYPE] == "PayloadValidationError"
    assert reasons[DeadLetter.ERROR_MESSAGE] == message
    assert tier.counter("acc-1") == 0


def test_a_payload_the_schema_allows_is_applied(tier):
    tier.publish("testjobs.effect", {"counter": "acc-2", "amount": -5}, "pay-debit")  # a negative amount
    assert tier.run_batch(tier.consumer())["batchItemFailures"] == []
    assert tier.counter("acc-2") == -5 and tier.dlq_messages() == []


def test_the_schema_runs_before_a_jobs_own_hook():
    seen: list[dict] = []
    registry = JobRegistry()
    registry.job("testjobs.transient", validate=seen.append)(lambda payload, ctx: None)
    check = registry.get("testjobs.transient").validate
    with pytest.raises(Exception, match="payload field 'fail_times' must be >= 0"):
        check({"fail_times": -1})
    assert seen == []
    check({"fail_times": 1})
    assert seen == [{"fail_times": 1}]


INVOICE_SCHEMA = {
    "type": "object",
    "required": ["amount_cents"],
    "properties": {"amount_cents": {"type": "integer"}},
    "additionalProperties": False,
}


def test_a_schema_found_after_the_job_registered_is_enforced(tier, tmp_path, monkeypatch):
    """``@job`` runs while the job folder is imported, before its ``schemas/`` is added (or named in the
    environment): whether a type has a schema is decided when its payload is checked."""
    from tiered_jobs.contract import payloads

    monkeypatch.setattr(payloads, "_added_dirs", [])
    applied: list[dict] = []
    registry = JobRegistry()
    registry.job("invoices.create")(lambda payload, ctx: applied.append(payload))  # the job itself checks nothing
    (tmp_path / "invoices.create.schema.json").write_text(json.dumps(INVOICE_SCHEMA))
    payloads.add_schema_dir(tmp_path)  # what the consumer's handler does for <job folder>/schemas

    tier.publish("invoices.create", {"amount_cents": 100, "note": "x"}, "inv-bad")  # only the schema refuses it
    tier.publish("invoices.create", {"amount_cents": 100}, "inv-ok")
    assert tier.run_batch(tier.consumer(registry=registry))["batchItemFailures"] == []
    assert applied == [{"amount_cents": 100}]
    (letter,) = tier.dlq_messages()
    reasons = _reasons(letter)
    assert (reasons[DeadLetter.REASON], reasons[DeadLetter.ERROR_TYPE]) == (
        DeadLetter.REASON_PERMANENT,
        "PayloadValidationError",
    )
    assert reasons[DeadLetter.ERROR_MESSAGE] == "payload has unknown field 'note'; allowed: amount_cents"
