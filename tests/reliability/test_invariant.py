"""At-least-once + idempotency = effectively once, with every feature on, checked like a Jepsen queue checker.

CI size: 1 000 jobs (each published 2-3 times) through the local event-source-mapping runtime on
moto's server, with a rate limit, slow jobs that exhaust the time budget, bodies near 1 MiB, a few
past it (stored in S3 by the publisher, ``large_payloads``: every copy, letter and replay carries the pointer),
tenants, delays, a schedule firing twice and replays mid-run turned on together, and crashes,
transient errors, throttling (idempotency and limiter tables), refused copies, poison messages and a
crashing replay injected (``bench/invariant/``), as two shards of 500 run at once in two processes
(each its own embedded AWS, tables and seed; the outcomes add up). ``python -m bench invariant``
runs 10 000.

Beside the payments, two job types of the run's own (``bench/invariant/jobs/``): ``capped.*`` has its
own retry policy (2 attempts of the tier's 5, its own backoff, unexpected errors permanent) and never
succeeds, so each of its letters is predicted (reason, attempts, the failing frame); ``fragile.*``
lives in a module that fails to import for the first 30 s, then loads, and each of its jobs is still
applied exactly once. Every letter the consumer writes for a job that raised must carry a traceback
that parses (``DeadLetter.Traceback``, version 1). An operator pauses the tier for a few seconds
mid-run (its event source mapping, as ``tiered-jobs pause`` disables it) while a wave of jobs is
published, then resumes it: nothing is received while it is paused, and the wave runs once after.
Some jobs arrive past their deadline (``expires_at``) and some are cancelled before they are published:
each is archived unrun with its reason (``expired``, ``cancelled``), counted neither lost nor applied.
Some come from a newer producer (envelope version 2): the run's consumer holds them (copies, never an
attempt, their tenant kept) until their bound, then dead-letters them ``envelope_too_new``, never as
permanent; replayed, each is held and dead-lettered again. Some are jobs longer than one invocation
(``stepped.*``): three steps each (``ctx.checkpoint``), the payment applied on the last, exactly once.
Some plain payments are opened as batch members (``publisher.batch``), each batch with one callback
(``on_complete`` or ``on_success``), itself a payment keyed by the batch's id; invocations crash between a
member's completion and its count: every batch ends with each member counted once and its callback applied
exactly once.
"""

from __future__ import annotations

import json
import logging
from collections import Counter

import pytest

from bench.invariant import FaultPlan, Outcome, run, run_shards
from bench.invariant.checker import Observed, check
from bench.invariant.taps import Arrival
from tiered_jobs.contract.names import DeadLetter

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _quiet(monkeypatch):
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")  # EMF lines are not under test here
    for name in ("emulator.esm", "werkzeug", "tiered_jobs.replay.service"):
        logging.getLogger(name).setLevel(logging.ERROR)


