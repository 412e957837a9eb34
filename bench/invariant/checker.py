"""The checker: lost, duplicated and unexpected outcomes, read from outside the consumer.

Like a Jepsen queue checker, it knows what was published (the catalogue) and reads the truth from
the wire and the tables: the successful balance transactions seen on the job's client (per key),
the payments table's markers and balances, every message the DLQ took in (whoever sent it), and
every copy the main queue took in. The consumer's own view (its outcomes) only says which paths
the run exercised; no invariant rests on it.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

from tiered_jobs.contract import batches as batch_items
from tiered_jobs.contract.names import Attributes, DeadLetter

from .breaker_events import BreakerRecord
from .receives import OVERRAN, Receive
from .taps import Arrival

#: The trace the run's publisher sends with every job it publishes (its ``trace_context``): each copy,
#: letter and replay of such a job must carry it on (docs/consumer.md, "Traces").
RUN_TRACE_HEADER = "Root=1-5f4b3c2a-1234567890abcdef12345678;Parent=53995c3f42cd8ad8;Sampled=0"

#: The outcomes the composed run must exercise (the receive ledger's rows it can reach by faults):
#: a run where one of them never happened proves nothing about it.
EXERCISED = (
    "succeeded",
    "duplicate",
    "retried",
    "dead_lettered",
    "deferred",
    "rate_limited",
    "limiter_error",
    "requeue_kept",
    "expired",
    "cancelled",
    "envelope_too_new",
    "too_new_dead_lettered",
    "checkpointed",
)


#: The counters that must be 0 for a run to hold.
MUST_BE_ZERO = (
    "lost",
    "duplicated",
    "unexpected",
    "dead_letters_without_reason_or_unknown",
    "letters_missing_some_reasons",
    "copies_without_their_tenant",
    "letters_off_their_job_policy",
    "letters_without_a_traceback",
    "letters_naming_the_wrong_frame",
    "received_while_paused",
    "unique_locks_left",
    "batches_off",
    "arrivals_off_their_trace",
    "unexplained_invocation_errors",
    "breaker_received_while_open",
    "breaker_received_above_probe",
    "breaker_off",
)
#: Every check a run must pass (:meth:`Outcome.failed`): those counters, exact balances, every job accounted
#: for once (applied, dead-lettered or ended), each letter without reasons explained by its own last receive,
#: and overruns within their bound. Each is shown able to fail by a planted record
#: (``tests/reliability/test_invariant.py::test_each_check_fails_on_its_planted_record``).
CHECKS = (*MUST_BE_ZERO, "balances_ok", "accounted", "letters_without_reason", "overruns")


@dataclass
class Outcome:
    expected: int
    applied: int
    lost: int
    duplicated: int
    dead_lettered: int
    unexpected: int
    poison: int
    balances_ok: bool
    balances_checked: int
    #: ``{account: [expected, actual]}`` where they differ.
    balance_mismatches: dict[str, list[int]]
    dead_letter_reasons: dict[str, int]
    dead_letters_without_reason_or_unknown: int
    redundant_dead_letters: int
    faults_injected: dict[str, int]
    messages_published: int
    seconds: float
    #: Every message the DLQ took in without ``DeadLetter.Reason`` (SQS's redrive moved it).
    letters_without_reason: int = 0
    #: ...of which its own last receive (numbered ``maxReceiveCount``) crashed, overran or lost its
    #: acknowledgement: the only paths allowed to let SQS's redrive move a job (docs/consumer.md).
    letters_without_reason_after_a_crash: int = 0
    #: Each letter the checker excused, with the receive that explains it: a letter without reasons by its
    #: own last receive, a letter past its job's attempts by the receives before it whose decisions were lost.
    excused_letters: list[str] = field(default_factory=list)
    #: Each letter without reasons that no receive of its own explains.
    unexplained_letters: list[str] = field(default_factory=list)
    #: The receives the mapping made, each recorded as ``(message id, receive count)``.
    receives: int = 0
    #: Receives held past the visibility timeout from their receive to their invocation's end: received
    #: again, as on Lambda when a batch is invoked or finishes late (a real path, not an artefact). Bounded:
    #: at most :data:`OVERRUN_SHARE` of the receives, or the machine, not the code, decided the run.
    overruns: int = 0
    overruns_allowed: int = 0
    #: Invocations that failed with anything but the injected crash, or answered what Lambda reads as a failed
    #: batch: no fault planted them, so none may be. Each said in the detail (``type: message``).
    unexplained_invocation_errors: int = 0
    unexplained_invocation_detail: list[str] = field(default_factory=list)
    #: The circuit breaker's changes delivered mid-run (open, half-open, closed), its alarm events' deliveries
    #: that died midway (retried, as Lambda retries an asynchronous invoke) and duplicated, and its pages.
    breaker_changes: int = 0
    breaker_deliveries_died: int = 0
    breaker_deliveries_duplicated: int = 0
    breaker_pages: int = 0
    #: Messages received after a poller read the open breaker's mapping (disabled), or by a poller above the
    #: probe's concurrency while it was half-open: none may be.
    breaker_received_while_open: int = 0
    breaker_received_above_probe: int = 0
    #: Runs whose breaker did not end closed (its mapping enabled with the concurrency it had, no breaker tags
    #: left, every change made), each said in the detail.
    breaker_off: int = 0
    breaker_off_detail: list[str] = field(default_factory=list)
    #: Letters the consumer wrote with some of its eight reasons missing (the publisher's headroom).
    letters_missing_some_reasons: int = 0
    #: Messages of a tenant's job the main queue took in without that tenant as their group.
    copies_without_their_tenant: int = 0
    #: The consumer's own copies (held or deferred jobs) the main queue took in.
    copies: int = 0
    #: ...of which held with their turn (``TieredJobs.Turn``: the token claimed when they were held).
    copies_with_a_turn: int = 0
    #: The consumer's outcomes, by receive-ledger row.
    outcomes: dict[str, int] = field(default_factory=dict)
    #: Messages moved back by the replays (``batch``, ``native``).
    replayed: dict[str, int] = field(default_factory=dict)
    #: Jobs that must end dead-lettered (poison, ``capped.*``), by the reason their letter must give.
    expected_dead_letters: dict[str, int] = field(default_factory=dict)
    #: Of those, jobs without a final letter of their own failure (its traceback ends with what the
    #: job raises), or with one giving another reason or attempts their job's policy rules out
    #: (fewer than its ``max_attempts``, or as many as the tier's: the job's own policy ignored).
    #: A duplicate delivery's letter (the same key run at once elsewhere: idempotency's "in
    #: progress") is not the job's own failure, and is not judged here.
    letters_off_their_job_policy: int = 0
    #: Each of those, said: its key, the reason and attempts its policy allows, and its letters' own.
    letters_off_detail: list[str] = field(default_factory=list)
    #: Letters the consumer wrote for a job that raised without a ``DeadLetter.Traceback`` that
    #: parses as version 1 (``{"v": 1, "frame", "traceback"}``, a traceback text, a frame or null).
    letters_without_a_traceback: int = 0
    #: Final letters of a job's own failure whose failing frame is not the expected one (the job's
    #: line for ``capped.*``; none for poison, refused before any job code ran), and letters of a job
    #: module's failed import whose traceback does not name that module's file.
    letters_naming_the_wrong_frame: int = 0
    #: Letters whose job failed because its module did not import (``JobModuleError``).
    import_failure_letters: int = 0
    #: An operator's pauses of the tier mid-run, how long it stayed paused, the messages published to it
    #: meanwhile, and those its mapping received while paused (a batch already in flight when the pause
    #: landed aside): none may be.
    pauses: int = 0
    paused_seconds: float = 0.0
    published_while_paused: int = 0
    received_while_paused: int = 0
    #: Jobs that must end unrun (expired, cancelled), by reason; and those the discard archive holds with
    #: that reason, never applied, never dead-lettered (``lost`` counts one archived under no reason).
    expected_ended: dict[str, int] = field(default_factory=dict)
    ended: int = 0
    #: Jobs published with ``unique_for=``; their copies refused as already queued (nothing sent); and the
    #: locks left at the end, when every job has finished: none may be (each finished job released its own).
    unique_jobs: int = 0
    unique_copies_refused: int = 0
    unique_locks_left: int = 0
    #: Batches opened (``publisher.batch``), and those not ending as they must: sealed with their members'
    #: total, every member counted once as succeeded, and their one callback marked fired (its job's own
    #: application, exactly once, is checked with every other job's).
    batches: int = 0
    batches_off: int = 0
    #: Each batch off, said: its id, its head (sealed, total, done, succeeded, failed, fired), and the letters of
    #: its members left in the DLQ at the end (a member copy SQS's redrive moved after the run's last replay).
    batches_off_detail: list[str] = field(default_factory=list)
    #: Messages of a job the run published with :data:`RUN_TRACE_HEADER` that arrived without it: a
    #: publish, a held or deferred copy, a letter of the consumer's, a batch replay (see :func:`_off_their_trace`).
    arrivals_off_their_trace: int = 0

    def failed(self) -> list[str]:
        """The checks this outcome fails, by name (:data:`CHECKS`): empty when the run holds."""
        checks = {
            **{name: getattr(self, name) == 0 for name in MUST_BE_ZERO},
            "balances_ok": self.balances_ok,
            "accounted": self.applied + self.dead_lettered + self.ended == self.expected,
            "letters_without_reason": self.letters_without_reason == self.letters_without_reason_after_a_crash,
            "overruns": self.overruns <= self.overruns_allowed,
        }
        return [name for name in CHECKS if not checks[name]]

    def holds(self) -> bool:
        return not self.failed()

    def not_exercised(self) -> list[str]:
        """The outcomes of :data:`EXERCISED` the run never reached."""
        return [name for name in EXERCISED if not self.outcomes.get(name)]

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "holds": self.holds()}

    def plus(self, other: Outcome) -> Outcome:
        """Two independent runs as one: counts and seconds add up, checks must hold in both."""
        merged: dict[str, Any] = {}
        for name, value in asdict(self).items():
            theirs = getattr(other, name)
            if isinstance(value, bool):
                merged[name] = value and theirs
            elif name == "balance_mismatches":  # shards have their own tables: keep both
                merged[name] = {**value, **{f"{k} (+)": v for k, v in theirs.items()}}
            elif isinstance(value, dict):
                merged[name] = dict(Counter(value) + Counter(theirs))
            else:
                merged[name] = value + theirs
        return Outcome(**merged)


@dataclass
class Observed:
    """What the run saw happen, for :func:`check`."""

    #: ``{idempotency key: successful balance transactions}``, seen on the job's client.
    applications: Counter[str]
    #: The payments table's items.
    items: list[dict[str, Any]]
    #: The letters left in the DLQ at the end.
    letters: list[dict[str, Any]]
    #: Everything the DLQ and the main queue took in.
    dlq_arrivals: list[Arrival]
    queue_arrivals: list[Arrival]
    outcomes: Counter[str]
    replayed: Counter[str]
    #: The operator's pauses: ``pauses``, ``paused_seconds``, ``published_while_paused``, ``received_while_paused``.
    pause: dict[str, Any] = field(default_factory=dict)
    #: ``{idempotency key: reasons}`` of the jobs the discard archive holds (ended unrun).
    archived: dict[str, set[str]] = field(default_factory=dict)
    #: Copies of unique jobs the publisher refused as already queued, and the locks' table's items at the end.
    unique_refused: int = 0
    unique_locks: list[dict[str, Any]] = field(default_factory=list)
    #: ``{pointer body: idempotency key}`` of the bodies the publisher stored in S3 (``large_payloads``).
    offloaded: dict[str, str] = field(default_factory=dict)
    #: The batches table's items at the end (heads and members' markers).
    batch_items: list[dict[str, Any]] = field(default_factory=list)
    #: Every receive of the mapping (:class:`~bench.invariant.receives.Receive`), and the queue's
    #: ``maxReceiveCount`` (0: unknown, so no letter without reasons is excused).
    receives: list[Receive] = field(default_factory=list)
    max_receive_count: int = 0
    #: The invocation errors no planted fault explains (``type: message``).
    unexplained_errors: list[str] = field(default_factory=list)
    #: The circuit breaker's deliveries and what the pollers did meanwhile (``None``: no breaker in the run).
    breaker: BreakerRecord | None = None


def check(
    catalogue: dict[str, dict[str, Any]], seen: Observed, faults: dict[str, int], published: int, seconds: float
) -> Outcome:
    markers = {marker_key_of(i["account_id"]["S"]) for i in seen.items if i["account_id"]["S"].startswith("applied#")}
    balances = {
        i["account_id"]["S"]: int(i["balance"]["N"])
        for i in seen.items
        if not i["account_id"]["S"].startswith("applied#")
    }
    reasons: Counter[str] = Counter()
    dlq_keys: set[str] = set()
    finals: dict[str, list[dict[str, Any]]] = defaultdict(list)  # key -> its letters left at the end
    without_reason = [a for a in seen.dlq_arrivals if DeadLetter.REASON not in a.attributes]
    explained = {a.message_id: r for a in without_reason if (r := _last_receive(a, seen)) is not None}
    missing_reason = 0
    for letter in seen.letters:
        attrs = letter.get("MessageAttributes", {})
        reason = attrs.get(DeadLetter.REASON, {}).get("StringValue", DeadLetter.REASON_UNKNOWN)
        reasons[reason] += 1
        # A letter without reasons is SQS's redrive: allowed only after its own last receive crashed. The
        # consumer never writes "unknown" itself (tools read it for a missing reason): a letter saying so lies.
        if reason == DeadLetter.REASON_UNKNOWN and letter.get("MessageId") not in explained:
            missing_reason += 1
        try:
            key = seen.offloaded.get(letter["Body"]) or json.loads(letter["Body"])["idempotency_key"]
        except (ValueError, KeyError, TypeError):
            missing_reason += 1
            continue
        dlq_keys.add(key)
        finals[key].append(letter)
    applied = set(seen.applications) | markers
    poison = {k for k, job in catalogue.items() if job["poison"]}
    must_die = {k for k, job in catalogue.items() if job.get("dead_letter")}
    must_end = {k: job["ends"] for k, job in catalogue.items() if job.get("ends")}
    ended = {k for k, reason in must_end.items() if seen.archived.get(k) == {reason}}
    archived_wrongly = {k for k, reasons in seen.archived.items() if reasons != {must_end.get(k)}}
    expected_balance: dict[str, int] = defaultdict(int)
    for key in applied & set(catalogue):
        expected_balance[catalogue[key]["account_id"]] += catalogue[key]["amount"]
    mismatches = {
        acc: [expected_balance.get(acc, 0), balances.get(acc, 0)]
        for acc in set(balances) | set(expected_balance)
        if expected_balance.get(acc, 0) != balances.get(acc, 0)
    }
    dead_lettered = (dlq_keys - applied) & set(catalogue)
    ours = [a for a in seen.dlq_arrivals if DeadLetter.REASON in a.attributes]
    import_failures = [a for a in ours if a.attributes.get(DeadLetter.ERROR_TYPE) == _IMPORT_ERROR_TYPE]
    own = {k: [x for x in finals.get(k, []) if _its_own_failure(catalogue[k], x)] for k in must_die}
    faulted = {
        k: [x for x in finals.get(k, []) if _an_injected_fault_on_its_last_attempt(catalogue[k], x)] for k in must_die
    }
    receives_of = _receives_by_key(seen)
    policy = {k: _judged(k, catalogue[k], own[k], faulted[k], receives_of.get(k, [])) for k in must_die}
    off_policy = sorted(k for k, (ok, _) in policy.items() if not ok)
    excused = [
        f"{_key(a.body) or seen.offloaded.get(a.body)}: letter without reasons ({a.message_id}) after its last "
        + explained[a.message_id].said()
        for a in without_reason
        if a.message_id in explained
    ]
    unexplained_letters = [
        f"{_key(a.body) or seen.offloaded.get(a.body)}: letter without reasons ({a.message_id}); its receives: "
        + "; ".join(r.said() for r in seen.receives if r.message_id == a.message_id)
        for a in without_reason
        if a.message_id not in explained
    ]
    overruns = sum(1 for r in seen.receives if OVERRAN in r.lost)
    tenants = {key: job["tenant"] for key, job in catalogue.items() if job.get("tenant")}
    heads = {
        item[batch_items.KEY]["S"]: batch_items.Head.from_item(item)
        for item in seen.batch_items
        if item[batch_items.MEMBER]["S"] == batch_items.HEAD
    }
    callbacks = {key: job for key, job in catalogue.items() if job.get("callback")}
    return Outcome(
        expected=len(catalogue),
        applied=len(applied & set(catalogue)),
        lost=len(set(catalogue) - applied - dlq_keys - ended),
        duplicated=sum(1 for n in seen.applications.values() if n > 1),
        dead_lettered=len(dead_lettered),
        unexpected=len(
            (applied - set(catalogue))
            | (applied & must_die)
            | (dlq_keys - set(catalogue))
            | ((applied | dlq_keys) & set(must_end))
            | archived_wrongly
        ),
        poison=len(poison),
        balances_ok=not mismatches,
        balances_checked=len(balances),
        balance_mismatches=mismatches,
        dead_letter_reasons=dict(reasons),
        dead_letters_without_reason_or_unknown=missing_reason,
        redundant_dead_letters=len(dlq_keys & applied),
        faults_injected=dict(faults),
        messages_published=published,
        seconds=round(seconds, 1),
        letters_without_reason=len(without_reason),
        letters_without_reason_after_a_crash=sum(a.message_id in explained for a in without_reason),
        excused_letters=excused + [line for k in sorted(policy) for line in policy[k][1]],
        unexplained_letters=unexplained_letters,
        receives=len(seen.receives),
        overruns=overruns,
        overruns_allowed=int(len(seen.receives) * OVERRUN_SHARE),
        unexplained_invocation_errors=len(seen.unexplained_errors),
        unexplained_invocation_detail=seen.unexplained_errors[:MAX_DETAIL],
        **_breaker_counts(seen.breaker),
        letters_missing_some_reasons=sum(not set(DeadLetter.ALL) <= set(a.attributes) for a in ours),
        copies_without_their_tenant=sum(
            1 for a in seen.queue_arrivals if (key := _key(a.body)) in tenants and a.group_id != tenants[key]
        ),
        copies=sum(1 for a in seen.queue_arrivals if Attributes.PRIOR_ATTEMPTS in a.attributes),
        copies_with_a_turn=sum(1 for a in seen.queue_arrivals if Attributes.TURN in a.attributes),
        outcomes=dict(seen.outcomes),
        replayed=dict(seen.replayed),
        expected_dead_letters=dict(Counter(catalogue[k]["dead_letter"] for k in must_die)),
        letters_off_their_job_policy=len(off_policy),
        letters_off_detail=[
            _letters_detail(k, catalogue[k], finals.get(k, []), receives_of.get(k, [])) for k in off_policy
        ],
        letters_without_a_traceback=sum(_traceback(a.attributes) is None for a in ours if _raised(a.attributes)),
        letters_naming_the_wrong_frame=sum(
            not _frame_as_expected(catalogue[k], letter) for k in must_die for letter in own[k]
        )
        + sum(IMPORTED_FILE not in (_traceback(a.attributes) or {}).get("traceback", "") for a in import_failures),
        import_failure_letters=len(import_failures),
        expected_ended=dict(Counter(must_end.values())),
        ended=len(ended - applied - dlq_keys),
        unique_jobs=sum(1 for job in catalogue.values() if job.get("unique")),
        unique_copies_refused=seen.unique_refused,
        unique_locks_left=len(seen.unique_locks),
        batches=len(callbacks),
        batches_off=sum(not _batch_as_expected(heads.get(key), job) for key, job in callbacks.items()),
        batches_off_detail=[
            _batch_detail(key, heads.get(key), job, seen.letters)
            for key, job in callbacks.items()
            if not _batch_as_expected(heads.get(key), job)
        ],
        arrivals_off_their_trace=_off_their_trace(seen),
        **seen.pause,
    )


#: Every allowance the checker makes, and the AWS path that makes each one real (nothing else is excused).
ALLOWANCES = {
    "a letter without reasons whose own receive numbered maxReceiveCount crashed": (
        "SQS's redrive policy moves a message received maxReceiveCount times to the DLQ on its next receive, "
        "as it is: a function that died on that receive never wrote its letter"
    ),
    "a letter without reasons whose own receive numbered maxReceiveCount overran": (
        "Lambda: a batch whose records' visibility timeout expires before the function returns (invoked late, "
        "or running long) is visible again and received again; the receive counts, the late decision does not"
    ),
    "a letter without reasons whose own receive numbered maxReceiveCount lost its acknowledgement": (
        "Lambda's poller deletes a batch after the function returns: when DeleteMessageBatch fails the records "
        "come back after their visibility timeout, their receive spent"
    ),
    "a letter past its job's attempts where each receive from the policy's last attempt on lost its decision": (
        "the consumer counts attempts from SQS's ApproximateReceiveCount, which every receive raises: a receive "
        "that crashed, overran or lost its acknowledgement counts one without a letter"
    ),
    "a letter past its job's attempts where a receive from the policy's last attempt on was returned to the queue": (
        "SQS's SendMessageBatch fails entries one by one (Failed): a held or deferred job whose copy SQS refused "
        "stays in the queue (requeue_kept), as does one whose letter the DLQ refused (kept); the receive it "
        "spent is counted by the next one's ApproximateReceiveCount"
    ),
    "overruns, up to OVERRUN_SHARE of the receives": (
        "Lambda receives a batch again when its visibility timeout passes before the function returns"
    ),
    "a letter of a duplicate delivery (idempotency's in progress) is not judged against its job's policy": (
        "SQS standard queues deliver at least once: two copies of one job run at once, and the later one meets "
        "the first one's in-progress idempotency record; its letter is that copy's, not the job's failure"
    ),
    "a letter of a job that was applied (redundant_dead_letters) is counted, not failed": (
        "a letter sent and then its record's acknowledgement lost, or SendMessage's answer lost and sent again "
        "by botocore's retry (standard queues do not deduplicate): another copy of the job ran, and a replay "
        "of the letter is answered by idempotency"
    ),
    "a message SQS moved itself (redrive, StartMessageMoveTask) is not held to its trace header": (
        "AWS documents AWSTraceHeader as set by a sender (SendMessage); SQS's own moves are not documented to keep it"
    ),
    "a letter of an injected transient fault on its job's last attempt reads retries_exhausted there": (
        "the receive ledger's row: a transient failure on the job's last attempt is dead-lettered with its "
        "reasons; AWS DynamoDB's throttling (ProvisionedThroughputExceededException) and a 503 are transient, and on "
        "that attempt they, not the job's own error, are what failed it"
    ),
    "a newer producer's letter's attempts are not bounded": (
        "nothing ran: each SQS receive that held it sent a fresh copy, and a crash of its batch adds receives"
    ),
}
#: The most overruns a run may have, as a share of its receives: an overrun needs a batch held 10 s from its
#: receive (the visibility timeout), where invocations take at most about 8 s (a slow job started just inside
#: the 4 s budget); past this share a stalled machine, not the code under test, made the run.
OVERRUN_SHARE = 0.02
#: Longest detail list kept in a report (each entry names one case; the count is the figure).
MAX_DETAIL = 20
#: The file of the job module whose import fails in the run (its letters' tracebacks must name it).
IMPORTED_FILE = "fragile.py"
#: The frame a ``capped.*`` letter must name: the job's own line (``path:line in function``), not the
#: library's nor the test harness's.
CAPPED_FRAME = ("bench/invariant/jobs/capped.py:", " in _refuse")
_IMPORT_ERROR_TYPE = "JobModuleError"


def _off_their_trace(seen: Observed) -> int:
    """Arrivals of a job the run published with :data:`RUN_TRACE_HEADER` that do not carry it: in the main
    queue (publishes, the consumer's copies, batch replays) and the consumer's letters (with reasons).

    A job SQS moved itself is left out: its redrive after a crash (a letter without reasons) and the
    native replay's move task (a letter back in the main queue) are SQS's moves, not the runtime's sends,
    and no AWS document says they keep the header."""
    traced = {a.body for a in seen.queue_arrivals if a.trace_header == RUN_TRACE_HEADER}
    moved_by_sqs = {a.body for a in seen.dlq_arrivals if DeadLetter.REASON not in a.attributes} | {
        a.body for a in seen.queue_arrivals if DeadLetter.REASON in a.attributes
    }
    checked = traced - moved_by_sqs
    ours = [*seen.queue_arrivals, *(a for a in seen.dlq_arrivals if DeadLetter.REASON in a.attributes)]
    return sum(1 for a in ours if a.body in checked and a.trace_header != RUN_TRACE_HEADER)


def _attributes_of(letter: dict[str, Any]) -> dict[str, str | None]:
    return {name: value.get("StringValue") for name, value in letter.get("MessageAttributes", {}).items()}


def _raised(attributes: dict[str, str | None]) -> bool:
    """A letter the consumer wrote for a job that raised (not ``requeue_failed`` nor ``envelope_too_new``:
    nothing ran; nor ``batch_count_failed``: the job succeeded, its batch count was not written)."""
    reason = attributes.get(DeadLetter.REASON)
    return reason is not None and reason not in (
        DeadLetter.REASON_REQUEUE_FAILED,
        DeadLetter.REASON_ENVELOPE_TOO_NEW,
        DeadLetter.REASON_BATCH_COUNT_FAILED,
    )


def _traceback(attributes: dict[str, str | None]) -> dict[str, Any] | None:
    """The letter's ``DeadLetter.Traceback`` as version 1 (parsed here, not by the library's reader,
    which reads any value), or ``None`` when it is missing or not that shape."""
    try:
        data = json.loads(attributes.get(DeadLetter.TRACEBACK) or "")
    except ValueError:
        return None
    if not (isinstance(data, dict) and data.get("v") == 1):
        return None
    text, frame = data.get("traceback"), data.get("frame")
    readable = isinstance(text, str) and text.strip() and (frame is None or isinstance(frame, str))
    return data if readable else None


def _its_own_failure(job: dict[str, Any], letter: dict[str, Any]) -> bool:
    """The letter is of what the job itself raises: its traceback's last line says so (a newer
    producer's job never ran: its letter names the envelope instead)."""
    if job.get("too_new"):
        return _attributes_of(letter).get(DeadLetter.ERROR_TYPE) == job["raises"]
    data = _traceback(_attributes_of(letter)) or {}
    lines = [line for line in data.get("traceback", "").splitlines() if line.strip()]
    return bool(lines) and job["raises"] in lines[-1]


