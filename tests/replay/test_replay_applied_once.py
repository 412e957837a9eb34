"""End to end with a job that has an effect (``testjobs.effect``): a replayed duplicate is absorbed, the
effect happens once (the story: ``tests/support/crash_stories.py``; the example app tells it on its
payments job in ``tests/functions/test_replay_payments.py``)."""

from __future__ import annotations

from tests.support.crash_stories import a_replayed_job_that_took_effect_runs_once


def test_a_replayed_job_that_already_took_effect_is_applied_once(tier):
    a_replayed_job_that_took_effect_runs_once(
        tier,
        "testjobs.effect",
        {"counter": "acc-r", "amount": 42},
        "pay-replay",
        effect=lambda: tier.counter("acc-r"),
        expected=42,
    )
