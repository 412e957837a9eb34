"""End to end with the example app's payments job: a replayed duplicate is absorbed, the balance moves
once. Here the payments job's own marker is what stops the second application (the story:
``tests/support/crash_stories.py``; the library tells it on its own test job)."""

from __future__ import annotations

from tests.support.crash_stories import a_replayed_job_that_took_effect_runs_once


def test_a_replayed_payment_that_already_took_effect_is_applied_once(tier):
    a_replayed_job_that_took_effect_runs_once(
        tier,
        "payments.update_balance",
        {"account_id": "acc-r", "amount": 42},
        "pay-replay",
        effect=lambda: tier.balance("acc-r"),
        expected=42,
    )
