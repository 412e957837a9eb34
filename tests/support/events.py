"""Lambda SQS events for tests and benchmarks, built by the emulator's own builder (the one shape).

:func:`emulator.esm.sqs_event` turns ``ReceiveMessage`` messages into the event Lambda gives a
handler; :func:`sqs_event` does it for bodies that need no SQS round trip (jobs that succeed).
"""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

from emulator.esm import sqs_event as event_of_messages

REGION = "us-east-1"


def message(body: str, *, receive_count: int = 1, message_id: str | None = None) -> dict[str, Any]:
    """A ``ReceiveMessage`` message for ``body``, as SQS returns it with ``MessageSystemAttributeNames=All``."""
    return {
        "MessageId": message_id or str(uuid.uuid4()),
        "ReceiptHandle": f"rh-{uuid.uuid4()}",
        "Body": body,
        "MD5OfBody": hashlib.md5(body.encode()).hexdigest(),  # SQS's checksum, not security
        "Attributes": {
            "ApproximateReceiveCount": str(receive_count),
            "SentTimestamp": "0",
            "ApproximateFirstReceiveTimestamp": "0",
        },
    }


def sqs_event(bodies: list[str], queue_arn: str, receive_count: int = 1, region: str = REGION) -> dict:
    """A Lambda SQS event for ``bodies``, without an SQS round trip."""
    return event_of_messages([message(body, receive_count=receive_count) for body in bodies], queue_arn, region)