def test_nothing_lost_nothing_applied_twice_with_every_feature_on():
    outcome = run_shards(1000, shards=2, account_count=100, log=lambda *_: None, processes=2)
    # Text, so that a failure prints the whole report (pytest shortens a dict's), details included.
    report = json.dumps(outcome.as_dict(), indent=1, sort_keys=True, default=str)
    assert outcome.lost == 0, report
    assert outcome.duplicated == 0, report
    assert outcome.unexpected == 0, report
    assert outcome.balances_ok, report
    expected = 1000 + 2 * FaultPlan.schedule_fires + outcome.batches  # each batch's callback is a payment
    assert outcome.applied + outcome.dead_lettered + outcome.ended == outcome.expected == expected, report
    # The jobs past their deadline and those cancelled before their publish: each archived unrun with its
    # reason, never applied, never a letter.
    assert set(outcome.expected_ended) == {"expired", "cancelled"}, report
    assert outcome.ended == sum(outcome.expected_ended.values()), report
    assert outcome.dead_letters_without_reason_or_unknown == 0, report
    # Every poison job and every capped.* job is dead-lettered with its reason, and nothing else is (the
    # faults are transient; the jobs of the module that failed to import ran once it loaded).
    assert outcome.dead_lettered == sum(outcome.expected_dead_letters.values()), report
    assert outcome.poison > 0 and outcome.expected_dead_letters.get("retries_exhausted", 0) > 0, report
    assert outcome.expected_dead_letters["permanent"] > outcome.poison, report  # capped.*'s bugs too
    # ...as the job's own policy says (its reason and attempts), naming the frame that raised.
    assert outcome.letters_off_their_job_policy == 0, report
    assert outcome.letters_naming_the_wrong_frame == 0, report
    assert outcome.letters_without_a_traceback == 0, report
    assert outcome.import_failure_letters > 0, report
    # No letter without a reason but those SQS's redrive moved after a crash, counted exactly; and every
    # letter the consumer wrote has all its reasons (the publisher leaves them room).
    assert outcome.letters_without_reason == outcome.letters_without_reason_after_a_crash, report
    assert outcome.letters_missing_some_reasons == 0, report
    assert outcome.copies_without_their_tenant == 0 and outcome.copies > 0, report
    assert outcome.copies_with_a_turn > 0, report  # held jobs went back with their tokens, and none was lost
    # Bodies past 1 MiB went through S3 (every copy published its own object), each job applied once with the rest.
    assert outcome.faults_injected.get("offloaded_bodies", 0) >= 2 * 2 * FaultPlan.large_body_jobs, report
    # A letter left at the end without a reason ("unknown") is one SQS's redrive moved after a crash, later than
    # the run's last replay: each is counted above among those after a crash, and its job was applied or is
    # counted among the expected letters.
    reasons = set(outcome.dead_letter_reasons) - {"unknown"}
    assert reasons <= {"permanent", "retries_exhausted", "envelope_too_new"}, report
    assert outcome.dead_letter_reasons.get("unknown", 0) <= outcome.letters_without_reason_after_a_crash, report
    # A newer producer's jobs (envelope version 2): held by the run's consumer, then dead-lettered with
    # their reason once past the bound (never as permanent, never applied), and each replay of them too.
    assert outcome.expected_dead_letters.get("envelope_too_new", 0) > 0, report
    # The faults and the features really happened (a run without them would prove nothing).
    for fault in (
        "crash_before_idempotency_completes",
        "crash_before_ack",
        "transient_job_error",
        "idempotency_throttle",
        "limiter_throttle",
        "copy_refused",
        "slow_job",
        "late_invocation",
        "replay_crash_between_send_and_delete",
        "job_module_import_failure",
        "crash_before_batch_count",
        "batch_count_conflict",
    ):
        assert outcome.faults_injected.get(fault, 0) > 0, (fault, report)
    # Applied writes whose answers were lost, sent again by botocore: of the consumers, the publisher and replays.
    lost_answers = {name: n for name, n in outcome.faults_injected.items() if name.startswith("lost_answer:")}
    assert {"lost_answer:dynamodb.UpdateItem", "lost_answer:sqs.SendMessageBatch"} <= set(lost_answers), report
    # No invocation error but the injected crash; overruns on their own, bounded; each excused letter named
    # with the receive that explains it.
    assert outcome.unexplained_invocation_errors == 0, report
    assert outcome.overruns <= outcome.overruns_allowed, report
    assert len(outcome.excused_letters) >= outcome.letters_without_reason_after_a_crash, report
    assert outcome.unexplained_letters == [], report
    assert outcome.not_exercised() == [], report
    assert outcome.replayed.get("batch", 0) > 0 and outcome.replayed.get("native", 0) > 0, report
    # Each shard's operator paused the tier while jobs were published to it: none received meanwhile.
    assert outcome.pauses == 2 and outcome.published_while_paused > 0, report
    assert outcome.received_while_paused == 0, report
    # Unique jobs: copies published while the first was pending were refused (not sent), and every lock was
    # released by its job's end, through the crashes, retries, letters and replays it met.
    assert outcome.unique_jobs > 0 and outcome.unique_copies_refused > 0, report
    assert outcome.unique_locks_left == 0, report
    # Batches: every member counted once, each callback fired and applied exactly once, through the crashes
    # between a member's completion and its count.
    assert outcome.batches > 0 and outcome.batches_off == 0, report
    assert outcome.holds(), report
    print(report)  # the run's figures (``-rP`` shows them): excused letters with their receives, faults per class


def test_the_checker_catches_a_pause_not_honoured():
    """The checker can fail: pollers that never read the mapping's state receive while the tier is paused."""
    plan = FaultPlan.quiet(pause_after_seconds=1.0, pause_seconds=2.5, ignore_pause=True)
    outcome = run(jobs=40, account_count=10, plan=plan, log=lambda *_: None)
    assert outcome.pauses == 1 and outcome.published_while_paused > 0, outcome.as_dict()
    assert outcome.received_while_paused > 0 and not outcome.holds(), outcome.as_dict()
    assert outcome.lost == 0  # received too soon, not lost


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
    assert not base_outcome(arrivals_off_their_trace=1).holds()
    assert not base_outcome(pauses=1, received_while_paused=1).holds()
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


