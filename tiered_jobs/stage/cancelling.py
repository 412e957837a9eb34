"""Cancelling a queued job: its end marker, written into its idempotency record (publishers and operators).

A job in a queue (or delayed by SQS, or waiting in a DLQ for a replay) cannot be taken back: SQS
has no "delete the message with this body". So a cancel writes where the consumer looks anyway:
the job's idempotency record (:mod:`tiered_jobs.contract.job_ends`). One conditional ``PutItem``:

* no live record: the marker is written (``marked``), and every copy of the job that arrives
  within the tier's idempotency window is archived unrun with reason ``cancelled``;
* a finished record: nothing is written (``already done``; or ``already cancelled`` / ``already
  expired`` when that record is a marker itself), read from the same call's answer
  (``ReturnValuesOnConditionCheckFailure``), never by a second read;
* an attempt running now: one ``UpdateItem`` adds :data:`~tiered_jobs.contract.job_ends.CANCEL_REQUESTED`
  to its record (``running``): the job sees it through ``ctx.cancelled()`` if it asks;
* a stepped job between two steps (``ctx.checkpoint``: its record is ``COMPLETED`` with the next
  step due, :mod:`tiered_jobs.contract.steps`): it has not finished, so it is asked to stop the same
  way (``running``); the request stays on the record through the steps' claims and ends, so every
  later step's ``ctx.cancelled()`` sees it.

The marker cannot tell a queued job from one never published (no record exists for either), so
``marked`` says "if it comes, it will not run": a later publish of the same key within the window
is cancelled too. Its window is the tier's (``idempotency_ttl_seconds``, from the stage's SSM
parameters), as long as a finished job's record stays.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Literal

from tiered_jobs.contract import job_ends
from tiered_jobs.contract import steps as step_records
from tiered_jobs.contract.errors import USAGE, TieredJobsError
from tiered_jobs.contract.idempotency import RecordAttributes, RecordStatus, record_id
from tiered_jobs.contract.times import iso_text

from . import discovery

Outcome = Literal["marked", "running", "already done", "already cancelled", "already expired"]


class CancelError(TieredJobsError, LookupError):
    """A cancel that cannot be carried out as asked (no idempotency table known, no window for the tier)."""

    code = USAGE


@dataclass(frozen=True)
class MarkTarget:
    """Where a stage keeps its jobs' idempotency records, and how long each tier keeps them."""

    table: str
    #: Each tier's idempotency window (seconds); a tier without one cannot be marked.
    windows: Mapping[str, int]

    def window(self, tier: str) -> int:
        window = self.windows.get(tier)
        if window is None:
            raise CancelError(
                f"the idempotency window of tier {tier!r} is unknown (its SSM parameter is missing: a stage "
                "deployed before it was written); deploy the stack again to cancel its queued jobs"
            )
        return window


def from_ssm(stage: str, deployment: discovery.Deployment, *, ssm: Any = None) -> MarkTarget:
    """The stage's table (from discovery) and each tier's window (one ``GetParameters`` per 10 tiers)."""
    if ssm is None:
        import boto3

        ssm = boto3.client("ssm")
    if not deployment.idempotency_table_name:
        raise CancelError(
            f"{deployment.source} names no idempotency table, where a queued job's cancel is written: "
            "build the publisher with Publisher.from_stage(...) or from_stack_outputs(...)"
        )
    windows = discovery.idempotency_ttls(stage, list(deployment.tiers), ssm=ssm)
    return MarkTarget(
        deployment.idempotency_table_name, {tier: ttl for tier, ttl in windows.items() if ttl is not None}
    )


@dataclass(frozen=True)
class Marked:
    """What a cancel found in the job's record, and what it did."""

    outcome: Outcome
    #: Marked: until when a copy of the job is cancelled (the marker's end). Else ``None``.
    until: datetime | None = None
    #: A finished record: when it stops protecting the job (``None`` if it does not say).
    record_expires: datetime | None = None

    @property
    def cancelled(self) -> bool:
        """The job will not start (``marked``), or was asked to stop (``running``)."""
        return self.outcome in ("marked", "running")


