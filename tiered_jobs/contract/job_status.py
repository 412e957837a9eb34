"""A job's status as its idempotency record says it: the one reading ``Publisher.get_status`` and the
operator tools share (a result backend for callers who wait, with the idempotency store's window).

The record (:mod:`tiered_jobs.contract.idempotency`) is the job's only durable trace while it is
known: Powertools writes it ``INPROGRESS`` when an attempt starts and ``COMPLETED`` with the stored
result when it ends, a cancel or an expiry leaves an end marker (:mod:`~tiered_jobs.contract.job_ends`),
a job longer than one invocation keeps its step and state there between steps
(:mod:`~tiered_jobs.contract.steps`), and ``ctx.progress`` its progress
(:mod:`~tiered_jobs.contract.progress`). So one consistent ``GetItem`` answers:

* ``in_progress``: an attempt runs (``progress`` as last written), or a stepped job waits for its
  next step (``step``: the step due);
* ``completed``: ``result`` is the stored result, ``progress`` the last written;
* ``cancelled`` / ``expired``: it ended unrun; ``error`` says when and why;
* ``unknown``: no live record: never published, not consumed yet, failed without completing (its
  attempts' records are removed: a letter's reasons are in the DLQ, which ``tiered-jobs job``
  reads), or past its idempotency window. Never "pending": the table cannot tell a job waiting in a
  queue from one that never existed.

Standard library only: this module ships in the Lambda asset and in the installable package.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import job_ends, steps
from .idempotency import RecordAttributes, RecordStatus
from .progress import Progress, of_item

IN_PROGRESS = "in_progress"
COMPLETED = "completed"
CANCELLED = job_ends.CANCELLED
EXPIRED = job_ends.EXPIRED
UNKNOWN = "unknown"
STATES = (IN_PROGRESS, COMPLETED, CANCELLED, EXPIRED, UNKNOWN)


@dataclass(frozen=True)
class JobStatus:
    """What a caller waiting for a job may know of it now."""

    state: str
    #: The last progress the job stored (``ctx.progress``), while it runs and once it finished.
    progress: Progress | None = None
    #: The stored result, once ``completed`` (bounded and JSON-safe: docs/consumer.md).
    result: Any = None
    #: Why it ended unrun (``cancelled`` / ``expired``); ``None`` otherwise.
    error: str | None = None
    #: A job longer than one invocation: the step running or due (0 is the published message).
    step: int | None = None
    #: When the record stops answering for the job (epoch seconds): its idempotency window's end.
    expires_at: float | None = None

    @property
    def finished(self) -> bool:
        return self.state in (COMPLETED, CANCELLED, EXPIRED)

    def to_dict(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "progress": self.progress.to_dict() if self.progress else None,
            "result": self.result,
            "error": self.error,
            "step": self.step,
            "expires_at": self.expires_at,
        }


def status_of(item: dict[str, Any] | None, now: float) -> JobStatus:
    """The status an idempotency record (``GetItem``'s typed ``Item``) gives at ``now`` (epoch seconds)."""
    if not item:
        return JobStatus(UNKNOWN)
    expires = _number(item, RecordAttributes.EXPIRATION)
    if expires is not None and expires < now:
        return JobStatus(UNKNOWN, expires_at=expires)  # past its window: a new delivery would run it again
    status = item.get(RecordAttributes.STATUS, {}).get("S")
    progress = of_item(item)
    step = _number(item, steps.RECORD_STEP)
    due = int(step) if step is not None else None
    stored = job_ends.stored_result(item.get(RecordAttributes.DATA, {}).get("S"))
    if status == RecordStatus.IN_PROGRESS:
        return JobStatus(IN_PROGRESS, progress, step=due, expires_at=expires)
    if status == RecordStatus.COMPLETED:
        ended = job_ends.marker_kind(stored)
        if ended is not None:
            detail = f"{ended} at {stored.get('at')}" + (f": {stored['detail']}" if stored.get("detail") else "")
            return JobStatus(ended, progress, error=detail, expires_at=expires)
        if steps.marker_step(stored) is not None:  # between two steps: not finished
            return JobStatus(IN_PROGRESS, progress, step=due, expires_at=expires)
        return JobStatus(COMPLETED, progress, result=stored, expires_at=expires)
    return JobStatus(UNKNOWN, progress, error=f"a record with an unexpected status {status!r}", expires_at=expires)


def _number(item: dict[str, Any], name: str) -> float | None:
    value = item.get(name, {}).get("N")
    return float(value) if value is not None else None
