"""At-least-once + idempotency = effectively once, with every feature on, checked like a Jepsen queue checker.

CI size: 1 000 jobs (each published 2-3 times) through the local event-source-mapping runtime on
moto's server, with a rate limit, slow jobs that exhaust the time budget, bodies near 1 MiB,
tenants, delays, a schedule firing twice and replays mid-run turned on together, and crashes,
transient errors, throttling (idempotency and limiter tables), refused copies, poison messages and a
crashing replay injected (``bench/invariant/``), as two shards of 500 run at once in two processes
(each its own embedded AWS, tables and seed; the outcomes add up). ``python -m bench invariant``
runs 10 000.
"""

from __future__ import annotations

import logging

import pytest

from bench.invariant import FaultPlan, Outcome, run, run_shards

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _quiet(monkeypatch):
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")  # EMF lines are not under test here
    for name in ("emulator.esm", "werkzeug", "tiered_jobs.replay.service"):
        logging.getLogger(name).setLevel(logging.ERROR)


def test_nothing_lost_nothing_applied_twice_with_every_feature_on():
    outcome = run_shards(1000, shards=2, account_count=100, log=lambda *_: None, processes=2)
    report = outcome.as_dict()
    assert outcome.lost == 0, report
    assert outcome.duplicated == 0, report
    assert outcome.unexpected == 0, report
    assert outcome.balances_ok, report
    assert outcome.applied + outcome.dead_lettered == outcome.expected == 1000 + 2 * FaultPlan.schedule_fires, report
    assert outcome.dead_letters_without_reason_or_unknown == 0, report
    # Every poison job is dead-lettered with a reason, and nothing else is (the faults are transient).
    assert outcome.dead_lettered == outcome.poison > 0, report
    # No letter without a reason but those SQS's redrive moved after a crash, counted exactly; and every
    # letter the consumer wrote has all its reasons (the publisher leaves them room).
    assert outcome.letters_without_reason == outcome.letters_without_reason_after_a_crash, report
    assert outcome.letters_missing_some_reasons == 0, report
    assert outcome.copies_without_their_tenant == 0 and outcome.copies > 0, report
    assert set(outcome.dead_letter_reasons) <= {"permanent"}, report
    # The faults and the features really happened (a run without them would prove nothing).
    for fault in (
        "crash_before_idempotency_completes",
        "crash_before_ack",
        "transient_job_error",
        "idempotency_throttle",
        "limiter_throttle",
        "copy_refused",
        "slow_job",
        "replay_crash_between_send_and_delete",
    ):
        assert outcome.faults_injected.get(fault, 0) > 0, (fault, report)
    assert outcome.not_exercised() == [], report
    assert outcome.replayed.get("batch", 0) > 0 and outcome.replayed.get("native", 0) > 0, report
    assert outcome.holds(), report


@pytest.mark.filterwarnings("ignore:Disabling idempotency")
def test_the_checker_catches_double_application(monkeypatch):
    """The checker can fail: with idempotency off and the payment's marker check dropped, the
    duplicates that at-least-once delivery brings are applied twice, and counted."""
    monkeypatch.setenv("POWERTOOLS_IDEMPOTENCY_DISABLED", "true")
    outcome = run(jobs=60, account_count=10, plan=FaultPlan.quiet(drop_marker_condition=True), log=lambda *_: None)
    assert outcome.duplicated > 0 and not outcome.balances_ok and not outcome.holds(), outcome.as_dict()


def test_the_checker_counts_a_letter_without_reason_that_no_crash_explains():
    outcome = base_outcome(letters_without_reason=2, letters_without_reason_after_a_crash=1)
    assert not outcome.holds()
    assert base_outcome(letters_without_reason=2, letters_without_reason_after_a_crash=2).holds()
    assert not base_outcome(letters_missing_some_reasons=1).holds()
    assert not base_outcome(copies_without_their_tenant=1).holds()
    assert base_outcome(outcomes={"succeeded": 3}).not_exercised()[:1] == ["duplicate"]


def base_outcome(**changes) -> Outcome:
    base = dict(
        expected=10,
        applied=9,
        lost=0,
        duplicated=0,
        dead_lettered=1,
        unexpected=0,
        poison=1,
        balances_ok=True,
        balances_checked=5,
        balance_mismatches={},
        dead_letter_reasons={"permanent": 2},
        dead_letters_without_reason_or_unknown=0,
        redundant_dead_letters=0,
        faults_injected={"crash_before_ack": 1},
        messages_published=22,
        seconds=1.5,
    )
    return Outcome(**{**base, **changes})


def test_shard_outcomes_add_up_and_a_failing_shard_fails_the_whole():
    total = base_outcome().plus(base_outcome())
    assert (total.expected, total.applied, total.dead_letter_reasons, total.holds()) == (20, 18, {"permanent": 4}, True)
    assert not base_outcome().plus(base_outcome(balances_ok=False)).holds()
    assert not base_outcome().plus(base_outcome(lost=1, applied=8)).holds()
