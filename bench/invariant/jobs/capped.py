"""``capped.update_balance``: a job with its own retry policy that never succeeds, so its letters can be
predicted exactly.

Its policy is fewer attempts than its tier (:data:`MAX_ATTEMPTS` of the tier's 5), a backoff of its
own, and ``unexpected="permanent"`` (an exception no rule decides is a bug: no retry). A job says how
it fails in ``payload["refuse"]``:

- ``"retry"``: a :class:`TransientError` on every attempt, so it is dead-lettered ``retries_exhausted``
  on its own last attempt (a letter with the tier's five attempts would mean the policy was ignored);
- ``"bug"``: a ``KeyError`` (a field it reads is missing), dead-lettered ``permanent`` on the first
  attempt under ``unexpected="permanent"`` (on the tier's rules it would be retried).

Either way the letter's traceback names :func:`_refuse` in this file, the frame of the job's own code.
"""

from __future__ import annotations

from typing import Any

from tiered_jobs.runtime import JobContext, TransientError, job

from . import CAPPED_TYPE

MAX_ATTEMPTS = 2
RETRY_SCHEDULE_SECONDS = (1,)


def _refuse(payload: dict[str, Any], ctx: JobContext) -> None:
    if payload["refuse"] == "retry":
        raise TransientError(f"capped: refused on purpose (attempt {ctx.attempt} of {ctx.max_attempts})")
    payload["missing_field"]  # the bug: a KeyError, which this job's policy makes permanent


@job(
    CAPPED_TYPE,
    max_attempts=MAX_ATTEMPTS,
    retry_schedule_seconds=RETRY_SCHEDULE_SECONDS,
    unexpected="permanent",
)
def update_balance(payload: dict[str, Any], ctx: JobContext) -> None:
    _refuse(payload, ctx)
