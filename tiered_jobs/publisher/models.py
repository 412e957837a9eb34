"""What the publisher takes and gives: :class:`Job`, :class:`PublishResult`, the :class:`ResendPolicy`
of failed entries, and the checks that turn what a caller passed into a job (its keys, its delay,
a payload JSON can carry)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import datetime, timedelta
from typing import Any

from ..contract.large_payloads import Offload
from ..contract.transactions import Retries


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
    #: Seconds (or a ``timedelta``, rounded up): send only if no job of this type and key was sent within
    #: them and is still pending ("first wins"); otherwise the result says ``already_queued``.
    unique_for: int | timedelta | None = None
    #: Seconds (or a ``timedelta``, rounded up): run once, this long after the last publish of this type
    #: and key, with the last payload ("last wins"); not with ``delay``, ``at`` or ``unique_for``.
    debounce: int | timedelta | None = None
    #: The job's deadline (an aware datetime): not started by then, it is archived unrun (``expired``).
    expires_at: datetime | None = None
    #: The deadline as seconds (or a ``timedelta``) after the job is due; not with ``expires_at``.
    expires_in: int | timedelta | None = None
    #: The caller's trace (an X-Ray header, or a W3C ``traceparent``): the message's ``AWSTraceHeader``,
    #: which links the job's trace to it. ``None``: the publisher's ``trace_context`` (in Lambda, the
    #: current invocation's ``_X_AMZN_TRACE_ID``).
    trace_header: str | None = None
    #: Up to 10 short ``name: value`` pairs, on each of the job's log lines, to find it by
    #: (``tiered-jobs search --tag name=value``; the rules: ``tiered_jobs.contract.tags``).
    tags: Mapping[str, str] | None = None

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
    #: For a debounced job: its pending run was moved to ``fire_at``, with this payload.
    already_scheduled: bool = False
    #: ``unique_for``: a job of this type and key is pending (sent within its window): nothing was sent.
    already_queued: bool = False
    #: ``unique_for``: when the lock ends at the latest (this job's, or the pending one's when already queued).
    unique_until: datetime | None = None
    #: ``debounce``: the job runs from the one-time schedule ``schedule_name`` at ``fire_at``.
    debounced: bool = False

    @property
    def ok(self) -> bool:
        return self.message_id is not None or self.schedule_name is not None or self.already_queued

    def describe(self) -> str:
        if self.already_queued:
            until = f" (unique until {self.unique_until.isoformat()})" if self.unique_until else ""
            return f"{self.job.describe()} -> {self.tier}: already queued{until}: nothing sent"
        if self.debounced and self.schedule_name is not None:
            moved = ", replacing the pending run's time and payload" if self.already_scheduled else ""
            when = self.fire_at.isoformat() if self.fire_at else "?"
            return f"{self.job.describe()} -> {self.tier}: debounced to {when} ({self.schedule_name}{moved})"
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


@dataclass(frozen=True)
class ResendPolicy(Retries):
    """How the publisher re-sends the entries SQS reports failed inside a successful ``SendMessageBatch`` call.

    Whole-call errors (throttling, 5xx, connection resets) are botocore's to retry, configured
    the usual way (``AWS_MAX_ATTEMPTS``, ``AWS_RETRY_MODE``); they are not retried twice here.
    The full-jitter waits and their checks are :class:`~tiered_jobs.contract.transactions.Retries`';
    defaults: 4 attempts, waits drawn from [0, 0.1 s], [0, 0.2 s], [0, 0.4 s].
    """

    max_attempts: int = 4
    base_seconds: float = 0.1
    max_seconds: float = 5.0


@dataclass(slots=True)
class Prepared:
    """A validated job, ready to send: its body is final and its queue known (the publisher's own).

    Never changed once made: ``dataclasses.replace`` makes an offloaded body's copy."""

    index: int
    job: Job
    tier: str
    queue_url: str
    body: str
    size: int
    delay_seconds: int
    #: Set when the job goes through a one-time schedule instead of SQS's delay.
    fire_at: datetime | None = None
    #: ``unique_for``: the lock's token (in the body's ``unique_lock``) and when its window ends.
    unique_token: str | None = None
    unique_until: datetime | None = None
    #: ``debounce``: the job's run is the one-time schedule of its type and key, moved on each publish.
    debounced: bool = False
    #: The message's ``AWSTraceHeader`` (a system attribute: none of the 10 attributes, none of the size).
    trace_header: str | None = None
    #: ``large_payloads``: the tier's bucket, when the body goes there before the send...
    offload: Offload | None = None
    #: ...and once it has, the pointer message's attributes (``ExtendedPayloadSize``).
    attributes: Mapping[str, Mapping[str, str]] | None = None


JOB_FIELDS = tuple(f.name for f in fields(Job))


def delay_in_seconds(delay: int | timedelta | None) -> int:
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


def window_in_seconds(name: str, value: int | timedelta | None, maximum: int) -> int | None:
    """``unique_for`` or ``debounce`` in whole seconds (``None``: not used), or ``ValueError`` naming the setting."""
    if value is None:
        return None
    if isinstance(value, timedelta):
        seconds = math.ceil(value.total_seconds())
    elif isinstance(value, int) and not isinstance(value, bool):
        seconds = value
    else:
        raise ValueError(f"{name} must be whole seconds (int) or a timedelta, got {type(value).__name__}")
    if not 1 <= seconds <= maximum:
        raise ValueError(f"{name} must be 1-{maximum} seconds, got {seconds}")
    return seconds


def unserialisable(value: Any, path: str = "payload", _open: frozenset[int] = frozenset()) -> str | None:
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
                found = unserialisable(item, f"{path}[{key!r}]", inner)
                if found:
                    return found
        else:
            for position, item in enumerate(value):
                found = unserialisable(item, f"{path}[{position}]", inner)
                if found:
                    return found
        return None
    return (
        f"{path} is a {type(value).__qualname__}, which is not JSON-serialisable "
        "(send a str, number, bool, None, list or dict: e.g. an ISO date string, a Decimal as a string)"
    )
