"""A running job's progress: what ``ctx.progress(done, total, note=...)`` stores, and how readers decode it.

Where: one attribute (:data:`ATTRIBUTE`) of the job's own idempotency record, beside Powertools'
attributes (``id``, ``status``, ``expiration``, ``in_progress_expiration``, ``data``,
``validation``: :class:`~tiered_jobs.contract.idempotency.RecordAttributes`). No table of its own:
the record already exists while the job runs, lives for the idempotency window once it finishes,
and is the one item ``tiered-jobs job``, the console and ``Publisher.get_status`` read. Powertools
completes a record with an ``UpdateItem`` that sets only its own attributes, so the last progress
written stays beside the result; its ``PutItem`` (a new attempt after a failure) starts the record
afresh, so a retried job's progress starts again too.

Bounded on purpose: ``note`` is cut at :data:`NOTE_MAX_CHARS` characters (an ellipsis marks the
cut), ``done`` and ``total`` are whole numbers below :data:`MAX_COUNT`, so the attribute stays under
half a kilobyte whatever a job passes and never endangers DynamoDB's 400 KB item.

Standard library only: this module ships in the Lambda asset and in the installable package.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

#: The idempotency record's attribute that holds the progress (a String: the JSON of :class:`Progress`).
ATTRIBUTE = "progress"
#: The longest note kept, in characters; a longer one is cut, never refused (a note is for people).
NOTE_MAX_CHARS = 200
#: ``done`` and ``total`` stay below this (DynamoDB numbers would take more, JSON readers in other
#: languages would not: 2**53 is the largest integer a JavaScript reader holds exactly).
MAX_COUNT = 2**53


@dataclass(frozen=True)
class Progress:
    """How far a job is: ``done`` of ``total`` units, a short note, when it was said (ISO 8601)."""

    done: int
    total: int
    note: str = ""
    at: str = ""

    @property
    def percent(self) -> float:
        return 100.0 if self.total == 0 else round(100.0 * self.done / self.total, 1)

    def describe(self) -> str:
        """One line for people: ``40/100 (40.0%): copying rows, at 2026-...``."""
        note = f": {self.note}" if self.note else ""
        at = f", at {self.at}" if self.at else ""
        return f"{self.done}/{self.total} ({self.percent:g}%){note}{at}"

    def to_dict(self) -> dict[str, Any]:
        return {"done": self.done, "total": self.total, "note": self.note, "at": self.at, "percent": self.percent}

    def encode(self) -> str:
        return json.dumps({"done": self.done, "total": self.total, "note": self.note, "at": self.at})


def checked(done: Any, total: Any, note: Any = "", *, at: str = "") -> Progress:
    """The progress ``ctx.progress`` was given, or a :class:`ValueError` / :class:`TypeError` naming the
    argument and the fix (a bad call is a bug in the job: it fails at once, never later in a reader)."""
    for name, value in (("done", done), ("total", total)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"ctx.progress: {name} must be a whole number, got {value!r}")
        if not 0 <= value < MAX_COUNT:
            raise ValueError(f"ctx.progress: {name} must be between 0 and 2**53, got {value}")
    if done > total:
        raise ValueError(f"ctx.progress: done ({done}) is more than total ({total}); raise total when the work grows")
    if not isinstance(note, str):
        raise TypeError(f"ctx.progress: note must be a string, got {type(note).__name__}")
    if len(note) > NOTE_MAX_CHARS:
        note = note[: NOTE_MAX_CHARS - 1] + "…"
    return Progress(done, total, note, at)


def decode(text: str | None) -> Progress | None:
    """The stored progress (the attribute's String value), or ``None`` when there is none or it is not ours."""
    if not text:
        return None
    try:
        raw = json.loads(text)
        return Progress(int(raw["done"]), int(raw["total"]), str(raw.get("note") or ""), str(raw.get("at") or ""))
    except (ValueError, TypeError, KeyError):
        return None


def of_item(item: dict[str, Any] | None) -> Progress | None:
    """The progress of an idempotency record as ``GetItem`` returns it (DynamoDB's typed form)."""
    if not item:
        return None
    return decode(item.get(ATTRIBUTE, {}).get("S"))