def _frame_as_expected(job: dict[str, Any], letter: dict[str, Any]) -> bool:
    frame = (_traceback(_attributes_of(letter)) or {}).get("frame")
    if job["poison"] or job.get("too_new"):  # refused by its payload's schema, or held unread: no job code ran
        return frame is None
    return isinstance(frame, str) and frame.startswith(CAPPED_FRAME[0]) and frame.endswith(CAPPED_FRAME[1])


#: What the run's injected AWS errors say (``plan.client_error``): no job's own code raises it.
INJECTED_MARK = "(injected)"
#: The injected errors that are transient (retried): on a job's last attempt they are its letter's error.
INJECTED_TRANSIENT_CODES = ("ProvisionedThroughputExceededException", "ServiceUnavailable")


def _an_injected_fault_on_its_last_attempt(job: dict[str, Any], letter: dict[str, Any]) -> bool:
    """The letter is ``retries_exhausted`` with an injected transient AWS error as its error (the
    idempotency table throttled, the job's own write answered 503), for a job whose own policy gives it a
    last attempt where that could happen: the ledger's row "transient on the job's last attempt"."""
    if not job.get("max_attempts"):
        return False
    attributes = _attributes_of(letter)
    message = attributes.get(DeadLetter.ERROR_MESSAGE) or ""
    return (
        attributes.get(DeadLetter.REASON) == DeadLetter.REASON_RETRIES_EXHAUSTED
        and INJECTED_MARK in message
        and any(code in message for code in INJECTED_TRANSIENT_CODES)
    )


