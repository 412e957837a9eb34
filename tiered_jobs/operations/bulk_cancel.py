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
the copy. The copy is sent as soon as the message is read, within its hold: sent at the sweep's
end, after a sweep longer than the hold, SQS would already have made the original visible again,
for the redrive to move it without reasons while the copy ran too. A message whose hold ran out
before its copy could be sent (a slow marker write) is left as it is, never copied beside an
original that may be moving, and said in ``notes``. A copy is delayed by the hold (as its original
would have been held), so a sweep shorter than the hold never reads it; a longer one holds its own
copies when it reads them and never counts them as jobs. Every other message spent one receive,
which its attempt number counts (the sweep is rare and deliberate; a job with attempts to spare
keeps them all but one). Jobs held by the rate limit or delayed by SQS are not visible and not
swept (cancel them by key); one-time schedules neither.

**Offloaded jobs** (``large_payloads``): the message body is an S3 pointer, not the envelope. The
sweep reads the stored body to match the job (as ``dlq show`` does); one whose object cannot be read
(expired, refused) is reported under ``skipped`` with the pointer and the reason, never matched
blindly nor left unsaid.
"""

from __future__ import annotations

import fnmatch
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from ..contract import carry, envelope
from ..contract import trace_header as traces
from ..contract.names import SQS_MAX_BATCH_ENTRIES
from ..contract.steps import step_of
from ..contract.times import iso_text, parse_iso
from ..replay import offloaded
from ..stage import cancelling
from ..stage.target import Target
from .errors import OperatorError

#: Messages read per tier at most (a bound on the calls: one receive per 10 messages).
DEFAULT_MAX_MESSAGES = 1000
#: How long the sweep holds what it read (made visible again at its end, or by SQS after this).
HOLD_SECONDS = 120
#: A last-receive copy is sent only while this much of its message's hold is left: time for the send and
#: the delete of the original, which must both land before SQS could make the original visible again.
COPY_MARGIN_SECONDS = 10
#: A copy waits as long as its original would have been held (SQS's ``DelaySeconds``): a sweep shorter
#: than the hold never reads it, so never spends one of its receives.
COPY_DELAY_SECONDS = HOLD_SECONDS
#: A long poll asks every SQS server, so an empty answer means nothing is visible (read when the sweep
#: runs: a test on an emulated SQS, which answers a short poll completely, may set it to 0).
RECEIVE_WAIT_SECONDS = 1


@dataclass(frozen=True)
class Match:
    """One queued job a bulk cancel found by its filter."""

    tier: str
    job_type: str
    key: str
    tenant: str | None
    published_at: str | None
    #: What the cancel found (``None`` in a dry run).
    outcome: str | None = None


@dataclass
class BulkCancel:
    """What a bulk cancel did: the jobs it matched, what it read and copied per tier, and what it skipped."""

    dry_run: bool
    matches: list[Match] = field(default_factory=list)
    #: Messages read per tier.
    read: dict[str, int] = field(default_factory=dict)
    #: Messages sent again as copies because the sweep spent their last receive.
    recopied: int = 0
    notes: list[str] = field(default_factory=list)
    #: Offloaded jobs whose stored body could not be read, so could not be matched: tier, pointer, reason.
    skipped: list[dict[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "matched": len(self.matches),
            "cancelled": sum(m.outcome in ("marked", "running") for m in self.matches),
            "jobs": [m.__dict__ for m in self.matches],
            "messages_read": self.read,
            "recopied": self.recopied,
            "skipped": self.skipped,
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
    clock: Callable[[], float] = time.monotonic,
) -> BulkCancel:
    """Sweep the tiers' queues (or ``tier``'s) for the jobs matching the filter and cancel each (see above).

    ``now`` stamps the markers; ``clock`` measures each message's hold (tests inject both)."""
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
    s3 = lambda: target.client("s3")  # noqa: E731 -- built on first need: a sweep without offloaded jobs never does
    for name in tiers:
        queue_url = deployment.tiers[name].queue_url
        limit = _receive_limit(sqs, queue_url)
        held: dict[str, str] = {}
        #: The copies this sweep sent: held like any message when read again, never read as a job.
        copies: set[str] = set()
        try:
            for message, received in _sweep(sqs, queue_url, max_messages, held, copies, clock):
                answer.read[name] = answer.read.get(name, 0) + 1
                job, unread = _envelope(message, s3)
                if unread is not None:
                    answer.skipped.append({"tier": name, "message_id": message["MessageId"], **unread})
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
                    # Now, within its hold: the original must be gone before SQS could show it again.
                    if clock() - received > HOLD_SECONDS - COPY_MARGIN_SECONDS:
                        answer.notes.append(
                            f"{name}: message {message['MessageId']} was on its last receive but its hold ran out "
                            "before its copy could be sent: not copied (its original may already be visible), left"
                        )
                        continue
                    copy_id = _recopy(sqs, queue_url, message, job)
                    if copy_id is not None:
                        copies.add(copy_id)
                        held.pop(message["MessageId"], None)
                        answer.recopied += 1
        finally:
            _release(sqs, queue_url, held)
    return answer


