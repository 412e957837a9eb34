"""Publish jobs from any service in one line, correctly.

    from tiered_jobs.publisher import publish
    publish("payments.update_balance", {"account_id": "acc_1", "amount": 500}, "pay_123")

What a publish guarantees:

- **Validated before anything is sent**: the envelope v1 rules (the same ones the consumer and
  ``envelope.schema.json`` apply), the job type's payload schema when the contract ships one
  (``contract/schemas/<type>.schema.json``, applied by the consumer too), a JSON-serialisable
  payload, only characters SQS accepts (no control characters, lone surrogates, U+FFFE, U+FFFF),
  a message within SQS's 1 MiB, a routable job type, a known tier, a delay SQS accepts.
  A batch with one bad job sends nothing.
- **Routed** by the stack's own routing table (an explicit ``tier=`` overrides it).
- **Batched**: per tier, ``SendMessageBatch`` calls of at most 10 entries and 1 MiB.
- **Later**: ``at=`` (an aware datetime) or a ``delay`` beyond SQS's 15 minutes becomes a
  one-time EventBridge Scheduler schedule (``tiered_jobs.scheduling``), cancellable with
  :meth:`Publisher.cancel`; within 15 minutes SQS's own message delay is used.
- **Never a silent drop**: entries SQS reports failed are retried (only those, exponential
  backoff with full jitter); senders' faults are not retried. If anything still failed,
  :class:`PublishError` names every such job and carries every entry's :class:`PublishResult`.
  Publishing the same job again is always safe: the consumer is idempotent on the key.

The publisher needs boto3 and the contract only (no CDK, nothing from ``functions/``).
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, fields
from datetime import datetime, timedelta, timezone
from random import random as _unit_random
from typing import Any

from . import discovery, scheduling
from .contract import envelope, payloads
from .contract.names import SQS_MAX_DELAY_SECONDS, SQS_MAX_MESSAGE_BYTES, Env
from .contract.routing import Routes, UnknownRouteError
from .contract.sqs_limits import disallowed_character_problem, message_size, pack_batches

__all__ = [
    "InvalidJobError", "Job", "PublishError", "PublishResult", "Publisher", "RetryPolicy",
    "cancel", "configure", "default_publisher", "publish", "publish_batch",
]


class InvalidJobError(ValueError):
    """One or more jobs refused before anything was sent: fix the call, retrying won't help.

    ``problems`` holds one readable sentence per problem, each naming its job.
    """

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        super().__init__("nothing was published: " + "; ".join(self.problems))


@dataclass(frozen=True)
class Job:
    """One job to publish (``publish_batch`` also takes dicts with these keys)."""

    job_type: str
    payload: Mapping[str, Any]
    idempotency_key: str
    #: Overrides the routing table.
    tier: str | None = None
    #: Seconds (or a ``timedelta``, rounded up) before the job runs; beyond 900 it is scheduled.
    delay: int | timedelta | None = None
    #: When the job should run (an aware datetime); not with ``delay``.
    at: datetime | None = None
    #: Whom the job is for: the envelope's ``tenant`` and the message's ``MessageGroupId`` (SQS
    #: fair queues). 1-128 letters, digits or ASCII punctuation.
    tenant: str | None = None

    def describe(self) -> str:
        key = self.idempotency_key
        if isinstance(key, str) and len(key) > 60:  # an over-long key must not flood the message
            key = f"{key[:40]}…({len(key)} characters)"
        return f"{self.job_type} (key {key!r})"


@dataclass(frozen=True)
class PublishResult:
    """What happened to one job: a ``message_id`` when SQS accepted it, else the last error."""

    job: Job
    tier: str
    queue_url: str
    message_id: str | None = None
    #: ``SendMessageBatch`` calls that carried this job.
    attempts: int = 0
    error_code: str | None = None
    error_message: str | None = None
    #: SQS blamed the request itself (not retried: sending it again would fail the same way).
    sender_fault: bool = False
    #: A job for later: the one-time schedule that will send it, and when.
    schedule_name: str | None = None
    fire_at: datetime | None = None
    #: The schedule existed already (an earlier publish of the same job): nothing new was created.
    already_scheduled: bool = False

    @property
    def ok(self) -> bool:
        return self.message_id is not None or self.schedule_name is not None

    def describe(self) -> str:
        if self.schedule_name is not None:
            state = "already scheduled" if self.already_scheduled else "scheduled"
            when = self.fire_at.isoformat() if self.fire_at else "?"
            return f"{self.job.describe()} -> {self.tier}: {state} for {when} ({self.schedule_name})"
        if self.ok:
            return f"{self.job.describe()} -> {self.tier}: message {self.message_id}"
        return (
            f"{self.job.describe()} -> {self.tier}: {self.error_code}: {self.error_message} "
            f"(after {self.attempts} attempt{'s' if self.attempts != 1 else ''})"
        )


class PublishError(Exception):
    """Some jobs were not accepted by SQS. ``results`` has every job's outcome, in input order.

    The others *were* published; publishing the failed ones again (same keys) is safe.
    """

    def __init__(self, results: list[PublishResult]):
        self.results = list(results)
        failed = self.failed
        super().__init__(
            f"{len(failed)} of {len(self.results)} job(s) not published: "
            + "; ".join(result.describe() for result in failed)
        )

    @property
    def failed(self) -> list[PublishResult]:
        return [result for result in self.results if not result.ok]


@dataclass(frozen=True)
class RetryPolicy:
    """Retries of the entries SQS reports failed inside a successful ``SendMessageBatch`` call.

    Whole-call errors (throttling, 5xx, connection resets) are botocore's to retry, configured
    the usual way (``AWS_MAX_ATTEMPTS``, ``AWS_RETRY_MODE``); they are not retried twice here.
    Defaults: 4 attempts, waits drawn from [0, 0.1 s], [0, 0.2 s], [0, 0.4 s] ("full jitter").
    """

    max_attempts: int = 4
    base_seconds: float = 0.1
    max_seconds: float = 5.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {self.max_attempts}")
        if not 0 <= self.base_seconds <= self.max_seconds:
            raise ValueError(
                f"need 0 <= base_seconds <= max_seconds, got {self.base_seconds} and {self.max_seconds}"
            )

    def wait(self, attempt: int, unit_random: float) -> float:
        """Seconds to wait after failed attempt ``attempt`` (1-based); ``unit_random`` is in [0, 1)."""
        return unit_random * min(self.max_seconds, self.base_seconds * 2 ** (attempt - 1))


@dataclass(frozen=True)
class _Prepared:
    """A validated job: its body is final and its queue known."""

    index: int
    job: Job
    tier: str
    queue_url: str
    body: str
    size: int
    delay_seconds: int
    #: Set when the job goes through a one-time schedule instead of SQS's delay.
    fire_at: datetime | None = None


class Publisher:
    """Publishes jobs to a deployment's tier queues.

    Build it once per process (it is thread-safe as far as boto3 clients are) from
    :meth:`from_stage`, :meth:`from_stack_outputs`, :meth:`from_env`, or explicit URLs.
    ``sleep`` and ``random`` are injectable so tests never wait.
    """

    def __init__(
        self,
        queues: Mapping[str, str],
        routes: Routes,
        *,
        sqs: Any = None,
        retry: RetryPolicy = RetryPolicy(),
        sleep: Callable[[float], None] = time.sleep,
        random: Callable[[], float] = _unit_random,
        scheduling: scheduling.SchedulingTarget | Callable[[], scheduling.SchedulingTarget] | None = None,
        scheduler: Any = None,
        schedule_beyond_seconds: int = SQS_MAX_DELAY_SECONDS,
        clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
    ):
        """``scheduling``: where one-time jobs go (or a function that looks it up on first need);
        ``scheduler``: an EventBridge Scheduler client; ``schedule_beyond_seconds``: jobs due later
        than this go through a one-time schedule (0-900; lower it to make every later job cancellable)."""
        if not queues:
            raise ValueError("a publisher needs the queue URL of at least one tier")
        self.queues = dict(queues)
        self.routes = routes
        self.retry = retry
        self._sqs = sqs
        self._sleep = sleep
        self._random = random
        if not 0 <= schedule_beyond_seconds <= SQS_MAX_DELAY_SECONDS:
            raise ValueError(f"schedule_beyond_seconds must be 0-{SQS_MAX_DELAY_SECONDS}, got {schedule_beyond_seconds}")
        self.schedule_beyond_seconds = schedule_beyond_seconds
        self._scheduling = scheduling
        self._scheduler = scheduler
        self._clock = clock

    @classmethod
    def from_deployment(cls, deployment: discovery.Deployment, **options: Any) -> Publisher:
        return cls(deployment.queue_urls(), deployment.routes, **options)

    @classmethod
    def from_stage(cls, stage: str, *, ssm: Any = None, sqs: Any = None, **options: Any) -> Publisher:
        """From the SSM parameters the stack writes for ``stage`` (needs ``ssm:GetParameters``)."""
        options.setdefault("scheduling", lambda: scheduling.from_ssm(stage, ssm=ssm))
        return cls.from_deployment(discovery.from_ssm(stage, ssm=ssm), sqs=sqs, **options)

    @classmethod
    def from_stack_outputs(
        cls, stack_name: str, *, cloudformation: Any = None, sqs: Any = None, **options: Any
    ) -> Publisher:
        """From the outputs of CloudFormation stack ``stack_name`` (needs ``cloudformation:DescribeStacks``)."""
        deployment = discovery.from_stack_outputs(stack_name, cloudformation=cloudformation)
        options.setdefault("scheduling", lambda: scheduling.from_stack_outputs(
            stack_name, list(deployment.tiers), cloudformation=cloudformation))
        return cls.from_deployment(deployment, sqs=sqs, **options)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, *, sqs: Any = None, **options: Any) -> Publisher:
        """From ``TIERED_JOBS_QUEUE_URL_<TIER>`` and ``TIERED_JOBS_ROUTES``: no AWS look-up."""
        options.setdefault("scheduling", lambda: scheduling.from_env(environ))
        return cls.from_deployment(discovery.from_env(environ), sqs=sqs, **options)

    @property
    def sqs(self) -> Any:
        if self._sqs is None:
            import boto3

            self._sqs = boto3.client("sqs")
        return self._sqs

    @property
    def scheduler(self) -> Any:
        if self._scheduler is None:
            import boto3

            self._scheduler = boto3.client("scheduler")
        return self._scheduler

    def scheduling_target(self) -> scheduling.SchedulingTarget:
        """Where one-time jobs go, looked up on first use (``DiscoveryError`` if not configured)."""
        if self._scheduling is None:
            raise discovery.DiscoveryError(
                "this publisher has no scheduling configured: build it with Publisher.from_stage(...), or pass "
                "scheduling=tiered_jobs.scheduling.from_ssm(stage)"
            )
        if callable(self._scheduling):
            self._scheduling = self._scheduling()
        return self._scheduling

    def one_time_jobs(self) -> scheduling.OneTimeJobs:
        return scheduling.OneTimeJobs(self.scheduling_target(), self.scheduler)

    def cancel(self, job_type: str, idempotency_key: str) -> bool:
        """Remove a job scheduled for later; ``False`` if none is pending (never scheduled, or already sent).

        Jobs sent with SQS's own delay (15 minutes or less) cannot be cancelled.
        """
        return self.one_time_jobs().cancel(job_type, idempotency_key)

    def publish(
        self,
        job_type: str,
        payload: Mapping[str, Any],
        idempotency_key: str,
        *,
        tier: str | None = None,
        delay: int | timedelta | None = None,
        at: datetime | None = None,
        tenant: str | None = None,
    ) -> PublishResult:
        """Publish one job; raise :class:`InvalidJobError` or :class:`PublishError` if it was not."""
        return self.publish_batch([Job(job_type, payload, idempotency_key, tier, delay, at, tenant)])[0]

    def publish_batch(self, jobs: Iterable[Job | Mapping[str, Any]]) -> list[PublishResult]:
        """Publish many jobs with as few calls as SQS allows; results are in input order.

        All jobs are validated first (:class:`InvalidJobError` names every bad one; nothing is
        sent). If any job is still not accepted after retries, :class:`PublishError` is raised
        once every chunk has been tried; its ``__cause__`` is the first client error, if any.
        """
        prepared = self._prepare_all(jobs)
        results: dict[int, PublishResult] = {}
        first_error: Exception | None = None
        later = [item for item in prepared if item.fire_at is not None]
        one_time = self.one_time_jobs() if later else None  # a missing configuration fails before any send
        for item in later:
            result, error = self._schedule(one_time, item)
            results[item.index] = result
            first_error = first_error or error
        for chunk in _chunks([item for item in prepared if item.fire_at is None]):
            chunk_results, error = self._send_chunk(chunk)
            results.update(chunk_results)
            first_error = first_error or error
        ordered = [results[item.index] for item in prepared]
        if any(not result.ok for result in ordered):
            raise PublishError(ordered) from first_error
        return ordered

    def validate(self, job: Job | Mapping[str, Any]) -> None:
        """Raise :class:`InvalidJobError` if ``job`` would be refused (e.g. before a commit)."""
        self._prepare_all([job])

    def tier_for(self, job_type: str, tier: str | None = None) -> str:
        """The tier a job goes to: ``tier`` if given (and known), else the routing table's."""
        chosen = tier if tier is not None else self.routes.tier_for(job_type)
        if chosen not in self.queues:
            raise discovery.UnknownTierError(chosen, list(self.queues))
        return chosen

    # -- validation ---------------------------------------------------------------------------

    def _prepare_all(self, jobs: Iterable[Job | Mapping[str, Any]]) -> list[_Prepared]:
        prepared: list[_Prepared] = []
        problems: list[str] = []
        items = list(jobs)
        for index, item in enumerate(items):
            label = f"job #{index}" if len(items) > 1 else "job"
            try:
                job = _as_job(item)
                prepared.append(self._prepare(index, job))
            except InvalidJobError as exc:
                problems.extend(f"{label} {problem}" for problem in exc.problems)
        if problems:
            raise InvalidJobError(problems)
        return prepared

    def _prepare(self, index: int, job: Job) -> _Prepared:
        """Check everything about one job that SQS or the consumer would refuse."""
        problems: list[str] = []
        unserialisable = _unserialisable(job.payload) if isinstance(job.payload, dict) else None
        if unserialisable:
            problems.append(unserialisable)
        built = None
        try:
            built = envelope.build(job.job_type, job.payload, job.idempotency_key,  # type: ignore[arg-type]
                                   tenant=job.tenant)
        except envelope.EnvelopeError as exc:
            problems.extend(exc.problems)
        if built is not None:  # the job type's payload schema, if the contract ships one
            problems.extend(payloads.problems(built.type, built.payload))
        tier = queue_url = ""
        try:
            if isinstance(job.job_type, str):  # else the envelope check has said so
                tier = self.tier_for(job.job_type, job.tier)
                queue_url = self.queues[tier]
        except UnknownRouteError as exc:
            problems.append(str(exc))
        except discovery.UnknownTierError as exc:
            problems.append(f"{exc}" if job.tier is not None else f"{exc} (routed by the table)")
        delay_seconds, fire_at = 0, None
        try:
            delay_seconds, fire_at = self._timing(job)
        except ValueError as exc:
            problems.append(str(exc))
        body, size = "", 0
        if built is not None and not unserialisable:
            body = built.to_json()  # what is sent: non-ASCII characters as themselves, not escaped
            refused = disallowed_character_problem(body, "the message body")
            if refused:  # the envelope's fields are checked one by one already: a last guard on what is sent
                problems.append(refused)
            size = 0 if refused else message_size(body)
            if size > SQS_MAX_MESSAGE_BYTES:
                problems.append(
                    f"the message is {size} bytes, over SQS's {SQS_MAX_MESSAGE_BYTES}-byte limit; "
                    "pass IDs, not objects"
                )
        if problems:
            raise InvalidJobError([f"{job.describe()}: {problem}" for problem in problems])
        return _Prepared(index, job, tier, queue_url, body, size, delay_seconds, fire_at)

    def _timing(self, job: Job) -> tuple[int, datetime | None]:
        """``(SQS delay seconds, None)`` for a job due within ``schedule_beyond_seconds``, else ``(0, fire time)``."""
        if job.at is not None and job.delay is not None:
            raise ValueError("give either delay or at, not both")
        now = self._clock()
        if job.at is not None:
            problem = scheduling.fire_time_problem(job.at, now)
            if problem:
                raise ValueError(problem)
            seconds = math.ceil((job.at - now).total_seconds())
            fire_at = job.at
        else:
            seconds = _delay_seconds(job.delay)
            fire_at = now + timedelta(seconds=seconds)
            problem = scheduling.fire_time_problem(fire_at, now) if seconds > SQS_MAX_DELAY_SECONDS else None
            if problem:
                raise ValueError(f"delay {seconds} s: {problem}")
        if seconds <= self.schedule_beyond_seconds:
            return seconds, None
        return 0, fire_at

    def _schedule(self, one_time: scheduling.OneTimeJobs | None, item: _Prepared) -> tuple[PublishResult, Exception | None]:
        """Create the job's one-time schedule (an existing one means it was scheduled before)."""
        from botocore.exceptions import BotoCoreError, ClientError

        assert one_time is not None and item.fire_at is not None
        try:
            done = one_time.create(job_type=item.job.job_type, idempotency_key=item.job.idempotency_key,
                                   tier=item.tier, fire_at=item.fire_at, body=item.body)
        except (BotoCoreError, ClientError, discovery.DiscoveryError) as exc:
            code = exc.response["Error"].get("Code", "") if isinstance(exc, ClientError) else type(exc).__name__
            return _result(item, 1, error_code=code, error_message=str(exc)), exc
        return _result(item, 1, schedule_name=done.schedule_name, fire_at=done.fire_at,
                       already_scheduled=done.already_scheduled), None

    # -- sending ------------------------------------------------------------------------------

    def _send_chunk(self, chunk: list[_Prepared]) -> tuple[dict[int, PublishResult], Exception | None]:
        """Send one chunk (one queue, ≤ 10 entries, ≤ 1 MiB), retrying only failed entries."""
        from botocore.exceptions import BotoCoreError, ClientError

        results: dict[int, PublishResult] = {}
        pending = chunk
        attempt = 0
        while pending:
            attempt += 1
            by_id = {str(item.index): item for item in pending}
            try:
                response = self.sqs.send_message_batch(
                    QueueUrl=pending[0].queue_url,
                    Entries=[_entry(entry_id, item) for entry_id, item in by_id.items()],
                )
            except (BotoCoreError, ClientError) as exc:
                # botocore has already retried what is worth retrying. A timeout leaves the
                # outcome unknown; publishing again is safe because the key makes it idempotent.
                code = exc.response["Error"].get("Code", "") if isinstance(exc, ClientError) else type(exc).__name__
                for item in pending:
                    results[item.index] = _result(item, attempt, error_code=code, error_message=str(exc))
                return results, exc
            for entry in response.get("Successful", []):
                item = by_id.pop(entry["Id"])
                results[item.index] = _result(item, attempt, message_id=entry["MessageId"])
            retry: list[_Prepared] = []
            for entry in response.get("Failed", []):
                item = by_id.pop(entry["Id"])
                if entry.get("SenderFault") or attempt >= self.retry.max_attempts:
                    results[item.index] = _result(
                        item, attempt, error_code=entry.get("Code", ""), error_message=entry.get("Message", ""),
                        sender_fault=bool(entry.get("SenderFault")),
                    )
                else:
                    retry.append(item)
            for item in by_id.values():  # neither Successful nor Failed: never assume it was sent
                results[item.index] = _result(
                    item, attempt, error_code="Unreported", error_message="SQS did not report this entry"
                )
            if retry:
                self._sleep(self.retry.wait(attempt, self._random()))
            pending = retry
        return results, None


