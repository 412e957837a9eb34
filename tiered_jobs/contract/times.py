"""The one text form of a moment in Tiered Jobs' attributes and answers, and its parse.

Every time attribute (``DeadLetter.*FailedAt``, ``TieredJobs.EnqueuedAt``, ``Replay.At``), the
envelope's ``published_at`` and the replay's answers use it: ISO 8601 in UTC, milliseconds, ``Z``.
Other languages read and write the same form (the envelope's JSON Schema says so).
"""

from __future__ import annotations

from datetime import datetime, timezone


def iso_text(moment: datetime) -> str:
    """``moment`` as ISO 8601 in UTC with milliseconds and a ``Z``."""
    return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_iso(value: str | None) -> datetime | None:
    """A time attribute read back; a missing or garbled one is absent (``None``), never fatal: a
    letter or a copy with a bad time is still a job to run or replay. A time without a zone is UTC."""
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)
