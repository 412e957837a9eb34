"""A tier's consumer: the story of one batch, read -> triage -> run -> settle -> answer.

* **read** -- every record once (:mod:`~tiered_jobs.runtime.received`: its envelope, its job type,
  what earlier copies carried);
* **triage** -- its fate before it runs, decided once and in this order, so each job has exactly one
  live copy whatever features meet:

  - *too new*: an envelope newer than this consumer is held as a copy for a newer one before anything
    else sees it (:mod:`~tiered_jobs.runtime.too_new`); past the holds' bound, dead-lettered;
  - *expired*: past its deadline, archived unrun (never an attempt, never a failure);
  - *held*: no token within the rate limit's wait bound, sent back as a copy with its turn
    (:mod:`~tiered_jobs.runtime.admission`); a held record is never deferred too;
  - *deferred*: less than the tier's margin left of the invocation, this record and every later one
    not yet decided are sent back at once (Celery's ``soft_time_limit``; not an attempt);

* **run** -- the run stage (:mod:`~tiered_jobs.runtime.run_stage`): the job under idempotency, keyed by
  its type and key, and the one decision about a failure (retry after a backoff, or dead-letter);
* **settle** -- :class:`~tiered_jobs.runtime.settle.Settle`, the only place a verdict has its side
  effects: copies, letters with their reasons, archive lines, batch counts, unique locks, one metric
  and one log line per record;
* **answer** -- a partial batch response (even when every record failed): a record kept in the queue
  (retried, or its copy or letter refused) is a batch item failure, with its visibility set in one
  call per ten.

docs/consumer.md's receive ledger lists every path a record can take, with its test.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from tiered_jobs.contract.steps import CONTINUATION_DELAY_SECONDS

from . import aws, too_new
from .config import TierConfig
from .idempotency import IdempotentRunner
from .invocation import Invocation, remaining_time
from .kept import Kept, KeptInQueue
from .log_keys import LogKeys
from .metrics import BatchMetrics
from .outcomes import Outcome
from .received import INVALID_JOB_TYPE, UNREGISTERED_JOB_TYPE, Received, read_batch
from .registry import JobDefinition, JobRegistry
from .run_stage import RunStage
from .settle import Archive, Settle
from .steps import Steps
from .table_stores import TableStores

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse

    from . import ratelimit
    from .tracing import JobTracer

__all__ = ["INVALID_JOB_TYPE", "UNREGISTERED_JOB_TYPE", "Consumer"]

#: A deferred record's copy is visible at once: another invocation (or the next) takes it.
DEFERRED_DELAY_SECONDS = 0


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
        self._archive: Archive | None = None
        self._archive_built = False
        #: Where each verdict has its side effects (copies, letters, archive lines, counts, one metric and
        #: line): made for each batch from the consumer's settings as they are then.
        self.settle = self._settle()
        #: ``None`` unless the tier has a rate limit (docs/consumer.md, "Rate limits").
        self.limiter: ratelimit.RateLimiter | None = None
        if config.rate_limits is not None:
            from . import ratelimit  # loaded by a limited tier only: the others' cold start skips it

            self.limiter = ratelimit.from_config(config.rate_limits, config.tier, config.rate_limit_table, client)

    def _settle(self) -> Settle:
        return Settle(
            self.config,
            self.registry,
            client=self.client,
            logger=self.logger,
            now=self.now,
            rand=self.rand,
            runner=lambda: self.runner,
            archive=self._ended_archive,
            decide=self.stage.decide,
        )

    def _ended_archive(self) -> Archive | None:
        """Where jobs that end unrun are kept, built on the first such job and kept for the container's life."""
        if not self._archive_built:
            self._archive, self._archive_built = self._archive_factory(), True
        return self._archive

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

        invocation = Invocation(
            remaining_time(context),
            self.config.time_budget_margin_ms,
            BatchMetrics(self.config.stage, self.config.tier),
            read_batch(event, self.registry, self._fetch_offloaded),
        )
        self.runner.register_lambda_context(context)
        self.settle = self._settle()
        processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)
        try:
            self._hold_too_new(invocation)
            if self.limiter is not None:
                from . import admission  # a limited tier's: the others' cold start skips it

                admission.admit(self.limiter, invocation, self.settle, self.registry, self.now())
                event = admission.in_turn_order(event, invocation)
            return process_partial_response(
                event=event,
                record_handler=lambda record: self._answer(record, invocation),
                processor=processor,
                context=context,
            )
        finally:
            self.settle.apply_backoffs(invocation.backoffs)
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

    def _hold_too_new(self, invocation: Invocation) -> None:
        """Envelopes newer than this consumer, within their bound: held as copies for a newer consumer,
        before the rate limit or the time budget sees them (:mod:`~tiered_jobs.runtime.too_new`)."""
        now, bound = self.now(), self.config.too_new_max_age_seconds
        held = [
            (record, Outcome.ENVELOPE_TOO_NEW, self.config.too_new_hold_seconds)
            for record in invocation.records.values()
            if too_new.too_new(record) is not None and not too_new.past_the_bound(record, now, bound)
        ]
        self.settle.copies(invocation, held)

    # -- one record ----------------------------------------------------------------------

    def _answer(self, record: Any, invocation: Invocation) -> Any:
        """Powertools' record handler: a record the consumer keeps is its batch item failure, raised here
        only; its visibility joins the batch's one change (:mod:`~tiered_jobs.runtime.kept`)."""
        answer = self.process(record, invocation)
        if isinstance(answer, Kept):
            if answer.seconds is not None:
                invocation.backoffs.append((invocation.records[record.message_id].receipt_handle, answer.seconds))
            raise KeptInQueue(answer.why)
        return answer

    def process(self, record: Any, invocation: Invocation) -> Any:
        received = invocation.records[record.message_id]
        envelope = received.envelope
        newer = too_new.too_new(received)
        if newer is not None and received.message_id not in invocation.fates:
            return self.settle.too_new_past_bound(received, newer, invocation)  # held past the bound
        if (
            envelope is not None
            and envelope.expires_at is not None  # most jobs have no deadline: no clock read for them
            and received.message_id not in invocation.fates
            and envelope.expired(self.now())
        ):
            return self.settle.expired(received, invocation)
        wait = 0.0
        if received.message_id not in invocation.fates:
            if invocation.deferred or invocation.remaining_ms() < invocation.margin_ms:
                self._defer_from(received, invocation)  # before its claim: a deferred job takes no token
            elif self.limiter is not None:
                wait = self._until_turn(received, invocation)  # its claim, or its turn's (claimed again if passed)
                if received.message_id not in invocation.fates and (
                    invocation.remaining_ms() - wait * 1000 < invocation.margin_ms
                ):
                    self._defer_from(received, invocation)
        fate = invocation.fates.get(received.message_id)
        if fate is not None:
            return self.settle.decided(received, fate, invocation)
        while wait > 0:  # its claimed turn under the rate limit; a sleep that overran it claims again
            self.sleep(wait)
            wait = self._until_turn(received, invocation)
            if received.message_id in invocation.fates:
                return self.settle.decided(received, invocation.fates[received.message_id], invocation)
        return self._run(received, invocation)

    def _until_turn(self, received: Received, invocation: Invocation) -> float:
        """Seconds until the record may start under the rate limit (:func:`~.admission.until_turn`)."""
        from .admission import until_turn

        assert self.limiter is not None
        return until_turn(self.limiter, received, invocation, self.settle)

    def _defer_from(self, first: Received, invocation: Invocation) -> None:
        """The time budget is spent: send this record and every later one not yet decided again, once."""
        later = invocation.order[invocation.order.index(first.message_id) :]
        now = self.now()
        undecided = [
            record
            for record in (invocation.records[mid] for mid in later if mid not in invocation.fates)
            if record.envelope is None or not record.envelope.expired(now)  # dropped, never copied
        ]
        invocation.deferred += len(undecided)
        self.settle.copies(invocation, [(record, Outcome.DEFERRED, DEFERRED_DELAY_SECONDS) for record in undecided])

    def _run(self, received: Received, invocation: Invocation) -> Any:
        started = time.perf_counter()
        invocation.metrics.age(received.label, received.age_seconds(self.now()))
        definition: JobDefinition | None = None
        with self._log_keys(received), self._trace(received):
            try:
                definition = self.stage.definition(received)
                ran = self.stage.run(received, definition, invocation.remaining_ms, invocation.margin_ms)
                if ran.ended is not None:  # cancelled (or expired) before it started: its record says so
                    return self.settle.ended(
                        received, invocation, ran.ended, _ended_detail(ran.ended, ran.result), started
                    )
                if ran.next_step is not None:  # not finished: its next step is sent (or was: a duplicate)
                    return self.settle.checkpointed(received, invocation, ran.next_step, started, ran.duplicate)
                # a batch member is counted before it is acknowledged
                kept = self.settle.count_member(received, invocation, "succeeded", "", started)
                if kept is not None:
                    return kept  # its batch count was not written: the record comes back, and is counted then
                self.settle.succeeded(received, invocation, started, ran.duplicate)
                return ran.result
            except Exception as exc:  # noqa: BLE001 -- every failure is classified, none escapes unseen
                # Retried (kept), or dead-lettered: then reported a success, so SQS deletes the source copy.
                return self.settle.failed(received, invocation, exc, definition, started)

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

    # -- helpers -------------------------------------------------------------------------

    def _fetch_offloaded(self, raw: Any) -> str | BaseException:
        """An offloaded record's stored body (the pointer stays its body: every copy sends it again)."""
        from .offloaded import fetch_body  # loaded on the first offloaded record only

        return fetch_body(raw, self.client, self.config.large_payloads)

    def _log_keys(self, received: Received) -> LogKeys:
        return LogKeys(self.logger, received, self.config.tier)

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


def _ended_detail(kind: str, marker: dict[str, Any]) -> str:
    detail = str(marker.get("detail") or "")
    return f"{kind} at {marker.get('at')}" + (f": {detail}" if detail else "")
