"""Cancel every pending job matching a filter (type, tenant, published before): ``tiered-jobs cancel TYPE_GLOB``.

A queued job can only be found by reading its queue. The sweep receives each tier's messages (at
most ``max_messages`` per tier, each held while the sweep runs so it moves forward through the
queue), reads every envelope, and for each match writes the job's cancel marker
(:func:`tiered_jobs.stage.cancelling.mark_cancelled`): the consumer then archives it unrun when it
comes. ``dry_run`` writes nothing and lists what would be cancelled. Every message is made
visible again at the end, also when the sweep fails; the matched ones are not deleted here, so
nothing leaves a queue without being archived first, by the consumer, as any cancelled job.

**Receives.** SQS counts every receive toward the queue's redrive (``maxReceiveCount``), the
sweep's too. A message the sweep's receive brought to ``maxReceiveCount`` would be moved to the
DLQ without reasons on its next receive, having lost an attempt that never ran. So such a message,
match or not, is not given back: it is sent again as a copy carrying what the job had
(``TieredJobs.PriorAttempts``, ``EnqueuedAt``, ``FirstFailedAt``, as the consumer's own copies do:
docs/consumer.md, "What a job carries across copies") and the original deleted once SQS accepted
the copy. Every other message spent one receive, which its attempt number counts (the sweep is rare
and deliberate; a job with attempts to spare keeps them all but one). Jobs held by the rate limit
or delayed by SQS are not visible and not swept (cancel them by key); one-time schedules neither.
"""

from __future__ import annotations

import fnmatch
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from ..contract import envelope
from ..contract import trace_header as traces
from ..contract.names import SQS_MAX_BATCH_ENTRIES, Attributes, DeadLetter, Replay
from ..contract.times import iso_text, parse_iso
from ..stage import cancelling
from ..stage.target import Target
from .errors import OperatorError

#: Messages read per tier at most (a bound on the calls: one receive per 10 messages).
DEFAULT_MAX_MESSAGES = 1000
#: How long the sweep holds what it read (made visible again at its end, or by SQS after this).
HOLD_SECONDS = 120
_NOT_CARRIED = (DeadLetter.PREFIX, Attributes.PREFIX, Replay.PREFIX)


@dataclass(frozen=True)
class Match:
    tier: str
    job_type: str
    key: str
    tenant: str | None
    published_at: str | None
    #: What the cancel found (``None`` in a dry run).
    outcome: str | None = None


@dataclass
class BulkCancel:
    dry_run: bool
    matches: list[Match] = field(default_factory=list)
    #: Messages read per tier.
    read: dict[str, int] = field(default_factory=dict)
    #: Messages sent again as copies because the sweep spent their last receive.
    recopied: int = 0
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "matched": len(self.matches),
            "cancelled": sum(m.outcome in ("marked", "running") for m in self.matches),
            "jobs": [m.__dict__ for m in self.matches],
            "messages_read": self.read,
            "recopied": self.recopied,
            "notes": self.notes,
        }


def bulk_cancel(
    target: Target,
    job_type_glob: str,
    *,
    tenant: str | None = None,
    published_before: datetime | None = None,
    tier: str | None = None,
    dry_run: bool = False,
    max_messages: int = DEFAULT_MAX_MESSAGES,
    now: Callable[[], float] = time.time,
) -> BulkCancel:
    """Sweep the tiers' queues (or ``tier``'s) for the jobs matching the filter and cancel each (see above)."""
    if not job_type_glob:
        raise OperatorError("give a job type (a glob like 'invoices.*' matches many)", 2)
    if published_before is not None and published_before.tzinfo is None:
        raise OperatorError("--published-before needs a time zone (e.g. 2030-05-01T09:00:00Z)", 2)
    deployment = target.deployment()
    if tier is not None:
        deployment.tier(tier)  # UnknownTierError, naming the known ones
    tiers = [tier] if tier is not None else list(deployment.tiers)
    marks = None if dry_run else cancelling.from_ssm(target.stage, deployment, ssm=target.client("ssm"))
    answer = BulkCancel(dry_run)
    sqs = target.client("sqs")
    for name in tiers:
        queue_url = deployment.tiers[name].queue_url
        limit = _receive_limit(sqs, queue_url)
        held: dict[str, str] = {}
        #: Messages the sweep brought to their last receive: copied once the sweep of the queue is over
        #: (sent earlier, a copy would be swept as a message of its own).
        last_receive: list[tuple[dict[str, Any], envelope.Envelope | None]] = []
        try:
            for message in _sweep(sqs, queue_url, max_messages, held):
                answer.read[name] = answer.read.get(name, 0) + 1
                job = _envelope(message)
                if job is not None and _matches(job, job_type_glob, tenant, published_before):
                    outcome = None
                    if marks is not None:
                        outcome = cancelling.mark_cancelled(
                            target.client("dynamodb"), marks, name, job.type, job.idempotency_key, now=now
                        ).outcome
                    answer.matches.append(
                        Match(name, job.type, job.idempotency_key, job.tenant, job.published_at, outcome)
                    )
                count = int(message.get("Attributes", {}).get("ApproximateReceiveCount", "1"))
                if limit is not None and count >= limit:
                    last_receive.append((message, job))
        finally:
            for message, job in last_receive:
                if _recopy(sqs, queue_url, message, job):
                    held.pop(message["MessageId"], None)
                    answer.recopied += 1
            _release(sqs, queue_url, held)
    return answer


