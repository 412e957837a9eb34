"""The example app's jobs (``functions/jobs``) on the real consumer: what each does, and how each fails.

The library's own behaviour is tested on its own test jobs (``tests/support/jobs``); here the
example's jobs are held to what the example app promises: a payment moves a balance exactly once
(its own marker stops a second application the idempotency store could not see), a payment that
breaks its schema or lacks its table is dead-lettered at once, an e-mail to a bad address is refused,
and ``demo.flaky`` fails as its payload says.
"""

from __future__ import annotations

import dataclasses

import pytest

from functions.jobs.payments import TABLE
from tests.runtime.test_aws_errors import ConflictingDynamoDB
from tests.runtime.test_consumer import attrs
from tests.support.crash_stories import a_crash_after_the_effect_keeps_it_once
from tiered_jobs.contract.names import DeadLetter, Env
from tiered_jobs.runtime.consumer import Consumer
from tiered_jobs.runtime.registry import registry

EXAMPLE_TYPES = ["analytics.record_event", "demo.flaky", "notifications.send_email", "payments.update_balance"]


def test_the_example_registers_its_four_job_types():
    assert [
        t for t in registry.types() if registry.get(t).handler.__module__.startswith("functions.jobs.")
    ] == EXAMPLE_TYPES


# --- payments.update_balance -------------------------------------------------------------------


def test_a_payment_and_a_debit_move_the_balance_once_each(tier):
    tier.publish("payments.update_balance", {"account_id": "acc-1", "amount": 150}, "pay-1")
    tier.publish("payments.update_balance", {"account_id": "acc-1", "amount": -50}, "pay-2")
    tier.publish("payments.update_balance", {"account_id": "acc-1", "amount": 150}, "pay-1")  # a duplicate
    assert tier.run_batch(tier.consumer()) == {"batchItemFailures": []}
    tier.publish("payments.update_balance", {"account_id": "acc-1", "amount": 150}, "pay-1")
    assert tier.run_batch(tier.consumer()) == {"batchItemFailures": []}  # another container
    assert tier.balance("acc-1") == 100
    assert tier.receive() == [] and tier.dlq_messages() == []


def test_a_crash_after_the_payment_keeps_it_exactly_once(tier):
    """The process dies after the balance transaction and before the idempotency record completes;
    the job runs again, and its marker (not the idempotency store) stops the second application."""
    a_crash_after_the_effect_keeps_it_once(
        tier,
        "payments.update_balance",
        {"account_id": "acc-9", "amount": 42},
        "pay-crash",
        effect=lambda: tier.balance("acc-9"),
        expected=42,
    )


def test_a_payment_whose_transaction_conflicts_is_retried_not_taken_for_applied(tier):
    """A TransactionConflict cancels the transaction too: the job must not read it as its marker."""
    dynamodb = ConflictingDynamoDB(tier.dynamodb, conflicts=2)
    consumer = tier.consumer(client={"sqs": tier.sqs, "dynamodb": dynamodb}.__getitem__)
    message_id = tier.publish("payments.update_balance", {"account_id": "acc-c", "amount": 25}, "pay-conflict")
    for _ in range(2):
        assert tier.run_batch(consumer) == {"batchItemFailures": [{"itemIdentifier": message_id}]}
        tier.make_visible()
    assert tier.run_batch(consumer) == {"batchItemFailures": []}
    dynamodb.stubber.assert_no_pending_responses()
    assert dynamodb.transactions == 3 and tier.balance("acc-c") == 25
    assert tier.dlq_messages() == []


@pytest.mark.parametrize(
    "payload, message",
    [
        ({"account_id": "acc-1", "amount_cents": -5}, "payload is missing required field 'amount'"),
        ({"account_id": "acc-1", "amount": 0}, "payload field 'amount' must not be 0"),
        ({"account_id": "acc-1", "amount": "10"}, "payload field 'amount' must be an integer, got a string"),
    ],
)
def test_a_payment_breaking_its_schema_is_dead_lettered_at_once(tier, payload, message):
    tier.publish("payments.update_balance", payload, "pay-bad")  # a publisher that skipped the check
    assert tier.run_batch(tier.consumer()) == {"batchItemFailures": []}
    (letter,) = tier.dlq_messages()
    reasons = attrs(letter)
    assert (reasons[DeadLetter.REASON], reasons[DeadLetter.ATTEMPTS], reasons[DeadLetter.ERROR_TYPE]) == (
        DeadLetter.REASON_PERMANENT,
        "1",
        "PayloadValidationError",
    )
    assert reasons[DeadLetter.ERROR_MESSAGE] == message
    assert tier.balance("acc-1") == 0


