"""Jobs made ready to send: each checked against everything SQS or the consumer would refuse, its envelope
built once with every field it carries (a deadline, a lock's token, a debounced run's key, its batch).

:func:`prepare` is the one way a job becomes a :class:`~tiered_jobs.publisher.models.Prepared`:
``Publisher.publish_batch`` and ``validate``, a batch's members and callbacks, and a chain's links all
call it. It names every problem of every job (:class:`InvalidJobError`) before anything is sent.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any, Protocol

from ..contract import envelope, payloads, unique
from ..contract import trace_header as traces
from ..contract.large_payloads import Offload
from ..contract.names import SQS_MAX_DELAY_SECONDS, SQS_MAX_MESSAGE_BYTES
from ..contract.routing import UnknownRouteError
from ..contract.schedules import MAX_DEBOUNCE_SECONDS, debounced_run_key, debounced_run_key_problem, one_time_problems
from ..contract.sqs_limits import (
    MAX_JOB_MESSAGE_BYTES,
    RUNTIME_ATTRIBUTES_HEADROOM_BYTES,
    disallowed_character_problem,
    message_size,
)
from ..stage import discovery, scheduling
from . import large_payloads as offloading
from .deadline import deadline_text
from .errors import InvalidJobError
from .models import JOB_FIELDS, Job, Prepared, delay_in_seconds, unserialisable, window_in_seconds

#: A job's envelope ``batch`` field, by its place in the call: a batch's id, or a chain's id and step.
BatchField = Callable[[int], dict[str, Any]]


class Destinations(Protocol):
    """What preparing a job reads of its publisher: the tiers' queues, the routing, its options, its clock.

    ``Publisher`` has them; a protocol, so that the modules the publisher imports do not import it back."""

    @property
    def queues(self) -> Mapping[str, str]: ...

    @property
    def schedule_beyond_seconds(self) -> int: ...

    @property
    def large_payloads(self) -> Mapping[str, Offload]: ...

    def tier_for(self, job_type: str, tier: str | None = None) -> str: ...

    def now(self) -> datetime: ...

    def ambient_trace(self) -> str | None: ...


def prepare(
    publisher: Destinations, jobs: Iterable[Job | Mapping[str, Any]], batch: BatchField | None = None
) -> list[Prepared]:
    """Every job checked and its message built, in order; :class:`InvalidJobError` names every problem of
    every job (``job #n`` when there are several), and then none is prepared."""
    items = list(jobs)
    ambient = publisher.ambient_trace()  # once per call: every job of it comes from the same request
    prepared: list[Prepared] = []
    problems: list[str] = []
    for index, item in enumerate(items):
        try:
            prepared.append(_prepare_one(publisher, index, as_job(item), ambient, batch(index) if batch else None))
        except InvalidJobError as exc:
            label = f"job #{index}" if len(items) > 1 else "job"
            problems.extend(f"{label} {problem}" for problem in exc.problems)
    if problems:
        raise InvalidJobError(problems)
    return prepared


def as_job(item: Job | Mapping[str, Any]) -> Job:
    """``item`` as a :class:`Job` (a dict with its fields' names is one), or :class:`InvalidJobError`."""
    if isinstance(item, Job):
        return item
    if not isinstance(item, Mapping):
        raise InvalidJobError([f"must be a Job or a dict with keys {', '.join(JOB_FIELDS)}, got {type(item).__name__}"])
    unknown = sorted(set(item) - set(JOB_FIELDS))
    missing = [name for name in ("job_type", "payload", "idempotency_key") if name not in item]
    if unknown or missing:
        problems = [f"has unknown key(s) {', '.join(map(repr, unknown))}"] if unknown else []
        problems += [f"lacks key(s) {', '.join(map(repr, missing))}"] if missing else []
        raise InvalidJobError([f"{'; '.join(problems)} (keys: {', '.join(JOB_FIELDS)})"])
    return Job(**item)


def _prepare_one(
    publisher: Destinations, index: int, job: Job, ambient_trace: str | None, batch: dict[str, Any] | None
) -> Prepared:
    """One job: what it is sent as, when and where, or :class:`InvalidJobError` naming each of its problems
    (in the order a caller reads them: its fields, its payload, its route, its timing, its message)."""
    fields: list[str] = []
    traced = ambient_trace
    if job.trace_header is not None:  # one the caller named: SQS refuses a malformed header, so refused here
        try:
            traced = traces.normalise(job.trace_header)
        except traces.TraceHeaderError as exc:
            fields.append(str(exc))
    not_json = unserialisable(job.payload) if isinstance(job.payload, dict) else None
    if not_json:
        fields.append(not_json)
    routing: list[str] = []
    tier = queue_url = ""
    try:
        if isinstance(job.job_type, str):  # else the envelope's check says so
            tier = publisher.tier_for(job.job_type, job.tier)
            queue_url = publisher.queues[tier]
    except UnknownRouteError as exc:
        routing.append(str(exc))
    except discovery.UnknownTierError as exc:
        routing.append(f"{exc}" if job.tier is not None else f"{exc} (routed by the table)")
    timing: list[str] = []
    now = publisher.now()
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
        timing.append(str(exc))
    delay_seconds, fire_at = 0, None
    try:
        delay_seconds, fire_at = _timing(job, debounce, now, publisher.schedule_beyond_seconds)
    except ValueError as exc:
        timing.append(str(exc))
    deadline = None
    try:  # counted from when the job is due; refused when it could never be met (publisher/deadline.py)
        deadline = deadline_text(
            job.expires_at, job.expires_in, due=fire_at or now + timedelta(seconds=delay_seconds), now=now
        )
    except ValueError as exc:
        timing.append(str(exc))
    key = job.idempotency_key
    if debounce is not None and fire_at is not None and _is_key(key):
        # Each burst's run has a key of its own (its minute): a later burst runs again, even within the
        # idempotency window.
        key_problem = debounced_run_key_problem(key)
        if key_problem:
            timing.append(key_problem)
        else:
            key = debounced_run_key(key, fire_at)
    token = unique.new_token() if unique_for is not None else None
    built = None
    try:
        built = envelope.build(
            job.job_type,
            job.payload,
            key,
            tenant=job.tenant,
            unique_lock=token,
            expires_at=deadline,
            batch=batch,
            tags=dict(job.tags) if isinstance(job.tags, Mapping) else job.tags,  # a non-object is refused by name
        )
    except envelope.EnvelopeError as exc:
        fields.extend(exc.problems)
    if built is not None:  # the job type's payload schema, if the contract ships one
        fields.extend(payloads.problems(built.type, built.payload))
    body, size, offload = "", 0, None
    message: list[str] = []
    if built is not None and not not_json:
        body = built.to_json()  # what is sent: non-ASCII characters as themselves, not escaped
        refused = disallowed_character_problem(body, "the message body")
        if refused:  # the envelope's fields are checked one by one already: a last guard on what is sent
            message.append(refused)
        size = 0 if refused else message_size(body)
        offload = publisher.large_payloads.get(tier) if not refused else None
        if offloading.should_offload(offload, size):
            if fire_at is not None:
                message.append(offloading.SCHEDULED_PROBLEM)
        elif size > MAX_JOB_MESSAGE_BYTES:
            # The runtime adds its own attributes to a job's letter and to its held or deferred copies: a
            # body that leaves them no room would reach the DLQ without its reasons.
            message.append(
                f"the message is {size} bytes, over the {MAX_JOB_MESSAGE_BYTES}-byte limit (SQS's "
                f"{SQS_MAX_MESSAGE_BYTES} less {RUNTIME_ATTRIBUTES_HEADROOM_BYTES} for the runtime's own "
                "attributes); pass IDs, not objects, or set large_payloads on the tier to store such bodies in S3"
            )
        elif fire_at is not None and not refused:  # it goes through a one-time schedule: Scheduler's rules too
            message.extend(one_time_problems(body))
    problems = fields + routing + timing + message
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
        unique_until=now + timedelta(seconds=unique_for) if unique_for is not None else None,
        debounced=debounce is not None,
        trace_header=traced,
        offload=offload if offloading.should_offload(offload, size) else None,
    )


def _is_key(key: Any) -> bool:
    """Is ``key`` an idempotency key the envelope takes (else the envelope's check names the problem)?"""
    return isinstance(key, str) and 1 <= len(key) <= envelope.MAX_IDEMPOTENCY_KEY_CHARS


def _timing(job: Job, debounce: int | None, now: datetime, schedule_beyond_seconds: int) -> tuple[int, datetime | None]:
    """``(SQS delay seconds, None)`` for a job due within ``schedule_beyond_seconds``, else ``(0, fire time)``.

    A debounced job is always ``(0, fire time)``: its run is a one-time schedule that each publish moves,
    so the time is the last publish's plus ``debounce``, rounded up to Scheduler's whole minute."""
    if job.at is not None and job.delay is not None:
        raise ValueError("give either delay or at, not both")
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
    if seconds <= schedule_beyond_seconds:
        return seconds, None
    # Scheduler fires anywhere within the minute of its at(): from the next whole minute, never early.
    fire_at = scheduling.on_a_whole_minute(fire_at)
    problem = scheduling.fire_time_problem(fire_at, now)  # rounding up may pass Scheduler's last year
    if problem:
        raise ValueError(problem)
    return 0, fire_at
