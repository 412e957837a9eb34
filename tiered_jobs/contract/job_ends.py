"""A job that ends without running: cancelled, or expired. Written into its idempotency record.

The consumer already makes one conditional write per idempotent job to its idempotency record
(Powertools, keyed by :func:`~tiered_jobs.contract.idempotency.record_id`), and reads the record
back when that write fails. So the cheapest place for "do not run this job" is that record itself:
``cancel(job_type, key)`` writes a ``COMPLETED`` record whose stored result is an *end marker*,
and the consumer, finding it where it would find a finished job's result, drops the job instead of
answering it as a duplicate. A job nobody cancels costs no call more, on either side.

* The marker lives as long as a finished job's record: the tier's idempotency window
  (``idempotency_ttl_seconds``); after it, a new delivery of the key runs as any would.
* A marker is written only where no live record is (none, expired, or an attempt that ran out of
  time): a finished job stays finished, and a running one is not overwritten. A running job gets
  :data:`CANCEL_REQUESTED` on its ``INPROGRESS`` record instead, which ``ctx.cancelled()`` reads.
* The consumer writes an ``expired`` marker when it drops a job past its deadline, so
  ``tiered-jobs job`` can say so; the record's TTL is the same window.

A marker record has no payload hash (the canceller does not know the payload): the runtime's
persistence layer accepts a stored marker whatever the payload of the job that finds it.

Standard library only: this module ships in the Lambda asset and in the installable package.
"""

from __future__ import annotations

import json
from typing import Any

from .idempotency import RecordAttributes, RecordStatus, record_id

#: The key of the stored result that makes it an end marker (a job's own result never uses it:
#: results are whatever a job returns, so the name is the project's, not a plain word).
MARKER_KEY = "tiered_jobs_end"
CANCELLED = "cancelled"
EXPIRED = "expired"
KINDS = (CANCELLED, EXPIRED)

#: Set on a running job's ``INPROGRESS`` record by a cancel (ISO 8601): ``ctx.cancelled()`` reads it.
CANCEL_REQUESTED = "cancel_requested_at"
#: The writer's own token on a marker item: a put that meets a marker holding its own token is its own
#: write, retried by botocore after a lost answer (``PutItem`` takes no idempotency token of its own).
#: Two cancels within the same millisecond write equal markers, so the content alone cannot tell.
WRITER_TOKEN = "writer_token"

#: Where a marker may be written: no live record (the condition Powertools itself writes under:
#: none, past its window, or an ``INPROGRESS`` whose attempt ran out of time).
WRITE_CONDITION = (
    "attribute_not_exists(#id) OR #expiry < :now OR "
    "(#status = :inprogress AND attribute_exists(#in_progress_expiry) AND #in_progress_expiry < :now_ms)"
)
WRITE_NAMES = {
    "#id": RecordAttributes.KEY,
    "#expiry": RecordAttributes.EXPIRATION,
    "#status": RecordAttributes.STATUS,
    "#in_progress_expiry": RecordAttributes.IN_PROGRESS_EXPIRATION,
}


def marker(kind: str, at: str, detail: str = "") -> dict[str, Any]:
    """The stored result of a job that ended as ``kind`` at ``at`` (ISO 8601)."""
    if kind not in KINDS:
        raise ValueError(f"an end marker is one of {', '.join(KINDS)}, got {kind!r}")
    return {MARKER_KEY: kind, "at": at, "detail": detail}


def stored_result(text: str | None) -> Any:
    """A record's stored result as the idempotency table holds it (JSON text), decoded; ``None`` when it
    has none or it is not JSON. The consumer and a cancel read the same record, so they decode it alike."""
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def marker_kind(result: Any) -> str | None:
    """``cancelled`` / ``expired`` when ``result`` (a stored result) is an end marker, else ``None``."""
    if isinstance(result, dict):
        kind = result.get(MARKER_KEY)
        if kind in KINDS:
            return str(kind)
    return None


def marker_item(
    job_type: str,
    idempotency_key: str,
    kind: str,
    *,
    at: str,
    now: float,
    ttl_seconds: int,
    detail: str = "",
    writer_token: str | None = None,
) -> dict[str, Any]:
    """The idempotency table's item of the marker (DynamoDB's typed form), kept ``ttl_seconds`` from ``now``;
    with ``writer_token``, the writer knows its own marker again (:data:`WRITER_TOKEN`)."""
    item = {
        RecordAttributes.KEY: {"S": record_id(job_type, idempotency_key)},
        RecordAttributes.STATUS: {"S": RecordStatus.COMPLETED},
        RecordAttributes.EXPIRATION: {"N": str(int(now) + ttl_seconds)},
        RecordAttributes.DATA: {"S": json.dumps(marker(kind, at, detail), separators=(",", ":"))},
    }
    if writer_token is not None:
        item[WRITER_TOKEN] = {"S": writer_token}
    return item


def write_values(now: float) -> dict[str, Any]:
    """``ExpressionAttributeValues`` of :data:`WRITE_CONDITION` at ``now`` (epoch seconds)."""
    return {
        ":now": {"N": str(int(now))},
        ":now_ms": {"N": str(int(now * 1000))},
        ":inprogress": {"S": RecordStatus.IN_PROGRESS},
    }
