"""The :class:`Publisher`: validates every job first, routes it, then sends per tier in
``SendMessageBatch`` calls (or through a one-time schedule), re-sending the entries SQS reports
failed. See :mod:`tiered_jobs.publisher` for what a publish guarantees."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from operator import attrgetter
from random import random as _unit_random
from typing import Any

from ..contract import envelope, payloads, unique
from ..contract import trace_header as traces
from ..contract.job_status import JobStatus
from ..contract.large_payloads import Offload
from ..contract.names import SQS_MAX_BATCH_ENTRIES, SQS_MAX_DELAY_SECONDS, SQS_MAX_MESSAGE_BYTES, Env
from ..contract.routing import Routes, UnknownRouteError
from ..contract.schedules import MAX_DEBOUNCE_SECONDS, debounced_run_key, debounced_run_key_problem, one_time_problems
from ..contract.sqs_limits import (
    MAX_JOB_MESSAGE_BYTES,
    RUNTIME_ATTRIBUTES_HEADROOM_BYTES,
    disallowed_character_problem,
    message_size,
    pack_batches,
)
from ..stage import cancelling, discovery, scheduling
from . import large_payloads as offloading
from .batches import Batch, Callback, ChainResult, Link, open_chain
from .deadline import deadline_text
from .errors import InvalidJobError, PublishError
from .models import (
    Job,
    Prepared,
    PublishResult,
    ResendPolicy,
    as_job,
    delay_in_seconds,
    sent_result,
    unserialisable,
    window_in_seconds,
)
from .plain import PlainJobs
from .unique import LockOutcome, UniqueLocks

#: Job types whose tier a publisher keeps (a service publishes a few; the rest are matched each time).
_MAX_ROUTED_TYPES = 1024


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
        resend: ResendPolicy = ResendPolicy(),
        sleep: Callable[[float], None] = time.sleep,
        random: Callable[[], float] = _unit_random,
        scheduling: scheduling.SchedulingTarget | Callable[[], scheduling.SchedulingTarget] | None = None,
        scheduler: Any = None,
        schedule_beyond_seconds: int = SQS_MAX_DELAY_SECONDS,
        clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
        unique_table: str | None = None,
        dynamodb: Any = None,
        cancel_marks: cancelling.MarkTarget | Callable[[], cancelling.MarkTarget] | None = None,
        batch_table: str | None = None,
        trace_context: Callable[[], str | None] | None = traces.from_environment,
        large_payloads: Mapping[str, Offload] | None = None,
        s3: Any = None,
        idempotency_table: str | None = None,
    ):
        """``scheduling``: where one-time jobs go (or a function that looks it up on first need);
        ``scheduler``: an EventBridge Scheduler client; ``schedule_beyond_seconds``: jobs due later
        than this go through a one-time schedule (0-900; lower it to make every later job cancellable);
        ``unique_table``: the stage's unique-jobs table (``unique_for=``), ``dynamodb`` its client;
        ``cancel_marks``: where :meth:`cancel` writes a queued job's cancel marker (or a function that
        looks it up on first need; ``None``: only scheduled jobs can be cancelled); ``trace_context``: the
        caller's current trace header, for jobs that do not name one (``trace_header=``); by default the
        Lambda invocation's ``_X_AMZN_TRACE_ID``, ``None``: jobs carry only the header they name;
        ``large_payloads``: per tier, the stage's bucket and the size above which a body is stored there
        (``tiered_jobs.publisher.large_payloads``), ``s3`` its client."""
        if not queues:
            raise ValueError("a publisher needs the queue URL of at least one tier")
        self.queues = dict(queues)
        self.routes = routes
        #: The routing table and the tier it gave each type (:meth:`_route`).
        self._routed: tuple[Routes, dict[str, str]] = (routes, {})
        self.resend = resend
        self._sqs = sqs
        self._sleep = sleep
        self._random = random
        if not 0 <= schedule_beyond_seconds <= SQS_MAX_DELAY_SECONDS:
            raise ValueError(
                f"schedule_beyond_seconds must be 0-{SQS_MAX_DELAY_SECONDS}, got {schedule_beyond_seconds}"
            )
        self.schedule_beyond_seconds = schedule_beyond_seconds
        self._scheduling = scheduling
        self._scheduler = scheduler
        self._clock = clock
        self.unique_table = unique_table
        self._cancel_marks = cancel_marks
        #: The stage's batches table (:meth:`batch`, :meth:`chain`; its client is ``dynamodb``).
        self.batch_table = batch_table
        self._trace_context = trace_context
        self.large_payloads = dict(large_payloads or {})
        self._s3 = s3
        self._dynamodb = dynamodb
        #: The stage's idempotency table: :meth:`get_status` reads a job's record there.
        self.idempotency_table = idempotency_table

    @classmethod
    def from_deployment(cls, deployment: discovery.Deployment, **options: Any) -> Publisher:
        options.setdefault("unique_table", deployment.unique_table_name)
        options.setdefault("idempotency_table", deployment.idempotency_table_name)
        options.setdefault("batch_table", deployment.batch_table_name)
        options.setdefault("large_payloads", deployment.large_payloads)
        return cls(deployment.queue_urls(), deployment.routes, **options)

    @classmethod
    def from_stage(cls, stage: str, *, ssm: Any = None, sqs: Any = None, **options: Any) -> Publisher:
        """From the SSM parameters the stack writes for ``stage`` (needs ``ssm:GetParameters``)."""
        options.setdefault("scheduling", lambda: scheduling.from_ssm(stage, ssm=ssm))
        deployment = discovery.from_ssm(stage, ssm=ssm)
        # A queued job's cancel needs the tiers' idempotency windows: read on the first cancel only.
        options.setdefault("cancel_marks", lambda: cancelling.from_ssm(stage, deployment, ssm=ssm))
        return cls.from_deployment(deployment, sqs=sqs, **options)

    @classmethod
    def from_stack_outputs(
        cls, stack_name: str, *, cloudformation: Any = None, sqs: Any = None, **options: Any
    ) -> Publisher:
        """From the outputs of CloudFormation stack ``stack_name`` (needs ``cloudformation:DescribeStacks``)."""
        deployment = discovery.from_stack_outputs(stack_name, cloudformation=cloudformation)
        options.setdefault(
            "scheduling",
            lambda: scheduling.from_stack_outputs(stack_name, list(deployment.tiers), cloudformation=cloudformation),
        )
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
    def s3(self) -> Any:
        if self._s3 is None:
            import boto3

            self._s3 = boto3.client("s3")
        return self._s3

    @property
    def dynamodb(self) -> Any:
        if self._dynamodb is None:
            import boto3

            self._dynamodb = boto3.client("dynamodb")
        return self._dynamodb

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
                "scheduling=tiered_jobs.stage.scheduling.from_ssm(stage)"
            )
        if callable(self._scheduling):
            self._scheduling = self._scheduling()
        return self._scheduling

    def one_time_jobs(self) -> scheduling.OneTimeJobs:
        return scheduling.OneTimeJobs(self.scheduling_target(), self.scheduler, clock=self._clock)

    def unique_locks(self) -> UniqueLocks:
        """The stage's unique-jobs table (``DiscoveryError`` if this publisher knows none)."""
        if not self.unique_table:
            raise discovery.DiscoveryError(
                "this publisher knows no unique-jobs table (unique_for=): deploy a stack version with unique jobs "
                f"and build it with Publisher.from_stage(...), or set {Env.UNIQUE_TABLE} with the environment's "
                "queue URLs, or pass unique_table="
            )
        return UniqueLocks(
            self.unique_table,
            self.dynamodb,
            clock=self._clock,
            resend=self.resend,
            sleep=self._sleep,
            random=self._random,
        )

    def get_status(self, job_type: str, idempotency_key: str) -> JobStatus:
        """Where the job is (one ``GetItem`` of its idempotency record): ``state``, its ``progress``
        (``ctx.progress``), its ``result`` once completed, ``error`` once cancelled or expired, the
        ``step`` of a job longer than one invocation. Answers within the idempotency window
        (:mod:`tiered_jobs.publisher.status`)."""
        from .status import read_status

        return read_status(
            self.dynamodb, self.idempotency_table, job_type, idempotency_key, now=lambda: self._clock().timestamp()
        )

    def cancel(self, job_type: str, idempotency_key: str, *, tier: str | None = None) -> bool:
        """Cancel a pending job: ``True`` when it will not start (see :meth:`cancellation` for what was found).

        A job scheduled for later loses its one-time schedule; a queued or SQS-delayed one (or one that
        comes back by replay) is archived unrun by the consumer, through a cancel marker in its
        idempotency record (``tiered_jobs.stage.cancelling``). ``tier``: the tier it was published to,
        when not the routing table's (its idempotency window is the marker's).
        """
        return self.cancellation(job_type, idempotency_key, tier=tier).cancelled

    def cancellation(
        self, job_type: str, idempotency_key: str, *, tier: str | None = None
    ) -> cancelling.JobCancellation:
        """:meth:`cancel`, saying what it found (``JobCancellation.outcome``)."""
        scheduled: scheduling.Cancellation | None = None
        try:
            if self._scheduling is not None:
                scheduled = self.one_time_jobs().cancellation(job_type, idempotency_key)
        except discovery.DiscoveryError:
            if self._cancel_marks is None:
                raise
        if scheduled is not None and scheduled.cancelled:
            return cancelling.JobCancellation("cancelled", fire_at=scheduled.fire_at)
        if self._cancel_marks is None:
            if scheduled is None:
                raise discovery.DiscoveryError(
                    "this publisher can cancel nothing: it knows neither the stage's schedules nor its "
                    "idempotency table; build it with Publisher.from_stage(...)"
                )
            return cancelling.JobCancellation(scheduled.outcome, fire_at=scheduled.fire_at)
        if callable(self._cancel_marks):
            self._cancel_marks = self._cancel_marks()
        marked = cancelling.mark_cancelled(
            self.dynamodb,
            self._cancel_marks,
            self.tier_for(job_type, tier),
            job_type,
            idempotency_key,
            now=lambda: self._clock().timestamp(),
        )
        return cancelling.JobCancellation(
            marked.outcome,
            fire_at=scheduled.fire_at if scheduled is not None else None,
            until=marked.until,
            record_expires=marked.record_expires,
        )

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
        unique_for: int | timedelta | None = None,
        debounce: int | timedelta | None = None,
        expires_at: datetime | None = None,
        expires_in: int | timedelta | None = None,
        trace_header: str | None = None,
    ) -> PublishResult:
        """Publish one job; raise :class:`InvalidJobError` or :class:`PublishError` if it was not.

        ``unique_for``: nothing is sent while a job of this type and key sent within that many seconds
        is pending (the result says ``already_queued``). ``debounce``: the job runs once, that many
        seconds after the last publish of its type and key, with the last payload. ``expires_at`` /
        ``expires_in``: the job's deadline (a moment, or seconds after it is due); not started by then,
        it is archived unrun (reason ``expired``), never a failure. ``trace_header``: the caller's X-Ray
        header or W3C ``traceparent`` (default: the publisher's ``trace_context``), which the job's trace
        links to."""
        return self.publish_batch(
            [
                Job(
                    job_type,
                    payload,
                    idempotency_key,
                    tier,
                    delay,
                    at,
                    tenant,
                    unique_for=unique_for,
                    debounce=debounce,
                    expires_at=expires_at,
                    expires_in=expires_in,
                    trace_header=trace_header,
                )
            ]
        )[0]

    def publish_batch(self, jobs: Iterable[Job | Mapping[str, Any]]) -> list[PublishResult]:
        """Publish many jobs with as few calls as SQS allows; results are in input order.

        All jobs are validated first (:class:`InvalidJobError` names every bad one; nothing is
        sent). If any job is still not accepted after retries, :class:`PublishError` is raised
        once every chunk has been tried; its ``__cause__`` is the first client error, if any.
        """
        return self._publish_prepared(self._prepare_all(jobs))

    def batch(
        self,
        *,
        on_success: Callback | None = None,
        on_complete: Callback | None = None,
        batch_id: str | None = None,
    ) -> Batch:
        """Open a batch: ``with publisher.batch(on_complete=("reports.notify", {...})) as batch: batch.publish(...)``.

        ``on_success`` is published once every member has succeeded, ``on_complete`` once every member has
        finished (succeeded, dead-lettered, expired or cancelled), each exactly once, with the batch's id as
        its idempotency key (docs/workflows.md). The callbacks are checked here: nothing is written or sent
        when one could not be published."""
        table = self._batches_table()
        return Batch(self, table, on_success=on_success, on_complete=on_complete, batch_id=batch_id, clock=self._clock)

    def chain(self, *links: Link, chain_id: str | None = None) -> ChainResult:
        """Publish ``links[0]`` now, and each next link when the one before it succeeds; a link reads the one
        before's result with ``ctx.previous_result()``. A failed link stops the chain (``tiered-jobs batch ID``)."""
        return open_chain(self, self._batches_table(), links, chain_id=chain_id, now=self._clock())

    def _batches_table(self) -> str:
        if not self.batch_table:
            raise discovery.DiscoveryError(
                "this publisher knows no batches table: deploy a stack version with batches and build it with "
                f"Publisher.from_stage(...), or set {Env.BATCH_TABLE} with the environment's queue URLs, or pass "
                "batch_table="
            )
        return self.batch_table

    def _publish_prepared(self, prepared: list[Prepared]) -> list[PublishResult]:
        """Send jobs already checked (:meth:`publish_batch`, a batch's members)."""
        results: dict[int, PublishResult] = {}
        first_error: Exception | None = None
        if not any(item.fire_at is not None or item.unique_token is not None or item.offload for item in prepared):
            for chunk in _chunks(prepared):  # most calls: jobs only to send
                error = self._send_chunk(chunk, results)
                first_error = first_error or error
            return _in_order(prepared, results, first_error)
        later = [item for item in prepared if item.fire_at is not None]
        one_time = self.one_time_jobs() if later else None  # a missing configuration fails before any send
        to_lock = [item for item in prepared if item.unique_token is not None]
        if to_lock:  # jobs without unique_for make no call here
            locks = self.unique_locks()
            outcomes = locks.acquire(to_lock)
            for item in to_lock:
                if not outcomes[item.index].taken:
                    results[item.index] = _lock_result(item, outcomes[item.index])
                    first_error = first_error or outcomes[item.index].error
            prepared_to_send = [item for item in prepared if item.index not in results]
            later = [item for item in later if item.index not in results]
        else:
            prepared_to_send = prepared
        for item in later:
            result, error = self._schedule(one_time, item)
            results[item.index] = result
            first_error = first_error or error
        now = [item for item in prepared_to_send if item.fire_at is None]
        now, first_error = self._offload(now, results, first_error)
        for chunk in _chunks(now):
            error = self._send_chunk(chunk, results)
            first_error = first_error or error
        if to_lock:  # a job that took its lock but was not sent gives it back: publishing it again must work
            locks.release([item for item in to_lock if outcomes[item.index].taken and not results[item.index].ok])
        return _in_order(prepared, results, first_error)

    def validate(self, job: Job | Mapping[str, Any]) -> None:
        """Raise :class:`InvalidJobError` if ``job`` would be refused (e.g. before a commit)."""
        self._prepare_all([job])

    def tier_for(self, job_type: str, tier: str | None = None) -> str:
        """The tier a job goes to: ``tier`` if given (and known), else the routing table's."""
        chosen = tier if tier is not None else self.routes.tier_for(job_type)
        if chosen not in self.queues:
            raise discovery.UnknownTierError(chosen, list(self.queues))
        return chosen

    def _route(self, job_type: str, tier: str | None) -> tuple[str, str] | None:
        """``(tier, queue URL)`` as :meth:`tier_for` and ``queues`` give them, or ``None`` where they refuse.

        The table's tier for each type is kept (a table's globs are matched most specific first, on every
        publish otherwise); a new ``routes`` starts afresh, and the queues are asked each time."""
        if tier is None:
            routes = self.routes
            if self._routed[0] is not routes:
                self._routed = (routes, {})
            remembered = self._routed[1]
            tier = remembered.get(job_type)
            if tier is None:
                try:
                    tier = routes.tier_for(job_type)
                except UnknownRouteError:
                    return None
                if len(remembered) < _MAX_ROUTED_TYPES:
                    remembered[job_type] = tier
        queue_url = self.queues.get(tier)
        return None if queue_url is None else (tier, queue_url)

    # -- validation ---------------------------------------------------------------------------

    def _prepare_all(self, jobs: Iterable[Job | Mapping[str, Any]]) -> list[Prepared]:
        prepared: list[Prepared] = []
        problems: list[str] = []
        items = list(jobs)
        ambient = self._ambient_trace()  # once per call: every job of it comes from the same request
        plain = PlainJobs(self, ambient)
        for index, item in enumerate(items):
            try:
                job = as_job(item)
                prepared.append(plain.prepare(index, job) or self._prepare(index, job, ambient))
            except InvalidJobError as exc:
                label = f"job #{index}" if len(items) > 1 else "job"
                problems.extend(f"{label} {problem}" for problem in exc.problems)
        if problems:
            raise InvalidJobError(problems)
        return prepared

    def _ambient_trace(self) -> str | None:
        """The caller's current trace header, when the publisher has a ``trace_context`` and it gives a valid one."""
        found = self._trace_context() if self._trace_context is not None else None
        try:
            return traces.normalise(found) if found else None
        except traces.TraceHeaderError:
            return None  # an ambient context never fails a publish: the job just starts a trace of its own

    def _prepare(self, index: int, job: Job, ambient_trace: str | None = None) -> Prepared:
        """Check everything about one job that SQS or the consumer would refuse, naming every problem
        (``PlainJobs`` prepares the common valid job first, the same, for a fraction of the CPU)."""
        problems: list[str] = []
        traced = ambient_trace
        if job.trace_header is not None:  # one the caller named: SQS refuses a malformed header, so refused here
            try:
                traced = traces.normalise(job.trace_header)
            except traces.TraceHeaderError as exc:
                problems.append(str(exc))
        not_json = unserialisable(job.payload) if isinstance(job.payload, dict) else None
        if not_json:
            problems.append(not_json)
        built = None
        try:
            built = envelope.build(job.job_type, job.payload, job.idempotency_key, tenant=job.tenant)
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
        unique_for = debounce = None
        try:
            unique_for = window_in_seconds("unique_for", job.unique_for, unique.MAX_WINDOW_SECONDS)
            debounce = window_in_seconds("debounce", job.debounce, MAX_DEBOUNCE_SECONDS)
            if debounce is not None and unique_for is not None:
                raise ValueError(
                    "give either unique_for (the first publish wins, later ones are refused) or debounce (the "
                    "last publish wins, its run moved after it), not both"
                )
        except ValueError as exc:
            problems.append(str(exc))
        try:
            delay_seconds, fire_at = self._timing(job, debounce)
        except ValueError as exc:
            problems.append(str(exc))
        deadline = None
        try:  # counted from when the job is due; refused when it could never be met (publisher/deadline.py)
            now = self._clock()
            due = fire_at or now + timedelta(seconds=delay_seconds)
            deadline = deadline_text(job.expires_at, job.expires_in, due=due, now=now)
        except ValueError as exc:
            problems.append(str(exc))
        if built is not None and deadline is not None:
            built = replace(built, expires_at=deadline)
        token = unique.new_token() if unique_for is not None else None
        if built is not None and token is not None:
            built = replace(built, unique_lock=token)
        if built is not None and debounce is not None and fire_at is not None:
            # Each burst's run has a key of its own (its minute): a later burst runs again, even
            # within the idempotency window.
            run_key = debounced_run_key(built.idempotency_key, fire_at)
            key_problem = debounced_run_key_problem(built.idempotency_key)
            if key_problem:
                problems.append(key_problem)
            else:
                built = replace(built, idempotency_key=run_key)
        body, size = "", 0
        if built is not None and not not_json:
            body = built.to_json()  # what is sent: non-ASCII characters as themselves, not escaped
            refused = disallowed_character_problem(body, "the message body")
            if refused:  # the envelope's fields are checked one by one already: a last guard on what is sent
                problems.append(refused)
            size = 0 if refused else message_size(body)
            offload = self.large_payloads.get(tier) if not refused else None
            if offloading.should_offload(offload, size):
                if fire_at is not None:
                    problems.append(offloading.SCHEDULED_PROBLEM)
            elif size > MAX_JOB_MESSAGE_BYTES:
                # The runtime adds its own attributes to a job's letter and to its held or deferred
                # copies: a body that leaves them no room would reach the DLQ without its reasons.
                problems.append(
                    f"the message is {size} bytes, over the {MAX_JOB_MESSAGE_BYTES}-byte limit (SQS's "
                    f"{SQS_MAX_MESSAGE_BYTES} less {RUNTIME_ATTRIBUTES_HEADROOM_BYTES} for the runtime's own "
                    "attributes); pass IDs, not objects, or set large_payloads on the tier to store such bodies in S3"
                )
            elif fire_at is not None and not refused:  # it goes through a one-time schedule: Scheduler's rules too
                problems.extend(one_time_problems(body))
        if problems:
            raise InvalidJobError([f"{job.describe()}: {problem}" for problem in problems])
        return Prepared(
            index,
            job,
            tier,
            queue_url,
            body,
            size,
            delay_seconds,
            fire_at,
            unique_token=token,
            unique_until=self._clock() + timedelta(seconds=unique_for) if unique_for is not None else None,
            debounced=debounce is not None,
            trace_header=traced,
            offload=offload if offloading.should_offload(offload, size) else None,
        )

    def _timing(self, job: Job, debounce: int | None = None) -> tuple[int, datetime | None]:
        """``(SQS delay seconds, None)`` for a job due within ``schedule_beyond_seconds``, else ``(0, fire time)``.

        A debounced job is always ``(0, fire time)``: its run is a one-time schedule that each publish
        moves, so the time is the last publish's plus ``debounce``, rounded up to Scheduler's whole minute."""
        if job.at is not None and job.delay is not None:
            raise ValueError("give either delay or at, not both")
        now = self._clock()
        if debounce is not None:
            if job.at is not None or job.delay is not None:
                raise ValueError("debounce sets the job's time itself (the last publish plus debounce): drop delay/at")
            return 0, scheduling.on_a_whole_minute(now + timedelta(seconds=debounce))
        if job.at is not None:
            problem = scheduling.fire_time_problem(job.at, now)
            if problem:
                raise ValueError(problem)
            seconds = math.ceil((job.at - now).total_seconds())
            fire_at = job.at
        else:
            seconds = delay_in_seconds(job.delay)
            fire_at = now + timedelta(seconds=seconds)
            problem = scheduling.fire_time_problem(fire_at, now) if seconds > SQS_MAX_DELAY_SECONDS else None
            if problem:
                raise ValueError(f"delay {seconds} s: {problem}")
        if seconds <= self.schedule_beyond_seconds:
            return seconds, None
        # Scheduler fires anywhere within the minute of its at(): from the next whole minute, never early.
        fire_at = scheduling.on_a_whole_minute(fire_at)
        problem = scheduling.fire_time_problem(fire_at, now)  # rounding up may pass Scheduler's last year
        if problem:
            raise ValueError(problem)
        return 0, fire_at

    def _schedule(
        self, one_time: scheduling.OneTimeJobs | None, item: Prepared
    ) -> tuple[PublishResult, Exception | None]:
        """Create the job's one-time schedule (an existing one means it was scheduled before)."""
        from botocore.exceptions import BotoCoreError, ClientError

        assert one_time is not None and item.fire_at is not None
        try:
            create = one_time.debounce if item.debounced else one_time.create
            done = create(
                job_type=item.job.job_type,
                idempotency_key=item.job.idempotency_key,
                tier=item.tier,
                fire_at=item.fire_at,
                body=item.body,
                tenant=item.job.tenant,
            )
        except (BotoCoreError, ClientError, discovery.DiscoveryError) as exc:
            code = exc.response["Error"].get("Code", "") if isinstance(exc, ClientError) else type(exc).__name__
            return _result(item, 1, error_code=code, error_message=str(exc)), exc
        return _result(
            item, 1, schedule_name=done.schedule_name, fire_at=done.fire_at, already_scheduled=done.already_scheduled
        ), None

    # -- sending ------------------------------------------------------------------------------

    def _offload(
        self, items: list[Prepared], results: dict[int, PublishResult], first_error: Exception | None
    ) -> tuple[list[Prepared], Exception | None]:
        """Store the bodies over their tier's threshold, each before its send (a message never points at
        nothing); a job whose body S3 refused is not sent, and says why."""
        from botocore.exceptions import BotoCoreError, ClientError

        ready = []
        for item in items:
            if item.offload is None:
                ready.append(item)
                continue
            try:
                body, attributes, size = offloading.store(self.s3, item.offload, item.tier, item.body)
            except (BotoCoreError, ClientError) as exc:
                code = exc.response["Error"].get("Code", "") if isinstance(exc, ClientError) else type(exc).__name__
                results[item.index] = _result(
                    item, 1, error_code=code, error_message=f"could not store the body in S3, nothing sent: {exc}"
                )
                first_error = first_error or exc
                continue
            ready.append(replace(item, body=body, size=size, attributes=attributes))
        return ready, first_error

    def _send_chunk(self, chunk: list[Prepared], results: dict[int, PublishResult]) -> Exception | None:
        """Send one chunk (one queue, ≤ 10 entries, ≤ 1 MiB), retrying only failed entries; each job's
        result goes in ``results``, and the client's error, if one ended the sending, is returned."""
        from botocore.exceptions import BotoCoreError, ClientError

        pending = chunk
        attempt = 0
        while pending:
            attempt += 1
            by_id = dict(zip(_ENTRY_IDS[: len(pending)], pending, strict=True))  # an entry's id: its place
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
                error: Exception = exc
                return error
            for entry in response.get("Successful", []):
                item = by_id.pop(entry["Id"])
                results[item.index] = sent_result(item, attempt, entry["MessageId"])
            retry: list[Prepared] = []
            for entry in response.get("Failed", []):
                item = by_id.pop(entry["Id"])
                if entry.get("SenderFault") or attempt >= self.resend.max_attempts:
                    results[item.index] = _result(
                        item,
                        attempt,
                        error_code=entry.get("Code", ""),
                        error_message=entry.get("Message", ""),
                        sender_fault=bool(entry.get("SenderFault")),
                    )
                else:
                    retry.append(item)
            for item in by_id.values():  # neither Successful nor Failed: never assume it was sent
                results[item.index] = _result(
                    item, attempt, error_code="Unreported", error_message="SQS did not report this entry"
                )
            if retry:
                self._sleep(self.resend.wait(attempt, self._random()))
            pending = retry
        return None


