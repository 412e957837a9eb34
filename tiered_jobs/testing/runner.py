"""Run a job in-process, as its tier's consumer would, and say what the consumer would do next.

    from tiered_jobs.testing import JobRunner

    runner = JobRunner(resources={"payments": "payments-table"}, clients={"dynamodb": stub})
    run = runner.run("payments.capture", {"amount": 5}, "order-1")
    assert run.outcome == "succeeded"

Every step is the consumer's own code, in the consumer's order: the envelope's rules
(``contract.envelope``), the job's registration, its policy on the tier (``JobPolicy.on_tier``),
the payload's schema and ``validate`` hook, the run under idempotency (here in memory), and on a
failure the one decision (``job_policy.decide``): retried after a backoff, or dead-lettered as
``permanent`` or ``retries_exhausted``. Nothing here classifies an error a second way.

What is faked: the ``JobContext`` (its ``settings`` a real ``TierConfig`` holding the given
resources; ``client(service)`` answers the given stubs and refuses any other service, so a test
never reaches AWS by accident; pass ``clients=boto3.client`` to use moto), the invocation's clock
(``remaining_ms``) and the idempotency store (:class:`MemoryIdempotency`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tiered_jobs.contract import envelope as envelope_rules
from tiered_jobs.contract.names import DeadLetter
from tiered_jobs.runtime.backoff import DEFAULT_JITTER, DEFAULT_MAX_ATTEMPTS, DEFAULT_SCHEDULE, RetryPolicy
from tiered_jobs.runtime.config import TierConfig
from tiered_jobs.runtime.errors import describe
from tiered_jobs.runtime.job_modules import load_job_modules
from tiered_jobs.runtime.job_policy import TIER_DEFAULTS, JobPolicy, decide
from tiered_jobs.runtime.registry import JobContext, JobRegistry
from tiered_jobs.runtime.registry import registry as default_registry

from .idempotency import MemoryIdempotency

#: What became of a run: the job's result (``succeeded``, or ``duplicate`` from the idempotency
#: store), a transient failure with attempts left (``retry``), or the letter's reason.
SUCCEEDED, DUPLICATE, RETRY = "succeeded", "duplicate", "retry"
PERMANENT, RETRIES_EXHAUSTED = DeadLetter.REASON_PERMANENT, DeadLetter.REASON_RETRIES_EXHAUSTED
OUTCOMES = (SUCCEEDED, DUPLICATE, RETRY, PERMANENT, RETRIES_EXHAUSTED)
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
        self.idempotency = MemoryIdempotency()

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
    ) -> JobRun:
        """One attempt of ``job_type``: its result, or what the consumer would do with its failure."""
        clock = _clock(remaining_ms)
        policy: JobPolicy = TIER_DEFAULTS
        retry = self.retry
        try:
            built = envelope_rules.build(job_type, payload, idempotency_key)
            definition = self.registry.get(built.type)
            policy = definition.policy
            retry = policy.on_tier(built.type, tier or self.tier, self.retry, self.retry.max_attempts)
            if definition.validate is not None:
                definition.validate(built.payload)
            ctx = JobContext(
                job_type=built.type,
                idempotency_key=built.idempotency_key,
                attempt=attempt,
                max_attempts=retry.max_attempts,
                tier=tier or self.tier,
                message_id=f"test-{built.type}-{built.idempotency_key}-{attempt}",
                logger=self.logger,
                lambda_remaining_ms=clock,
                settings=self.settings,
                client=self.client,
                time_limit_seconds=definition.time_limit_seconds,
            )

            def execute() -> Any:
                return definition.handler(built.payload, ctx)

            if definition.idempotent:
                done = self.idempotency.run(built.type, built.idempotency_key, built.payload, execute)
                result, duplicate = done.result, done.duplicate
            else:
                result, duplicate = execute(), False
        except Exception as exc:  # noqa: BLE001 -- every failure is classified, as the consumer does
            decision = decide(exc, attempt, policy, retry, self.rand)
            return JobRun(
                job_type,
                idempotency_key,
                attempt,
                retry.max_attempts,
                RETRY if decision.retry else decision.reason or PERMANENT,
                error=exc,
                classification=decision.kind,
                retry_in_seconds=decision.delay_seconds,
            )
        return JobRun(
            job_type, idempotency_key, attempt, retry.max_attempts, DUPLICATE if duplicate else SUCCEEDED, result
        )

    def run_until_settled(self, job_type: str, payload: Any, idempotency_key: str, **options: Any) -> list[JobRun]:
        """Every attempt the consumer would make, until the job succeeds or is dead-lettered (backoffs not waited)."""
        runs = [self.run(job_type, payload, idempotency_key, **options)]
        while runs[-1].outcome == RETRY:
            runs.append(self.run(job_type, payload, idempotency_key, **{**options, "attempt": runs[-1].attempt + 1}))
        return runs


def run_job(job_type: str, payload: Any, idempotency_key: str = "test-key", **options: Any) -> JobRun:
    """One attempt with a fresh :class:`JobRunner` (``options`` go to it, or to ``run``: ``attempt``, ``tier``,
    ``remaining_ms``). Keep a runner for a test that needs idempotency across runs."""
    run_options = {name: options.pop(name) for name in ("attempt", "tier", "remaining_ms") if name in options}
    return JobRunner(**options).run(job_type, payload, idempotency_key, **run_options)


def _clock(remaining_ms: Callable[[], int] | int) -> Callable[[], int]:
    """The invocation's clock: a function, or milliseconds counted down from now."""
    if callable(remaining_ms):
        return remaining_ms
    deadline = time.monotonic() + remaining_ms / 1000
    return lambda: max(0, int((deadline - time.monotonic()) * 1000))
