"""Job messages past SQS's size, the way AWS's SQS extended client libraries store them.

A tier that opts in (``large_payloads``) has the publisher put a message body over the tier's
threshold in the stage's bucket and send a *pointer* in its place. The pointer is the one AWS's
extended clients write (``amazon-sqs-java-extended-client-lib``, through ``payloadoffloading``, and
``amazon-sqs-python-extended-client-lib``), so a Java or Python producer using them can feed a tier,
and their consumers can read ours:

- the body is the JSON array ``["software.amazon.payloadoffloading.PayloadS3Pointer",
  {"s3BucketName": "...", "s3Key": "..."}]`` (the older Java library wrote
  ``com.amazon.sqs.javamessaging.MessageS3Pointer``; both are read);
- the message attribute ``ExtendedPayloadSize`` (``Number``: the stored body's UTF-8 bytes; the older
  name is ``SQSLargePayloadSize``) says the body is a pointer. It counts within SQS's 10 attributes.

The *whole* body is stored, the envelope included, not only its ``payload``: that is what the
extended clients store and fetch, so nothing but the pointer crosses SQS. Everything that sends a
job again (the consumer's held or deferred copies, a letter, a replay) sends the pointer and its
attribute unchanged, never the body again. Only the standard library: the consumer imports this.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: The pointer class AWS's current extended clients write (Java 2.x, Python).
POINTER_CLASS = "software.amazon.payloadoffloading.PayloadS3Pointer"
#: The one the Java library's 1.x wrote; still read.
LEGACY_POINTER_CLASS = "com.amazon.sqs.javamessaging.MessageS3Pointer"
#: The attribute that marks a pointer body and holds the stored body's size in bytes.
SIZE_ATTRIBUTE = "ExtendedPayloadSize"
LEGACY_SIZE_ATTRIBUTE = "SQSLargePayloadSize"
SIZE_ATTRIBUTES: tuple[str, ...] = (SIZE_ATTRIBUTE, LEGACY_SIZE_ATTRIBUTE)
#: The value of a tier's large-payload parameter when the tier stores no body in S3 (every tier has one,
#: so a publisher reads them all in the call that finds the queues).
OFF = "off"


class PointerError(ValueError):
    """A message marked as offloaded whose body is not a pointer the extended clients would write."""


@dataclass(frozen=True)
class Pointer:
    """Where an offloaded body is: one object of one bucket."""

    bucket: str
    key: str

    @property
    def url(self) -> str:
        return f"s3://{self.bucket}/{self.key}"

    def body(self) -> str:
        """The message body that points here, exactly as the extended clients write it."""
        return json.dumps([POINTER_CLASS, {"s3BucketName": self.bucket, "s3Key": self.key}], separators=(",", ":"))


def size_attribute(size: int) -> dict[str, dict[str, str]]:
    """The ``MessageAttributes`` entry of a pointer message (SQS API shape)."""
    return {SIZE_ATTRIBUTE: {"DataType": "Number", "StringValue": str(size)}}


def is_offloaded(attributes: Mapping[str, Any] | None) -> bool:
    """Does a message with these attributes (SQS API or Lambda event shape) carry a pointer?"""
    return any(name in (attributes or {}) for name in SIZE_ATTRIBUTES)


def read_pointer(body: str) -> Pointer:
    """The pointer a marked message's body holds, or :class:`PointerError` saying what is wrong."""
    try:
        value = json.loads(body)
    except ValueError:
        value = None
    if (
        not isinstance(value, list)
        or len(value) != 2
        or value[0] not in (POINTER_CLASS, LEGACY_POINTER_CLASS)
        or not isinstance(value[1], dict)
    ):
        raise PointerError(
            f"the message has the {SIZE_ATTRIBUTE} attribute but its body is not an S3 pointer "
            f'(["{POINTER_CLASS}", {{"s3BucketName": ..., "s3Key": ...}}])'
        )
    bucket, key = value[1].get("s3BucketName"), value[1].get("s3Key")
    if not isinstance(bucket, str) or not bucket or not isinstance(key, str) or not key:
        raise PointerError("the S3 pointer in the message body has no s3BucketName or s3Key")
    return Pointer(bucket, key)


@dataclass(frozen=True)
class Offload:
    """A tier's large-payload setting as the publisher and the consumer read it: the stage's bucket,
    and the message size (bytes, body and attributes) above which a body goes there."""

    bucket: str
    threshold_bytes: int

    def to_json(self) -> str:
        return json.dumps({"bucket": self.bucket, "threshold_bytes": self.threshold_bytes}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str, where: str) -> Offload:
        """From :meth:`to_json`'s text; ``ValueError`` naming ``where`` when it is not that."""
        try:
            value = json.loads(text)
            offload = cls(str(value["bucket"]), int(value["threshold_bytes"]))
        except (ValueError, TypeError, KeyError) as exc:
            raise ValueError(f"{where} is not {{'bucket': ..., 'threshold_bytes': ...}}: {exc}") from None
        if not offload.bucket or offload.threshold_bytes < 0:
            raise ValueError(f"{where} names no bucket or a negative threshold: {text!r}")
        return offload


def object_key(tier: str, name: str) -> str:
    """Where the publisher stores a body: under its tier's folder (the publisher may write nowhere else)."""
    return f"{tier}/{name}"


#: The replay function's environment variable: ``{"<tier>": <seconds>}``, each opted-in tier's
#: :func:`native_replay_days` in seconds (a native replay of an older offloaded letter is refused).
NATIVE_REPLAY_BOUNDS_ENV = "TIERED_JOBS_NATIVE_REPLAY_BOUNDS"


def native_replay_days(lifecycle: int, retention_days: int, dlq_retention_days: int) -> int:
    """Whole days after its body was stored that an offloaded letter may still be moved back natively.

    SQS's move task sends each letter to the queue as a new message: its retention starts again, and
    the moved copy, then its own letter, may point at the body for the queue's and the DLQ's
    retention once more. The bucket deletes the body ``lifecycle`` days after it was stored
    (S3 rounds up to the next midnight UTC: never sooner), so a letter moved later than this could
    outlive its body."""
    return lifecycle - retention_days - dlq_retention_days


def lifecycle_days(retention_days: int, dlq_retention_days: int, idempotency_ttl_seconds: int) -> int:
    """Whole days an offloaded body must outlive its publish, so that no message still pointing at it
    outlives it: the job waits up to its queue's retention for a first run; a replay reaches letters
    up to the idempotency window after that first failure; the last replayed copy then lives its
    queue's and its DLQ's retention again."""
    return 2 * retention_days + dlq_retention_days + math.ceil(idempotency_ttl_seconds / 86_400)
