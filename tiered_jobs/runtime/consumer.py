"""The consumer's domain: what happens to each record of a batch.

Per record (never per batch):

1. parse and validate the envelope, find the job, validate its payload -- any failure is
   permanent;
2. run the job under idempotency (type + idempotency key);
3. a transient failure with attempts left -> the message's visibility becomes the backoff delay
   (with jitter) and the record is reported as a batch item failure;
4. a permanent failure, or a transient one on the last attempt -> the message is copied to the
   tier's DLQ with its ``DeadLetter.*`` reasons, and only if that send succeeds is the record
   reported as processed (so SQS deletes the source). A failed send keeps the message.

Before starting each record, the remaining time of the invocation is compared with the tier's
safety margin (Celery's ``soft_time_limit``): once it is below, this record and every later one
are returned unstarted as batch item failures, visible again after
:data:`DEFERRED_VISIBILITY_SECONDS`, and counted as deferred, not failed. The margin leaves time
for the backoffs and the metrics that the ``finally`` of :meth:`Consumer.handle` writes.

The batch answer is always a partial batch response, even when every record failed.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from tiered_jobs.contract import envelope as envelope_rules
from tiered_jobs.contract.names import SQS_MAX_BATCH_ENTRIES, DeadLetter, Metrics

from . import aws, ratelimit
from .aws_errors import PERMANENT
from .config import TierConfig
from .errors import classify, describe
from .idempotency import IdempotentRunner
from .metrics import BatchMetrics
from .registry import JobContext, JobDefinition, JobRegistry

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse

#: Job type label for records whose envelope could not be read, or whose type is not registered
#: (keeps metric dimensions bounded whatever publishers send).
INVALID_JOB_TYPE = "invalid"
UNREGISTERED_JOB_TYPE = "unregistered"
#: A record left unstarted by the time budget is visible again after this many seconds.
DEFERRED_VISIBILITY_SECONDS = 1
#: Without a Lambda context (tests, scripts), the invocation is taken to last Lambda's longest timeout.
NO_CONTEXT_BUDGET_MS = 900_000


class RetryLater(Exception):
    """The record failed transiently and will come back after its backoff."""


class KeptInQueue(Exception):
    """The record should have been dead-lettered but the DLQ refused it: SQS keeps it."""


class Deferred(Exception):
    """The invocation's time budget ran out before this record started: it comes back promptly."""


class RateLimitedKept(Exception):
    """The rate limit held the record and its re-send failed: SQS keeps it until its turn."""