def _judged(
    key: str, job: dict[str, Any], own: list[dict[str, Any]], faulted: list[dict[str, Any]], receives: list[Receive]
) -> tuple[bool, list[str]]:
    """A job's final letters against its policy: those of its own failure as :func:`_as_its_policy_says`, and
    those of an injected transient fault on its policy's last attempt as ``retries_exhausted`` exactly there
    (with the same excuses for a receive that lost its decision). None of either: off its policy."""
    if not own and not faulted:
        return False, []
    judged = [_as_its_policy_says(job, own, receives)] if own else []
    if faulted:
        last = job["max_attempts"]
        ok, excuses = _as_its_policy_says(
            {**job, "dead_letter": DeadLetter.REASON_RETRIES_EXHAUSTED, "attempts": (last, last)}, faulted, receives
        )
        said = sorted({(_attributes_of(x).get(DeadLetter.ERROR_MESSAGE) or "")[:120] for x in faulted})
        judged.append((ok, [*excuses, f"{key}: retries_exhausted on its last attempt ({last}) by {'; '.join(said)}"]))
    return all(ok for ok, _ in judged), [line for _, lines in judged for line in lines]


def _as_its_policy_says(
    job: dict[str, Any], letters: list[dict[str, Any]], receives: list[Receive]
) -> tuple[bool, list[str]]:
    """Whether the job has a final letter of its own failure, each giving its expected reason and attempts
    within its policy's range; and the excuses used: a letter past the range only where a receive of the
    job's at each attempt from the range's top up to the letter's lost its decision (crashed, overran, its
    acknowledgement lost) or was returned to the queue by the consumer (``requeue_kept``: SQS refused the
    copy of a job held or deferred there, which the next receive's number counts; ``kept``: the DLQ refused
    its letter), so that the consumer saw the job again, and a receive at the letter's attempt."""
    if not letters:
        return False, []
    low, high = job.get("attempts", (1, None))
    excuses = []
    for letter in letters:
        attributes = _attributes_of(letter)
        try:
            attempts = int(attributes.get(DeadLetter.ATTEMPTS) or "")
        except ValueError:
            return False, []
        if attributes.get(DeadLetter.REASON) != job["dead_letter"] or attempts < low:
            return False, []
        if high is None or attempts <= high:
            continue
        before = range(high, attempts)  # its policy's last attempt, up to the letter's own
        lost = [
            next((r for r in receives if r.attempt == n and (r.decision_lost() or r.returned)), None) for n in before
        ]
        if None in lost or not any(r.attempt == attempts for r in receives):
            return False, []
        key = receives[0].key or "?"
        excuses.append(
            f"{key}: {job['dead_letter']} after {attempts} attempts (its policy: {high}), the consumer's decision "
            "lost on " + "; ".join(r.said() for r in lost if r is not None)
        )
    return True, excuses


