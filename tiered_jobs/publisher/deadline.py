"""A job's deadline (``expires_at=`` / ``expires_in=``): checked before anything is sent, carried in the envelope.

A job not started by its deadline is not run: the consumer archives it with reason ``expired``
(docs/publishing.md). The publisher refuses a deadline that could never be met, so a mistake
(a past time, a negative or zero window, seconds taken for a moment) is an error at the call,
with nothing sent, instead of a job that silently never runs:

* ``expires_at``: an aware datetime, later than now and later than the job is due;
* ``expires_in``: whole seconds (or a ``timedelta``, rounded up) above 0, counted from when the
  job is due (``at`` / ``delay``, else now), so a job for tomorrow with ``expires_in=600`` may
  start within ten minutes of its time, as a job for now may within ten minutes of now.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from ..contract.times import iso_text


def deadline_text(
    expires_at: datetime | None, expires_in: int | timedelta | None, *, due: datetime, now: datetime
) -> str | None:
    """The envelope's ``expires_at`` (``None``: no deadline), or ``ValueError`` naming the setting and the fix."""
    if expires_at is None and expires_in is None:
        return None
    if expires_at is not None and expires_in is not None:
        raise ValueError("give either expires_at (a moment) or expires_in (seconds after the job is due), not both")
    if expires_in is not None:
        if isinstance(expires_in, timedelta):
            seconds = math.ceil(expires_in.total_seconds())
        elif isinstance(expires_in, int) and not isinstance(expires_in, bool):
            seconds = expires_in
        else:
            raise ValueError(f"expires_in must be whole seconds (int) or a timedelta, got {type(expires_in).__name__}")
        if seconds <= 0:
            raise ValueError(f"expires_in must be more than 0 seconds, got {seconds}: the job would never run")
        return iso_text(due + timedelta(seconds=seconds))
    assert expires_at is not None
    if not isinstance(expires_at, datetime) or expires_at.tzinfo is None:
        raise ValueError(
            f"expires_at must be an aware datetime (with a time zone, e.g. datetime.now(timezone.utc) + ...), "
            f"got {expires_at!r}"
        )
    if expires_at <= now:
        raise ValueError(f"expires_at {iso_text(expires_at)} has passed (now {iso_text(now)}): the job would never run")
    if expires_at <= due:
        raise ValueError(
            f"expires_at {iso_text(expires_at)} is not after the job is due ({iso_text(due)}): it would expire "
            "before it could start"
        )
    return iso_text(expires_at)