def _entry(entry_id: str, item: _Prepared) -> dict[str, Any]:
    entry: dict[str, Any] = {"Id": entry_id, "MessageBody": item.body, "DelaySeconds": item.delay_seconds}
    if item.job.tenant is not None:
        # A standard queue with message group ids is an SQS fair queue; nothing FIFO is implied
        # (no MessageDeduplicationId, no ordering: the idempotency key deduplicates).
        entry["MessageGroupId"] = item.job.tenant
    return entry


def _result(item: _Prepared, attempts: int, **outcome: Any) -> PublishResult:
    return PublishResult(item.job, item.tier, item.queue_url, attempts=attempts, **outcome)


def _chunks(prepared: list[_Prepared]) -> Iterator[list[_Prepared]]:
    """Per queue (in first-seen order), greedy chunks of ≤ 10 entries and ≤ 1 MiB in all."""
    by_queue: dict[str, list[_Prepared]] = {}
    for item in prepared:
        by_queue.setdefault(item.queue_url, []).append(item)
    for items in by_queue.values():
        yield from pack_batches(items, lambda item: item.size)


_JOB_FIELDS = tuple(f.name for f in fields(Job))


def _as_job(item: Job | Mapping[str, Any]) -> Job:
    if isinstance(item, Job):
        return item
    if not isinstance(item, Mapping):
        raise InvalidJobError([f"must be a Job or a dict with keys {', '.join(_JOB_FIELDS)}, got {type(item).__name__}"])
    unknown = sorted(set(item) - set(_JOB_FIELDS))
    missing = [name for name in ("job_type", "payload", "idempotency_key") if name not in item]
    if unknown or missing:
        problems = [f"has unknown key(s) {', '.join(map(repr, unknown))}"] if unknown else []
        problems += [f"lacks key(s) {', '.join(map(repr, missing))}"] if missing else []
        raise InvalidJobError([f"{'; '.join(problems)} (keys: {', '.join(_JOB_FIELDS)})"])
    return Job(**item)