def _letter(key: str, **reasons: str) -> dict:
    """A letter with every reason (placeholders but for ``reasons``, named without ``DeadLetter.``)."""
    given = {f"DeadLetter.{name}": value for name, value in reasons.items()}
    values = {**{name: "x" for name in DeadLetter.ALL}, **given}
    attributes = {name: {"DataType": "String", "StringValue": value} for name, value in values.items()}
    return {"Body": json.dumps({"idempotency_key": key}), "MessageAttributes": attributes}


def _traceback(frame: str | None, last_line: str) -> str:
    text = f'Traceback (most recent call last):\n  File "x.py", line 1, in f\n{last_line}\n'
    return json.dumps({"v": 1, "frame": frame, "traceback": text})


CAPPED_LINE = "bench/invariant/jobs/capped.py:31 in _refuse"
RETRY_RAISES = "TransientError: capped: refused on purpose"


#: A capped job retried to its own 2 attempts (of the tier's 5): its letter says 2, no more (the scenario's).
_CAPPED = {
    "account_id": "a",
    "amount": 1,
    "poison": False,
    "dead_letter": "retries_exhausted",
    "attempts": (2, 2),
    "raises": RETRY_RAISES,
    "max_attempts": 2,
}


def _checked(letters: list[dict]) -> Outcome:
    """The checker over one capped job (retried, 2 attempts of the tier's 5) whose final letters are ``letters``."""
    catalogue = {"c-1": _CAPPED}
    arrivals = [Arrival("dlq", str(i), letter["Body"], _attributes(letter), None) for i, letter in enumerate(letters)]
    seen = Observed(Counter(), [], letters, arrivals, [], Counter(), Counter())
    return check(catalogue, seen, {}, 1, 0.1)


def _attributes(letter: dict) -> dict:
    return {name: value["StringValue"] for name, value in letter["MessageAttributes"].items()}


def _capped_letter(reason="retries_exhausted", attempts="2", frame=CAPPED_LINE, raises=RETRY_RAISES) -> dict:
    last = f"tiered_jobs.runtime.errors.{raises} (attempt {attempts} of 2)"
    tb = _traceback(frame, last)
    return _letter("c-1", Reason=reason, Attempts=attempts, ErrorType="TransientError", Traceback=tb)


def test_the_checker_counts_a_letter_off_its_job_policy_a_wrong_frame_and_a_missing_traceback():
    assert _checked([_capped_letter()]).holds()
    # The tier's attempts instead of the job's own, or the job's own too soon: its policy was ignored.
    assert _checked([_capped_letter(attempts="5")]).letters_off_their_job_policy == 1
    # ...and the report names it: its key, its policy, and what its letter said.
    assert _checked([_capped_letter(attempts="5")]).letters_off_detail == [
        "c-1: retries_exhausted after 2..2 attempts; letters (reason, attempts, error, message) "
        "[('retries_exhausted', '5', 'TransientError', 'x')]"
    ]
    assert _checked([_capped_letter(attempts="1")]).letters_off_their_job_policy == 1
    assert _checked([_capped_letter(reason="permanent")]).letters_off_their_job_policy == 1
    # No letter of the job's own failure (a duplicate delivery's does not stand in for it).
    other = _capped_letter(raises="IdempotencyAlreadyInProgressError: in progress")
    assert _checked([other]).letters_off_their_job_policy == 1
    assert _checked([other, _capped_letter()]).holds()
    # The failing frame is the library's, not the job's line.
    wrong = _capped_letter(frame="tiered_jobs/runtime/consumer.py:310 in execute")
    assert _checked([wrong]).letters_naming_the_wrong_frame == 1
    # A traceback that does not parse as version 1, or none at all.
    unreadable = _capped_letter()
    unreadable["MessageAttributes"]["DeadLetter.Traceback"]["StringValue"] = "Traceback (most recent call last):"
    assert _checked([unreadable]).letters_without_a_traceback == 1
    bare = _capped_letter()
    del bare["MessageAttributes"]["DeadLetter.Traceback"]
    assert _checked([bare]).letters_without_a_traceback == 1
    for counter in ("letters_off_their_job_policy", "letters_naming_the_wrong_frame", "letters_without_a_traceback"):
        assert not base_outcome(**{counter: 1}).holds()