#: The ids of a call's entries: SQS wants them unique within the call, and says which failed by them.
_ENTRY_IDS = tuple(str(place) for place in range(SQS_MAX_BATCH_ENTRIES))


def _entry(entry_id: str, item: Prepared) -> dict[str, Any]:
    """The ``SendMessageBatch`` entry of a job: its body, and only the parameters it has a value for."""
    entry: dict[str, Any] = {"Id": entry_id, "MessageBody": item.body}
    if item.delay_seconds:
        # Sent only when not 0: botocore validates and serializes every parameter of every entry, and
        # an entry without one waits 0 s on the tier queues, which have no delay of their own (the
        # construct sets none).
        entry["DelaySeconds"] = item.delay_seconds
    if item.job.tenant is not None:
        # A standard queue with message group ids is an SQS fair queue; nothing FIFO is implied
        # (no MessageDeduplicationId, no ordering: the idempotency key deduplicates).
        entry["MessageGroupId"] = item.job.tenant
    if item.trace_header is not None:
        entry["MessageSystemAttributes"] = traces.system_attributes(item.trace_header)
    if item.attributes:  # an offloaded body's ExtendedPayloadSize: one of SQS's 10 attributes
        entry["MessageAttributes"] = dict(item.attributes)
    return entry


def _result(item: Prepared, attempts: int, **outcome: Any) -> PublishResult:
    return PublishResult(
        item.job,
        item.tier,
        item.queue_url,
        attempts=attempts,
        unique_until=item.unique_until,
        debounced=item.debounced,
        **outcome,
    )


