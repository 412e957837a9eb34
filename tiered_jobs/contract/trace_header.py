"""The X-Ray trace header a job's message carries, from the publishing request to every copy of the job.

SQS has one *message system attribute*, ``AWSTraceHeader`` (``MessageSystemAttributes`` of
``SendMessage`` / ``SendMessageBatch``; botocore's model lists it as the only name a send takes,
``DataType`` ``String``). Unlike a message attribute it is not one of the 10 a message may hold,
and it does not count toward the message's size (SQS API reference), so a traced job spends none
of the attribute budget the runtime's ``TieredJobs.*`` and ``DeadLetter.*`` attributes share.
Lambda hands it back on each record of an SQS event as ``attributes.AWSTraceHeader``, and X-Ray
links the consumer's trace to the trace it names.

The value is X-Ray's header, ``Root=1-<8 hex>-<24 hex>;Parent=<16 hex>;Sampled=<0|1>`` (more
``key=value`` parts may follow, ``Lineage`` in Lambda). A W3C ``traceparent``
(``00-<32 hex>-<16 hex>-<2 hex>``) is the same identifiers in another order: it is converted, as
OpenTelemetry's X-Ray propagator does, rather than sent as a message attribute of its own.

Only the standard library: the publisher, the consumer and the replay share it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

#: The message system attribute (and the key of a Lambda SQS record's ``attributes``).
ATTRIBUTE = "AWSTraceHeader"
#: Where Lambda puts the current invocation's header (set per invocation by the runtime).
ENVIRONMENT_VARIABLE = "_X_AMZN_TRACE_ID"

_ROOT = re.compile(r"^1-[0-9a-f]{8}-[0-9a-f]{24}$")
_PART = re.compile(r"^[A-Za-z][A-Za-z0-9]*=[\x21-\x3a\x3c-\x7e]*$")  # printable ASCII, no ';' or space
_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")


class TraceHeaderError(ValueError):
    """A trace header that SQS would refuse (it takes only a well-formed X-Ray header)."""


def parts(header: str) -> dict[str, str]:
    """``{"Root": ..., "Parent": ..., "Sampled": ...}`` of an X-Ray header (no validation)."""
    found: dict[str, str] = {}
    for part in header.split(";"):
        name, sep, value = part.strip().partition("=")
        if sep:
            found.setdefault(name, value)
    return found


def root(header: str | None) -> str | None:
    """The trace id (``1-...``) the header names, or ``None``."""
    return parts(header).get("Root") if header else None


def sampled(header: str | None) -> bool:
    """Did the caller's trace decide to record (``Sampled=1``)? Without a header: no."""
    return bool(header) and parts(header or "").get("Sampled") == "1"


def normalise(value: str) -> str:
    """An X-Ray header from ``value`` (an X-Ray header, or a W3C ``traceparent``), or :class:`TraceHeaderError`."""
    if not isinstance(value, str):
        raise TraceHeaderError(f"trace_header must be a string, got {type(value).__name__}")
    text = value.strip()
    w3c = _TRACEPARENT.match(text)
    if w3c:
        trace_id, span_id, flags = w3c.groups()
        sampled_flag = int(flags, 16) & 1
        return f"Root=1-{trace_id[:8]}-{trace_id[8:]};Parent={span_id};Sampled={sampled_flag}"
    pieces = [piece.strip() for piece in text.split(";") if piece.strip()]
    if not all(_PART.match(piece) for piece in pieces) or not _ROOT.match(parts(text).get("Root", "")):
        raise TraceHeaderError(
            f"trace_header {value[:80]!r} is not an X-Ray trace header (Root=1-<8 hex>-<24 hex>;Parent=<16 hex>;"
            "Sampled=<0|1>) nor a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>); pass the header of the "
            "current request, or leave it out"
        )
    return ";".join(pieces)


def from_environment(environ: Mapping[str, str] | None = None) -> str | None:
    """The current Lambda invocation's header (``_X_AMZN_TRACE_ID``), when it is well formed; else ``None``.

    A publisher never fails for what its environment holds: a malformed value is left out."""
    value = (os.environ if environ is None else environ).get(ENVIRONMENT_VARIABLE)
    if not value:
        return None
    try:
        return normalise(value)
    except TraceHeaderError:
        return None


def system_attributes(header: str | None) -> dict[str, dict[str, Any]]:
    """``MessageSystemAttributes`` for a send: ``{}`` without a header."""
    return {ATTRIBUTE: {"DataType": "String", "StringValue": header}} if header else {}
