"""Job registry: job type -> handler. Jobs register with the :func:`job` decorator.

    from tiered_jobs.runtime.registry import job
    from tiered_jobs.runtime.errors import PermanentError

    @job("invoices.send", validate=check_payload, permanent_on=(CustomerGone,), max_attempts=3)
    def update_balance(payload: dict, ctx: JobContext) -> dict: ...

Handlers take the payload (a dict) and a :class:`JobContext`, and return a result: the
idempotency layer stores a bounded, JSON-safe form of it (``tiered_jobs/runtime/results.py``) and
returns that to duplicates.

A job finds the AWS resources it declared in ``cdk.json`` (``resources``) with ``ctx.resource(name)``:
the table name or queue URL its tier's consumer was given.

A job's own retry policy (``max_attempts``, ``retry_schedule_seconds``, ``retry_on``,
``permanent_on``, ``unexpected``) is checked when it registers: see :mod:`~tiered_jobs.runtime.job_policy`.

A long job calls ``ctx.check_time()`` between steps: it raises :class:`JobTimeout` (transient)
once the job's ``time_limit_seconds`` or the invocation's time budget is spent.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tiered_jobs.contract import payloads
from tiered_jobs.contract.envelope import JOB_TYPE_PATTERN
from tiered_jobs.contract.names import Env
from tiered_jobs.contract.probe import PROBE_TYPE, RESERVED_PREFIX, is_reserved
from tiered_jobs.contract.steps import DEFAULT_MAX_STEPS

from .errors import (
    JobTimeout,
    PayloadValidationError,
    ResourceNotConfiguredError,
    UnknownJobTypeError,
)
from .job_policy import TIER_DEFAULTS, JobPolicy
from .probe import run_probe
from .progress import DEFAULT_INTERVAL_SECONDS, discard
from .steps import Checkpoint, check_max_steps, checkpoint

Handler = Callable[[dict[str, Any], "JobContext"], Any]
#: Lambda's longest timeout: a job limit beyond it could never be reached.
MAX_TIME_LIMIT_SECONDS = 900
Validator = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class JobContext:
    """What a job may know about the run it is part of."""

    job_type: str
    idempotency_key: str
    attempt: int
    max_attempts: int
    tier: str
    message_id: str
    logger: Any
    #: The invocation's clock: Lambda's ``context.get_remaining_time_in_millis``.
    lambda_remaining_ms: Callable[[], int] = field(repr=False)
    settings: Any = None  # the TierConfig (queues, tables, the resources of cdk.json)
    client: Callable[[str], Any] = field(default=lambda service: None, repr=False)
    #: The job's own limit (``@job(..., time_limit_seconds=...)``); None: only the invocation's budget.
    time_limit_seconds: float | None = None
    #: What the consumer keeps of the invocation for itself (backoffs, metrics, the answer).
    margin_ms: int = 0
    #: Answers :meth:`cancelled` (the consumer reads the job's idempotency record; tests pass their own).
    cancel_check: Callable[[], bool] = field(default=lambda: False, repr=False)
    #: Answers :meth:`previous_result` (the consumer reads the chain's previous link's record).
    previous_result_reader: Callable[[], Any] = field(default=lambda: None, repr=False)
    #: Takes :meth:`progress`'s calls (the consumer writes them to the job's record; by default they are only checked).
    progress_sink: Callable[..., None] = field(default=discard, repr=False)
    #: This run's step (0: the published message) and the state the previous step checkpointed.
    step: int = 0
    state: Any = None
    #: The job's ``@job(max_steps=...)``.
    max_steps: int = DEFAULT_MAX_STEPS
    _started_ms: int = field(default=0, init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_started_ms", self.lambda_remaining_ms())

    def resource(self, name: str) -> str:
        """The table name or queue URL of ``name`` in ``cdk.json``'s ``resources``, as this tier's consumer has it.

        Raises :class:`ResourceNotConfiguredError` (permanent) when the consumer was not given it.
        """
        resources: Mapping[str, str] = self.settings.resources if self.settings is not None else {}
        if name in resources:
            return resources[name]
        raise ResourceNotConfiguredError(
            f"{self.job_type} needs resource {name!r}, but the {self.tier} consumer has no {Env.resource_var(name)}: "
            f"declare it in cdk.json under tiered_jobs.resources.{name} with job_types matching {self.job_type!r} "
            f"(the consumers of the tiers those job types route to get it), then deploy"
        )

    @property
    def is_last_attempt(self) -> bool:
        return self.attempt >= self.max_attempts

    def remaining_time_ms(self) -> int:
        """Milliseconds this job may still use: the invocation's remaining time less the tier's
        safety margin, and no more than what is left of the job's ``time_limit_seconds``."""
        now = self.lambda_remaining_ms()
        left: float = now - self.margin_ms
        if self.time_limit_seconds is not None:
            left = min(left, self.time_limit_seconds * 1000 - (self._started_ms - now))
        return max(0, int(left))

    def cancelled(self) -> bool:
        """Has someone cancelled this job since it started (``tiered-jobs cancel``)? One read of its
        idempotency record per call, so a long job asks between steps, not in a tight loop. Nothing
        stops a job that does not ask: what it does on ``True`` (stop, undo, finish) is its own choice."""
        return self.cancel_check()

    def previous_result(self) -> Any:
        """In a chain (``publisher.chain(a, b, c)``), the stored result of the link before this one, as
        its idempotency record keeps it; ``None`` for the first link or a job outside a chain. Two reads
        per call (the chain's item, then that record), so a job asks once."""
        return self.previous_result_reader()

    def progress(self, done: int, total: int, note: str = "") -> None:
        """Say how far the job is: ``done`` of ``total`` (whole numbers, ``0 <= done <= total``), and a
        note (cut at 200 characters). Stored in the job's idempotency record at most once per
        ``@job(progress_every_seconds=...)`` (5 s): calls in between are coalesced, the last one is
        written when the job returns. ``tiered-jobs job``, the console and ``Publisher.get_status`` show it."""
        self.progress_sink(done, total, note)

    def checkpoint(self, state: Any) -> Checkpoint:
        """End this step and continue in a fresh invocation: ``return ctx.checkpoint({"cursor": 42})``.
        The job runs again under the same key as step ``ctx.step + 1``, with ``ctx.state`` this state
        (JSON, at most 16 KiB): not an attempt. Raises at once when the state is not JSON or too big."""
        return checkpoint(self.step, state)

    def check_time(self) -> None:
        """Raise :class:`JobTimeout` (transient: retried with backoff) when no time is left."""
        if self.remaining_time_ms() > 0:
            return
        if (
            self.time_limit_seconds is not None
            and self._started_ms - self.lambda_remaining_ms() >= self.time_limit_seconds * 1000
        ):
            raise JobTimeout(f"{self.job_type} ran past its time limit of {self.time_limit_seconds:g} s")
        raise JobTimeout(
            f"{self.job_type} ran out of the invocation's time "
            f"(less than {self.margin_ms} ms left of the function's timeout)"
        )