def test_the_same_payment_key_with_another_amount_is_a_permanent_conflict(tier):
    tier.publish("payments.update_balance", {"account_id": "acc-3", "amount": 5}, "pay-c")
    tier.run_batch(tier.consumer())
    tier.publish("payments.update_balance", {"account_id": "acc-3", "amount": 500}, "pay-c")
    assert tier.run_batch(tier.consumer()) == {"batchItemFailures": []}
    (letter,) = tier.dlq_messages()
    assert attrs(letter)[DeadLetter.ERROR_MESSAGE] == (
        "idempotency key 'pay-c' was already used for 'payments.update_balance' with a different payload"
    )
    assert tier.balance("acc-3") == 5


def test_a_payment_on_a_tier_without_the_accounts_table_is_dead_lettered_naming_it(tier):
    consumer = Consumer(
        dataclasses.replace(tier.config(), resources={}),
        registry,
        client={"sqs": tier.sqs, "dynamodb": tier.dynamodb}.__getitem__,
    )
    tier.publish("payments.update_balance", {"account_id": "acc-1", "amount": 5}, "pay-unbound")
    assert tier.run_batch(consumer) == {"batchItemFailures": []}
    (letter,) = tier.dlq_messages()
    reasons = attrs(letter)
    assert (reasons[DeadLetter.REASON], reasons[DeadLetter.ERROR_TYPE]) == (
        DeadLetter.REASON_PERMANENT,
        "ResourceNotConfiguredError",
    )
    assert Env.resource_var(TABLE) in reasons[DeadLetter.ERROR_MESSAGE]
    assert tier.balance("acc-1") == 0


# --- notifications, analytics, demo ------------------------------------------------------------


def test_an_email_and_an_event_succeed_and_a_bad_address_is_refused(tier):
    tier.publish("notifications.send_email", {"to": "a@b.cc", "subject": "hi"}, "mail-ok")
    tier.publish("analytics.record_event", {"event": "signup", "properties": {"n": 1}}, "evt-1")
    tier.publish("notifications.send_email", {"to": "not-an-address", "subject": "hi"}, "mail-bad")
    assert tier.run_batch(tier.consumer()) == {"batchItemFailures": []}
    (letter,) = tier.dlq_messages()
    reasons = attrs(letter)
    assert (reasons[DeadLetter.JOB_TYPE], reasons[DeadLetter.ERROR_TYPE]) == (
        "notifications.send_email",
        "PayloadValidationError",
    )
    assert reasons[DeadLetter.ERROR_MESSAGE] == (
        "payload field 'to' must match ^[^@\\s]{1,64}@[^@\\s]+\\.[^@\\s]{2,}$, got 'not-an-address'"
    )
    assert tier.receive() == []


def test_demo_flaky_fails_transiently_then_succeeds(tier):
    message_id = tier.publish("demo.flaky", {"fail_times": 2, "error": "transient"}, "flaky-2")
    consumer = tier.consumer()
    for _ in range(2):
        assert tier.run_batch(consumer) == {"batchItemFailures": [{"itemIdentifier": message_id}]}
        tier.make_visible()
    assert tier.run_batch(consumer) == {"batchItemFailures": []}
    assert tier.receive() == [] and tier.dlq_messages() == []


def test_demo_flaky_exhausts_its_attempts_or_fails_permanently_as_asked(tier):
    tier.publish("demo.flaky", {"fail_times": 9}, "flaky-t")
    tier.publish("demo.flaky", {"fail_times": 1, "error": "permanent"}, "flaky-p")
    consumer = tier.consumer(max_attempts=2)
    assert len(tier.run_batch(consumer)["batchItemFailures"]) == 1  # the permanent one is dead-lettered
    tier.make_visible()
    assert tier.run_batch(consumer) == {"batchItemFailures": []}
    letters = {attrs(m)[DeadLetter.REASON]: attrs(m)[DeadLetter.ERROR_MESSAGE] for m in tier.dlq_messages()}
    assert letters == {
        DeadLetter.REASON_PERMANENT: "demo.flaky: permanent failure on attempt 1",
        DeadLetter.REASON_RETRIES_EXHAUSTED: "demo.flaky: simulated outage on attempt 2 of 9",
    }


def test_demo_flaky_is_down_while_its_file_exists_and_up_once_the_test_removes_it(tier, tmp_path):
    down = tmp_path / "downstream-down"
    down.touch()
    message_id = tier.publish("demo.flaky", {"fail_times": 0, "down_while_file": str(down)}, "flaky-file")
    consumer = tier.consumer()
    for _ in range(2):  # down for as long as the file is there, whatever the attempt
        assert tier.run_batch(consumer) == {"batchItemFailures": [{"itemIdentifier": message_id}]}
        tier.make_visible()
    down.unlink()  # the downstream is back at the moment the test chooses
    assert tier.run_batch(consumer) == {"batchItemFailures": []}
    assert tier.receive() == [] and tier.dlq_messages() == []
