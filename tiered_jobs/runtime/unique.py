"""Releasing a finished unique job's lock (``publish(..., unique_for=)``; :mod:`tiered_jobs.contract.unique`).

The consumer calls :func:`release` when a job whose envelope carries ``unique_lock`` finishes:
it succeeded (or was answered as a duplicate), or it was dead-lettered. One conditional
``DeleteItem``: the lock goes only if it still holds this job's token, so a lock that a later
publish took once the window had ended is left to that publish's job.

A release never changes the record's fate: a failed one is logged and the lock ends with its
window, as it does when the consumer never sees the job finish (a crash on the last receive, whose
letter SQS's redrive moves without the consumer).
"""

from __future__ import annotations

from typing import Any

from tiered_jobs.contract import unique
from tiered_jobs.contract.envelope import Envelope


def release(dynamodb: Any, table: str | None, envelope: Envelope, logger: Any) -> bool:
    """Delete the job's lock if it still holds it; ``True`` when its lock is gone (deleted now, or before:
    a delete whose answer was lost meets no item on botocore's retry). Never raises."""
    if envelope.unique_lock is None:
        return False
    if not table:
        logger.warning(
            "the job holds a unique lock but this tier knows no unique-jobs table: the lock ends with its window",
            extra={"unique_lock": envelope.unique_lock},
        )
        return False
    try:
        dynamodb.delete_item(
            **unique.release_request(table, envelope.type, envelope.idempotency_key, envelope.unique_lock)
        )
    except Exception as exc:  # noqa: BLE001 -- the job has finished either way; the window bounds the lock
        code = getattr(exc, "response", {}).get("Error", {}).get("Code")
        if code == "ConditionalCheckFailedException":
            # No item: released already (this delete's first try, its answer lost, or an earlier delivery).
            # An item: a later publish's lock, not this job's to release.
            return not getattr(exc, "response", {}).get("Item")
        logger.warning("could not release the job's unique lock: it ends with its window", extra={"error": repr(exc)})
        return False
    return True