@dataclass(frozen=True)
class JobDefinition:
    """A registered job type: its handler and what ``@job`` said about it."""

    type: str
    handler: Handler
    validate: Validator | None = None
    #: Its retry policy: attempts, backoff, which of its exceptions are retried (its tier's by default).
    policy: JobPolicy = TIER_DEFAULTS
    #: Run under Powertools idempotency (True for every job with a side effect).
    idempotent: bool = True
    #: ``ctx.check_time()`` raises :class:`JobTimeout` once the job has run this long.
    time_limit_seconds: float | None = None
    #: Least seconds between two writes of its ``ctx.progress`` (runtime/progress.py).
    progress_every_seconds: float = DEFAULT_INTERVAL_SECONDS
    #: Most steps it may take (``ctx.checkpoint``), step 0 included: past it, ``too_many_steps``.
    max_steps: int = DEFAULT_MAX_STEPS


#: The probe as the consumer runs it (contract/probe.py): no payload rule (it carries none), the tier's
#: attempts, idempotent.
PROBE = JobDefinition(PROBE_TYPE, run_probe, validate=None, policy=TIER_DEFAULTS, idempotent=True)


class JobRegistry:
    """The job types a tier knows (``@job``), each with its definition, imported per prefix on demand."""

    def __init__(self) -> None:
        self._jobs: dict[str, JobDefinition] = {}
        #: Imports the module of a type not registered yet (``job_modules.JobModules``: one module per
        #: prefix, so a tier imports only what it is sent); it may raise ``JobModuleError`` (transient).
        self.loader: Callable[[str], None] | None = None

    def job(
        self,
        job_type: str,
        *,
        validate: Validator | None = None,
        permanent_on: tuple[type[BaseException], ...] = (),
        retry_on: tuple[type[BaseException], ...] = (),
        max_attempts: int | None = None,
        retry_schedule_seconds: tuple[int, ...] | list[int] | None = None,
        unexpected: str = "retry",
        idempotent: bool = True,
        time_limit_seconds: float | None = None,
        permanent: tuple[type[BaseException], ...] = (),
        progress_every_seconds: float = DEFAULT_INTERVAL_SECONDS,
        max_steps: int = DEFAULT_MAX_STEPS,
    ) -> Callable[[Handler], Handler]:
        """Register a job type. ``permanent`` is the older name of ``permanent_on`` (both are kept)."""
        if not JOB_TYPE_PATTERN.match(job_type):
            raise ValueError(f"job type {job_type!r} must match {JOB_TYPE_PATTERN.pattern}")
        if is_reserved(job_type):
            raise ValueError(
                f"job type {job_type!r} is reserved: types under {RESERVED_PREFIX!r} belong to the library "
                f"(its probe, {PROBE_TYPE!r}); name yours after your own domain, e.g. 'invoices.send'"
            )
        if time_limit_seconds is not None and not (
            isinstance(time_limit_seconds, (int, float))
            and not isinstance(time_limit_seconds, bool)
            and 0 < time_limit_seconds <= MAX_TIME_LIMIT_SECONDS
        ):
            raise ValueError(
                f"job type {job_type!r}: time_limit_seconds must be a number of seconds in "
                f"(0, {MAX_TIME_LIMIT_SECONDS}] (Lambda's longest timeout), got {time_limit_seconds!r}"
            )
        if not (
            isinstance(progress_every_seconds, (int, float))
            and not isinstance(progress_every_seconds, bool)
            and 0 <= progress_every_seconds <= MAX_TIME_LIMIT_SECONDS
        ):
            raise ValueError(
                f"job type {job_type!r}: progress_every_seconds must be a number of seconds from 0 to "
                f"{MAX_TIME_LIMIT_SECONDS}, got {progress_every_seconds!r}"
            )
        check_max_steps(job_type, max_steps)
        if permanent and permanent_on:
            raise ValueError(f"@job({job_type!r}): give permanent_on only (permanent is its older name)")
        policy = JobPolicy.declare(
            job_type,
            max_attempts=max_attempts,
            retry_schedule_seconds=retry_schedule_seconds,
            retry_on=retry_on,
            permanent_on=permanent_on or permanent,
            unexpected=unexpected,
        )

        def register(handler: Handler) -> Handler:
            if job_type in self._jobs:
                raise ValueError(f"job type {job_type!r} is registered twice")
            self._jobs[job_type] = JobDefinition(
                job_type,
                handler,
                with_payload_schema(job_type, validate),
                policy,
                idempotent,
                time_limit_seconds,
                progress_every_seconds=progress_every_seconds,
                max_steps=max_steps,
            )
            return handler

        return register

    def get(self, job_type: str) -> JobDefinition:
        if job_type == PROBE_TYPE:  # the library's own, before the app's types (contract/probe.py)
            return PROBE
        if job_type not in self._jobs and self.loader is not None:
            self.loader(job_type)  # its module failed to import: that error, not "unknown"
        try:
            return self._jobs[job_type]
        except KeyError:
            raise UnknownJobTypeError(
                f"unknown job type {job_type!r}; registered: {', '.join(sorted(self._jobs)) or '(none)'}"
            ) from None

    def types(self) -> list[str]:
        return sorted(self._jobs)

    def forget(self, job_types: set[str]) -> None:
        """Drop types a module registered before its import failed: none of its half-built handlers runs."""
        for job_type in job_types:
            self._jobs.pop(job_type, None)

    def __contains__(self, job_type: object) -> bool:
        if job_type == PROBE_TYPE:
            return True
        if job_type not in self._jobs and self.loader is not None and isinstance(job_type, str):
            try:
                self.loader(job_type)
            except Exception:  # noqa: BLE001 -- not registered now; get() raises the loader's reason
                return False
        return job_type in self._jobs


#: The registry the consumer uses; an app's job modules register into it with ``@job``.
registry = JobRegistry()
job = registry.job


def with_payload_schema(job_type: str, validate: Validator | None) -> Validator:
    """The payload's JSON Schema (when one is found), then the job's own hook.

    The schema is the one source of the payload's rules: the publisher checks the same file before
    sending. A job's own ``validate`` is for what a schema cannot say (e.g. a look-up).

    Whether the type has a schema is decided when a payload is checked, not when the job registers:
    the job folder's ``schemas/`` may be added after its modules are imported, and ``@job`` runs
    during that import. The look-up is cached per search path (``payloads``), so this costs one
    dictionary hit per payload.
    """

    def check(payload: dict[str, Any]) -> None:
        problems = payloads.problems(job_type, payload)
        if problems:
            raise PayloadValidationError("; ".join(problems))
        if validate is not None:
            validate(payload)

    return check
