"""The consumer's domain: what happens to each record of a batch.

Every record is read once (:mod:`~tiered_jobs.runtime.received`), then its fate is decided once,
in this order, so each job has exactly one live copy whatever features meet:

-1. **too new** -- its envelope is well formed but newer than this consumer (a rollback met a newer
   producer's job: :mod:`~tiered_jobs.runtime.too_new`): held as a copy for a newer consumer, like
   a rate-limited job, before anything else sees it; past the holds' bound, dead-lettered with
   reason ``envelope_too_new``;
0. **expired** -- its envelope's deadline (``expires_at``) has passed: it is written to the discard
   archive with reason ``expired`` and acknowledged, before the rate limit sees it. Copies and
   replays carry the envelope, so the deadline holds on every one of them. Not an attempt, never a
   failure; without an archive (or when it refuses) the job is dead-lettered with that reason;
1. **held** -- the rate limit has no token for it within the wait bound (or its table failed): it
   is sent again as a copy with a delay (:mod:`~tiered_jobs.runtime.requeue`) and acknowledged,
   before anything runs; a token claimed for later goes with the copy as its turn. A held record
   is never deferred, so it is never queued twice;
2. **deferred** -- less than the tier's safety margin remains of the invocation (Celery's
   ``soft_time_limit``): this record and every later one not held are sent again as copies at
   once, and acknowledged. A deferral is not an attempt and spends no receive;
3. **run** -- parse errors, unknown types and payload errors are permanent; the job runs under
   idempotency (type + idempotency key). A transient failure with attempts left sets the
   message's visibility to the backoff (with jitter) and reports a batch item failure; a
   permanent one, or a transient one on the job's last attempt (its own ``max_attempts``, else the
   tier's: :mod:`~tiered_jobs.runtime.job_policy`), copies the message to the tier's DLQ
   with its ``DeadLetter.*`` reasons, and only once that send succeeded is the record reported
   processed (so SQS deletes the source). A failed DLQ send keeps the message. A job someone
   cancelled is found by the same idempotent write (its record holds an end marker:
   :mod:`tiered_jobs.contract.job_ends`) and archived with reason ``cancelled``, unrun.

A held or deferred record whose copy SQS refused stays in the queue as a batch item failure
(that receive is spent), except on the queue's last receive (``maxReceiveCount``), where SQS would
move it to the DLQ without reasons: there the consumer dead-letters it itself, with reason
``requeue_failed``. docs/consumer.md's receive ledger lists every path with its test.

A job published with ``unique_for=`` carries its lock's token (``unique_lock``): when it finishes
(succeeded, answered as a duplicate, dead-lettered, or archived unrun: expired, cancelled) the lock is released
(:mod:`~tiered_jobs.runtime.unique`); a job without it makes no call for it.

The batch answer is always a partial batch response, even when every record failed.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Protocol

from tiered_jobs.contract import job_ends
from tiered_jobs.contract.envelope import EnvelopeTooNew
from tiered_jobs.contract.names import SQS_MAX_BATCH_ENTRIES, DeadLetter
from tiered_jobs.contract.steps import CONTINUATION_DELAY_SECONDS
from tiered_jobs.contract.times import iso_text

from . import aws, too_new
from .config import TierConfig
from .errors import describe
from .idempotency import IdempotentRunner
from .kept import Kept, KeptInQueue
from .metrics import BatchMetrics
from .outcomes import Outcome
from .received import INVALID_JOB_TYPE, UNREGISTERED_JOB_TYPE, Received, read_batch
from .registry import JobDefinition, JobRegistry
from .requeue import Copy, requeue
from .run_stage import RunStage
from .steps import Steps
from .table_stores import TableStores

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse

    from . import ratelimit
    from .tracing import JobTracer

__all__ = ["INVALID_JOB_TYPE", "UNREGISTERED_JOB_TYPE", "Consumer"]

#: A deferred record's copy is visible at once: another invocation (or the next) takes it.
DEFERRED_DELAY_SECONDS = 0
#: A deferred record whose copy SQS refused is returned with this visibility instead.
KEPT_DEFERRED_VISIBILITY_SECONDS = 1
#: A finished batch member whose count was not written comes back this soon, to be counted then.
KEPT_BATCH_COUNT_VISIBILITY_SECONDS = 5
#: Without a Lambda context (tests, scripts), the invocation is taken to last Lambda's longest timeout.
NO_CONTEXT_BUDGET_MS = 900_000


class Archive(Protocol):
    """Where a job that ends unrun is kept (``tiered_jobs.replay.archive.S3Archive``, injected by the handler)."""

    location: str

    def write(self, records: list[dict[str, Any]]) -> None:
        """Store ``records`` durably, or raise."""


class Fate:
    """A record decided before it could run: held or deferred, and what became of its copy (a plain
    class: a dataclass's generated methods cost a millisecond of every cold start each)."""

    __slots__ = ("outcome", "refused", "keep_seconds")

    def __init__(self, outcome: Outcome, refused: str | None, keep_seconds: int):
        #: The decision: ``rate_limited``, ``limiter_error``, ``deferred`` or ``envelope_too_new``.
        self.outcome = outcome
        #: Why SQS refused the copy (``None``: the copy was accepted, the original is acknowledged).
        self.refused = refused
        #: When a refused record comes back (its visibility, seconds).
        self.keep_seconds = keep_seconds


class _Invocation:
    """What one invocation accumulates (a plain class: nothing to generate at cold start)."""

    __slots__ = ("remaining_ms", "margin_ms", "metrics", "backoffs", "records", "order", "fates", "gate", "deferred")

    def __init__(self, remaining_ms: Callable[[], int], margin_ms: int, metrics: BatchMetrics, records: list[Received]):
        #: The invocation's clock: milliseconds left before Lambda stops it.
        self.remaining_ms = remaining_ms
        #: No record starts with less than this left: the tier's margin, at most half of the
        #: time the invocation started with (as the stack's settings demand of the timeout).
        self.margin_ms = min(margin_ms, remaining_ms() // 2)
        self.metrics = metrics
        #: (receipt handle, seconds) for the records to retry later (or keep, if their copy was refused).
        self.backoffs: list[tuple[str, int]] = []
        self.records = {record.message_id: record for record in records}
        self.order = [record.message_id for record in records]
        #: The records decided before they could run (held, deferred), by message id.
        self.fates: dict[str, Fate] = {}
        #: The rate limit's verdicts for this batch (``None``: the tier is not limited).
        self.gate: ratelimit.Gate | None = None
        #: Records deferred by the time budget; once one is, every later one is too.
        self.deferred = 0


class Consumer:
    """A tier's consumer: every record of an SQS batch to its verdict, and the batch's answer to Lambda."""

    def __init__(
        self,
        config: TierConfig,
        registry: JobRegistry,
        *,
        client: Callable[[str], Any] = aws.client,
        logger: Any = None,
        rand: Callable[[], float] = random.random,
        now: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
        sleep: Callable[[float], None] = time.sleep,
        archive: Callable[[], Archive | None] = lambda: None,
        tracer: JobTracer | None = None,
    ):
        """``archive``: builds, on the first job that ends unrun, where such jobs are kept (``None``: nowhere,
        so they are dead-lettered with their reason instead); ``tracer``: each job's X-Ray subsegment
        (default: Powertools' rule, ``POWERTOOLS_TRACE_DISABLED``)."""
        self.config = config
        self.registry = registry
        self.client = client
        self.rand = rand
        self.now = now
        self.sleep = sleep
        if logger is None:
            from .logger import powertools_logger

            logger = powertools_logger()
        self.logger = logger
        self._runner: IdempotentRunner | None = None
        self._steps: Steps | None = None
        self._archive_factory = archive
        self._archive: Archive | None = None
        self._archive_built = False
        if tracer is None:
            from .tracing import JobTracer

            tracer = JobTracer.from_env()
        self.tracer = tracer
        #: The run stage: the same one ``tiered_jobs.testing``'s runner calls, on this tier's tables.
        self.stage = RunStage(
            config,
            registry,
            TableStores(config, client, lambda: self.runner, lambda: self.steps, self.logger),
            client=client,
            logger=self.logger,
        )
        #: ``None`` unless the tier has a rate limit (docs/consumer.md, "Rate limits").
        self.limiter: ratelimit.RateLimiter | None = None
        if config.rate_limits is not None:
            from . import ratelimit  # loaded by a limited tier only: the others' cold start skips it

            self.limiter = ratelimit.from_config(config.rate_limits, config.tier, config.rate_limit_table, client)

    @property
    def runner(self) -> IdempotentRunner:
        if self._runner is None:
            self._runner = IdempotentRunner(
                self.config.idempotency_table, self.config.idempotency_ttl_seconds, self.client("dynamodb")
            )
        return self._runner

    # -- the batch -----------------------------------------------------------------------

    def handle(self, event: dict[str, Any], context: Any = None) -> PartialItemFailureResponse:
        from aws_lambda_powertools.utilities.batch import (
            BatchProcessor,
            EventType,
            process_partial_response,
        )

        invocation = _Invocation(
            self._remaining_time(context),
            self.config.time_budget_margin_ms,
            BatchMetrics(self.config.stage, self.config.tier),
            read_batch(event, self.registry, self._fetch_offloaded),
        )
        self.runner.register_lambda_context(context)
        processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)
        try:
            self._hold_too_new(invocation)
            if self.limiter is not None:
                self._admit(invocation)
                event = _by_turn(event, invocation)
            return process_partial_response(
                event=event,
                record_handler=lambda record: self._answer(record, invocation),
                processor=processor,
                context=context,
            )
        finally:
            self._apply_backoffs(invocation.backoffs)
            invocation.metrics.flush()
            if invocation.deferred:
                self.logger.info(
                    "time budget spent: records sent again unstarted",
                    extra={
                        "deferred": invocation.deferred,
                        "margin_ms": invocation.margin_ms,
                        "remaining_ms": invocation.remaining_ms(),
                    },
                )

    def _hold_too_new(self, invocation: _Invocation) -> None:
        """Envelopes newer than this consumer, within their bound: held as copies for a newer consumer,
        before the rate limit or the time budget sees them (:mod:`~tiered_jobs.runtime.too_new`)."""
        now, bound = self.now(), self.config.too_new_max_age_seconds
        held = [
            (record, Outcome.ENVELOPE_TOO_NEW, self.config.too_new_hold_seconds)
            for record in invocation.records.values()
            if too_new.too_new(record) is not None and not too_new.past_the_bound(record, now, bound)
        ]
        self._send_copies(invocation, held)

    def _admit(self, invocation: _Invocation) -> None:
        """Claim the batch's tokens; send the held records back as copies, before anything runs."""
        assert self.limiter is not None
        now = self.now()
        runnable = [
            record
            for record in invocation.records.values()
            if record.envelope is not None
            and record.envelope.type in self.registry
            and not record.envelope.expired(now)  # dropped in process(), never given a token
        ]
        gate = invocation.gate = self.limiter.admit(runnable, invocation.remaining_ms() / 1000)
        for error in gate.errors:
            self.logger.error("rate limiter unavailable: its jobs are held, not run", extra={"error": error})
        held = [(record, verdict) for record in runnable if (verdict := gate.held(record.message_id)) is not None]
        self._send_copies(
            invocation,
            [
                (
                    record,
                    Outcome.LIMITER_ERROR if verdict.limiter_error else Outcome.RATE_LIMITED,
                    verdict.hold_seconds or 0,
                )
                for record, verdict in held
            ],
            turns=gate.turn,
        )

    def _send_copies(
        self,
        invocation: _Invocation,
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

    # -- one record ----------------------------------------------------------------------

    def _answer(self, record: Any, invocation: _Invocation) -> Any:
        """Powertools' record handler: a record the consumer keeps is its batch item failure, raised here
        only; its visibility joins the batch's one change (:mod:`~tiered_jobs.runtime.kept`)."""
        answer = self.process(record, invocation)
        if isinstance(answer, Kept):
            if answer.seconds is not None:
                invocation.backoffs.append((invocation.records[record.message_id].receipt_handle, answer.seconds))
            raise KeptInQueue(answer.why)
        return answer

    def process(self, record: Any, invocation: _Invocation) -> Any:
        received = invocation.records[record.message_id]
        envelope = received.envelope
        newer = too_new.too_new(received)
        if newer is not None and received.message_id not in invocation.fates:
            return self._dead_letter_too_new(received, newer, invocation)  # held past the bound
        if (
            envelope is not None
            and envelope.expires_at is not None  # most jobs have no deadline: no clock read for them
            and received.message_id not in invocation.fates
            and envelope.expired(self.now())
        ):
            return self._end_expired(received, invocation)
        wait = 0.0
        if received.message_id not in invocation.fates:
            if invocation.deferred or invocation.remaining_ms() < invocation.margin_ms:
                self._defer_from(received, invocation)  # before its claim: a deferred job takes no token
            elif invocation.gate is not None:
                wait = self._until_turn(received, invocation)  # its claim, or its turn's (claimed again if passed)
                if received.message_id not in invocation.fates and (
                    invocation.remaining_ms() - wait * 1000 < invocation.margin_ms
                ):
                    self._defer_from(received, invocation)
        fate = invocation.fates.get(received.message_id)
        if fate is not None:
            return self._settle(received, fate, invocation)
        while wait > 0:  # its claimed turn under the rate limit; a sleep that overran it claims again
            self.sleep(wait)
            wait = self._until_turn(received, invocation)
            if received.message_id in invocation.fates:
                return self._settle(received, invocation.fates[received.message_id], invocation)
        return self._run(received, invocation)

    def _until_turn(self, received: Received, invocation: _Invocation) -> float:
        """Seconds until the record's turn under the rate limit. A start later than its turn's slack
        would bunch with the next turns (``ratelimit.RateLimiter.at_start``): it claims again, and
        if that holds it, its copy is sent and its fate decided here."""
        gate, limiter = invocation.gate, self.limiter
        assert gate is not None and limiter is not None
        verdict = limiter.at_start(gate, received, invocation.remaining_ms() / 1000)
        if verdict is not None and verdict.held:
            if verdict.limiter_error:
                self.logger.error(
                    "rate limiter unavailable: its jobs are held, not run", extra={"error": verdict.limiter_error}
                )
            # its claim may have held the batch's other records of its bucket too: their copies go with its
            held = [
                (record, Outcome.LIMITER_ERROR if v.limiter_error else Outcome.RATE_LIMITED, v.hold_seconds or 0)
                for record in invocation.records.values()
                if record.message_id not in invocation.fates and (v := gate.held(record.message_id)) is not None
            ]
            self._send_copies(invocation, held, turns=gate.turn)
            return 0.0
        return gate.wait_seconds(received.message_id)

    def _defer_from(self, first: Received, invocation: _Invocation) -> None:
        """The time budget is spent: send this record and every later one not yet decided again, once."""
        later = invocation.order[invocation.order.index(first.message_id) :]
        now = self.now()
        undecided = [
            record
            for record in (invocation.records[mid] for mid in later if mid not in invocation.fates)
            if record.envelope is None or not record.envelope.expired(now)  # dropped, never copied
        ]
        invocation.deferred += len(undecided)
        self._send_copies(invocation, [(record, Outcome.DEFERRED, DEFERRED_DELAY_SECONDS) for record in undecided])

    def _settle(self, received: Received, fate: Fate, invocation: _Invocation) -> Kept | None:
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
                return self._dead_letter(
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

    def _run(self, received: Received, invocation: _Invocation) -> Any:
        started = time.perf_counter()
        invocation.metrics.age(received.label, received.age_seconds(self.now()))
        definition: JobDefinition | None = None
        with self._log_keys(received), self._trace(received):
            try:
                definition = self.stage.definition(received)
                ran = self.stage.run(received, definition, invocation.remaining_ms, invocation.margin_ms)
                if ran.ended is not None:  # cancelled (or expired) before it started: its record says so
                    return self._end(received, invocation, ran.ended, _ended_detail(ran.ended, ran.result), started)
                if ran.next_step is not None:  # not finished: its next step is sent (or was: a duplicate)
                    return self._checkpointed(received, invocation, ran.next_step, started, ran.duplicate)
                kept = self._count_member(received, invocation, "succeeded", "", started)  # before it is acknowledged
                if kept is not None:
                    return kept  # its batch count was not written: the record comes back, and is counted then
                self._succeeded(received, invocation, started, ran.duplicate)
                return ran.result
            except Exception as exc:  # noqa: BLE001 -- every failure is classified, none escapes unseen
                # Retried (kept), or dead-lettered: then reported a success, so SQS deletes the source copy.
                return self._fail(received, invocation, exc, definition, started)

    def _succeeded(self, received: Received, invocation: _Invocation, started: float, duplicate: bool) -> None:
        """The job finished (or was a duplicate of one that did): counted, logged, its unique lock given back.

        Its own method, not the tail of :meth:`_run`: logging finds the calling line of every record it
        writes, and CPython finds it by scanning the caller's line table up to the call, which at the end
        of a function as long as ``_run`` costs a few microseconds of every job."""
        duration_ms = _ms(started)
        outcome = Outcome.DUPLICATE if duplicate else Outcome.SUCCEEDED
        invocation.metrics.record(received.label, outcome, duration_ms)
        # Celery's "Task ... succeeded in 0.04s": type, key and attempt are the line's keys.
        self.logger.info(outcome.line, extra={"duration_ms": round(duration_ms, 3), "duplicate": duplicate})
        self._release_unique(received)

    def _fail(
        self,
        received: Received,
        invocation: _Invocation,
        exc: Exception,
        definition: JobDefinition | None,
        started: float,
    ) -> Kept | None:
        decision = self.stage.decide(exc, received.attempt, definition, self.rand)
        error_type, error_message = describe(exc)
        attempt = received.attempt
        if decision.delay_seconds is not None:
            delay = decision.delay_seconds
            invocation.metrics.record(received.label, Outcome.RETRIED, _ms(started), retry_delay_seconds=delay)
            self.logger.warning(
                Outcome.RETRIED.line,
                extra={"error_type": error_type, "error": error_message, "retry_in_seconds": delay},
                exc_info=exc,  # the traceback, as the log's "exception" field
            )
            return Kept(delay, f"{error_type}: {error_message}")
        return self._dead_letter(
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

    def _dead_letter(
        self,
        received: Received,
        invocation: _Invocation,
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
        duration = _ms(started) if started is not None else None
        kept = self._count_member(received, invocation, "failed", f"{reason}: {error_type}: {error_message}", started)
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
                "reason": reason,
                "error_type": error_type,
                "error": error_message,
                "dlq_message_id": dlq_message_id,
                "dropped_reason_attributes": dropped,
                "shortened_reason_attributes": shortened,
            },
            exc_info=failure,  # the whole traceback (the letter carries its last frames)
        )
        self._release_unique(received)  # the job has finished: a new one of its type and key may be queued
        return None

    # -- jobs longer than one invocation (steps.py) ------------------------------------------

    @property
    def steps(self) -> Steps:
        if self._steps is None:
            self._steps = Steps(self.runner, self.client("dynamodb"), self._send_next_step, logger=self.logger)
        return self._steps

    def _send_next_step(self, received: Received, step: int) -> str | None:
        """The job's next step: a copy of its message carrying ``step``, before its record says it is due."""
        from .requeue import Copy, requeue  # loaded on the first checkpoint only (if not already)

        copy = Copy(received, CONTINUATION_DELAY_SECONDS, step=step, enqueued_at=self.now())
        return requeue(self.client("sqs"), self.config.queue_url, [copy]).get(received.message_id)

    def _checkpointed(
        self, received: Received, invocation: _Invocation, step: int, started: float, duplicate: bool
    ) -> None:
        """The step ran and its next one is sent (``duplicate``: a copy of an earlier step, which ran nothing):
        acknowledged; the job has not finished (no batch count, no unique lock released: its last step does)."""
        duration_ms = _ms(started)
        invocation.metrics.record(received.label, Outcome.DUPLICATE if duplicate else Outcome.CHECKPOINTED, duration_ms)
        message = "duplicate of an earlier step: not run" if duplicate else Outcome.CHECKPOINTED.line
        self.logger.info(message, extra={"duration_ms": round(duration_ms, 3), "next_step": step})

    # -- jobs that end unrun ---------------------------------------------------------------

    def _dead_letter_too_new(self, received: Received, error: EnvelopeTooNew, invocation: _Invocation) -> Kept | None:
        """A job from a newer producer held past its bound: the DLQ keeps it for a replay after the upgrade."""
        now, bound = self.now(), self.config.too_new_max_age_seconds
        invocation.metrics.age(received.label, received.age_seconds(now))
        with self._log_keys(received):
            return self._dead_letter(
                received,
                invocation,
                reason=DeadLetter.REASON_ENVELOPE_TOO_NEW,
                error_type="EnvelopeTooNew",
                error_message=too_new.letter_message(error, received.age_seconds(now), bound),
                attempts=max(0, received.attempt - 1),  # the receives that held it ran nothing
                outcome=Outcome.TOO_NEW_DEAD_LETTERED,
                started=None,
            )

    def _end_expired(self, received: Received, invocation: _Invocation) -> Kept | None:
        """The job's deadline has passed: mark its record (so ``tiered-jobs job`` says so), archive it, drop it."""
        envelope = received.envelope
        assert envelope is not None and envelope.expires_at is not None
        detail = f"not started by its deadline {envelope.expires_at}"
        if envelope.type in self.registry and self.registry.get(envelope.type).idempotent:
            try:
                self.runner.mark_ended(
                    envelope.type, envelope.idempotency_key, job_ends.EXPIRED, at=iso_text(self.now()), detail=detail
                )
            except Exception as exc:  # noqa: BLE001 -- the marker only informs; the job is dropped all the same
                with self._log_keys(received):
                    self.logger.warning("could not mark the expired job's record", extra={"error": repr(exc)})
        return self._end(received, invocation, job_ends.EXPIRED, detail, None)

    def _end(
        self, received: Received, invocation: _Invocation, kind: str, detail: str, started: float | None
    ) -> Kept | None:
        """Archive a job that ends unrun (``expired`` / ``cancelled``), then let SQS delete it; without an
        archive that takes it, dead-letter it with that reason: never dropped without being kept."""
        from .ended import archive_record  # loaded on the first such job: the happy path never pays for it

        invocation.metrics.age(received.label, received.age_seconds(self.now()))
        with self._log_keys(received):
            record = archive_record(received, tier=self.config.tier, reason=kind, detail=detail, at=self.now())
            kept = self._count_member(received, invocation, "failed", f"{kind}: {detail}", started)
            if kept is not None:
                return kept
            archive = self._ended_archive()
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
                self._release_unique(received)  # it will not run: a new one of its type and key may be queued
                return None
            self.logger.warning(f"job {kind}, but {problem}: dead-lettered instead", extra={"detail": detail})
            return self._dead_letter(
                received,
                invocation,
                reason=kind,
                error_type="JobExpired" if kind == job_ends.EXPIRED else "JobCancelled",
                error_message=f"{detail}; {problem}",
                attempts=max(0, received.attempt - 1),
                outcome=Outcome.ended(kind),
                started=started,
            )

    def _ended_archive(self) -> Archive | None:
        if not self._archive_built:
            self._archive, self._archive_built = self._archive_factory(), True
        return self._archive

    # -- helpers -------------------------------------------------------------------------

    def _release_unique(self, received: Received) -> None:
        """A finished job gives back its unique lock: only a job that holds one makes the call."""
        envelope = received.envelope
        if envelope is None or envelope.unique_lock is None:
            return
        from .unique import release  # loaded on the first unique job only

        if release(self.client("dynamodb"), self.config.unique_table, envelope, self.logger):
            self.logger.info("unique lock released", extra={"unique_lock": envelope.unique_lock})

    def _fetch_offloaded(self, raw: Any) -> str | BaseException:
        """An offloaded record's stored body (the pointer stays its body: every copy sends it again)."""
        from .offloaded import fetch_body  # loaded on the first offloaded record only

        return fetch_body(raw, self.client, self.config.large_payloads)

    def _count_member(
        self, received: Received, invocation: _Invocation, outcome: str, detail: str, started: float | None
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
                return self._dead_letter(
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
            invocation.metrics.record(received.label, Outcome.KEPT, _ms(started) if started is not None else None)
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

    def _log_keys(self, received: Received) -> _LogKeys:
        return _LogKeys(self.logger, received, self.config.tier)

    def _trace(self, received: Received) -> AbstractContextManager[Any]:
        """The run's X-Ray subsegment (runtime/tracing.py), linked to the trace that published the job."""
        envelope = received.envelope
        return self.tracer.job(
            job_type=received.label,
            key=envelope.idempotency_key if envelope is not None else "",
            tier=self.config.tier,
            attempt=received.attempt,
            link=received.trace_header,
        )

    def _apply_backoffs(self, backoffs: list[tuple[str, int]]) -> None:
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

    @staticmethod
    def _remaining_time(context: Any) -> Callable[[], int]:
        if context is not None and hasattr(context, "get_remaining_time_in_millis"):
            remaining: Callable[[], int] = context.get_remaining_time_in_millis
            return remaining
        deadline = time.monotonic() + NO_CONTEXT_BUDGET_MS / 1000
        return lambda: max(0, int((deadline - time.monotonic()) * 1000))


class _LogKeys:
    """The record's keys on every log line while it is handled (a context manager: removed after)."""

    KEYS = ("tier", "job_type", "idempotency_key", "message_id", "attempt", "tenant")

    def __init__(self, logger: Any, received: Received, tier: str):
        self.logger, self.received, self.tier = logger, received, tier

    def __enter__(self) -> None:
        envelope = self.received.envelope
        self.logger.append_keys(
            tier=self.tier,
            job_type=envelope.type if envelope else INVALID_JOB_TYPE,
            idempotency_key=envelope.idempotency_key if envelope else None,
            message_id=self.received.message_id,
            attempt=self.received.attempt,
            tenant=self.received.tenant,
        )

    def __exit__(self, *_: object) -> None:
        self.logger.remove_keys(list(self.KEYS))


def _by_turn(event: dict[str, Any], invocation: _Invocation) -> dict[str, Any]:
    """The batch in the order its limited records' turns come (the others first, in their order): the
    records run one after another, and one run before an earlier turn would make that turn's job
    start late, so forfeit its token (``ratelimit.RateLimiter.at_start``). The copies of held jobs
    come back together, in any order. The answer names records by id, so their order is free."""
    gate = invocation.gate
    assert gate is not None

    def turn(record: dict[str, Any]) -> float:
        verdict = gate.verdicts.get(record["messageId"])
        return verdict.start if verdict is not None and verdict.start is not None else float("-inf")

    records = sorted(event["Records"], key=turn)  # stable: equal turns keep the batch's order
    invocation.order = [record["messageId"] for record in records]
    return {**event, "Records": records}


def _ended_detail(kind: str, marker: dict[str, Any]) -> str:
    detail = str(marker.get("detail") or "")
    return f"{kind} at {marker.get('at')}" + (f": {detail}" if detail else "")


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000
