"""Reading a job whose body the publisher stored in S3 (``tiered_jobs.contract.large_payloads``).

The consumer fetches the stored body before it parses the envelope; the record keeps its pointer
as its body, so a retry, a held or deferred copy, a letter and a replay all send the pointer again,
never the body. What can go wrong, and where the record then goes:

- the pointer is malformed, names a bucket other than the stage's, or reaches a tier that did not
  opt in: :class:`PointerRefused`, permanent (the DLQ with the reason; fixed by a replay once the
  tier is configured). The consumer reads only its stage's bucket, whatever a message names;
- the object is gone (``NoSuchKey``: expired by the bucket's lifecycle, or deleted by hand):
  :class:`OffloadedBodyMissing`, permanent, never dropped silently. S3 says ``NoSuchKey`` only to a
  reader that may ``s3:ListBucket`` the bucket (the stack grants it the consumer), else
  ``AccessDenied``;
- S3 answered anything else: :class:`OffloadedBodyUnavailable`, caused by the client's error, which
  the AWS error catalogue decides (``SlowDown``, a 5xx, a timeout: transient, retried with the job's
  backoff; ``AccessDenied``: permanent, its message saying the object may be missing).

Loaded on the first offloaded record only: a tier that never sees one never imports it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tiered_jobs.contract.large_payloads import Offload, PointerError, read_pointer

from .errors import PermanentError


class PointerRefused(PermanentError):
    """The record carries a pointer this consumer will not follow (malformed, a foreign bucket, no setting)."""


class OffloadedBodyMissing(PermanentError):
    """The object the pointer names does not exist (any more)."""


class OffloadedBodyUnavailable(Exception):
    """S3 did not return the stored body; the cause (the client's error) decides transient or permanent."""


def fetch_body(raw: Mapping[str, Any], client: Callable[[str], Any], offload: Offload | None) -> str | BaseException:
    """The stored body of an offloaded record, or the error its run raises (never raises itself)."""
    try:
        pointer = read_pointer(raw.get("body") or "")
    except PointerError as exc:
        return PointerRefused(str(exc))
    if offload is None:
        return PointerRefused(
            f"the job's body is offloaded to {pointer.url}, but this tier does not read offloaded bodies: set "
            "large_payloads on the tier and replay the letter"
        )
    if pointer.bucket != offload.bucket:
        return PointerRefused(
            f"the job's body is offloaded to {pointer.url}, which is not this stage's bucket {offload.bucket!r}: "
            "a producer must store bodies in the stage's bucket (output LargePayloadBucket)"
        )
    try:
        stored = client("s3").get_object(Bucket=pointer.bucket, Key=pointer.key)["Body"].read()
    except Exception as exc:  # noqa: BLE001 -- every failure becomes the record's, classified when it runs
        code = getattr(exc, "response", {}).get("Error", {}).get("Code") if hasattr(exc, "response") else None
        if code in ("NoSuchKey", "404"):
            missing = OffloadedBodyMissing(
                f"the job's body was offloaded to {pointer.url} and that object no longer exists (expired by "
                "the bucket's lifecycle, or deleted)"
            )
            missing.__cause__ = exc
            return missing
        detail = str(exc)
        if code == "AccessDenied":  # S3 hides a missing object behind this from a reader without ListBucket
            detail += (
                " (the object may not exist: S3 answers AccessDenied, not NoSuchKey, for a missing object to a "
                "reader without s3:ListBucket on the bucket, which the stack grants the consumer)"
            )
        unavailable = OffloadedBodyUnavailable(f"could not read the job's offloaded body {pointer.url}: {detail}")
        unavailable.__cause__ = exc
        return unavailable
    try:
        return str(stored.decode("utf-8"))
    except UnicodeDecodeError as exc:  # no envelope can be in it: retrying would not help
        return PointerRefused(f"the job's offloaded body {pointer.url} is not UTF-8 text: {exc}")