def test_the_checker_counts_an_ended_job_applied_dead_lettered_or_not_archived_with_its_reason():
    catalogue = {
        "e-1": {"account_id": "a", "amount": 1, "poison": False, "ends": "expired"},
        "c-1": {"account_id": "a", "amount": 2, "poison": False, "ends": "cancelled"},
    }

    def checked(archived: dict, applications: Counter | None = None) -> Outcome:
        seen = Observed(applications or Counter(), [], [], [], [], Counter(), Counter(), archived=archived)
        return check(catalogue, seen, {}, 4, 0.1)

    good = checked({"e-1": {"expired"}, "c-1": {"cancelled"}})
    assert (good.ended, good.lost, good.unexpected, good.holds()) == (2, 0, 0, True)
    assert good.expected_ended == {"expired": 1, "cancelled": 1}
    assert checked({"e-1": {"expired"}}).lost == 1  # the cancelled job is nowhere
    assert checked({"e-1": {"cancelled"}, "c-1": {"cancelled"}}).unexpected == 1  # archived for the wrong reason
    applied = checked({"e-1": {"expired"}, "c-1": {"cancelled"}}, Counter({"c-1": 1}))
    assert applied.unexpected == 1 and not applied.holds()


def test_the_checker_counts_an_import_failure_letter_whose_traceback_does_not_name_the_module():
    def import_failure(text: str) -> dict:
        letter = _letter("c-1", Reason="retries_exhausted", ErrorType="JobModuleError")
        letter["MessageAttributes"]["DeadLetter.Traceback"] = {
            "DataType": "String",
            "StringValue": _traceback(None, f"JobModuleError: {text}"),
        }
        return letter

    named = import_failure("job module 'jobs.fragile' failed to import (ModuleNotFoundError at fragile.py:21)")
    outcome = _checked([_capped_letter(), named])
    assert (outcome.import_failure_letters, outcome.letters_naming_the_wrong_frame) == (1, 0)
    unnamed = _checked([_capped_letter(), import_failure("job module failed to import")])
    assert (unnamed.import_failure_letters, unnamed.letters_naming_the_wrong_frame) == (1, 1)


def test_the_checker_counts_a_batch_whose_callback_did_not_fire_or_whose_member_is_counted_wrongly():
    from tiered_jobs.contract import batches

    catalogue = {
        "m-1": {"account_id": "a", "amount": 1, "poison": False, "batch": "b-1"},
        "b-1": {"account_id": "x", "amount": 5, "poison": False, "callback": "on_complete", "members": ["m-1"]},
    }

    def checked(**head: str) -> Outcome:
        fields = {"total": "1", "done": "1", "succeeded": "1", "failed": "0", **head}
        item = batches.head_item("b-1", batches.BATCH, created_at="t", now=0, callbacks={})
        item.update({name: {"N": value} for name, value in fields.items() if name != "fired"})
        item["sealed"] = {"BOOL": True}
        if head.get("fired"):
            item["fired"] = {"SS": head["fired"].split(",")}
        seen = Observed(Counter({"m-1": 1, "b-1": 1}), [], [], [], [], Counter(), Counter(), batch_items=[item])
        return check(catalogue, seen, {}, 2, 0.1)

    good = checked(fired="on_complete")
    assert (good.batches, good.batches_off) == (1, 0)
    assert checked().batches_off == 1  # its callback never marked fired
    assert checked(fired="on_complete,on_success").batches_off == 1  # a callback it does not have
    assert checked(fired="on_complete", done="2").batches_off == 1  # a member counted twice
    assert checked(fired="on_complete", succeeded="0", failed="1").batches_off == 1  # counted failed, never moved
    assert not base_outcome(batches_off=1).holds()


# -- the strict checker: each check fails on a planted record, and every allowance is named --------------------

PAY = "payments.update_balance"


def _plain_seen(**changes) -> Observed:
    """What a run of one plain payment ``p-1`` (5 to account ``a``), applied once, leaves; ``changes`` plant."""
    items = [{"account_id": {"S": "a"}, "balance": {"N": "5"}}, {"account_id": {"S": f"applied#{PAY}#p-1"}}]
    fields = dict(
        applications=Counter({"p-1": 1}),
        items=items,
        letters=[],
        dlq_arrivals=[],
        queue_arrivals=[],
        outcomes=Counter(),
        replayed=Counter(),
    )
    return Observed(**{**fields, **changes})


def _plain(catalogue_changes: dict | None = None, **changes) -> Outcome:
    catalogue = {"p-1": {"type": PAY, "account_id": "a", "amount": 5, "poison": False}}
    for key, job in (catalogue_changes or {}).items():
        catalogue[key] = {**catalogue.get(key, {}), **job}
    return check(catalogue, _plain_seen(**changes), {}, 1, 0.1)


def _arrival(queue: str, key: str, attributes: dict, *, message_id: str = "m-1", **more) -> Arrival:
    return Arrival(queue, message_id, json.dumps({"idempotency_key": key}), attributes, None, **more)


def _receive(count: int, *lost: str, message_id: str = "m-1", key: str = "p-1", attempt: int | None = None):
    from bench.invariant.receives import Receive

    return Receive(message_id, count, key, attempt or count, float(count), float(count) + 1, set(lost))


