"""Inspect and replay a tier's dead-letter queue: the domain the Lambda handler and the CLI share.

How a run walks the DLQ (batch mode)
------------------------------------
It receives up to 10 letters at a time and *holds* each one it does not delete: the receive's
visibility timeout (``hold``) covers the whole run, so the scan keeps moving forward through
the queue instead of receiving the same non-matching letters again and again. Every held letter
(non-matching, over the ``max_messages`` bound, failed sends, everything ``inspect`` and
``dry_run`` read) is made visible again in one sweep when the run ends, *also when it fails*
(``finally``). If the process dies before that sweep, SQS makes them visible by itself when the
hold expires (at most the remaining Lambda time plus ``HOLD_MARGIN_SECONDS``).

The run remembers every message id it has looked at. It stops when:

- ``dlq_empty``: a receive returns nothing (nothing visible is left that this run has not
  looked at; with long polling, SQS asks all its servers);
- ``all_seen``: a receive returns only letters already looked at (a hold expired during a long
  run and the scan has wrapped around): rerun to continue, it is safe;
- ``max_messages``: ``max_messages`` letters matched (replay: sent, moved or failed);
- ``all_found``: every letter named in ``message_ids`` was found;
- ``time_budget``: the Lambda's remaining time fell under ``safety_margin_ms``;
- ``archive_failed``: ``discard`` could not write its archive (nothing of that batch deleted).

Replay sends before it deletes, and deletes only what SQS confirmed as sent. A crash between
the two leaves the letter in the main queue *and* in the DLQ: at most a duplicate, which the
consumer's idempotency (keyed by the envelope's key, not the message id) absorbs, as long as
the consumer still remembers the job: a replay therefore refuses, unless told otherwise, the
letters older than the tier's idempotency window (see ``letters``). It also leaves, unless told
``include_expired``, the letters whose job's deadline (the envelope's ``expires_at``) has passed:
the consumer would only archive them unrun; they are counted (``left_expired``) and stay. Sends are packed by count
(10) and by size (1 MiB in all, SQS's rule in ``tiered_jobs.contract.sqs_limits``).

Discard archives each batch (the injected :class:`~.archive.Archive` returns only once it is
durable) and only then deletes it; an archive failure stops the run and deletes nothing more.
"""

from __future__ import annotations

import fnmatch
import logging
import math
import time
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from typing import Any

from tiered_jobs.contract import envelope
from tiered_jobs.contract import trace_header as traces
from tiered_jobs.contract.names import SQS_MAX_BATCH_ENTRIES
from tiered_jobs.contract.sqs_limits import pack_batches
from tiered_jobs.contract.times import iso_text

from . import offloaded
from .archive import Archive
from .events import ReplayEventError, ReplayRequest, response, tier_problems
from .grouping import Groups
from .letters import Letter
from .native import start_move_task
from .tiers import TierQueues

logger = logging.getLogger(__name__)

#: Long-poll seconds per receive: with any wait, SQS queries all its servers, so an empty
#: answer really means "nothing visible" (a short poll samples a subset and may answer empty).
RECEIVE_WAIT_SECONDS = 1
#: Stop when less Lambda time than this remains: one more batch plus the final release sweep.
SAFETY_MARGIN_MS = 10_000
#: How long letters stay held past the run's time budget, in case the final sweep never runs.
HOLD_MARGIN_SECONDS = 30
#: Hold when the run has no time budget (the CLI): letters seen again after it are skipped.
DEFAULT_HOLD_SECONDS = 300


def _expired(letter: Letter, now: datetime) -> bool:
    """Has the letter's job passed its deadline (the envelope's ``expires_at``)? Never when the body is no envelope."""
    try:
        return envelope.parse(letter.body).expired(now)
    except envelope.EnvelopeError:
        return False