def _delay_seconds(delay: int | timedelta | None) -> int:
    if delay is None:
        return 0
    if isinstance(delay, timedelta):
        seconds = math.ceil(delay.total_seconds())
    elif isinstance(delay, int) and not isinstance(delay, bool):
        seconds = delay
    else:
        raise ValueError(f"delay must be whole seconds (int) or a timedelta, got {type(delay).__name__}")
    if seconds < 0:
        raise ValueError(f"delay must be 0 seconds or more, got {seconds}")
    return seconds


def _unserialisable(value: Any, path: str = "payload", _open: frozenset[int] = frozenset()) -> str | None:
    """The first part of ``value`` that JSON cannot carry faithfully, described; ``None`` if all can."""
    if value is None or isinstance(value, (str, bool, int)):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{path} is {value!r}, which JSON cannot represent"
    if isinstance(value, (dict, list, tuple)):
        if id(value) in _open:
            return f"{path} contains itself (a circular reference)"
        inner = _open | {id(value)}
        if isinstance(value, dict):
            for key, item in value.items():
                if not isinstance(key, str):
                    return f"{path} has the key {key!r} ({type(key).__name__}); JSON object keys must be strings"
                found = _unserialisable(item, f"{path}[{key!r}]", inner)
                if found:
                    return found
        else:
            for position, item in enumerate(value):
                found = _unserialisable(item, f"{path}[{position}]", inner)
                if found:
                    return found
        return None
    return (
        f"{path} is a {type(value).__qualname__}, which is not JSON-serialisable "
        "(send a str, number, bool, None, list or dict: e.g. an ISO date string, a Decimal as a string)"
    )