def _sweep(sqs: Any, queue_url: str, max_messages: int, held: dict[str, str]) -> Any:
    """Every visible message once (held until released), at most ``max_messages``."""
    while len(held) < max_messages:
        messages = sqs.receive_message(
            QueueUrl=queue_url,
            MaxNumberOfMessages=min(SQS_MAX_BATCH_ENTRIES, max_messages - len(held)),
            VisibilityTimeout=HOLD_SECONDS,
            WaitTimeSeconds=1,  # a long poll asks every SQS server: an empty answer means nothing is visible
            MessageSystemAttributeNames=["All"],
            MessageAttributeNames=["All"],
        ).get("Messages", [])
        fresh = [m for m in messages if m["MessageId"] not in held]
        if not fresh:
            return
        for message in fresh:
            held[message["MessageId"]] = message["ReceiptHandle"]
            yield message


def _envelope(message: dict[str, Any]) -> envelope.Envelope | None:
    try:
        return envelope.parse(message.get("Body", ""))
    except envelope.EnvelopeError:
        return None


def _matches(job: envelope.Envelope, glob: str, tenant: str | None, before: datetime | None) -> bool:
    if not fnmatch.fnmatchcase(job.type, glob):
        return False
    if tenant is not None and job.tenant != tenant:
        return False
    if before is not None:
        published = parse_iso(job.published_at)
        if published is None or published >= before:
            return False
    return True


def _receive_limit(sqs: Any, queue_url: str) -> int | None:
    """The queue's redrive ``maxReceiveCount`` (``None``: no redrive policy)."""
    answer = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["RedrivePolicy"])
    policy = answer.get("Attributes", {}).get("RedrivePolicy")
    return int(json.loads(policy)["maxReceiveCount"]) if policy else None


def _recopy(sqs: Any, queue_url: str, message: dict[str, Any], job: envelope.Envelope | None) -> bool:
    """Send ``message`` again as a fresh copy (its last receive was the sweep's), then delete it."""
    system = message.get("Attributes", {})
    user = message.get("MessageAttributes", {})
    count = int(system.get("ApproximateReceiveCount", "1"))
    prior = int(user.get(Attributes.PRIOR_ATTEMPTS, {}).get("StringValue", "0") or 0)
    sent = datetime.fromtimestamp(int(system.get("SentTimestamp", "0")) / 1000, timezone.utc)
    attributes = {name: value for name, value in user.items() if not name.startswith(_NOT_CARRIED)}
    attributes[Attributes.PRIOR_ATTEMPTS] = {"DataType": "Number", "StringValue": str(prior + count - 1)}
    enqueued = user.get(Attributes.ENQUEUED_AT, {}).get("StringValue") or iso_text(sent)
    attributes[Attributes.ENQUEUED_AT] = {"DataType": "String", "StringValue": enqueued}
    first_failed = user.get(Attributes.FIRST_FAILED_AT, {}).get("StringValue")
    if first_failed is None and count > 1 and system.get("ApproximateFirstReceiveTimestamp"):
        first = datetime.fromtimestamp(int(system["ApproximateFirstReceiveTimestamp"]) / 1000, timezone.utc)
        first_failed = iso_text(first)
    if first_failed is not None:
        attributes[Attributes.FIRST_FAILED_AT] = {"DataType": "String", "StringValue": first_failed}
    attributes = {
        name: {k: v for k, v in value.items() if k in ("DataType", "StringValue", "BinaryValue")}
        for name, value in attributes.items()
    }
    extra: dict[str, Any] = {"MessageGroupId": job.tenant} if job is not None and job.tenant else {}
    if system.get(traces.ATTRIBUTE):  # the job's runs keep linking to the publishing request
        extra["MessageSystemAttributes"] = traces.system_attributes(system[traces.ATTRIBUTE])
    try:
        sqs.send_message(QueueUrl=queue_url, MessageBody=message["Body"], MessageAttributes=attributes, **extra)
    except Exception:  # noqa: BLE001 -- not copied: released as read, the receive spent
        return False
    sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
    return True


def _release(sqs: Any, queue_url: str, held: dict[str, str]) -> None:
    """Make every held message visible again (SQS does it anyway after ``HOLD_SECONDS``)."""
    handles = list(held.values())
    for start in range(0, len(handles), SQS_MAX_BATCH_ENTRIES):
        entries = [
            {"Id": str(i), "ReceiptHandle": handle, "VisibilityTimeout": 0}
            for i, handle in enumerate(handles[start : start + SQS_MAX_BATCH_ENTRIES])
        ]
        try:
            sqs.change_message_visibility_batch(QueueUrl=queue_url, Entries=entries)
        except Exception:  # noqa: BLE001 -- they come back by themselves after the hold
            pass
