"""A function's log line as local mode's terminal shows it: one readable line for a structured log document.

The consumer logs JSON (Powertools' logger), as Lambda writes it to CloudWatch Logs on AWS: a retry's
document holds the whole traceback twice (``exception``, a string, and ``stack_trace``, its frames),
about 5 KB. That document is what local mode ships to its CloudWatch Logs (``python -m emulator logs``
and ``aws logs`` read it unchanged); only the ``up`` terminal renders it as one line: level, message,
the job, its error and the frame that raised.
"""

from __future__ import annotations

import json
from typing import Any

#: Fields shown in their own words below, or not at all on the terminal line (the logger's bookkeeping).
HANDLED = frozenset(
    {
        "level",
        "location",
        "message",
        "timestamp",
        "service",
        "sampling_rate",
        "xray_trace_id",
        "cold_start",
        "exception",
        "exception_name",
        "stack_trace",
        "tier",  # the line's label names the tier already
        "message_id",
        "job_type",
        "idempotency_key",
        "attempt",
        "error_type",
        "error",
        "retry_in_seconds",
        "duration_ms",
        # the run line's search fields (docs/consumer.md): the message says the outcome; the rest is for a query
        "outcome",
        "queued_ms",
        "trace_id",
    }
)
#: Another field's value longer than this is cut on the terminal (the shipped document keeps it whole).
MAX_VALUE_CHARS = 80


def render(line: str) -> str:
    """``line`` as one terminal line: a JSON log document (with ``level`` and ``message``) rendered, any other
    line as it is."""
    if not line.startswith("{"):
        return line
    try:
        document = json.loads(line)
    except ValueError:
        return line
    if not isinstance(document, dict) or "level" not in document or "message" not in document:
        return line  # an EMF document or another JSON line: not a log message
    text = f"{document['level']} {document['message']}"
    job = [str(document[name]) for name in ("job_type",) if name in document]
    if "idempotency_key" in document:
        job.append(repr(document["idempotency_key"]))
    if "attempt" in document:
        job.append(f"attempt {document['attempt']}")
    if job:
        text += ": " + " ".join(job)
    error = _error(document)
    if error:
        text += f": {error}"
    if "retry_in_seconds" in document:
        text += f"; retry in {document['retry_in_seconds']} s"
    if "duration_ms" in document:
        text += f" ({document['duration_ms']} ms)"
    others = [f"{name}={_short(value)}" for name, value in document.items() if name not in HANDLED]
    if others:
        text += " [" + ", ".join(others) + "]"
    return text


def _error(document: dict[str, Any]) -> str:
    """``KeyError: 'qty' at jobs/orders.py:12 in reserve``: the error and the last frame of its traceback."""
    kind = document.get("error_type") or document.get("exception_name")
    if not kind:
        return ""
    text = f"{kind}: {_short(document['error'])}" if "error" in document else str(kind)
    frames = document.get("stack_trace", {}).get("frames") if isinstance(document.get("stack_trace"), dict) else None
    if frames and isinstance(frames[-1], dict):
        last = frames[-1]
        text += f" at {last.get('file')}:{last.get('line')} in {last.get('function')}"
    return text


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"