def _batch_without_head() -> Outcome:
    catalogue = {
        "p-1": {"batch": "b-1"},
        "b-1": {"type": PAY, "account_id": "x", "amount": 1, "poison": False, "callback": "on_complete"},
    }
    catalogue["b-1"]["members"] = ["p-1"]
    return _plain(catalogue, applications=Counter({"p-1": 1, "b-1": 1}))


def _off_trace() -> Outcome:
    from bench.invariant.checker import RUN_TRACE_HEADER
    from tiered_jobs.contract.names import Attributes

    sent = _arrival("q", "p-1", {}, trace_header=RUN_TRACE_HEADER)
    copy = _arrival("q", "p-1", {Attributes.PRIOR_ATTEMPTS: "0"}, message_id="m-2")  # the copy lost the trace
    return _plain(queue_arrivals=[sent, copy])


def _overrun() -> Outcome:
    from bench.invariant.receives import OVERRAN

    return _plain(receives=[_receive(1, OVERRAN)])


#: For each check of the checker, a run's record planted to break it.
PLANTED = {
    "lost": lambda: _plain({"p-2": {"type": PAY, "account_id": "a", "amount": 1, "poison": False}}),
    "duplicated": lambda: _plain(applications=Counter({"p-1": 2})),
    "unexpected": lambda: _plain(applications=Counter({"p-1": 1, "x-9": 1})),  # a job nobody published
    "balances_ok": lambda: _plain(items=[{"account_id": {"S": "a"}, "balance": {"N": "6"}}]),
    "accounted": lambda: _plain({"p-2": {"type": PAY, "account_id": "a", "amount": 1, "poison": False}}),
    "dead_letters_without_reason_or_unknown": lambda: _plain(letters=[_letter("p-1", Reason="unknown")]),
    "letters_without_reason": lambda: _plain(dlq_arrivals=[_arrival("dlq", "p-1", {})]),
    "letters_missing_some_reasons": lambda: _plain(
        dlq_arrivals=[_arrival("dlq", "p-1", {DeadLetter.REASON: "requeue_failed"})]
    ),
    "copies_without_their_tenant": lambda: _plain(
        {"p-1": {"tenant": "t-1"}}, queue_arrivals=[_arrival("q", "p-1", {})]
    ),
    "letters_off_their_job_policy": lambda: _checked([_capped_letter(attempts="3")]),
    "letters_without_a_traceback": lambda: _plain(
        dlq_arrivals=[_arrival("dlq", "p-1", _attributes(_letter("p-1", Reason="permanent")))]
    ),
    "letters_naming_the_wrong_frame": lambda: _checked(
        [_capped_letter(frame="tiered_jobs/runtime/consumer.py:310 in execute")]
    ),
    "received_while_paused": lambda: _plain(
        pause={"pauses": 1, "paused_seconds": 1.0, "published_while_paused": 1, "received_while_paused": 1}
    ),
    "unique_locks_left": lambda: _plain(unique_locks=[{"lock": {"S": f"{PAY}#p-1"}}]),
    "batches_off": _batch_without_head,
    "arrivals_off_their_trace": _off_trace,
    "unexplained_invocation_errors": lambda: _plain(unexplained_errors=["RuntimeError: boom"]),
    "overruns": _overrun,
    "breaker_received_while_open": lambda: _plain(breaker=_breaker(received_while_open=1)),
    "breaker_received_above_probe": lambda: _plain(breaker=_breaker(received_above_probe=1)),
    "breaker_off": lambda: _plain(breaker=_breaker(ended_off="state Disabled, maximum concurrency None (had 4)")),
}


def _breaker(**planted):
    from bench.invariant.breaker_events import BreakerRecord

    return BreakerRecord(changes=3, **planted)


def test_each_check_fails_on_its_planted_record():
    """No check that cannot fail: each of the checker's checks is broken by a record planted for it."""
    from bench.invariant.checker import CHECKS

    assert _plain().failed() == [] and _checked([_capped_letter()]).failed() == []
    assert sorted(PLANTED) == sorted(CHECKS)
    for name, plant in PLANTED.items():
        assert name in plant().failed(), name


