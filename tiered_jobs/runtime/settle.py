"""Settling: the only place where a record's verdict has its side effects.

The consumer's stages (``consumer.py``) decide what becomes of each record: held or deferred before
it could run (a :class:`~tiered_jobs.runtime.invocation.Fate`), run and succeeded, retried,
checkpointed, ended unrun (expired, cancelled), or failed for good. :class:`Settle` carries each
decision out, in one place:

* **copies** of held and deferred records (``SendMessageBatch``: :mod:`~tiered_jobs.runtime.requeue`),
  and what becomes of a record whose copy SQS refused (kept, or on the queue's last receive a letter);
* **letters** to the tier's DLQ with their ``DeadLetter.*`` reasons, and **archive lines** for jobs that
  end unrun;
* the **finished-job hooks**, in this order: the batch member's count (and the callbacks or next link
  it makes due), then the unique lock's release;
* the **visibility** of retried and kept records, in one ``ChangeMessageVisibilityBatch`` per ten;
* one **metric** and one **log line** per verdict (:class:`~tiered_jobs.runtime.outcomes.Outcome`).

Every row of the receive ledger (docs/consumer.md) ends in one of these methods.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from tiered_jobs.contract import job_ends
from tiered_jobs.contract.envelope import EnvelopeTooNew
from tiered_jobs.contract.names import SQS_MAX_BATCH_ENTRIES, DeadLetter
from tiered_jobs.contract.times import iso_text

from . import too_new
from .config import TierConfig
from .errors import describe
from .invocation import Fate, Invocation, ms
from .kept import Kept
from .log_keys import LogKeys
from .outcomes import Outcome
from .received import Received
from .registry import JobDefinition, JobRegistry
from .requeue import Copy, requeue

if TYPE_CHECKING:
    from .idempotency import IdempotentRunner
    from .job_policy import Decision

#: A deferred record whose copy SQS refused is returned with this visibility instead.
KEPT_DEFERRED_VISIBILITY_SECONDS = 1
#: A finished batch member whose count was not written comes back this soon, to be counted then.
KEPT_BATCH_COUNT_VISIBILITY_SECONDS = 5


class Archive(Protocol):
    """Where a job that ends unrun is kept (``tiered_jobs.replay.archive.S3Archive``, injected by the handler)."""

    location: str

    def write(self, records: list[dict[str, Any]]) -> None:
        """Store ``records`` durably, or raise."""


class Settle:
    """Carries out each record's verdict: copies, letters, archive lines, batch counts, unique locks,
    visibility, and the verdict's one metric and log line."""

    def __init__(
        self,
        config: TierConfig,
        registry: JobRegistry,
        *,
        client: Callable[[str], Any],
        logger: Any,
        now: Callable[[], Any],
        rand: Callable[[], float],
        runner: Callable[[], IdempotentRunner],
        archive: Callable[[], Archive | None],
        decide: Callable[..., Decision],
    ):
        """``runner``: the idempotency runner, built on first use; ``archive``: the discard archive, built on the
        first job that ends unrun; ``decide``: the run stage's retry decision."""
        self.config = config
        self.registry = registry
        self.client = client
        self.logger = logger
        self.now = now
        self.rand = rand
        self.runner = runner
        #: Where jobs that end unrun are kept (``None``: nowhere, so they are dead-lettered with their reason).
        self.archive = archive
        self.decide = decide

    def _log_keys(self, received: Received) -> LogKeys:
        return LogKeys(self.logger, received, self.config.tier)

    def _queued_ms(self, received: Received, duration_ms: float) -> int:
        """How long the job waited in its queue before this run started (enqueued to start), in whole ms."""
        return max(0, round(received.age_seconds(self.now()) * 1000 - duration_ms))

    def copies(
        self,
        invocation: Invocation,
        decided: list[tuple[Received, Outcome, int]],
        turns: Callable[[str], str | None] = lambda _: None,
    ) -> None:
        """Send the copies of records decided not to run now; their fates say what SQS took.
        ``turns`` gives a held job's reserved turn, which its copy carries."""
        if not decided:
            return
        refused = requeue(
            self.client("sqs"),
            self.config.queue_url,
            [Copy(record, delay, turns(record.message_id)) for record, _, delay in decided],
        )
        for record, outcome, delay in decided:
            keep = max(1, delay) if outcome is not Outcome.DEFERRED else KEPT_DEFERRED_VISIBILITY_SECONDS
            invocation.fates[record.message_id] = Fate(outcome, refused.get(record.message_id), keep)

    def decided(self, received: Received, fate: Fate, invocation: Invocation) -> Kept | None:
        """A held or deferred record: acknowledged once its copy is in the queue, else kept or dead-lettered."""
        metrics = invocation.metrics
        metrics.record(received.label, fate.outcome)  # not an attempt: no duration
        metrics.age(received.label, received.age_seconds(self.now()))
        with self._log_keys(received):
            if fate.refused is None:
                if fate.outcome is Outcome.ENVELOPE_TOO_NEW:
                    self.logger.warning(
                        fate.outcome.line,
                        extra={"outcome": fate.outcome, "error": str(received.envelope_error)},
                    )
                    return None
                self.logger.info(fate.outcome.line, extra={"outcome": fate.outcome})
                return None
            if received.receive_count >= self.config.receive_limit:
                # Returned now, SQS's redrive would move it on its next receive, without reasons.
                return self.dead_letter(
                    received,
                    invocation,
                    reason=DeadLetter.REASON_REQUEUE_FAILED,
                    error_type="RequeueFailed",
                    error_message=f"{fate.outcome} on the queue's last receive "
                    f"({received.receive_count} of {self.config.receive_limit}) "
                    f"and SQS refused its copy: {fate.refused}",
                    attempts=received.attempt - 1,
                    outcome=Outcome.REQUEUE_DEAD_LETTERED,
                    started=None,
                )
            metrics.record(received.label, Outcome.REQUEUE_KEPT)
            self.logger.warning(
                Outcome.REQUEUE_KEPT.line,
                extra={"outcome": fate.outcome, "error": fate.refused, "retry_in_seconds": fate.keep_seconds},
            )
            return Kept(fate.keep_seconds, fate.refused)

    def succeeded(self, received: Received, invocation: Invocation, started: float, duplicate: bool) -> None:
        """The job finished (or was a duplicate of one that did): counted, logged, its unique lock given back.

        Its own method, not the tail of :meth:`_run`: logging finds the calling line of every record it
        writes, and CPython finds it by scanning the caller's line table up to the call, which at the end
        of a function as long as ``_run`` costs a few microseconds of every job."""
        duration_ms = ms(started)
        outcome = Outcome.DUPLICATE if duplicate else Outcome.SUCCEEDED
        invocation.metrics.record(received.label, outcome, duration_ms)
        # Celery's "Task ... succeeded in 0.04s": type, key and attempt are the line's keys; the run line's
        # other fields (docs/consumer.md) are what a search shows.
        self.logger.info(
            outcome.line,
            extra={
                "outcome": outcome,
                "duration_ms": round(duration_ms, 3),
                "queued_ms": self._queued_ms(received, duration_ms),
                "duplicate": duplicate,
            },
        )
        self.release_unique(received)

    def checkpointed(
        self, received: Received, invocation: Invocation, step: int, started: float, duplicate: bool
    ) -> None:
        """The step ran and its next one is sent (``duplicate``: a copy of an earlier step, which ran nothing):
        acknowledged; the job has not finished (no batch count, no unique lock released: its last step does)."""
        duration_ms = ms(started)
        invocation.metrics.record(received.label, Outcome.DUPLICATE if duplicate else Outcome.CHECKPOINTED, duration_ms)
        message = "duplicate of an earlier step: not run" if duplicate else Outcome.CHECKPOINTED.line
        self.logger.info(message, extra={"duration_ms": round(duration_ms, 3), "next_step": step})

    def failed(
        self,
        received: Received,
        invocation: Invocation,
        exc: Exception,
        definition: JobDefinition | None,
        started: float,
    ) -> Kept | None:
        decision = self.decide(exc, received.attempt, definition, self.rand)
        error_type, error_message = describe(exc)
        attempt = received.attempt
        if decision.delay_seconds is not None:
            delay = decision.delay_seconds
            duration_ms = ms(started)
            invocation.metrics.record(received.label, Outcome.RETRIED, duration_ms, retry_delay_seconds=delay)
            self.logger.warning(
                Outcome.RETRIED.line,
                extra={
                    "outcome": Outcome.RETRIED,
                    "duration_ms": round(duration_ms, 3),
                    "queued_ms": self._queued_ms(received, duration_ms),
                    "error_type": error_type,
                    "error": error_message,
                    "retry_in_seconds": delay,
                },
                exc_info=exc,  # the traceback, as the log's "exception" field
            )
            return Kept(delay, f"{error_type}: {error_message}")
        return self.dead_letter(
            received,
            invocation,
            # A failure with a reason of its own (steps.TooManySteps: too_many_steps), else the decision's.
            reason=getattr(exc, "dead_letter_reason", None) or decision.reason or DeadLetter.REASON_PERMANENT,
            error_type=error_type,
            error_message=error_message,
            attempts=attempt,
            outcome=Outcome.DEAD_LETTERED,
            started=started,
            failure=exc,
            handler=definition.handler if definition else None,
        )

    def dead_letter(
        self,
        received: Received,
        invocation: Invocation,
        *,
        reason: str,
        error_type: str,
        error_message: str,
        attempts: int,
        outcome: Outcome,
        started: float | None,
        failure: BaseException | None = None,
        handler: Callable[..., Any] | None = None,
    ) -> Kept | None:
        """Copy the message to the DLQ with its reasons; :class:`Kept` if the DLQ refused it (or its batch
        count was not written first).
        ``failure``: what the job raised (its bounded traceback goes with the letter, the whole one to the log)."""
        # Loaded on the first letter only: the happy path's cold start does not pay for it.
        from .deadletter import DeadLetterReason, fit_to_size, merge_attributes, send_to_dlq
        from .tracebacks import letter_traceback

        now = self.now()
        letter = DeadLetterReason(
            reason=reason,
            error_type=error_type,
            error_message=error_message,
            attempts=attempts,
            first_failed_at=received.first_failed_at(now),
            last_failed_at=now,
            source_queue=received.source or self.config.queue_url,
            job_type=received.job_type,
            traceback=letter_traceback(failure, handler).encode() if failure is not None else None,
        )
        attributes, dropped = merge_attributes(received.api_attributes(), letter.attributes())
        attributes, shortened = fit_to_size(received.body, attributes)  # SQS's 1 MiB counts attributes too
        duration = ms(started) if started is not None else None
        kept = self.count_member(received, invocation, "failed", f"{reason}: {error_type}: {error_message}", started)
        if kept is not None:
            return kept
        try:
            dlq_message_id = send_to_dlq(
                self.client("sqs"),
                self.config.dlq_url,
                received.body,
                attributes,
                received.tenant,
                trace_header=received.trace_header,
            )
        except Exception as send_error:
            invocation.metrics.record(received.label, Outcome.KEPT, duration)
            self.logger.error(
                Outcome.KEPT.line,
                extra={"error_type": error_type, "error": error_message, "dlq_error": repr(send_error)},
                exc_info=failure,
            )
            return Kept(None, f"DLQ send failed: {send_error!r}")
        invocation.metrics.record(received.label, outcome, duration)
        self.logger.error(
            outcome.line,
            extra={
                "outcome": outcome,
                "duration_ms": round(duration, 3) if duration is not None else None,
                "queued_ms": self._queued_ms(received, duration or 0.0),
                "reason": reason,
                "error_type": error_type,
                "error": error_message,
                "dlq_message_id": dlq_message_id,
                "dropped_reason_attributes": dropped,
                "shortened_reason_attributes": shortened,
            },
            exc_info=failure,  # the whole traceback (the letter carries its last frames)
        )
        self.release_unique(received)  # the job has finished: a new one of its type and key may be queued
        return None

    def too_new_past_bound(self, received: Received, error: EnvelopeTooNew, invocation: Invocation) -> Kept | None:
        """A job from a newer producer held past its bound: the DLQ keeps it for a replay after the upgrade."""
        now, bound = self.now(), self.config.too_new_max_age_seconds
        invocation.metrics.age(received.label, received.age_seconds(now))
        with self._log_keys(received):
            return self.dead_letter(
                received,
                invocation,
                reason=DeadLetter.REASON_ENVELOPE_TOO_NEW,
                error_type="EnvelopeTooNew",
                error_message=too_new.letter_message(error, received.age_seconds(now), bound),
                attempts=max(0, received.attempt - 1),  # the receives that held it ran nothing
                outcome=Outcome.TOO_NEW_DEAD_LETTERED,
                started=None,
            )

    def expired(self, received: Received, invocation: Invocation) -> Kept | None:
        """The job's deadline has passed: mark its record (so ``tiered-jobs job`` says so), archive it, drop it."""
        envelope = received.envelope
        assert envelope is not None and envelope.expires_at is not None
        detail = f"not started by its deadline {envelope.expires_at}"
        if envelope.type in self.registry and self.registry.get(envelope.type).idempotent:
            try:
                self.runner().mark_ended(
                    envelope.type, envelope.idempotency_key, job_ends.EXPIRED, at=iso_text(self.now()), detail=detail
                )
            except Exception as exc:  # noqa: BLE001 -- the marker only informs; the job is dropped all the same
                with self._log_keys(received):
                    self.logger.warning("could not mark the expired job's record", extra={"error": repr(exc)})
        return self.ended(received, invocation, job_ends.EXPIRED, detail, None)

    def ended(
        self, received: Received, invocation: Invocation, kind: str, detail: str, started: float | None
    ) -> Kept | None:
        """Archive a job that ends unrun (``expired`` / ``cancelled``), then let SQS delete it; without an
        archive that takes it, dead-letter it with that reason: never dropped without being kept."""
        from .ended import archive_record  # loaded on the first such job: the happy path never pays for it

        invocation.metrics.age(received.label, received.age_seconds(self.now()))
        with self._log_keys(received):
            record = archive_record(received, tier=self.config.tier, reason=kind, detail=detail, at=self.now())
            kept = self.count_member(received, invocation, "failed", f"{kind}: {detail}", started)
            if kept is not None:
                return kept
            archive = self.archive()
            problem = "no discard archive is configured" if archive is None else None
            if archive is not None:
                try:
                    archive.write([record])
                except Exception as exc:  # noqa: BLE001 -- kept in the DLQ instead, below
                    problem = f"the discard archive refused it ({exc!r})"
            if problem is None:
                assert archive is not None
                invocation.metrics.record(received.label, Outcome.ended(kind))
                self.logger.info(
                    Outcome.ended(kind).line,
                    extra={"outcome": kind, "detail": detail, "archive": archive.location},
                )
                self.release_unique(received)  # it will not run: a new one of its type and key may be queued
                return None
            self.logger.warning(f"job {kind}, but {problem}: dead-lettered instead", extra={"detail": detail})
            return self.dead_letter(
                received,
                invocation,
                reason=kind,
                error_type="JobExpired" if kind == job_ends.EXPIRED else "JobCancelled",
                error_message=f"{detail}; {problem}",
                attempts=max(0, received.attempt - 1),
                outcome=Outcome.ended(kind),
                started=started,
            )

    def count_member(
        self, received: Received, invocation: Invocation, outcome: str, detail: str, started: float | None
    ) -> Kept | None:
        """A member of a batch or chain has finished: count it, and send what that made due, before the
        record is acknowledged (:mod:`~tiered_jobs.runtime.batches`). Not written: the record is kept."""
        envelope = received.envelope
        if envelope is None or envelope.batch is None:
            return None
        if not self.config.batch_table:
            self.logger.warning(
                "the job is a batch member but this tier knows no batches table: it is not counted",
                extra={"batch": envelope.batch},
            )
            return None
        from .batches import CountNotWritten, finished  # loaded on the first member only

        try:
            counted = finished(
                self.client("dynamodb"),
                self.client("sqs"),
                self.config.batch_table,
                envelope,
                outcome,
                detail=detail,
                now=self.now(),
            )
        except CountNotWritten as exc:
            if received.receive_count >= self.config.receive_limit:
                # Returned now, SQS's redrive would move it on its next receive, without reasons. A
                # failed member's own letter is already in the DLQ (its replay counts it), an ended one
                # goes to the archive with its reason: neither needs a second letter.
                if outcome != "succeeded":
                    self.logger.error(
                        "could not count the job in its batch on the queue's last receive; it ends as it would",
                        extra={"error": str(exc), "outcome": outcome},
                    )
                    return None
                # Dead-lettered, its success still recorded (or kept, if the DLQ refused the letter).
                return self.dead_letter(
                    received,
                    invocation,
                    reason=DeadLetter.REASON_BATCH_COUNT_FAILED,
                    error_type="BatchCountNotWritten",
                    error_message=f"finished ({outcome}), but its batch count was not written on the queue's "
                    f"last receive ({received.receive_count} of {self.config.receive_limit}): {exc}; "
                    "a replay counts it without running the job again",
                    attempts=received.attempt,
                    outcome=Outcome.BATCH_COUNT_DEAD_LETTERED,
                    started=started,
                )
            invocation.metrics.record(received.label, Outcome.KEPT, ms(started) if started is not None else None)
            self.logger.error(
                "could not count the job in its batch; the message stays in the queue", extra={"error": str(exc)}
            )
            return Kept(KEPT_BATCH_COUNT_VISIBILITY_SECONDS, str(exc))
        self.logger.info(
            "batch member counted" if counted.counted else "batch member counted before",
            extra={
                "batch": envelope.batch,
                "outcome": outcome,
                "fired": list(counted.fired),
                "next_link": counted.next_link,
                "unknown_batch": counted.unknown,
            },
        )
        return None

    def release_unique(self, received: Received) -> None:
        """A finished job gives back its unique lock: only a job that holds one makes the call."""
        envelope = received.envelope
        if envelope is None or envelope.unique_lock is None:
            return
        from .unique import release  # loaded on the first unique job only

        if release(self.client("dynamodb"), self.config.unique_table, envelope, self.logger):
            self.logger.info("unique lock released", extra={"unique_lock": envelope.unique_lock})

    def apply_backoffs(self, backoffs: list[tuple[str, int]]) -> None:
        """One ChangeMessageVisibilityBatch per 10 retried records. A failure here only means
        the message comes back after the queue's visibility timeout instead: logged, not raised."""
        for start in range(0, len(backoffs), SQS_MAX_BATCH_ENTRIES):
            chunk = backoffs[start : start + SQS_MAX_BATCH_ENTRIES]
            entries = [
                {"Id": str(i), "ReceiptHandle": handle, "VisibilityTimeout": delay}
                for i, (handle, delay) in enumerate(chunk)
            ]
            try:
                response = self.client("sqs").change_message_visibility_batch(
                    QueueUrl=self.config.queue_url, Entries=entries
                )
                failed = response.get("Failed", [])
            except Exception as exc:  # noqa: BLE001
                failed = [{"Id": e["Id"], "Message": repr(exc)} for e in entries]
            if failed:
                self.logger.warning("could not set retry backoff", extra={"failed": failed})