# -- the default publisher, for the one-line calls --------------------------------------------

_default: Publisher | None = None
_default_lock = threading.Lock()


def default_publisher() -> Publisher:
    """The process-wide publisher, built on first use from the environment.

    ``TIERED_JOBS_QUEUE_URL_<TIER>`` variables (with ``TIERED_JOBS_ROUTES``) win; otherwise
    ``TIERED_JOBS_STAGE`` names the stage whose SSM parameters are read. :func:`configure` sets it
    explicitly instead.
    """
    global _default
    with _default_lock:
        if _default is None:
            if discovery.queue_urls_in_env(os.environ):
                _default = Publisher.from_env()
            elif os.environ.get(Env.STAGE):
                _default = Publisher.from_stage(os.environ[Env.STAGE])
            else:
                raise discovery.DiscoveryError(
                    f"no publisher configured: set {Env.STAGE} (the stage whose SSM parameters name the "
                    f"queues), or {Env.tier_var(Env.QUEUE_URL, '<tier>')} and {Env.ROUTES}, "
                    "or call tiered_jobs.publisher.configure(Publisher(...))"
                )
        return _default


def configure(publisher: Publisher | None) -> None:
    """Set the publisher the module-level functions use (``None``: rebuild from the environment)."""
    global _default
    with _default_lock:
        _default = publisher


def publish(
    job_type: str,
    payload: Mapping[str, Any],
    idempotency_key: str,
    *,
    tier: str | None = None,
    delay: int | timedelta | None = None,
    at: datetime | None = None,
    tenant: str | None = None,
) -> PublishResult:
    """:meth:`Publisher.publish` on the :func:`default_publisher`."""
    return default_publisher().publish(job_type, payload, idempotency_key, tier=tier, delay=delay, at=at, tenant=tenant)


def cancel(job_type: str, idempotency_key: str) -> bool:
    """:meth:`Publisher.cancel` on the :func:`default_publisher`."""
    return default_publisher().cancel(job_type, idempotency_key)


def publish_batch(jobs: Iterable[Job | Mapping[str, Any]]) -> list[PublishResult]:
    """:meth:`Publisher.publish_batch` on the :func:`default_publisher`."""
    return default_publisher().publish_batch(jobs)