def test_a_letter_reading_unknown_fails_whoever_wrote_it_and_one_without_reasons_only_its_own_crash_excuses():
    from bench.invariant.receives import CRASHED

    # The consumer never writes "unknown": a letter saying so is counted, even beside a crash of its message.
    lying = _letter("p-1", Reason="unknown")
    lying["MessageId"] = "m-1"
    assert _plain(letters=[lying]).dead_letters_without_reason_or_unknown == 1
    # SQS's redrive (no reasons at all) is counted unless its own last receive (the 5th) crashed.
    redriven = {"Body": json.dumps({"idempotency_key": "p-1"}), "MessageId": "m-1", "MessageAttributes": {}}
    arrivals = [_arrival("dlq", "p-1", {})]
    crashed_early = [_receive(1), _receive(2, CRASHED), _receive(3), _receive(4), _receive(5)]
    early = _plain(letters=[redriven], dlq_arrivals=arrivals, receives=crashed_early, max_receive_count=5)
    assert early.dead_letters_without_reason_or_unknown == 1 and early.letters_without_reason_after_a_crash == 0
    assert early.unexplained_letters == [
        "p-1: letter without reasons (m-1); its receives: receive 1 (attempt 1) of m-1: settled; receive 2 (attempt "
        "2) of m-1: crashed; receive 3 (attempt 3) of m-1: settled; receive 4 (attempt 4) of m-1: settled; "
        "receive 5 (attempt 5) of m-1: settled"
    ]
    other = [*crashed_early[:4], _receive(5), _receive(5, CRASHED, message_id="m-2")]  # another message's crash
    assert not _plain(dlq_arrivals=arrivals, receives=other, max_receive_count=5).holds()
    for lost in ("crashed", "overran", "ack_crashed"):
        last = [*crashed_early[:4], _receive(5, lost)]
        excused = _plain(letters=[redriven], dlq_arrivals=arrivals, receives=last, max_receive_count=5)
        # (One receive in five overran: past the overruns' bound in so small a run, which is that check's own.)
        assert excused.failed() == (["overruns"] if lost == "overran" else []), lost
        assert excused.dead_letters_without_reason_or_unknown == 0
        assert excused.excused_letters == [
            f"p-1: letter without reasons (m-1) after its last receive 5 (attempt 5) of m-1: {lost}"
        ]


def test_an_injected_throttle_on_the_jobs_last_attempt_is_its_letter_there_and_nowhere_else():
    """The ledger's "transient on the job's last attempt": the idempotency table throttled on the capped job's
    2nd attempt, so its letter names that error, not the job's own. Only as ``retries_exhausted`` at the
    policy's last attempt, and only for an error the run injected."""
    throttled = "An error occurred (ProvisionedThroughputExceededException) when calling the Injected operation: "
    throttled += "ProvisionedThroughputExceededException (injected)"

    def letter(reason="retries_exhausted", attempts="2", message=throttled) -> dict:
        tb = _traceback("tiered_jobs/runtime/own_puts.py:1 in put", f"botocore.exceptions.ClientError: {message}")
        return _letter(
            "c-1", Reason=reason, Attempts=attempts, ErrorType="ClientError", ErrorMessage=message, Traceback=tb
        )

    held = _checked([letter()])
    assert held.letters_off_their_job_policy == 0 and held.holds(), held.letters_off_detail
    assert held.excused_letters == [f"c-1: retries_exhausted on its last attempt (2) by {throttled[:120]}"]
    assert _checked([letter(attempts="1")]).letters_off_their_job_policy == 1  # not its last attempt
    assert _checked([letter(reason="permanent")]).letters_off_their_job_policy == 1  # transient is not permanent
    real = throttled.replace(" (injected)", "")  # the same error, not the run's: the job's table failed for real
    assert _checked([letter(message=real)]).letters_off_their_job_policy == 1
    # ...and a job whose own letter is off stays off, whatever letter of a fault sits beside it.
    assert _checked([letter(), _capped_letter(attempts="5")]).letters_off_their_job_policy == 1
    # A job with no policy of its own (the tier's five attempts) has no such allowance.
    catalogue = {"c-1": {key: value for key, value in _CAPPED.items() if key != "max_attempts"}}
    arrivals = [Arrival("dlq", "0", letter()["Body"], _attributes(letter()), None)]
    seen = Observed(Counter(), [], [letter()], arrivals, [], Counter(), Counter())
    assert check(catalogue, seen, {}, 1, 0.1).letters_off_their_job_policy == 1