def run(
    request: ReplayRequest,
    *,
    sqs: Any,
    tiers: Mapping[str, TierQueues],
    remaining_ms: Callable[[], int] | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    now: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
    on_progress: Callable[[int], None] | None = None,
    on_letters: Callable[[list[Letter]], None] | None = None,
    wait_seconds: int | None = None,
    safety_margin_ms: int = SAFETY_MARGIN_MS,
    archive: Archive | None = None,
) -> dict[str, Any]:
    """Carry out ``request`` on its tier's DLQ and return the response (``RESPONSE_FIELDS``).

    ``remaining_ms``: the Lambda's remaining time (``None``: no budget). ``clock``/``sleep``
    pace the rate limit and ``now`` stamps ``Replay.At`` and ages letters: tests inject them.
    ``on_progress`` is called with the number of letters matched so far after each batch;
    ``on_letters`` with the letters matched in each batch (the console shows their bodies and reasons).
    ``archive``: where ``discard`` writes letters before deleting them (required unless dry run).
    """
    problems = tier_problems(request.tier, tiers)
    if request.action == "discard" and not request.dry_run and archive is None:
        problems.append(
            "'action': 'discard' needs an archive to keep the letters it deletes, and this replay "
            "has none: discard with the CLI (`tiered-jobs dlq discard TIER --via direct`, which "
            "archives to a local JSON-lines file), or give the replay function an archive bucket"
        )
    if problems:
        raise ReplayEventError(problems)
    queues = tiers[request.tier]
    if request.mode == "native":
        return start_move_task(request, sqs=sqs, queues=queues)
    return _Scan(
        request,
        sqs=sqs,
        queues=queues,
        remaining_ms=remaining_ms,
        clock=clock,
        sleep=sleep,
        now=now,
        on_progress=on_progress,
        on_letters=on_letters,
        # Read when the run starts, not when this module loads: a test on an emulated SQS (which
        # answers a short poll completely) may set the module's value to 0.
        wait_seconds=RECEIVE_WAIT_SECONDS if wait_seconds is None else wait_seconds,
        safety_margin_ms=safety_margin_ms,
        archive=archive,
    ).run()


def approximate_depth(sqs: Any, queue_url: str) -> int:
    """Visible letters (SQS's approximate count: it settles within a minute)."""
    attributes = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["ApproximateNumberOfMessages"])
    return int(attributes["Attributes"]["ApproximateNumberOfMessages"])


class _RateLimit:
    """At most ``per_second`` messages sent on average since the first send.

    A send of ``n`` messages starting at ``t`` lets the next one start at ``t + n / per_second``,
    so when any send starts, everything sent before it is at most ``per_second`` x the time
    elapsed since the first send.
    """

    def __init__(self, per_second: float | None, clock: Callable[[], float]):
        self.per_second = per_second
        self._clock = clock
        self._next_at: float | None = None

    def delay(self) -> float:
        """Seconds to wait before the next send may start."""
        if self._next_at is None:
            return 0.0
        return max(0.0, self._next_at - self._clock())

    def sending(self, count: int) -> None:
        """Call right before a send of ``count`` messages starts."""
        if self.per_second is not None:
            self._next_at = self._clock() + count / self.per_second