def _sweep(
    sqs: Any, queue_url: str, max_messages: int, held: dict[str, str], copies: set[str], clock: Callable[[], float]
) -> Any:
    """Every visible message once (held until released), at most ``max_messages``: ``(message, read at)``.

    The sweep's own ``copies`` are held when read (so they do not come back) but never yielded."""
    read = 0
    while read < max_messages:
        messages = sqs.receive_message(
            QueueUrl=queue_url,
            MaxNumberOfMessages=min(SQS_MAX_BATCH_ENTRIES, max_messages - read),
            VisibilityTimeout=HOLD_SECONDS,
            WaitTimeSeconds=RECEIVE_WAIT_SECONDS,
            MessageSystemAttributeNames=["All"],
            MessageAttributeNames=["All"],
        ).get("Messages", [])
        received = clock()  # each message's hold runs from here
        fresh = [m for m in messages if m["MessageId"] not in held]
        if not fresh:
            return
        for message in fresh:
            held[message["MessageId"]] = message["ReceiptHandle"]
            if message["MessageId"] in copies:
                continue
            read += 1
            yield message, received


def _envelope(message: dict[str, Any], s3: Callable[[], Any]) -> tuple[envelope.Envelope | None, dict[str, str] | None]:
    """The message's job, and for an offloaded one whose body cannot be read, what to report instead."""
    body = message.get("Body", "")
    record = offloaded.resolve({"body": body, "message_attributes": message.get("MessageAttributes") or {}}, s3)
    note = record.get("offloaded")
    if note is not None and note.get("error"):
        return None, {"offloaded": str(note.get("url") or note["pointer"]), "reason": str(note["error"])}
    try:
        return envelope.parse(str(record["body"])), None
    except envelope.EnvelopeError:
        return None, None


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


def _recopy(sqs: Any, queue_url: str, message: dict[str, Any], job: envelope.Envelope | None) -> str | None:
    """Send ``message`` again as a fresh copy (its last receive was the sweep's), then delete it: the copy's id."""
    system = message.get("Attributes", {})
    user = message.get("MessageAttributes", {})
    count = int(system.get("ApproximateReceiveCount", "1"))
    state = carry.Read({name: value.get("StringValue") for name, value in user.items()})
    sent = datetime.fromtimestamp(int(system.get("SentTimestamp", "0")) / 1000, timezone.utc)
    first_failed = state.first_failed_at
    if first_failed is None and count > 1 and system.get("ApproximateFirstReceiveTimestamp"):
        first = datetime.fromtimestamp(int(system["ApproximateFirstReceiveTimestamp"]) / 1000, timezone.utc)
        first_failed = iso_text(first)
    publisher_own = {
        name: {k: v for k, v in value.items() if k in ("DataType", "StringValue", "BinaryValue")}
        for name, value in carry.kept(user).items()
    }
    # the sweep's receive ran nothing, the earlier ones of this message did; a stepped job keeps its step
    attributes = carry.write(
        publisher_own,
        prior_attempts=state.prior_attempts + count - 1,
        enqueued_at=state.enqueued_at or iso_text(sent),
        first_failed_at=first_failed,
        step=step_of(user),
    )
    if attributes is None:  # no copy keeps its count: released as read, its receive spent
        return None
    extra: dict[str, Any] = {"MessageGroupId": job.tenant} if job is not None and job.tenant else {}
    if system.get(traces.ATTRIBUTE):  # the job's runs keep linking to the publishing request
        extra["MessageSystemAttributes"] = traces.system_attributes(system[traces.ATTRIBUTE])
    try:
        sent = sqs.send_message(
            QueueUrl=queue_url,
            MessageBody=message["Body"],
            MessageAttributes=attributes,
            DelaySeconds=COPY_DELAY_SECONDS,
            **extra,
        )
    except Exception:  # noqa: BLE001 -- not copied: released as read, the receive spent
        return None
    sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
    return str(sent["MessageId"])


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