def test_a_letter_past_its_job_policy_is_excused_only_by_a_lost_decision_at_each_attempt_before_it():
    from bench.invariant.receives import ACK_CRASHED, OVERRAN

    def checked(letter_attempts: str, receives: list) -> Outcome:
        seen = _plain_seen(
            applications=Counter(),
            items=[],
            letters=[_capped_letter(attempts=letter_attempts)],
            receives=receives,
        )
        return check({"c-1": _CAPPED}, seen, {}, 1, 0.1)

    receives = [_receive(1, key="c-1"), _receive(2, OVERRAN, key="c-1"), _receive(3, ACK_CRASHED, key="c-1")]
    assert checked("2", receives).letters_off_their_job_policy == 0
    assert checked("3", receives[:2]).letters_off_their_job_policy == 1  # no receive at its own attempt
    four = checked("4", [*receives, _receive(4, key="c-1")])
    assert four.letters_off_their_job_policy == 0, four.letters_off_detail
    assert four.excused_letters == [
        "c-1: retries_exhausted after 4 attempts (its policy: 2), the consumer's decision lost on receive 2 "
        "(attempt 2) of m-1: overran; receive 3 (attempt 3) of m-1: ack_crashed"
    ]
    settled = [receives[0], _receive(2, key="c-1"), receives[2], _receive(4, key="c-1")]
    assert checked("4", settled).letters_off_their_job_policy == 1  # its 2nd receive decided: no excuse
    settled[1].returned = True  # ...unless the consumer returned it there (a copy SQS refused: requeue_kept)
    assert checked("4", settled).letters_off_their_job_policy == 0


def test_receives_record_the_injected_crash_an_overrun_an_unexplained_error_and_a_lost_ack():
    from bench.invariant.receives import ACK_CRASHED, CRASHED, ERROR, OVERRAN, Receives

    now = [0.0]
    receives = Receives(visibility_timeout=10, clock=lambda: now[0])

    def message(n: int, count: int = 1) -> dict:
        attributes = {"ApproximateReceiveCount": str(count)}
        return {"MessageId": f"m-{n}", "ReceiptHandle": f"h-{n}-{count}", "Body": "{}", "Attributes": attributes}

    def event(*messages: dict) -> dict:
        return {"Records": [{"messageId": m["MessageId"], "attributes": m["Attributes"]} for m in messages]}

    first, second, third, fourth = message(1), message(2), message(3, count=2), message(4)
    receives.received([first, second, third, fourth])
    receives.invoked(event(first), "SimulatedCrash: crash", crashed=True)
    receives.invoked(event(second), "KeyError: 'x'", crashed=False)
    now[0] = 10.0
    receives.invoked(event(third, fourth), None, crashed=False, returned=frozenset({"m-3"}))
    receives.ack_crashed(["h-4-1"])
    assert [r.returned for r in receives.all] == [False, False, True, False]
    assert [(r.message_id, r.count, sorted(r.lost)) for r in receives.all] == [
        ("m-1", 1, [CRASHED]),
        ("m-2", 1, [ERROR]),
        ("m-3", 2, [OVERRAN]),
        ("m-4", 1, [ACK_CRASHED, OVERRAN]),
    ]
    assert receives.unexplained_errors(mapping_errors=2) == ["KeyError: 'x'"]
    # A batch the mapping counted failed that no invocation showed is unexplained too.
    assert receives.unexplained_errors(mapping_errors=3)[1:] == ["a batch the mapping failed to handle (see its log)"]


#: Each allowance the checker makes (bench/invariant/checker.py's ALLOWANCES): a change of the list is a change here.
ALLOWED = [
    "a letter without reasons whose own receive numbered maxReceiveCount crashed",
    "a letter without reasons whose own receive numbered maxReceiveCount overran",
    "a letter without reasons whose own receive numbered maxReceiveCount lost its acknowledgement",
    "a letter past its job's attempts where each receive from the policy's last attempt on lost its decision",
    "a letter past its job's attempts where a receive from the policy's last attempt on was returned to the queue",
    "overruns, up to OVERRUN_SHARE of the receives",
    "a letter of a duplicate delivery (idempotency's in progress) is not judged against its job's policy",
    "a letter of a job that was applied (redundant_dead_letters) is counted, not failed",
    "a message SQS moved itself (redrive, StartMessageMoveTask) is not held to its trace header",
    "a letter of an injected transient fault on its job's last attempt reads retries_exhausted there",
    "a newer producer's letter's attempts are not bounded",
]


def test_every_allowance_the_checker_makes_is_listed_with_the_aws_path_that_makes_it_real():
    from bench.invariant.checker import ALLOWANCES, OVERRUN_SHARE

    assert list(ALLOWANCES) == ALLOWED
    for allowance, reason in ALLOWANCES.items():
        assert any(service in reason for service in ("SQS", "Lambda", "botocore", "AWS")), allowance
    # The overruns' bound is a bound: 2 in 100 receives hold, 3 fail.
    from bench.invariant.receives import OVERRAN

    assert OVERRUN_SHARE == 0.02
    receives = [_receive(1, message_id=f"m-{n}") for n in range(100)]
    for n in range(3):
        receives[n].lost.add(OVERRAN)
    assert "overruns" in _plain(receives=receives).failed()
    receives[0].lost.clear()
    assert _plain(receives=receives).failed() == []