class _Scan:
    """One batch-mode run: inspect, dry run or replay (see the module's docstring)."""

    def __init__(
        self,
        request: ReplayRequest,
        *,
        sqs: Any,
        queues: TierQueues,
        remaining_ms: Callable[[], int] | None,
        clock: Callable[[], float],
        sleep: Callable[[float], None],
        now: Callable[[], datetime],
        on_progress: Callable[[int], None] | None,
        wait_seconds: int,
        safety_margin_ms: int,
        on_letters: Callable[[list[Letter]], None] | None = None,
        archive: Archive | None = None,
    ):
        self.request = request
        self.archive = archive
        self.sqs = sqs
        self.queues = queues
        self.remaining_ms = remaining_ms
        self.sleep = sleep
        self.now = now
        self.on_progress = on_progress
        self.on_letters = on_letters
        self.wait_seconds = wait_seconds
        self.safety_margin_ms = safety_margin_ms
        self.moving = request.action == "replay" and not request.dry_run
        self.discarding = request.action == "discard" and not request.dry_run
        #: A replay (dry run too) leaves out letters older than the idempotency window unless allowed.
        self.guard_window = request.action == "replay" and not request.allow_outside_idempotency_window
        self.rate = _RateLimit(request.max_per_second if self.moving else None, clock)
        self.started = now()
        self.limit = min(request.max_messages, len(request.message_ids or ()) or request.max_messages)
        self.seen: set[str] = set()
        #: message id -> latest receipt handle of every letter to make visible again at the end.
        self.held: dict[str, str] = {}
        self.groups = Groups()
        self.letters: list[dict[str, Any]] = []
        self.matched = self.moved = self.failed = self.discarded = 0
        self.outside_window = self.refused_outside_window = self.left_expired = 0
        self.archive_error: str | None = None
        #: What became of each letter the event named (``OUTCOMES``); ``not_found`` until this run sees it.
        self.outcomes: dict[str, str] | None = (
            dict.fromkeys(request.message_ids, "not_found") if request.message_ids else None
        )

    def run(self) -> dict[str, Any]:
        try:
            stopped_because = self._scan()
        finally:
            self._release_held()
        dlq_url = self.queues.dlq_url
        assert dlq_url is not None  # the replay's tiers always name their DLQ (tiers_from_env)
        return response(
            self.request,
            matched=self.matched,
            moved=self.moved,
            failed=self.failed,
            left_in_dlq=approximate_depth(self.sqs, dlq_url),
            groups=self.groups.to_list(),
            stopped_because=stopped_because,
            idempotency_ttl_seconds=self.queues.idempotency_ttl_seconds,
            outside_window=self.outside_window,
            refused_outside_window=self.refused_outside_window,
            left_expired=self.left_expired,
            discarded=self.discarded,
            archive=self.archive.location if self.archive is not None and self.discarding else None,
            archive_error=self.archive_error,
            letters=self.letters,
            outcomes=self.outcomes,
        )

    # -- the loop ---------------------------------------------------------------------------

    def _scan(self) -> str:
        hold = self._hold_seconds()
        while True:
            if self.archive_error is not None:
                return "archive_failed"
            left = self.limit - self.matched
            if left <= 0:
                return "all_found" if self.limit < self.request.max_messages else "max_messages"
            delay = self.rate.delay()
            if self._out_of_time(delay):
                return "time_budget"
            if delay:
                self.sleep(delay)
            messages = self._receive(self._batch_size(left), hold)
            if not messages:
                return "dlq_empty"
            fresh = []
            for message in messages:
                if message["MessageId"] in self.seen:
                    if message["MessageId"] in self.held:  # its hold expired: keep the newest handle
                        self.held[message["MessageId"]] = message["ReceiptHandle"]
                else:
                    fresh.append(message)
            if not fresh:
                return "all_seen"
            self._handle([Letter.from_message(m) for m in fresh], left)
            if self.on_progress is not None:
                self.on_progress(self.matched)

    def _handle(self, letters: list[Letter], left: int) -> None:
        for letter in letters:
            self.seen.add(letter.message_id)
            self.held[letter.message_id] = letter.receipt_handle
        matching = [letter for letter in letters if self._matches(letter)]
        ttl = self.queues.idempotency_ttl_seconds
        outside = {letter.message_id for letter in matching if letter.outside_window(ttl, self.started)}
        refused: list[Letter] = []
        if self.guard_window:
            refused = [letter for letter in matching if letter.message_id in outside]
            if refused:
                logger.warning(
                    "replay: %d letter(s) older than the idempotency window (%s s) stay in the DLQ: %s",
                    len(refused),
                    ttl,
                    ", ".join(letter.message_id for letter in refused),
                )
            self.refused_outside_window += len(refused)
            self.groups.add(refused, outside)
            matching = [letter for letter in matching if letter.message_id not in outside]
            self.outside_window += len(refused)
        expired: list[Letter] = []
        if self.request.action == "replay" and not self.request.include_expired:
            expired = [letter for letter in matching if _expired(letter, self.started)]
            if expired:
                logger.info(
                    "replay: %d letter(s) whose job's deadline has passed stay in the DLQ: %s",
                    len(expired),
                    ", ".join(letter.message_id for letter in expired),
                )
            self.left_expired += len(expired)
            matching = [letter for letter in matching if letter not in expired]
        taken = matching[:left]
        self._record(letters, "not_matched")
        self._record(refused, "refused_outside_window")
        self._record(expired, "left_expired")
        self._record(taken, self._taken_outcome())
        self.matched += len(taken)
        self.outside_window += sum(letter.message_id in outside for letter in taken)
        self.groups.add(taken, outside)
        if self.on_letters is not None and taken:
            self.on_letters(taken)
        if self.request.action == "show":  # an offloaded body is read back (offloaded.py)
            s3 = offloaded.lazy_client()
            self.letters += [
                offloaded.resolve(letter.to_record(self.request.tier, self.started), s3) for letter in taken
            ]
        if self.moving and taken:
            self._move(taken)
        if self.discarding and taken:
            self._discard(taken)

    def _taken_outcome(self) -> str:
        """A matched letter's outcome before any send or delete: one that must move or go starts as failed."""
        if self.moving or self.discarding:
            return "failed"
        if self.request.action == "replay":
            return "would_move"
        return "would_discard" if self.request.action == "discard" else "found"

    def _record(self, letters: list[Letter], outcome: str) -> None:
        """Note ``outcome`` for the letters the event named (a later note of the same run wins)."""
        if self.outcomes is not None:
            for letter in letters:
                if letter.message_id in self.outcomes:
                    self.outcomes[letter.message_id] = outcome

    def _matches(self, letter: Letter) -> bool:
        r = self.request
        if r.message_ids and letter.message_id not in r.message_ids:
            return False
        if r.job_type and not fnmatch.fnmatchcase(letter.job_type, r.job_type):
            return False
        if r.error_type and not fnmatch.fnmatchcase(letter.error_type, r.error_type):
            return False
        age = (self.started - letter.dead_lettered_at).total_seconds()
        return age >= r.older_than_seconds

    def _batch_size(self, left: int) -> int:
        """Receive only what may still match, and no more than the rate limit allows per second."""
        size = SQS_MAX_BATCH_ENTRIES
        if not self.request.has_filters:
            size = min(size, left)
        if self.rate.per_second is not None:
            size = min(size, max(1, math.floor(self.rate.per_second)))
        return size

    def _out_of_time(self, delay: float) -> bool:
        if self.remaining_ms is None:
            return False
        return self.remaining_ms() - delay * 1000 < self.safety_margin_ms

    def _hold_seconds(self) -> int:
        if self.remaining_ms is None:
            return DEFAULT_HOLD_SECONDS
        return math.ceil(self.remaining_ms() / 1000) + HOLD_MARGIN_SECONDS

    # -- SQS --------------------------------------------------------------------------------

    def _receive(self, count: int, hold: int) -> list[dict[str, Any]]:
        answer = self.sqs.receive_message(
            QueueUrl=self.queues.dlq_url,
            MaxNumberOfMessages=count,
            VisibilityTimeout=hold,
            WaitTimeSeconds=self.wait_seconds,
            MessageAttributeNames=["All"],
            MessageSystemAttributeNames=["All"],
        )
        messages: list[dict[str, Any]] = answer.get("Messages", [])
        return messages

    def _move(self, letters: list[Letter]) -> None:
        """Send to the main queue in batches SQS accepts (≤ 10 entries, ≤ 1 MiB), then delete what it took."""
        replayed_at = iso_text(self.now())
        self.rate.sending(len(letters))
        for batch in pack_batches(letters, lambda letter: letter.replay_size(replayed_at)):
            self._send_and_delete(batch, replayed_at)

    def _send_and_delete(self, letters: list[Letter], replayed_at: str) -> None:
        """Send one batch to the main queue, then delete from the DLQ exactly the letters SQS accepted."""
        by_entry = {str(i): letter for i, letter in enumerate(letters)}
        entries = []
        for entry_id, letter in by_entry.items():
            entry = {
                "Id": entry_id,
                "MessageBody": letter.body,
                "MessageAttributes": letter.replay_attributes(replayed_at),
            }
            if letter.tenant:  # the tenant travels in the envelope; a fair queue schedules by the group
                entry["MessageGroupId"] = letter.tenant
            if letter.trace_header:  # the replayed run links to the publishing request, as every earlier run did
                entry["MessageSystemAttributes"] = traces.system_attributes(letter.trace_header)
            entries.append(entry)
        sent = self.sqs.send_message_batch(QueueUrl=self.queues.queue_url, Entries=entries)
        for failure in sent.get("Failed", []):
            letter = by_entry[failure["Id"]]
            logger.warning(
                "replay: send failed, the letter stays in the DLQ: %s %s: %s",
                letter.message_id,
                failure.get("Code"),
                failure.get("Message"),
            )
        accepted = [by_entry[ok["Id"]] for ok in sent.get("Successful", [])]
        self.failed += len(letters) - len(accepted)
        self.moved += len(accepted)
        self._record(accepted, "moved")
        # Sent but not deleted: a later run replays it again, a duplicate idempotency absorbs.
        self._delete(accepted, "sent but not deleted from the DLQ")

    def _discard(self, letters: list[Letter]) -> None:
        """Archive the letters (durably: the archive returns only then), and only then delete them."""
        assert self.archive is not None  # run() refuses a discard without one
        try:
            # An offloaded body is archived itself: the archive outlives the bucket's lifecycle (offloaded.py).
            s3 = offloaded.lazy_client()
            self.archive.write(
                [offloaded.resolve(letter.to_record(self.request.tier, self.now()), s3) for letter in letters]
            )
        except Exception as exc:  # any failure: delete nothing, stop, say why
            logger.exception(
                "discard: could not archive %d letter(s) to %s; none of them deleted",
                len(letters),
                self.archive.location,
            )
            self.archive_error = f"{type(exc).__name__}: {exc}"
            self.failed += len(letters)
            return
        deleted = self._delete(letters, "archived but not deleted from the DLQ (a later discard archives it again)")
        self._record(deleted, "discarded")
        self.discarded += len(deleted)
        self.failed += len(letters) - len(deleted)

    def _delete(self, letters: list[Letter], failure_note: str) -> list[Letter]:
        """Delete ``letters`` from the DLQ; returns those SQS deleted (the others stay, logged)."""
        if not letters:
            return []
        deleted = self.sqs.delete_message_batch(
            QueueUrl=self.queues.dlq_url,
            Entries=[{"Id": str(i), "ReceiptHandle": letter.receipt_handle} for i, letter in enumerate(letters)],
        )
        for ok in deleted.get("Successful", []):
            self.held.pop(letters[int(ok["Id"])].message_id, None)
        for failure in deleted.get("Failed", []):
            logger.warning(
                "replay: %s: %s %s: %s",
                failure_note,
                letters[int(failure["Id"])].message_id,
                failure.get("Code"),
                failure.get("Message"),
            )
        return [letters[int(ok["Id"])] for ok in deleted.get("Successful", [])]

    def _release_held(self) -> None:
        """Make every held letter visible again; best effort (a failure is logged: the hold expires anyway)."""
        handles = list(self.held.values())
        for start in range(0, len(handles), SQS_MAX_BATCH_ENTRIES):
            chunk = handles[start : start + SQS_MAX_BATCH_ENTRIES]
            try:
                answer = self.sqs.change_message_visibility_batch(
                    QueueUrl=self.queues.dlq_url,
                    Entries=[{"Id": str(i), "ReceiptHandle": h, "VisibilityTimeout": 0} for i, h in enumerate(chunk)],
                )
            except Exception:  # never mask the run's own error; SQS releases them later
                logger.exception(
                    "replay: could not release %d held letters; they reappear when their hold expires", len(chunk)
                )
                continue
            if answer.get("Failed"):
                logger.warning(
                    "replay: %d held letters not released now; they reappear when their hold expires",
                    len(answer["Failed"]),
                )
        self.held.clear()