def _in_order(
    prepared: list[Prepared], results: dict[int, PublishResult], error: Exception | None
) -> list[PublishResult]:
    """The results in the jobs' order, or :class:`PublishError` (caused by ``error``) when one was not published."""
    ordered = [results[item.index] for item in prepared]
    if not all(result.ok for result in ordered):
        raise PublishError(ordered) from error
    return ordered


def _lock_result(item: Prepared, outcome: LockOutcome) -> PublishResult:
    """A ``unique_for`` job whose lock was not taken: already queued (``ok``), or the write failed (nothing sent)."""
    if outcome.already_queued:
        return PublishResult(item.job, item.tier, item.queue_url, already_queued=True, unique_until=outcome.held_until)
    return PublishResult(
        item.job, item.tier, item.queue_url, error_code=outcome.error_code, error_message=outcome.error_message
    )


def _chunks(prepared: list[Prepared]) -> Iterator[list[Prepared]]:
    """Per queue (in first-seen order), greedy chunks of ≤ 10 entries and ≤ 1 MiB in all."""
    if not prepared:
        return
    first = prepared[0].queue_url
    if all(item.queue_url == first for item in prepared):  # most calls: one tier
        if max(map(_size, prepared)) * SQS_MAX_BATCH_ENTRIES <= SQS_MAX_MESSAGE_BYTES:
            # No ten of them can pass the call's limit: the greedy chunks are every ten, in order.
            for start in range(0, len(prepared), SQS_MAX_BATCH_ENTRIES):
                yield prepared[start : start + SQS_MAX_BATCH_ENTRIES]
            return
        yield from pack_batches(prepared, _size)
        return
    by_queue: dict[str, list[Prepared]] = {}
    for item in prepared:
        by_queue.setdefault(item.queue_url, []).append(item)
    for items in by_queue.values():
        yield from pack_batches(items, _size)


_size = attrgetter("size")
