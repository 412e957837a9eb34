"""The :class:`Publisher`: validates every job first, routes it, then sends per tier in
``SendMessageBatch`` calls (or through a one-time schedule), re-sending the entries SQS reports
failed. See :mod:`tiered_jobs.publisher` for what a publish guarantees."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from operator import attrgetter
from random import random as _unit_random
from typing import Any

from ..contract import trace_header as traces
from ..contract.job_status import JobStatus
from ..contract.large_payloads import Offload
from ..contract.names import SQS_MAX_BATCH_ENTRIES, SQS_MAX_DELAY_SECONDS, SQS_MAX_MESSAGE_BYTES, Env
from ..contract.routing import Routes
from ..contract.sqs_limits import pack_batches
from ..stage import cancelling, discovery, scheduling
from ..stage import manifest as stage_manifest
from . import large_payloads as offloading
from .batches import Batch, Callback, ChainResult, Link, open_chain
from .errors import PublishError
from .models import Job, Prepared, PublishResult, ResendPolicy
from .prepare import prepare
from .unique import LockOutcome, UniqueLocks


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
    def from_manifest(cls, source: Any, *, sqs: Any = None, **options: Any) -> Publisher:
        """From the stage manifest (its path, JSON text or object): a publisher in another account, whose role the
        stage's queue and key policies admit (``docs/deploy.md``, "Publishers in other accounts"). It sends to
        the tier queues only: pass ``sqs`` built from an assumed role's session to publish as that role."""
        return cls.from_deployment(stage_manifest.from_manifest(source), sqs=sqs, **options)

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
        tags: Mapping[str, str] | None = None,
    ) -> PublishResult:
        """Publish one job; raise :class:`InvalidJobError` or :class:`PublishError` if it was not.

        ``unique_for``: nothing is sent while a job of this type and key sent within that many seconds
        is pending (the result says ``already_queued``). ``debounce``: the job runs once, that many
        seconds after the last publish of its type and key, with the last payload. ``expires_at`` /
        ``expires_in``: the job's deadline (a moment, or seconds after it is due); not started by then,
        it is archived unrun (reason ``expired``), never a failure. ``trace_header``: the caller's X-Ray
        header or W3C ``traceparent`` (default: the publisher's ``trace_context``), which the job's trace
        links to. ``tags``: up to 10 short ``name: value`` pairs on each of the job's log lines, which
        ``tiered-jobs search --tag`` finds it by."""
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
                    tags=tags,
                )
            ]
        )[0]

    def publish_batch(self, jobs: Iterable[Job | Mapping[str, Any]]) -> list[PublishResult]:
        """Publish many jobs with as few calls as SQS allows; results are in input order.

        All jobs are validated first (:class:`InvalidJobError` names every bad one; nothing is
        sent). If any job is still not accepted after retries, :class:`PublishError` is raised
        once every chunk has been tried; its ``__cause__`` is the first client error, if any.
        """
        return self.send(prepare(self, jobs))

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
        return Batch(
            self,
            table,
            on_success=on_success,
            on_complete=on_complete,
            batch_id=batch_id,
            clock=self._clock,
            sleep=self._sleep,
            random=self._random,
        )

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

    def send(self, prepared: list[Prepared]) -> list[PublishResult]:
        """Send jobs already prepared (:func:`~tiered_jobs.publisher.prepare.prepare`): :meth:`publish_batch`'s,
        a batch's members, a chain's first link."""
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
        prepare(self, [job])

    def tier_for(self, job_type: str, tier: str | None = None) -> str:
        """The tier a job goes to: ``tier`` if given (and known), else the routing table's."""
        chosen = tier if tier is not None else self.routes.tier_for(job_type)
        if chosen not in self.queues:
            raise discovery.UnknownTierError(chosen, list(self.queues))
        return chosen

    def now(self) -> datetime:
        """The publisher's clock (``clock=``): when a job is due, its deadline, its lock's window."""
        return self._clock()

    def ambient_trace(self) -> str | None:
        """The caller's current trace header, when the publisher has a ``trace_context`` and it gives a valid one."""
        found = self._trace_context() if self._trace_context is not None else None
        try:
            return traces.normalise(found) if found else None
        except traces.TraceHeaderError:
            return None  # an ambient context never fails a publish: the job just starts a trace of its own

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
                results[item.index] = _result(item, attempt, message_id=entry["MessageId"])
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
