"""One dead letter as the replay sees it: why it failed, what job it is, since when.

Our consumer dead-letters with ``DeadLetter.*`` attributes. A letter without them was moved by
the queue's redrive policy (the consumer crashed or timed out before it could decide): its
reason and error type read as ``DeadLetter.REASON_UNKNOWN``, and its job type is read from the
body when the body is a valid envelope.

The idempotency window
----------------------
The consumer remembers a completed job for the tier's ``idempotency_ttl_seconds``, counted
from when that run completed, which is never before the job was first received. A letter is
*inside the window* when its earliest known moment (the envelope's ``published_at``,
``DeadLetter.FirstFailedAt``, or SQS's ``SentTimestamp``, whichever is earliest) lies less than
the window, minus ``WINDOW_MARGIN_SECONDS`` for the replayed copy to be processed, before now.
Replaying a letter outside the window could run a job that had completed again.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cached_property
from typing import Any

from tiered_jobs.contract import envelope
from tiered_jobs.contract import trace_header as traces
from tiered_jobs.contract.large_payloads import is_offloaded
from tiered_jobs.contract.letter_traceback import LetterTraceback
from tiered_jobs.contract.names import (
    SQS_MAX_MESSAGE_ATTRIBUTES,
    SQS_MAX_MESSAGE_BYTES,
    Attributes,
    DeadLetter,
    Replay,
)
from tiered_jobs.contract.sqs_limits import message_size
from tiered_jobs.contract.steps import STEP_ATTRIBUTE
from tiered_jobs.contract.times import iso_text, parse_iso

UNKNOWN = DeadLetter.REASON_UNKNOWN
#: A replayed letter must have at least this much of its idempotency window left: time for the
#: copy to wait in the queue and be processed before the consumer may forget the job.
WINDOW_MARGIN_SECONDS = 3600


@dataclass(frozen=True)
class Letter:
    """One dead letter as read from a DLQ: its body unchanged and every attribute."""

    message_id: str
    receipt_handle: str
    #: The body exactly as SQS returned it: replay sends this string back unchanged.
    body: str
    #: Every message attribute as received (``DataType`` plus ``StringValue`` or ``BinaryValue``).
    attributes: dict[str, dict[str, Any]]
    reason: str
    error_type: str
    error_message: str | None
    job_type: str
    #: When the letter failed first / last (``DeadLetter.*``), else when it was sent to its queue.
    first_failed_at: datetime
    dead_lettered_at: datetime
    #: When SQS received this message (``SentTimestamp``).
    sent_at: datetime
    #: SQS's system attributes as received (``SentTimestamp``, ``ApproximateReceiveCount``...).
    system_attributes: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_message(cls, message: dict[str, Any]) -> Letter:
        """Build from one ``ReceiveMessage`` entry (asked with attributes ``All`` and ``SentTimestamp``)."""
        attributes = {name: _sendable(value) for name, value in (message.get("MessageAttributes") or {}).items()}
        text = {name: value.get("StringValue") for name, value in attributes.items()}
        sent_at = datetime.fromtimestamp(int(message["Attributes"]["SentTimestamp"]) / 1000, timezone.utc)
        last_failed = parse_iso(text.get(DeadLetter.LAST_FAILED_AT)) or sent_at
        return cls(
            message_id=message["MessageId"],
            receipt_handle=message["ReceiptHandle"],
            body=message["Body"],
            attributes=attributes,
            reason=text.get(DeadLetter.REASON) or UNKNOWN,
            error_type=text.get(DeadLetter.ERROR_TYPE) or UNKNOWN,
            error_message=text.get(DeadLetter.ERROR_MESSAGE),
            job_type=text.get(DeadLetter.JOB_TYPE) or _job_type_from_body(message["Body"]),
            first_failed_at=parse_iso(text.get(DeadLetter.FIRST_FAILED_AT)) or last_failed,
            dead_lettered_at=last_failed,
            sent_at=sent_at,
            system_attributes=dict(message["Attributes"]),
        )

    @cached_property
    def traceback(self) -> LetterTraceback | None:
        """Where the job failed (``DeadLetter.Traceback``); ``None`` for a letter without one (an older
        letter, one of SQS's redrive, a ``requeue_failed`` one)."""
        return LetterTraceback.decode(self.attributes.get(DeadLetter.TRACEBACK, {}).get("StringValue"))

    @property
    def trace_header(self) -> str | None:
        """Its publisher's X-Ray header (``AWSTraceHeader``), which the consumer kept on the letter."""
        return self.system_attributes.get(traces.ATTRIBUTE) or None

    @property
    def frame(self) -> str | None:
        """``path:line in function`` of the job's own code that raised, when the letter says."""
        return self.traceback.frame if self.traceback is not None else None

    @cached_property
    def earliest_known_at(self) -> datetime:
        """The earliest moment this job is known to have existed (see "The idempotency window")."""
        moments = [self.first_failed_at, self.sent_at]
        try:
            published = envelope.parse(self.body).published_at
        except envelope.EnvelopeError:
            published = None
        if published_at := parse_iso(published):
            moments.append(published_at)
        return min(moments)

    def outside_window(self, ttl_seconds: int | None, now: datetime) -> bool:
        """Could a replay of this letter find its job forgotten? Always ``True`` when the window is unknown."""
        if ttl_seconds is None:
            return True
        return (now - self.earliest_known_at).total_seconds() > ttl_seconds - WINDOW_MARGIN_SECONDS

    def to_record(self, tier: str, at: datetime) -> dict[str, Any]:
        """The whole letter as one JSON-safe object (the discard archive's line, ``show``'s answer).

        ``at`` (``recorded_at``): when it was archived (discard) or read (show).
        ``message_attributes`` holds every attribute as SQS returned it (``DeadLetter.*``
        included); a ``BinaryValue`` is base64. ``error_message`` is the real one, not masked.
        ``frame`` and ``traceback``: where the job failed (``None`` when the letter does not say).
        """
        return {
            "tier": tier,
            "message_id": self.message_id,
            "recorded_at": iso_text(at),
            "job_type": self.job_type,
            "reason": self.reason,
            "error_type": self.error_type,
            "error_message": self.error_message,
            "frame": self.frame,
            "traceback": self.traceback.text if self.traceback is not None else None,
            "first_failed_at": iso_text(self.first_failed_at),
            "dead_lettered_at": iso_text(self.dead_lettered_at),
            "sent_at": iso_text(self.sent_at),
            "body": self.body,
            "message_attributes": {
                name: {
                    key: base64.b64encode(v).decode("ascii") if key == "BinaryValue" else v for key, v in value.items()
                }
                for name, value in self.attributes.items()
            },
            "attributes": dict(self.system_attributes),
        }

    def replay_attributes(self, replayed_at: str) -> dict[str, dict[str, Any]]:
        """The attributes of the replayed copy: the publisher's, plus ``Replay.*`` and the job's first failure.

        A replay starts a new run of the job: no ``DeadLetter.*`` and none of the runtime's
        ``TieredJobs.*`` state come along (its attempts start afresh, its age from the replay), but
        ``TieredJobs.FirstFailedAt`` carries the letter's ``DeadLetter.FirstFailedAt``, so a job that
        fails again keeps its real first failure. ``Replay.Count`` counts the replays of this job
        (1 on the first). SQS allows 10 attributes and 1 MiB (body and attributes) per message: the
        publisher's attributes and the body always win, so when they leave no room the others are
        dropped (``Replay.At`` first, then ``Replay.Count``, then the first failure), never a user's.
        """
        kept = {
            name: value
            for name, value in self.attributes.items()
            # A stepped job's step stays: replayed, it continues from its last checkpoint (contract/steps.py).
            if not name.startswith((DeadLetter.PREFIX, Replay.PREFIX, Attributes.PREFIX)) or name == STEP_ATTRIBUTE
        }
        previous = self.attributes.get(Replay.COUNT, {}).get("StringValue")
        count = int(previous) + 1 if previous and previous.isdigit() else 1
        added: dict[str, dict[str, Any]] = {}
        first_failed = self.attributes.get(DeadLetter.FIRST_FAILED_AT, {}).get("StringValue")
        if first_failed:
            added[Attributes.FIRST_FAILED_AT] = {"DataType": "String", "StringValue": first_failed}
        added[Replay.COUNT] = {"DataType": "Number", "StringValue": str(count)}
        added[Replay.AT] = {"DataType": "String", "StringValue": replayed_at}
        room = max(0, SQS_MAX_MESSAGE_ATTRIBUTES - len(kept))
        for name, value in list(added.items())[:room]:
            if message_size(self.body, {**kept, name: value}) > SQS_MAX_MESSAGE_BYTES:
                break
            kept[name] = value
        return kept

    @cached_property
    def tenant(self) -> str | None:
        """The envelope's ``tenant``: the replayed copy's ``MessageGroupId`` (a fair queue's tenant). An offloaded
        letter's envelope is in S3 (``large_payloads``): the group SQS delivered it with, which the consumer set
        from the envelope when it dead-lettered it, stands in (a replay never reads the stored body)."""
        if is_offloaded(self.attributes):
            return self.system_attributes.get("MessageGroupId") or None
        try:
            return envelope.parse(self.body).tenant
        except envelope.EnvelopeTooNew as newer:  # a newer producer's job keeps its tenant too
            return newer.tenant
        except envelope.EnvelopeError:
            return None

    def replay_size(self, replayed_at: str) -> int:
        """The bytes SQS counts for the replayed copy (body plus :meth:`replay_attributes`)."""
        return message_size(self.body, self.replay_attributes(replayed_at))


def _sendable(value: dict[str, Any]) -> dict[str, Any]:
    """An attribute as ``SendMessage`` accepts it (the receive side adds empty list values)."""
    out = {"DataType": value["DataType"]}
    for key in ("StringValue", "BinaryValue"):
        if key in value:
            out[key] = value[key]
    return out


def _job_type_from_body(body: str) -> str:
    try:
        return envelope.parse(body).type
    except envelope.EnvelopeError:
        return UNKNOWN
