"""SQS's delay, the schedule beyond it, and the deadline counted from when the job is due."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from tiered_jobs.contract.names import SQS_MAX_DELAY_SECONDS
from tiered_jobs.contract.times import iso_text, parse_iso

from ..case import NOW, Case, case


def timing(given: dict[str, Any]) -> dict[str, Any]:
    """The rule a publisher keeps: SQS delays up to 15 minutes, a schedule beyond; a deadline after the job is due.

    ``delay`` is whole seconds, 0 or more; over SQS's 900 the job needs a one-time schedule (a later path a
    port may refuse). ``expires_in`` (seconds above 0) counts from when the job is due; ``expires_at`` must
    be after now and after the job is due; not both."""
    now = parse_iso(NOW)
    assert now is not None
    delay = given.get("delay", 0)
    problems = []
    if isinstance(delay, bool) or not isinstance(delay, int) or delay < 0:
        problems.append({"code": "invalid_delay"})
        delay = 0
    due = now + timedelta(seconds=delay)
    deadline: str | None = None
    expires_in, expires_at = given.get("expires_in"), given.get("expires_at")
    if expires_in is not None and expires_at is not None:
        problems.append({"code": "invalid_deadline"})
    elif expires_in is not None:
        if isinstance(expires_in, bool) or not isinstance(expires_in, int) or expires_in <= 0:
            problems.append({"code": "invalid_deadline"})
        else:
            deadline = iso_text(due + timedelta(seconds=expires_in))
    elif expires_at is not None:
        moment = parse_iso(expires_at)
        if moment is None or moment <= now or moment <= due:
            problems.append({"code": "invalid_deadline"})
        else:
            deadline = iso_text(moment)
    if problems:
        return {"problems": problems}
    if delay > SQS_MAX_DELAY_SECONDS:
        return {"scheduled": True}
    return {"delay_seconds": delay, "expires_at": deadline}


def delays_and_deadlines() -> list[Case]:
    inputs: list[tuple[str, str, dict[str, Any]]] = [
        ("no-delay", "sent now: no DelaySeconds", {}),
        ("delay", "a delay within SQS's limit is the message's DelaySeconds", {"delay": 30}),
        ("delay-900", "900 s, SQS's limit", {"delay": 900}),
        (
            "delay-901",
            "beyond 900 s: a one-time schedule (a port may refuse it, naming the Python publisher)",
            {"delay": 901},
        ),
        ("delay-negative", "a negative delay", {"delay": -1}),
        ("delay-fraction", "whole seconds only", {"delay": 1.5}),
        ("expires-in", "expires_in counts from now for a job sent now", {"expires_in": 600}),
        ("expires-in-after-delay", "expires_in counts from when the job is due", {"delay": 30, "expires_in": 600}),
        ("expires-in-zero", "a zero window: the job would never run", {"expires_in": 0}),
        ("expires-at", "a moment after now", {"expires_at": "2026-12-07T11:00:00.000Z"}),
        ("expires-at-offset", "written in UTC with milliseconds and Z", {"expires_at": "2026-12-07T12:00:00.5+01:00"}),
        ("expires-at-now", "a deadline at now has passed", {"expires_at": NOW}),
        (
            "expires-at-before-due",
            "a deadline before the job is due",
            {"delay": 60, "expires_at": "2026-12-07T10:00:30.000Z"},
        ),
        (
            "expires-both",
            "expires_at or expires_in, not both",
            {"expires_in": 60, "expires_at": "2026-12-07T11:00:00.000Z"},
        ),
    ]
    return [case(name, text, {"now": NOW, **given}, timing(given)) for name, text, given in inputs]
