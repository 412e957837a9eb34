"""``demo.flaky`` (any tier): fails on purpose, for demos and tests of retry behaviour.

Payload ``{"fail_times": int, "error": "transient" | "permanent"}``: raises that kind of error
while the attempt number is at most ``fail_times``, then succeeds. Payload rules:
``example/jobs/schemas/demo.flaky.schema.json``.
"""

from __future__ import annotations

from typing import Any

from tiered_jobs.runtime import JobContext, PermanentError, TransientError, job


@job("demo.flaky")
def flaky(payload: dict[str, Any], ctx: JobContext) -> dict[str, Any]:
    if ctx.attempt <= payload["fail_times"]:
        if payload.get("error", "transient") == "permanent":
            raise PermanentError(f"demo.flaky: permanent failure on attempt {ctx.attempt}")
        raise TransientError(f"demo.flaky: simulated outage on attempt {ctx.attempt} of {payload['fail_times']}")
    return {"succeeded_on_attempt": ctx.attempt}
