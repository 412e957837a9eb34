"""``testjobs.transient`` and ``testjobs.permanent``: jobs that fail on purpose.

``testjobs.transient`` raises :class:`TransientError` while the attempt number (SQS's receive count
of the message) is at most ``fail_times``, then succeeds. ``testjobs.permanent`` raises
:class:`PermanentError` on every attempt. Payload rules: ``schemas/testjobs.transient.schema.json``,
``schemas/testjobs.permanent.schema.json``.
"""

from __future__ import annotations

from typing import Any

from tiered_jobs.runtime import JobContext, PermanentError, TransientError, job


@job("testjobs.transient")
def transient(payload: dict[str, Any], ctx: JobContext) -> dict[str, Any]:
    if ctx.attempt <= payload["fail_times"]:
        raise TransientError(
            f"testjobs.transient: failing on purpose, attempt {ctx.attempt} of the first {payload['fail_times']}"
        )
    return {"succeeded_on_attempt": ctx.attempt}


@job("testjobs.permanent")
def permanent(payload: dict[str, Any], ctx: JobContext) -> None:
    raise PermanentError(f"testjobs.permanent: {payload.get('reason', 'refused on purpose')} (attempt {ctx.attempt})")