def _breaker_counts(record: BreakerRecord | None) -> dict[str, Any]:
    if record is None:
        return {}
    return {
        "breaker_changes": record.changes,
        "breaker_deliveries_died": record.failed_deliveries,
        "breaker_deliveries_duplicated": record.duplicated_deliveries,
        "breaker_pages": record.pages,
        "breaker_received_while_open": record.received_while_open,
        "breaker_received_above_probe": record.received_above_probe,
        "breaker_off": int(record.ended_off is not None),
        "breaker_off_detail": [record.ended_off] if record.ended_off is not None else [],
    }


def _seen_again(receive: Receive) -> bool:
    """A receive after which the consumer met its job again without a letter: its decision lost, or returned."""
    return receive.decision_lost() or receive.returned


def _letters_detail(key: str, job: dict[str, Any], letters: list[dict[str, Any]], receives: list[Receive]) -> str:
    """What a job's policy allows its letter, what its letters left at the end say (of any failure), and
    each of its receives with what became of it."""
    low, high = job.get("attempts", (1, None))
    said = [
        (
            attributes.get(DeadLetter.REASON),
            attributes.get(DeadLetter.ATTEMPTS),
            attributes.get(DeadLetter.ERROR_TYPE),
            (attributes.get(DeadLetter.ERROR_MESSAGE) or "")[:160],
        )
        for attributes in map(_attributes_of, letters)
    ]
    allowed = f"{job['dead_letter']} after {low}..{high or 'any'} attempts"
    history = "; ".join(r.said() for r in receives)
    return f"{key}: {allowed}; letters (reason, attempts, error, message) {said}" + (
        f"; receives: {history}" if history else ""
    )


