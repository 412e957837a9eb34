"""``Publisher.get_status(type, key)``: where a job is, for a caller who waits on it.

One consistent ``GetItem`` of the job's idempotency record (``dynamodb:GetItem`` on the stage's
idempotency table, in the publisher's policy), read as :func:`tiered_jobs.contract.job_status.status_of`
reads it: in progress (with its progress and, for a job longer than one invocation, its step),
completed (with its result), cancelled or expired (with why), or unknown. It answers for the
idempotency window only (the tier's ``idempotency_ttl_seconds``): a result backend with that
window, not an archive. A job that failed has no record (its letters are in the DLQ, which an
operator reads with ``tiered-jobs job``): it reads as unknown.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from tiered_jobs.contract.idempotency import RecordAttributes, record_id
from tiered_jobs.contract.job_status import JobStatus, status_of
from tiered_jobs.stage.discovery import DiscoveryError

__all__ = ["JobStatus", "read_status"]


def read_status(
    dynamodb: Any, table: str | None, job_type: str, key: str, *, now: Callable[[], float] = time.time
) -> JobStatus:
    """The job's status now (see the module's docstring); :class:`DiscoveryError` when the table is not known."""
    if not table:
        raise DiscoveryError(
            "this publisher does not know the stage's idempotency table: build it with Publisher.from_stage(...) "
            "or pass idempotency_table="
        )
    if not job_type or not key:
        raise ValueError("get_status needs a job type and an idempotency key")
    item = dynamodb.get_item(
        TableName=table, Key={RecordAttributes.KEY: {"S": record_id(job_type, key)}}, ConsistentRead=True
    ).get("Item")
    return status_of(item, now())
