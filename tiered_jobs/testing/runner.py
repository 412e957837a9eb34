"""Run a job in-process, as its tier's consumer would, and say what the consumer would do next.

    from tiered_jobs.testing import JobRunner

    runner = JobRunner(resources={"payments": "payments-table"}, clients={"dynamodb": stub})
    run = runner.run("payments.capture", {"amount": 5}, "order-1")
    assert run.outcome == "succeeded"

The job runs through the consumer's own run stage (:mod:`tiered_jobs.runtime.run_stage`): the
envelope's rules (``contract.envelope``) and the record as the consumer reads it, the job's
registration, its policy on the tier (``JobPolicy.on_tier``), the payload's schema and ``validate``
hook, the job's context (every field the consumer gives it), the run under idempotency and its
steps, and on a failure the one decision (``job_policy.decide``): retried after a backoff, or
dead-lettered as ``permanent``, ``retries_exhausted`` or ``too_many_steps``. A job that returns
``ctx.checkpoint(...)`` is ``checkpointed`` (its next step due, :meth:`JobRunner.run` with
``step=``), one cancelled before it ran is ``cancelled``. Nothing here decides a second way.

What is faked: the stores (:class:`~tiered_jobs.testing.stores.MemoryStores`: the idempotency
records, the steps' records, cancels and progress, in memory), the tier's clients
(``client(service)`` answers the given stubs and refuses any other service, so a test never
reaches AWS by accident; pass ``clients=boto3.client`` to use moto), the invocation's clock
(``remaining_ms``), and the record's SQS fields (its receive count is the attempt).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from tiered_jobs.contract import envelope as envelope_rules
from tiered_jobs.contract import job_ends
from tiered_jobs.contract.names import DeadLetter
from tiered_jobs.contract.steps import REASON_TOO_MANY_STEPS, STEP_ATTRIBUTE
from tiered_jobs.runtime.backoff import DEFAULT_JITTER, DEFAULT_MAX_ATTEMPTS, DEFAULT_SCHEDULE, RetryPolicy
from tiered_jobs.runtime.config import TierConfig
from tiered_jobs.runtime.errors import describe
from tiered_jobs.runtime.job_modules import load_job_modules
from tiered_jobs.runtime.received import Received, read
from tiered_jobs.runtime.registry import JobDefinition, JobRegistry
from tiered_jobs.runtime.registry import registry as default_registry
from tiered_jobs.runtime.run_stage import RunStage

from .stores import Cancelled, MemoryStores

#: What became of a run: the job's result (``succeeded``, or ``duplicate`` from the idempotency
#: store), a step that checkpointed (``checkpointed``), a transient failure with attempts left
#: (``retry``), the letter's reason, or the end marker of a job that ended unrun (``cancelled``).
SUCCEEDED, DUPLICATE, RETRY, CHECKPOINTED = "succeeded", "duplicate", "retry", "checkpointed"
PERMANENT, RETRIES_EXHAUSTED = DeadLetter.REASON_PERMANENT, DeadLetter.REASON_RETRIES_EXHAUSTED
TOO_MANY_STEPS, CANCELLED, EXPIRED = REASON_TOO_MANY_STEPS, job_ends.CANCELLED, job_ends.EXPIRED
OUTCOMES = (SUCCEEDED, DUPLICATE, CHECKPOINTED, RETRY, PERMANENT, RETRIES_EXHAUSTED, TOO_MANY_STEPS, CANCELLED, EXPIRED)
#: Lambda's longest timeout: the invocation's time when a test does not say.
DEFAULT_REMAINING_MS = 900_000


@dataclass(frozen=True)
class JobRun:
    """One attempt of a job, and what the consumer would do with it."""

    job_type: str
    idempotency_key: str
    attempt: int
    #: The job's attempts on this tier (its own ``max_attempts``, else the tier's).
    max_attempts: int
    #: One of :data:`OUTCOMES`.
    outcome: str
    #: What the job returned (its stored form), or the stored result of a duplicate.
    result: Any = None
    #: What the job raised (``None`` when it succeeded).
    error: BaseException | None = None
    #: ``transient`` or ``permanent``: the consumer's classification of ``error``.
    classification: str | None = None
    #: Seconds the consumer would wait before the next attempt (``retry`` only, jittered as configured).
    retry_in_seconds: int | None = None
    #: The step this run ran (0: the published message).
    step: int = 0
    #: The step due next (``checkpointed``, or a duplicate of a step that checkpointed).
    next_step: int | None = None

    @property
    def succeeded(self) -> bool:
        return self.outcome in (SUCCEEDED, DUPLICATE)

    @property
    def dead_lettered(self) -> bool:
        return self.outcome in (PERMANENT, RETRIES_EXHAUSTED)

    @property
    def error_type(self) -> str | None:
        """The letter's ``DeadLetter.ErrorType``: the innermost meaningful cause's class."""
        return describe(self.error)[0] if self.error is not None else None

    def raise_failure(self) -> None:
        """Raise :class:`JobFailed` (from the job's error) unless the job succeeded."""
        if not self.succeeded:
            raise JobFailed(self) from self.error


class JobFailed(Exception):
    """A job did not succeed; ``run`` says how and ``classification`` is the consumer's verdict."""

    def __init__(self, run: JobRun):
        self.run = run
        self.outcome = run.outcome
        self.classification = run.classification
        error_type = run.error_type or "error"
        super().__init__(
            f"{run.job_type} ({run.idempotency_key!r}, attempt {run.attempt} of {run.max_attempts}): "
            f"{error_type}: {run.error} -> {run.outcome}"
            + (f" in {run.retry_in_seconds} s" if run.retry_in_seconds is not None else "")
        )


class JobRunner:
    """Runs jobs as a tier's consumer would, with a fake context; one in-memory idempotency store.

    ``resources``: ``{name: table name or queue URL}``, what ``ctx.resource(name)`` answers;
    ``clients``: ``{service: client}`` or a function of the service; ``modules``: job modules to
    import the consumer's way (their ``schemas/`` first); the tier's settings (``tier``,
    ``max_attempts``, ``retry_schedule_seconds``, ``jitter``) default to the library's.
    """

    def __init__(
        self,
        *,
        resources: Mapping[str, str] | None = None,
        clients: Mapping[str, Any] | Callable[[str], Any] | None = None,
        registry: JobRegistry = default_registry,
        modules: Iterable[str] = (),
        tier: str = "test",
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        retry_schedule_seconds: tuple[int, ...] = DEFAULT_SCHEDULE,
        jitter: float = DEFAULT_JITTER,
        rand: Callable[[], float] = lambda: 0.5,
        logger: Any = None,
    ):
        modules = list(modules)
        if modules:  # the default registry's loader, as the consumer's handler installs it
            load_job_modules(modules)
        self.registry = registry
        self.tier = tier
        self.retry = RetryPolicy(max_attempts, tuple(retry_schedule_seconds), jitter)
        self.settings = TierConfig(
            stage="test",
            tier=tier,
            queue_url="",
            dlq_url="",
            idempotency_table="",
            retry=self.retry,
            resources=dict(resources or {}),
        )
        self._clients = clients
        self.rand = rand
        self.logger = logger if logger is not None else logging.getLogger("tiered_jobs.testing")
        self.stores = MemoryStores()
        self.idempotency = self.stores.idempotency
        #: The run stage of each tier a job ran on (its policy bound once per type, as a consumer binds it).
        self._stages: dict[str, RunStage] = {}

    def client(self, service: str) -> Any:
        """What ``ctx.client(service)`` answers: the stub given for it."""
        if callable(self._clients):
            return self._clients(service)
        if self._clients is not None and service in self._clients:
            return self._clients[service]
        raise LookupError(
            f"ctx.client({service!r}) has no stub: pass JobRunner(clients={{{service!r}: ...}}), "
            "or clients=boto3.client to use real clients (under moto's mock_aws)"
        )

    def run(
        self,
        job_type: str,
        payload: Any,
        idempotency_key: str,
        *,
        attempt: int = 1,
        tier: str | None = None,
        remaining_ms: Callable[[], int] | int = DEFAULT_REMAINING_MS,
        step: int = 0,
    ) -> JobRun:
        """One attempt of ``job_type`` (its ``step``): its result, or what the consumer would do with its failure."""
        stage = self._stage(tier or self.tier)
        definition: JobDefinition | None = None
        try:
            received = _received(envelope_rules.build(job_type, payload, idempotency_key), attempt, step, self.registry)
            definition = stage.definition(received)
            ran = stage.run(received, definition, _clock(remaining_ms), 0)
        except Exception as exc:  # noqa: BLE001 -- every failure is classified, as the consumer does
            decision = stage.decide(exc, attempt, definition, self.rand)
            return JobRun(
                job_type,
                idempotency_key,
                attempt,
                _max_attempts(stage, definition, self.retry),
                RETRY if decision.retry else _reason(exc, decision.reason),
                error=exc,
                classification=decision.kind,
                retry_in_seconds=decision.delay_seconds,
                step=step,
            )
        max_attempts = stage.retry_for(definition).max_attempts
        if ran.ended is not None:
            return JobRun(job_type, idempotency_key, attempt, max_attempts, ran.ended, step=step)
        outcome = DUPLICATE if ran.duplicate else CHECKPOINTED if ran.next_step is not None else SUCCEEDED
        return JobRun(
            job_type, idempotency_key, attempt, max_attempts, outcome, ran.result, step=step, next_step=ran.next_step
        )

    def cancel(self, job_type: str, idempotency_key: str) -> Cancelled:
        """Cancel the job as ``tiered-jobs cancel`` would: unrun if it has not run, asked to stop if it runs."""
        return self.stores.cancel(job_type, idempotency_key)

    def progress(self, job_type: str, idempotency_key: str) -> Any:
        """The job's last ``ctx.progress`` (a ``contract.progress.Progress``; ``None``: it reported none)."""
        return self.stores.progress_of(job_type, idempotency_key)

    def _stage(self, tier: str) -> RunStage:
        stage = self._stages.get(tier)
        if stage is None:
            config = self.settings if tier == self.tier else replace(self.settings, tier=tier)
            stage = self._stages[tier] = RunStage(
                config, self.registry, self.stores, client=self.client, logger=self.logger
            )
        return stage

    def run_until_settled(self, job_type: str, payload: Any, idempotency_key: str, **options: Any) -> list[JobRun]:
        """Every attempt the consumer would make, until the job succeeds or is dead-lettered (backoffs not waited)."""
        runs = [self.run(job_type, payload, idempotency_key, **options)]
        while runs[-1].outcome in (RETRY, CHECKPOINTED):
            last = runs[-1]
            # A retry is the same step's next attempt; a checkpoint's next step is not an attempt.
            after = {"attempt": last.attempt + 1} if last.outcome == RETRY else {"step": last.next_step}
            runs.append(self.run(job_type, payload, idempotency_key, **{**options, "step": last.step, **after}))
        return runs


def run_job(job_type: str, payload: Any, idempotency_key: str = "test-key", **options: Any) -> JobRun:
    """One attempt with a fresh :class:`JobRunner` (``options`` go to it, or to ``run``: ``attempt``, ``tier``,
    ``remaining_ms``). Keep a runner for a test that needs idempotency across runs."""
    run_options = {name: options.pop(name) for name in ("attempt", "tier", "remaining_ms") if name in options}
    return JobRunner(**options).run(job_type, payload, idempotency_key, **run_options)


def _received(envelope: envelope_rules.Envelope, attempt: int, step: int, registry: JobRegistry) -> Received:
    """The record the consumer would read for this attempt and step (Lambda's event shape)."""
    attributes = {STEP_ATTRIBUTE: {"stringValue": str(step), "dataType": "Number"}} if step else {}
    raw = {
        "messageId": f"test-{envelope.type}-{envelope.idempotency_key}-{attempt}-{step}",
        "body": envelope.to_json(),
        "attributes": {"ApproximateReceiveCount": str(attempt)},
        "messageAttributes": attributes,
    }
    return read(raw, registry)


def _max_attempts(stage: RunStage, definition: JobDefinition | None, tier_retry: RetryPolicy) -> int:
    """The job's attempts on the tier; the tier's when the failure came before its policy was bound (or
    was its refusal)."""
    if definition is None:
        return tier_retry.max_attempts
    try:
        return stage.retry_for(definition).max_attempts
    except Exception:  # noqa: BLE001 -- a policy the tier cannot honour: the tier's attempts stand in
        return tier_retry.max_attempts


def _reason(exc: BaseException, reason: str | None) -> str:
    """The letter's reason, as the consumer gives it (a failure's own first: ``too_many_steps``)."""
    return getattr(exc, "dead_letter_reason", None) or reason or PERMANENT


def _clock(remaining_ms: Callable[[], int] | int) -> Callable[[], int]:
    """The invocation's clock: a function, or milliseconds counted down from now."""
    if callable(remaining_ms):
        return remaining_ms
    deadline = time.monotonic() + remaining_ms / 1000
    return lambda: max(0, int((deadline - time.monotonic()) * 1000))