@dataclass(frozen=True)
class JobCancellation:
    """What ``cancel(job_type, key)`` found and did (``Publisher.cancellation``):

    * ``cancelled``: its one-time schedule was pending and is deleted: it will not be sent;
    * ``marked``: a cancel marker is written: a queued, SQS-delayed or replayed copy is archived unrun
      (reason ``cancelled``) until ``until``; if none was published, one published before then is too;
    * ``running``: an attempt runs now, or a stepped job is between two steps; it was asked to stop
      (``ctx.cancelled()``), nothing more;
    * ``already done`` / ``already cancelled`` / ``already expired``: its record says it ended; nothing written;
    * ``not found`` / ``already sent``: a publisher that can only reach schedules (no idempotency table)
      found no pending schedule, or one whose time has come.
    """

    outcome: str
    #: The schedule's time, when one was found.
    fire_at: datetime | None = None
    #: ``marked``: until when copies of the job are cancelled.
    until: datetime | None = None
    #: A finished record: when it stops protecting the job.
    record_expires: datetime | None = None

    @property
    def cancelled(self) -> bool:
        """It will not start: its schedule was deleted, or its marker written."""
        return self.outcome in ("cancelled", "marked")

    def describe(self, job_type: str, key: str) -> str:
        """One sentence for people (the CLI's answer)."""
        job = f"{job_type} (key {key!r})"
        when = _text(self.fire_at)
        return {
            "cancelled": f"Cancelled {job}: its one-time schedule (due {when}) is deleted; it will not run.",
            "marked": f"Cancelled {job}: no run of it has started; any copy that arrives (queued, delayed by SQS, "
            f"replayed, or published again) until {_text(self.until)} is archived unrun, reason 'cancelled'.",
            "running": f"{job} is running now (or between two of its steps): it was asked to stop (the job sees it "
            "if it calls ctx.cancelled(), in this step and the next ones); nothing stops a job that does not ask.",
            "already done": f"Not cancelled: {job} already ran "
            f"(its record is kept until {_text(self.record_expires)}).",
            "already cancelled": f"{job} was cancelled already (until {_text(self.record_expires)}).",
            "already expired": f"Not cancelled: {job} expired already (its deadline passed before it started).",
            "not found": f"No pending scheduled job {job}: never scheduled, or already sent.",
            "already sent": f"Not cancelled: scheduled job {job} was due at {when}, so it was already sent "
            "(or is being sent).",
        }.get(self.outcome, f"{job}: {self.outcome}")


def _text(moment: datetime | None) -> str:
    return iso_text(moment) if moment is not None else "?"


def mark_cancelled(
    dynamodb: Any,
    target: MarkTarget,
    tier: str,
    job_type: str,
    idempotency_key: str,
    *,
    now: Callable[[], float] = time.time,
) -> Marked:
    """Write the job's cancel marker (see the module's docstring): one ``PutItem``, plus one ``UpdateItem``
    for a running job."""
    from botocore.exceptions import ClientError

    window = target.window(tier)
    at = now()
    marker = job_ends.marker_item(
        job_type,
        idempotency_key,
        job_ends.CANCELLED,
        at=iso_text(datetime.fromtimestamp(at, timezone.utc)),
        now=at,
        ttl_seconds=window,
        writer_token=uuid.uuid4().hex,
    )
    marked = Marked("marked", until=datetime.fromtimestamp(int(at) + window, timezone.utc))
    try:
        dynamodb.put_item(
            TableName=target.table,
            Item=marker,
            ConditionExpression=job_ends.WRITE_CONDITION,
            ExpressionAttributeNames=job_ends.WRITE_NAMES,
            ExpressionAttributeValues=job_ends.write_values(at),
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
        return marked
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
            raise
        old = exc.response.get("Item") or {}
    if old.get(job_ends.WRITER_TOKEN) == marker[job_ends.WRITER_TOKEN]:
        # A lost answer: botocore sent the put again, and it met this cancel's own marker (its token):
        # written by this call, not found from an earlier cancel.
        return marked
    expires = _epoch(old.get(RecordAttributes.EXPIRATION, {}).get("N"))
    # A record with a step due is a stepped job between two steps: not finished, whatever its status says.
    if old.get(RecordAttributes.STATUS, {}).get("S") == RecordStatus.IN_PROGRESS or step_records.RECORD_STEP in old:
        return _request_stop(dynamodb, target.table, job_type, idempotency_key, at, expires)
    kind = job_ends.marker_kind(job_ends.stored_result(old.get(RecordAttributes.DATA, {}).get("S")))
    if kind == job_ends.CANCELLED:
        return Marked("already cancelled", record_expires=expires)
    if kind == job_ends.EXPIRED:
        return Marked("already expired", record_expires=expires)
    return Marked("already done", record_expires=expires)


def _request_stop(
    dynamodb: Any, table: str, job_type: str, idempotency_key: str, at: float, expires: datetime | None
) -> Marked:
    """The job is running (an attempt, or a stepped job between two steps): ask it to stop
    (``ctx.cancelled()``), if it is still running. Setting the same flag again is harmless, so a
    lost answer retried by botocore answers ``running`` again."""
    from botocore.exceptions import ClientError

    try:
        dynamodb.update_item(
            TableName=table,
            Key={RecordAttributes.KEY: {"S": record_id(job_type, idempotency_key)}},
            UpdateExpression="SET #c = :at",
            ConditionExpression="#s = :inprogress OR attribute_exists(#step)",
            ExpressionAttributeNames={
                "#c": job_ends.CANCEL_REQUESTED,
                "#s": RecordAttributes.STATUS,
                "#step": step_records.RECORD_STEP,
            },
            ExpressionAttributeValues={
                ":at": {"S": iso_text(datetime.fromtimestamp(at, timezone.utc))},
                ":inprogress": {"S": RecordStatus.IN_PROGRESS},
            },
        )
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
            raise
        return Marked("already done", record_expires=expires)  # it finished between the two calls
    return Marked("running", record_expires=expires)


def _epoch(value: str | None) -> datetime | None:
    try:
        return datetime.fromtimestamp(float(value), timezone.utc) if value is not None else None
    except (TypeError, ValueError, OverflowError, OSError):
        return None
