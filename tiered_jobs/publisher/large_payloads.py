"""The publisher's side of ``large_payloads``: store a body over its tier's threshold in the stage's
bucket, and send the pointer AWS's SQS extended clients send (``tiered_jobs.contract.large_payloads``).

The object is written before the message is sent: a message never points at nothing. A job whose
send then fails leaves an object nobody points at, which the bucket's lifecycle expires: it is never
deleted by the publisher, as the send's outcome can be unknown (a timeout) and a sent message may
still point at it.
"""

from __future__ import annotations

import uuid
from typing import Any

from ..contract.large_payloads import Offload, Pointer, object_key, size_attribute
from ..contract.sqs_limits import message_size

#: Only a job sent now (SQS's delay, up to 15 minutes) is offloaded: a one-time schedule may fire
#: a year later, long after the bucket's lifecycle has expired the object.
SCHEDULED_PROBLEM = (
    "a job offloaded to S3 (large_payloads) cannot go through a one-time schedule, which may fire after its "
    "stored body expires: publish it due within 15 minutes, or pass IDs, not objects"
)


def should_offload(offload: Offload | None, size: int) -> bool:
    """Is a message of ``size`` bytes (body and attributes) over its tier's threshold?"""
    return offload is not None and size > offload.threshold_bytes


def store(s3: Any, offload: Offload, tier: str, body: str) -> tuple[str, dict[str, dict[str, str]], int]:
    """Write ``body`` under the tier's folder; ``(pointer body, its attributes, the message's size)``."""
    data = body.encode("utf-8")
    pointer = Pointer(offload.bucket, object_key(tier, str(uuid.uuid4())))
    s3.put_object(Bucket=pointer.bucket, Key=pointer.key, Body=data, ContentType="application/json")
    attributes = size_attribute(len(data))
    sent = pointer.body()
    return sent, attributes, message_size(sent, attributes)
