"""A job message's bytes, and the limit that keeps room for the runtime's own attributes."""

from __future__ import annotations

import base64
from typing import Any

from tiered_jobs.contract import envelope
from tiered_jobs.contract.names import SQS_MAX_MESSAGE_BYTES
from tiered_jobs.contract.sqs_limits import (
    MAX_JOB_MESSAGE_BYTES,
    message_size,
)

from ..case import JOB_TYPE, PUBLISHED_AT, Case, case, padded, sized_job_body


def message_sizes() -> list[Case]:
    small = {"type": JOB_TYPE, "idempotency_key": "k", "payload": {"id": 1}}
    jobs: list[tuple[str, str, dict[str, Any], dict[str, Any] | None]] = [
        ("ascii", "bytes are the compact JSON body's UTF-8 bytes", small, None),
        ("two-byte", "é is 2 bytes of UTF-8, sent as itself, not \\u-escaped", {**small, "payload": {"n": "é"}}, None),
        ("three-byte", "€ is 3 bytes", {**small, "payload": {"n": "€"}}, None),
        (
            "four-byte",
            "an emoji is 4 bytes (one code point, two UTF-16 units)",
            {**small, "payload": {"n": "\U0001f600"}},
            None,
        ),
        ("tenant-counts", "the tenant is in the body, and counts", {**small, "tenant": "acme"}, None),
    ]
    found = [case(name, text, {**job, "published_at": PUBLISHED_AT}, _size(job, pad)) for name, text, job, pad in jobs]
    for name, text, target in (
        ("at-limit", "exactly the job limit: SQS's 1 MiB less the runtime's headroom", MAX_JOB_MESSAGE_BYTES),
        ("over-limit", "one byte over the job limit", MAX_JOB_MESSAGE_BYTES + 1),
        (
            "sqs-limit",
            "SQS's own 1 MiB is over the job limit: the letter would lose its reasons",
            SQS_MAX_MESSAGE_BYTES,
        ),
    ):
        payload, pad = sized_job_body("k", target)
        job = {"type": "conformance.sized", "idempotency_key": "k", "payload": payload}
        found.append(case(name, text, {**job, "published_at": PUBLISHED_AT, "pad": pad}, _size(job, pad)))
    attributes = {
        "Source": {"DataType": "String", "StringValue": "café"},
        "Raw": {"DataType": "Binary", "BinaryValue": "AAEC"},
    }
    found.append(
        case(
            "attributes",
            "each attribute counts its name, data type and value (a binary one its decoded bytes)",
            {"body": "{}", "attributes": attributes},
            {"bytes": message_size("{}", _decoded(attributes))},
        )
    )
    return found


def _decoded(attributes: dict[str, Any]) -> dict[str, Any]:
    """Attributes as SQS counts them: a ``BinaryValue`` given in base64 (JSON has no bytes) counts its raw bytes."""
    return {
        name: {**value, "BinaryValue": base64.b64decode(value["BinaryValue"])} if "BinaryValue" in value else value
        for name, value in attributes.items()
    }


def _size(job: dict[str, Any], pad: dict[str, Any] | None) -> dict[str, Any]:
    built = envelope.build(
        job["type"],
        padded(job["payload"], pad),
        job["idempotency_key"],
        tenant=job.get("tenant"),
        published_at=PUBLISHED_AT,
    )
    size = message_size(built.to_json())
    if size > MAX_JOB_MESSAGE_BYTES:
        return {"bytes": size, "problems": [{"code": "message_too_large"}]}
    return {"bytes": size, "valid": True}