class _Invocation:
    """What one invocation accumulates (a plain class: nothing to generate at cold start)."""

    __slots__ = ("remaining_ms", "margin_ms", "metrics", "backoffs", "deferred", "gate")

    def __init__(self, remaining_ms: Callable[[], int], margin_ms: int, metrics: BatchMetrics):
        #: The invocation's clock: milliseconds left before Lambda stops it.
        self.remaining_ms = remaining_ms
        #: No record starts with less than this left: the tier's margin, at most half of the
        #: time the invocation started with (as the stack's settings demand of the timeout).
        self.margin_ms = min(margin_ms, remaining_ms() // 2)
        self.metrics = metrics
        #: (receipt handle, seconds) for the records to retry later (or return soon, if deferred).
        self.backoffs: list[tuple[str, int]] = []
        #: Records left unstarted; once one is, every later one is too.
        self.deferred = 0
        #: The rate limit's verdicts for this batch (``None``: the tier is not limited).
        self.gate: ratelimit.Gate | None = None


class Consumer:
    def __init__(
        self,
        config: TierConfig,
        registry: JobRegistry,
        *,
        client: Callable[[str], Any] = aws.client,
        logger: Any = None,
        rand: Callable[[], float] = random.random,
        now: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
    ):
        self.config = config
        self.registry = registry
        self.client = client
        self.rand = rand
        self.now = now
        if logger is None:
            from aws_lambda_powertools import Logger

            logger = Logger(service=Metrics.SERVICE)
        self.logger = logger
        self._runner: IdempotentRunner | None = None
        #: ``None`` unless the tier has a rate limit (docs/consumer.md, "Rate limits").
        self.limiter = ratelimit.from_config(config.rate_limits, config.tier, config.rate_limit_table,
                                             config.queue_url, client)

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

        invocation = _Invocation(self._remaining_time(context), self.config.time_budget_margin_ms,
                                 BatchMetrics(self.config.stage, self.config.tier))
        self.runner.register_lambda_context(context)
        if self.limiter is not None:
            invocation.gate = self.limiter.admit(ratelimit.batch_records(event, self.registry),
                                                 invocation.remaining_ms() / 1000)
        processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)
        try:
            return process_partial_response(
                event=event,
                record_handler=lambda record: self.process(record, invocation),
                processor=processor,
                context=context,
            )
        finally:
            self._apply_backoffs(invocation.backoffs)
            invocation.metrics.flush()
            if invocation.deferred:
                self.logger.info(
                    "time budget spent: records returned unstarted",
                    extra={"deferred": invocation.deferred, "margin_ms": invocation.margin_ms,
                           "remaining_ms": invocation.remaining_ms()},
                )

    # -- one record ----------------------------------------------------------------------

    def process(self, record: Any, invocation: _Invocation) -> Any:
        if invocation.deferred or invocation.remaining_ms() < invocation.margin_ms:
            self._defer(record, invocation)
        started = time.perf_counter()
        # Attempts spent by earlier copies (a job the rate limit re-sent) + this copy's receives.
        attempt = (ratelimit.prior_attempts(record.raw_event.get("messageAttributes"))
                   + int(record.attributes.approximate_receive_count or 1))
        job_type = INVALID_JOB_TYPE
        definition: JobDefinition | None = None
        envelope: envelope_rules.Envelope | None = None
        try:
            envelope = envelope_rules.parse(record.body)
            job_type = self._label(envelope)
            self.logger.append_keys(
                tier=self.config.tier, job_type=envelope.type, idempotency_key=envelope.idempotency_key,
                message_id=record.message_id, attempt=attempt,
                tenant=envelope.tenant or record.raw_event.get("attributes", {}).get("MessageGroupId"),
            )
            definition = self.registry.get(envelope.type)
            if definition.validate is not None:
                definition.validate(envelope.payload)
            if self._held(record, invocation, job_type, started):
                return None  # re-sent with a delay: acknowledged, not an attempt
            ctx = JobContext(
                job_type=envelope.type, idempotency_key=envelope.idempotency_key, attempt=attempt,
                max_attempts=self.config.retry.max_attempts, tier=self.config.tier,
                message_id=record.message_id, logger=self.logger,
                lambda_remaining_ms=invocation.remaining_ms, settings=self.config, client=self.client,
                time_limit_seconds=definition.time_limit_seconds, margin_ms=invocation.margin_ms,
            )

            def execute() -> Any:
                return definition.handler(envelope.payload, ctx)

            if definition.idempotent:
                key = {"type": envelope.type, "idempotency_key": envelope.idempotency_key,
                       "payload": envelope.payload}
                outcome = self.runner.run(key, execute)
                result, duplicate = outcome.result, outcome.duplicate
            else:
                result, duplicate = execute(), False
            invocation.metrics.record(job_type, "duplicate" if duplicate else "succeeded", _ms(started))
            self.logger.debug("job done", extra={"duplicate": duplicate})
            return result
        except RateLimitedKept:
            raise
        except Exception as exc:  # noqa: BLE001 -- every failure is classified, none escapes unseen
            self._fail(record, invocation, exc, attempt, job_type, envelope, definition, started)
            return None  # dead-lettered: report success so SQS deletes the source copy
        finally:
            self.logger.remove_keys(["tier", "job_type", "idempotency_key", "message_id", "attempt", "tenant"])

    def _held(self, record: Any, invocation: _Invocation, job_type: str, started: float) -> bool:
        """Waits until the record's turn under the rate limit; ``True`` when it was held instead."""
        verdict = invocation.gate.enter(record.message_id) if invocation.gate is not None else None
        if verdict is None:
            return False
        invocation.metrics.record(job_type, "rate_limited")  # not an attempt: no duration
        if verdict.keep_seconds is not None:
            invocation.backoffs.append((record.receipt_handle, verdict.keep_seconds))
            self.logger.warning("rate limited; the re-send failed, the message stays in the queue",
                                extra={"retry_in_seconds": verdict.keep_seconds})
            raise RateLimitedKept("held by the rate limit; re-send failed")
        self.logger.info("rate limited: re-sent with a delay", extra={"delay_seconds": verdict.resent_delay})
        return True

    def _defer(self, record: Any, invocation: _Invocation) -> None:
        """Return the record unstarted: a batch item failure visible again in a second."""
        invocation.deferred += 1
        invocation.backoffs.append((record.receipt_handle, DEFERRED_VISIBILITY_SECONDS))
        try:
            job_type = self._label(envelope_rules.parse(record.body))
        except Exception:  # noqa: BLE001 -- its next attempt will dead-letter it with the reason
            job_type = INVALID_JOB_TYPE
        invocation.metrics.record(job_type, "deferred")
        raise Deferred(f"deferred: less than {invocation.margin_ms} ms left of the invocation")

    def _label(self, envelope: envelope_rules.Envelope) -> str:
        """The metric label of a job type: bounded whatever publishers send."""
        return envelope.type if envelope.type in self.registry else UNREGISTERED_JOB_TYPE

    def _fail(self, record: Any, invocation: _Invocation, exc: Exception, attempt: int, job_type: str,
              envelope: envelope_rules.Envelope | None, definition: JobDefinition | None, started: float) -> None:
        # Loaded on the first failure only: the happy path's cold start does not pay for it.
        from .deadletter import (
            DeadLetterReason,
            api_attributes_from_event,
            fit_to_size,
            merge_attributes,
            send_to_dlq,
        )

        kind = classify(exc, definition.permanent if definition else ())
        error_type, error_message = describe(exc)
        policy = self.config.retry
        if kind != PERMANENT and not policy.is_last(attempt):
            delay = policy.delay(attempt, self.rand)
            invocation.backoffs.append((record.receipt_handle, delay))
            invocation.metrics.record(job_type, "retried", _ms(started), retry_delay_seconds=delay)
            self.logger.warning(
                "job failed, will retry",
                extra={"error_type": error_type, "error": error_message, "retry_in_seconds": delay},
            )
            raise RetryLater(f"{error_type}: {error_message}") from exc

        now = self.now()
        first_failed_at = now if attempt <= 1 else _from_epoch_ms(
            record.attributes.approximate_first_receive_timestamp, default=now
        )
        reason = DeadLetterReason(
            reason=DeadLetter.REASON_PERMANENT if kind == PERMANENT else DeadLetter.REASON_RETRIES_EXHAUSTED,
            error_type=error_type,
            error_message=error_message,
            attempts=attempt,
            first_failed_at=first_failed_at,
            last_failed_at=now,
            source_queue=record.event_source_arn or self.config.queue_url,
            job_type=envelope.type if envelope is not None else INVALID_JOB_TYPE,
        )
        attributes, dropped = merge_attributes(
            api_attributes_from_event(record.raw_event.get("messageAttributes")), reason.attributes()
        )
        attributes, shortened = fit_to_size(record.body, attributes)  # SQS's 1 MiB counts attributes too
        try:
            dlq_message_id = send_to_dlq(self.client("sqs"), self.config.dlq_url, record.body, attributes)
        except Exception as send_error:
            invocation.metrics.record(job_type, "kept", _ms(started))
            self.logger.error(
                "could not dead-letter the job; the message stays in the queue",
                extra={"error_type": error_type, "error": error_message, "dlq_error": repr(send_error)},
            )
            raise KeptInQueue(f"DLQ send failed: {send_error!r}") from send_error
        invocation.metrics.record(job_type, "dead_lettered", _ms(started))
        self.logger.error(
            "job dead-lettered",
            extra={"reason": reason.reason, "error_type": error_type, "error": error_message,
                   "dlq_message_id": dlq_message_id, "dropped_reason_attributes": dropped,
                   "shortened_reason_attributes": shortened},
        )

    # -- helpers -------------------------------------------------------------------------

    def _apply_backoffs(self, backoffs: list[tuple[str, int]]) -> None:
        """One ChangeMessageVisibilityBatch per 10 retried records. A failure here only means
        the message comes back after the queue's visibility timeout instead: logged, not raised."""
        for start in range(0, len(backoffs), SQS_MAX_BATCH_ENTRIES):
            chunk = backoffs[start:start + SQS_MAX_BATCH_ENTRIES]
            entries = [{"Id": str(i), "ReceiptHandle": handle, "VisibilityTimeout": delay}
                       for i, (handle, delay) in enumerate(chunk)]
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


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def _from_epoch_ms(value: Any, default: datetime) -> datetime:
    try:
        return datetime.fromtimestamp(int(value) / 1000, tz=timezone.utc)
    except (TypeError, ValueError):
        return default
