"""At-least-once + idempotency = effectively once, checked like a Jepsen queue checker.

CI size: 1 000 jobs (each published 2-3 times) through the local event-source-mapping runtime
on moto's server, with crashes, transient errors, throttling, poison messages and a crashing
replay injected (see ``bench/invariant.py``), as two shards of 500 run at once in two processes
(each its own embedded AWS, tables and seed; the outcomes add up). ``python -m bench invariant``
runs 10 000.
"""

from __future__ import annotations

import logging

import pytest

from bench.invariant import FaultPlan, run, run_shards

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _quiet(monkeypatch):
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")  # EMF lines are not under test here
    logging.getLogger("emulator.esm").setLevel(logging.ERROR)
    logging.getLogger("werkzeug").setLevel(logging.ERROR)


def test_nothing_lost_nothing_applied_twice_under_faults():
    outcome = run_shards(1000, shards=2, account_count=100, log=lambda *_: None, processes=2)
    report = outcome.as_dict()
    assert outcome.lost == 0, report
    assert outcome.duplicated == 0, report
    assert outcome.unexpected == 0, report
    assert outcome.balances_ok, report
    assert outcome.applied + outcome.dead_lettered == outcome.expected == 1000, report
    assert outcome.dead_letters_without_reason_or_unknown == 0, report
    # Every poison job is dead-lettered with a reason, and nothing else is (the faults are transient).
    assert outcome.dead_lettered == outcome.poison > 0, report
    assert set(outcome.dead_letter_reasons) <= {"permanent", "retries_exhausted", "unknown"}, report
    # The faults really happened (a run without them would prove nothing).
    for fault in ("crash_before_idempotency_completes", "crash_before_ack", "transient_job_error",
                  "idempotency_throttle", "replay_crash_between_send_and_delete"):
        assert outcome.faults_injected.get(fault, 0) > 0, (fault, report)


@pytest.mark.filterwarnings("ignore:Disabling idempotency")
def test_the_checker_catches_double_application(monkeypatch):
    """The checker can fail: with idempotency off and the payment's marker check dropped, the
    duplicates that at-least-once delivery brings are applied twice, and counted."""
    monkeypatch.setenv("POWERTOOLS_IDEMPOTENCY_DISABLED", "true")
    plan = FaultPlan(drop_marker_condition=True, crash_before_idempotency_completes=0, crash_before_ack=0,
                     transient_job_error=0, idempotency_throttle=0, poison_fraction=0,
                     replay_crashes_between_send_and_delete=False)
    outcome = run(jobs=60, account_count=10, plan=plan, log=lambda *_: None)
    assert outcome.duplicated > 0 and not outcome.balances_ok and not outcome.holds(), outcome.as_dict()


def test_shard_outcomes_add_up_and_a_failing_shard_fails_the_whole():
    from bench.invariant import Outcome

    def outcome(**changes):
        base = dict(expected=10, applied=9, lost=0, duplicated=0, dead_lettered=1, unexpected=0, poison=1,
                    balances_ok=True, balances_checked=5, balance_mismatches={},
                    dead_letter_reasons={"permanent": 2},
                    dead_letters_without_reason_or_unknown=0, redundant_dead_letters=0,
                    faults_injected={"crash_before_ack": 1}, messages_published=22, seconds=1.5)
        return Outcome(**{**base, **changes})

    total = outcome().plus(outcome())
    assert (total.expected, total.applied, total.dead_letter_reasons, total.holds()) == (
        20, 18, {"permanent": 4}, True)
    assert not outcome().plus(outcome(balances_ok=False)).holds()
    assert not outcome().plus(outcome(lost=1, applied=8)).holds()