def test_the_runs_clients_lose_applied_answers_and_conflict_batch_counts_as_their_plan_rolls():
    """The composed run's AWS faults: an applied write whose answer is lost is sent again by botocore (its
    conditional put then meets its own item), and a batch member's count is cancelled by a conflict."""
    from contextlib import ExitStack

    import boto3
    from moto import mock_aws

    from bench.invariant.faults import conflict_batch_counts, lose_answers_of

    plan = FaultPlan.quiet(lost_answer=1.0, batch_count_conflict=1.0)
    with mock_aws(), ExitStack() as stack:
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        for table in ("t", "batches"):
            dynamodb.create_table(
                TableName=table,
                KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                BillingMode="PAY_PER_REQUEST",
            )
        conflict_batch_counts(lose_answers_of(dynamodb, plan, stack), plan, lambda: "batches", stack)
        plan.roll = lambda name, probability: plan.injected.update([name]) or plan.injected[name] == 1  # once each
        with pytest.raises(dynamodb.exceptions.ConditionalCheckFailedException):
            dynamodb.put_item(TableName="t", Item={"pk": {"S": "a"}}, ConditionExpression="attribute_not_exists(pk)")
        assert dynamodb.get_item(TableName="t", Key={"pk": {"S": "a"}})["Item"] == {"pk": {"S": "a"}}
        count = [{"Put": {"TableName": "batches", "Item": {"pk": {"S": "b"}}}}]
        with pytest.raises(dynamodb.exceptions.TransactionCanceledException) as refused:
            dynamodb.transact_write_items(TransactItems=count)
        assert refused.value.response["CancellationReasons"] == [{"Code": "TransactionConflict"}]
        dynamodb.transact_write_items(TransactItems=[{"Put": {"TableName": "t", "Item": {"pk": {"S": "c"}}}}])
    assert plan.injected["lost_answer:dynamodb.PutItem"] >= 1 and plan.injected["batch_count_conflict"] >= 1
    assert plan.injected["lost_answer:dynamodb.TransactWriteItems"] >= 1  # the one not refused was applied


def test_the_breakers_events_delivered_died_retried_and_duplicated_leave_it_closed_as_it_was(monkeypatch):
    """The run's breaker, on moto's Lambda: each change's event dies midway once, is retried and duplicated, and
    the mapping ends enabled with its concurrency and no breaker tags; the pollers' receives are judged by when
    they read the mapping."""
    import boto3
    from moto import mock_aws

    from bench.invariant.breaker_events import BreakerRecord, check_ended, create_alarms, deliver_changes
    from bench.invariant.mapping import create_mapping

    monkeypatch.setattr("emulator.mapping_state.control", lambda *args: None)  # no poller here: nothing reads it
    plan = FaultPlan.quiet()
    record = BreakerRecord()
    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        url = sqs.create_queue(QueueName="q")["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        uuid, _ = create_mapping("b", arn, "us-east-1", 4)
        create_alarms(boto3.client("cloudwatch", region_name="us-east-1"), "critical")
        lam = boto3.client("lambda", region_name="us-east-1")
        cloudwatch = boto3.client("cloudwatch", region_name="us-east-1")
        opened: list[str] = []

        def wait(seconds: float) -> None:  # while open, then while probing: what a poller reads
            mapping = lam.get_event_source_mapping(UUID=uuid)
            opened.append((mapping["State"], mapping["ScalingConfig"]["MaximumConcurrency"]))

        deliver_changes(record, plan, tier="critical", uuid=uuid, lambda_client=lam, cloudwatch=cloudwatch, wait=wait)
        check_ended(record, uuid=uuid, lambda_client=lam, concurrency=4)
    assert record.ended_off is None, record.outcomes
    assert opened == [("Disabled", 4), ("Enabled", 2)]  # open, then the probe at Lambda's least concurrency
    assert (record.changes, record.failed_deliveries, record.duplicated_deliveries) == (3, 3, 3)
    assert plan.injected == {"breaker_delivery_died": 3, "breaker_delivery_duplicated": 3}
    assert record.pages >= 1
    # A receive after a read that found the breaker open is counted, and one by a poller above the probe's
    # concurrency after a read that found it half-open; a read before the change is not (a batch on its way).
    record.opened_at, record.probing_at = 10.0, None
    record.receive(3, read_at=9.0, poller=0)
    record.receive(5, read_at=11.0, poller=0)
    record.opened_at, record.probing_at = None, 20.0
    record.receive(7, read_at=21.0, poller=1)
    record.receive(11, read_at=21.0, poller=2)
    assert (record.received_while_open, record.received_above_probe) == (5, 11)
