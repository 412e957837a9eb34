"""``ctx.progress(done, total, note=...)``: a running job's progress, written to its idempotency record.

One ``UpdateItem`` of the record's ``progress`` attribute (:mod:`tiered_jobs.contract.progress`),
on the condition that the record is ``INPROGRESS``: a write never creates a record (a job without
idempotency has none, and its progress goes nowhere) and never touches a finished one.

**At most one write per interval** (``@job(progress_every_seconds=...)``, 5 s by default): a job
that reports every row would otherwise pay a write per row. The first call is written at once (a
caller who waits sees the job start), a call within the interval of the last write is kept in
memory and replaced by the next one, and the last kept call is written when the job returns (its
checkpoints included), so a finished job shows where it ended. A job that fails loses only what
it kept; its next attempt starts the record, and its progress, afresh.

Progress only informs: a failed write (throttling past botocore's retries, a missing grant) is
logged once per job and never fails the job; bad arguments do (a bug: :func:`checked`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime, timezone
from functools import cached_property
from typing import TYPE_CHECKING, Any

from tiered_jobs.contract.idempotency import RecordAttributes, RecordStatus, record_id
from tiered_jobs.contract.times import iso_text

if TYPE_CHECKING:
    from tiered_jobs.contract.progress import Progress

__all__ = ["DEFAULT_INTERVAL_SECONDS", "ProgressWriter", "discard"]

#: Default for the least time between two writes of one job's progress (seconds): calls in between
#: are coalesced, the last one is written when the job returns.
DEFAULT_INTERVAL_SECONDS = 5.0

# The stored shape (tiered_jobs.contract.progress: its checks and the Progress dataclass) is loaded by
# the first job that reports progress: most never do, and a cold start does not define the dataclass.


def discard(done: Any, total: Any, note: Any = "") -> None:
    """Where progress goes without a record (a job with ``idempotent=False``, a test's context): checked, dropped."""
    from tiered_jobs.contract.progress import checked

    checked(done, total, note)


class ProgressWriter:
    """One job run's progress: checks each call, writes at most once per ``interval`` (see the module's docstring)."""

    def __init__(
        self,
        dynamodb: Any,
        table: str,
        job_type: str,
        idempotency_key: str,
        *,
        interval: float = DEFAULT_INTERVAL_SECONDS,
        logger: Any = None,
        clock: Callable[[], float] = time.monotonic,
        now: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
    ):
        self.dynamodb, self.table = dynamodb, table
        self.job_type, self.idempotency_key = job_type, idempotency_key
        self.interval, self.logger, self.clock, self.now = interval, logger, clock, now
        self._written_at: float | None = None
        self._pending: Progress | None = None
        self._failed = False
        #: Writes made (the bench counts them; tests read them).
        self.writes = 0

    @cached_property
    def record_id(self) -> str:
        """The record's ``id``, hashed on the first write: every job run gets a writer, and most jobs never
        report progress."""
        return record_id(self.job_type, self.idempotency_key)

    def __call__(self, done: Any, total: Any, note: Any = "") -> None:
        from tiered_jobs.contract.progress import checked

        progress = checked(done, total, note, at=iso_text(self.now()))
        if self._written_at is not None and self.clock() - self._written_at < self.interval:
            self._pending = progress  # coalesced: the next write, or the job's end, carries the latest
            return
        self._write(progress)

    def flush(self) -> None:
        """The job returned: write the last call kept within the interval, if any."""
        if self._pending is not None:
            self._write(self._pending)

    def _write(self, progress: Progress) -> None:
        from tiered_jobs.contract.progress import ATTRIBUTE

        self._pending, self._written_at = None, self.clock()
        try:
            self.writes += 1
            self.dynamodb.update_item(
                TableName=self.table,
                Key={RecordAttributes.KEY: {"S": self.record_id}},
                UpdateExpression="SET #progress = :progress",
                ConditionExpression="#status = :inprogress",
                ExpressionAttributeNames={"#progress": ATTRIBUTE, "#status": RecordAttributes.STATUS},
                ExpressionAttributeValues={
                    ":progress": {"S": progress.encode()},
                    ":inprogress": {"S": RecordStatus.IN_PROGRESS},
                },
            )
        except Exception as exc:  # noqa: BLE001 -- progress informs; it never fails the job
            if not self._failed and self.logger is not None:
                self.logger.warning("could not store the job's progress", extra={"error": repr(exc)})
            self._failed = True
