"""The run stage: one record's job, from its registration to what it returned, or raised.

One way to run a job, for the consumer and for ``tiered_jobs.testing``'s runner alike, in this order:
the job's definition (no envelope, an unknown type: permanent), its policy on the tier
(:meth:`~tiered_jobs.runtime.job_policy.JobPolicy.on_tier`, bound once per type), its ``validate`` hook,
its context (every field), and its run under idempotency in the given :class:`JobStores` (the tier's
DynamoDB for the consumer, memory for the runner). A failure is raised as the job raised it, and
:meth:`RunStage.decide` is the one decision about it (:func:`~tiered_jobs.runtime.job_policy.decide`).

The stage has no side effect beyond its stores: what a result or a failure leads to (an answer, a
copy, a letter, an archive line) is for the caller to settle.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from tiered_jobs.contract import job_ends
from tiered_jobs.contract.steps import marker_step

from .job_policy import TIER_DEFAULTS, Decision, decide
from .registry import JobContext, JobDefinition, JobRegistry
from .steps import plain_result

if TYPE_CHECKING:
    from .backoff import RetryPolicy
    from .config import TierConfig
    from .idempotency import Outcome
    from .received import Received

__all__ = ["JobStores", "Ran", "RunStage"]


class JobStores(Protocol):
    """Where a tier keeps its jobs' runs: each idempotent run and its steps, cancels, progress, chains."""

    def run(
        self,
        received: Received,
        key: dict[str, Any],
        ctx: JobContext,
        handler: Callable[[dict[str, Any], Any], Any],
        flush: Callable[[], None],
    ) -> Outcome:
        """Run this delivery's step of the job once under its key (a duplicate answers the stored result)."""

    def cancel_requested(self, job_type: str, idempotency_key: str) -> bool:
        """``ctx.cancelled()``: has someone cancelled the job since it started?"""

    def progress(self, job_type: str, idempotency_key: str, definition: JobDefinition) -> Callable[..., None]:
        """``ctx.progress``'s sink for one run (it may have a ``flush``, called before the record completes)."""

    def previous_result(self, batch: dict[str, Any] | None) -> Callable[[], Any]:
        """``ctx.previous_result()``: the stored result of a chain's previous link."""


class Ran:
    """What a job's run returned: its stored result, and what that result says of the job (a plain class:
    one is made per job)."""

    __slots__ = ("result", "duplicate", "ended", "next_step")

    def __init__(self, result: Any, duplicate: bool, ended: str | None, next_step: int | None):
        self.result = result
        #: The idempotency store answered an earlier run's result: the job did not run now.
        self.duplicate = duplicate
        #: ``cancelled`` / ``expired``: the record held the job's end marker, so it ended unrun.
        self.ended = ended
        #: The step due next: the job checkpointed (or this was a duplicate of a step that did).
        self.next_step = next_step


class RunStage:
    """A tier's run stage (see the module's docstring): built once per consumer or runner."""

    def __init__(
        self,
        config: TierConfig,
        registry: JobRegistry,
        stores: JobStores,
        *,
        client: Callable[[str], Any],
        logger: Any,
    ):
        self.config, self.registry, self.stores, self.client, self.logger = config, registry, stores, client, logger
        #: Each job type's attempts and backoff on this tier (its own policy over the tier's), once bound.
        self._retries: dict[str, RetryPolicy] = {}

    def definition(self, received: Received) -> JobDefinition:
        """The record's job, or the permanent error that says why there is none to run."""
        envelope = received.envelope
        if envelope is None:
            if received.body_error is not None:  # an offloaded body S3 did not give (offloaded.py)
                raise received.body_error
            assert received.envelope_error is not None
            raise received.envelope_error
        return self.registry.get(envelope.type)

    def retry_for(self, definition: JobDefinition) -> RetryPolicy:
        """The job's attempts and backoff on this tier (checked once per job type and container)."""
        retry = self._retries.get(definition.type)
        if retry is None:
            config = self.config
            retry = definition.policy.on_tier(
                definition.type,
                config.tier,
                config.retry,
                config.receive_limit,
                retention_seconds=config.retention_seconds,
                timeout_seconds=config.timeout_seconds,
                batching_window_seconds=config.batching_window_seconds,
            )
            self._retries[definition.type] = retry
        return retry

    def run(
        self,
        received: Received,
        definition: JobDefinition,
        remaining_ms: Callable[[], int],
        margin_ms: int,
    ) -> Ran:
        """Run the record's job once (its policy bound and its payload validated first); raises its failure."""
        envelope = received.envelope
        assert envelope is not None
        retry = self.retry_for(definition)  # JobPolicyError (permanent) if the tier cannot honour it
        if definition.validate is not None:
            definition.validate(envelope.payload)
        stores = self.stores
        progress = stores.progress(envelope.type, envelope.idempotency_key, definition)
        ctx = JobContext(
            job_type=envelope.type,
            idempotency_key=envelope.idempotency_key,
            attempt=received.attempt,
            max_attempts=retry.max_attempts,
            tier=self.config.tier,
            message_id=received.message_id,
            logger=self.logger,
            lambda_remaining_ms=remaining_ms,
            settings=self.config,
            client=self.client,
            time_limit_seconds=definition.time_limit_seconds,
            margin_ms=margin_ms,
            cancel_check=self._cancel_check(envelope.type, envelope.idempotency_key, definition.idempotent),
            progress_sink=progress,
            max_steps=definition.max_steps,
            previous_result_reader=stores.previous_result(envelope.batch),
        )
        handler = definition.handler
        if not definition.idempotent:
            return Ran(plain_result(handler(envelope.payload, ctx), envelope.type), False, None, None)
        key = {"type": envelope.type, "idempotency_key": envelope.idempotency_key, "payload": envelope.payload}
        # A job's step: the published message under Powertools, a later step on its claimed record.
        outcome = stores.run(received, key, ctx, handler, getattr(progress, "flush", _nothing))
        result, duplicate = outcome.result, outcome.duplicate
        ended = job_ends.marker_kind(result) if duplicate else None  # cancelled (or expired) before it started
        return Ran(result, duplicate, ended, marker_step(result) if ended is None else None)

    def decide(
        self, exc: BaseException, attempt: int, definition: JobDefinition | None, rand: Callable[[], float]
    ) -> Decision:
        """The one decision about a failure: retried after a backoff, or dead-lettered (and why)."""
        # Before a job's policy is bound only permanent failures happen (no envelope, an unknown
        # type, a policy its tier cannot honour): the tier's settings stand in, and are never used.
        retry = self._retries.get(definition.type, self.config.retry) if definition else self.config.retry
        return decide(exc, attempt, definition.policy if definition else TIER_DEFAULTS, retry, rand)

    def _cancel_check(self, job_type: str, key: str, idempotent: bool) -> Callable[[], bool]:
        """``ctx.cancelled()``: one read of the job's record, only when the job asks."""
        if not idempotent:
            return _never  # no record to read: a job without idempotency cannot be cancelled
        stores = self.stores
        return lambda: stores.cancel_requested(job_type, key)


def _nothing() -> None:
    return None


def _never() -> bool:
    return False