def _last_receive(arrival: Arrival, seen: Observed) -> Receive | None:
    """The receive that explains a letter without reasons: its message's receive numbered ``maxReceiveCount``
    (the last before SQS's redrive, the latest before the letter arrived), when its decision was lost."""
    last = [
        r
        for r in seen.receives
        if r.message_id == arrival.message_id
        and r.count == seen.max_receive_count
        and (not arrival.at or r.received_at <= arrival.at)
    ]
    return last[-1] if last and last[-1].decision_lost() else None


def _receives_by_key(seen: Observed) -> dict[str, list[Receive]]:
    found: dict[str, list[Receive]] = defaultdict(list)
    for receive in seen.receives:
        key = receive.key or (seen.offloaded.get(receive.pointer) if receive.pointer else None)
        if key is not None:
            found[key].append(receive)
    return found


def _batch_as_expected(head: batch_items.Head | None, callback: dict[str, Any]) -> bool:
    """Sealed with its members' total, each counted once and succeeded, its one callback marked fired."""
    total = len(callback["members"])
    return bool(
        head is not None
        and head.sealed
        and (head.total, head.done, head.succeeded, head.failed) == (total, total, total, 0)
        and head.fired == {callback["callback"]}
    )


def _batch_detail(key: str, head: batch_items.Head | None, callback: dict[str, Any], letters: list[Any]) -> str:
    counts = (head.sealed, head.total, head.done, head.succeeded, head.failed, sorted(head.fired)) if head else None
    left = [_key(letter["Body"]) for letter in letters if _key(letter["Body"]) in callback["members"]]
    return f"{key} ({callback['callback']}): head {counts}, members' letters left {left}"


def marker_key_of(marker: str) -> str:
    """The idempotency key of a payments marker (``applied#<job type>#<key>``; a key may hold ``#``)."""
    return marker.split("#", 2)[2]


def _key(body: str) -> str | None:
    try:
        key = json.loads(body)["idempotency_key"]
    except (ValueError, KeyError, TypeError):
        return None
    return key if isinstance(key, str) else None
