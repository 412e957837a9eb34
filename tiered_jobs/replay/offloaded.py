"""A letter whose body is an S3 pointer (a tier's ``large_payloads``), as ``show`` and ``discard`` record it.

Replay never needs the stored body: it sends the letter's pointer and its ``ExtendedPayloadSize``
attribute back unchanged, and the consumer fetches the body again. ``show`` and the discard archive
need it: an operator reads the job, and an archived letter must stay readable after the bucket's
lifecycle has expired the object (the archive keeps letters for ``discard_archive_days``, a year by
default). So their record holds the stored body as ``body``, and says where it came from under
``offloaded`` (the pointer, its bucket, key and size). An object that cannot be read (gone, or
refused) leaves the pointer as ``body`` and the reason under ``offloaded.error``: the letter is still
shown, and still archived with what there is. A refusal says the object may be gone (:func:`read_error`).

The object itself is never deleted here (docs/publishing.md, "Bodies past SQS's limit").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tiered_jobs.contract.large_payloads import SIZE_ATTRIBUTES, PointerError, is_offloaded, read_pointer


def resolve(record: dict[str, Any], s3: Callable[[], Any]) -> dict[str, Any]:
    """``record`` (``Letter.to_record``) with an offloaded body read back; any other record as it is."""
    attributes = record.get("message_attributes") or {}
    if not is_offloaded(attributes):
        return record
    pointer_body = str(record["body"])
    size = next((attributes[name].get("StringValue") for name in SIZE_ATTRIBUTES if name in attributes), None)
    note: dict[str, Any] = {
        "pointer": pointer_body,
        "size": int(size) if isinstance(size, str) and size.isdigit() else None,
    }
    try:
        pointer = read_pointer(pointer_body)
    except PointerError as exc:
        return {**record, "offloaded": {**note, "error": str(exc)}}
    note.update(bucket=pointer.bucket, key=pointer.key, url=pointer.url)
    try:
        stored = s3().get_object(Bucket=pointer.bucket, Key=pointer.key)["Body"].read().decode("utf-8")
    except Exception as exc:  # noqa: BLE001 -- shown and archived with the reason, never a failed run
        return {**record, "offloaded": {**note, "error": read_error(exc)}}
    return {**record, "body": stored, "offloaded": {**note, "error": None}}


def read_error(exc: BaseException) -> str:
    """What a failed read of a stored body says, naming the missing object S3 may hide behind a refusal.

    S3 answers a reader without ``s3:ListBucket`` on the bucket (the replay function has none) with
    ``AccessDenied`` (``403`` to ``HeadObject``), not ``NoSuchKey``, when the object does not exist."""
    text = f"{type(exc).__name__}: {exc}"
    code = getattr(exc, "response", {}).get("Error", {}).get("Code") if hasattr(exc, "response") else None
    if code in ("AccessDenied", "403"):
        text += " (the object may be gone: S3 answers a missing object this way to a reader without s3:ListBucket)"
    return text


def lazy_client() -> Callable[[], Any]:
    """An S3 client made on first need only: a DLQ without offloaded letters never builds one."""
    made: list[Any] = []

    def client() -> Any:
        if not made:
            import boto3

            made.append(boto3.client("s3"))
        return made[0]

    return client
