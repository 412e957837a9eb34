"""Every vector category, one module each, and the files they make."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..case import Case
from .batch_chunking import batch_chunks
from .delay_and_deadline import delays_and_deadlines
from .envelopes import envelopes
from .keys_and_tenants import keys_and_tenants
from .message_size import message_sizes
from .payload_schemas import SCHEMAS, payload_schemas
from .routing import routing
from .sqs_characters import sqs_characters
from .trace_header import trace_headers

#: Every category, in the order a reader meets the rules: its file's name, what it holds, its cases.
CATEGORIES: dict[str, tuple[str, Callable[[], list[Case]]]] = {
    "envelopes": (
        "message bodies as a consumer reads them: valid, invalid (each problem's code) or too new",
        envelopes,
    ),
    "payload_schemas": (
        "a payload against its type's schema: the JSON Schema subset the consumer checks",
        payload_schemas,
    ),
    "routing": ("a job type's tier: an exact pattern, else the longest matching glob", routing),
    "keys_and_tenants": (
        "the idempotency key's, the tenant's and the tags' rules; the tenant is the MessageGroupId",
        keys_and_tenants,
    ),
    "sqs_characters": ("the characters SQS accepts in a message, edges included", sqs_characters),
    "message_size": ("a job message's bytes and the limit that keeps room for the runtime's attributes", message_sizes),
    "batch_chunking": ("SendMessageBatch calls: per tier's queue, at most 10 entries and 1 MiB, greedy", batch_chunks),
    "delay_and_deadline": ("DelaySeconds, the schedule beyond it, and the envelope's expires_at", delays_and_deadlines),
    "trace_header": ("a W3C traceparent or an X-Ray header as the AWSTraceHeader system attribute", trace_headers),
}


def vectors() -> dict[str, dict[str, Any]]:
    """``{file name: its content}`` for every category."""
    files: dict[str, dict[str, Any]] = {}
    for name, (description, build) in CATEGORIES.items():
        content: dict[str, Any] = {"category": name, "description": description}
        if name == "payload_schemas":  # the schemas before the cases that name them (input.schema)
            content["schemas"] = SCHEMAS
        files[f"{name}.json"] = {**content, "cases": build()}
    return files
