"""One dead letter as the replay sees it: why it failed, what job it is, since when.

Our consumer dead-letters with ``DeadLetter.*`` attributes. A letter without them was moved by
the queue's redrive policy (the consumer crashed or timed out before it could decide): its
reason and error type read as ``DeadLetter.REASON_UNKNOWN``, and its job type is read from the
body when the body is a valid envelope.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from tiered_jobs.contract import envelope
from tiered_jobs.contract.names import SQS_MAX_MESSAGE_ATTRIBUTES, Attributes, DeadLetter, Replay

UNKNOWN = DeadLetter.REASON_UNKNOWN


@dataclass(frozen=True)
class Letter:
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

    @classmethod
    def from_message(cls, message: dict[str, Any]) -> Letter:
        """Build from one ``ReceiveMessage`` entry (asked with attributes ``All`` and ``SentTimestamp``)."""
        attributes = {
            name: _sendable(value) for name, value in (message.get("MessageAttributes") or {}).items()
        }
        text = {name: value.get("StringValue") for name, value in attributes.items()}
        sent_at = datetime.fromtimestamp(int(message["Attributes"]["SentTimestamp"]) / 1000, timezone.utc)
        last_failed = _iso(text.get(DeadLetter.LAST_FAILED_AT)) or sent_at
        return cls(
            message_id=message["MessageId"],
            receipt_handle=message["ReceiptHandle"],
            body=message["Body"],
            attributes=attributes,
            reason=text.get(DeadLetter.REASON) or UNKNOWN,
            error_type=text.get(DeadLetter.ERROR_TYPE) or UNKNOWN,
            error_message=text.get(DeadLetter.ERROR_MESSAGE),
            job_type=text.get(DeadLetter.JOB_TYPE) or _job_type_from_body(message["Body"]),
            first_failed_at=_iso(text.get(DeadLetter.FIRST_FAILED_AT)) or last_failed,
            dead_lettered_at=last_failed,
        )

    def replay_attributes(self, replayed_at: str) -> dict[str, dict[str, Any]]:
        """The attributes of the replayed copy: the user's, no ``DeadLetter.*``, plus ``Replay.*``.

        ``Replay.Count`` counts the replays of this job (1 on the first). SQS allows 10
        attributes per message: the user's attributes always win, so when they leave no room
        the ``Replay.*`` markers are dropped (``At`` first, then ``Count``), never a user's.
        """
        kept = {
            name: value for name, value in self.attributes.items()
            # A replayed job gets its attempts afresh: the rate limit's carried count goes too.
            if not name.startswith(DeadLetter.PREFIX) and name not in (Replay.COUNT, Replay.AT, Attributes.PRIOR_ATTEMPTS)
        }
        previous = self.attributes.get(Replay.COUNT, {}).get("StringValue")
        count = int(previous) + 1 if previous and previous.isdigit() else 1
        markers = {
            Replay.COUNT: {"DataType": "Number", "StringValue": str(count)},
            Replay.AT: {"DataType": "String", "StringValue": replayed_at},
        }
        room = max(0, SQS_MAX_MESSAGE_ATTRIBUTES - len(kept))
        kept.update(dict(list(markers.items())[:room]))
        return kept


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


def _iso(value: str | None) -> datetime | None:
    """Parse an ISO 8601 attribute; a missing or garbled one is treated as absent, not fatal."""
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)
