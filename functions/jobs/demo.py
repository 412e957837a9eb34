"""``demo.flaky`` (any tier): fails on purpose, for demos and tests of retry behaviour.

Payload ``{"fail_times": int, "error": "transient" | "permanent", "down_until": float,
"down_while_file": str}``: raises that kind of error while the attempt number is at most
``fail_times``, then succeeds. ``down_until`` (a UNIX time) plays a downstream outage: every attempt
before it fails transiently, whatever its number (the circuit breaker's demo). ``down_while_file``
plays one whose end a test chooses: every attempt fails transiently while that file exists on the
machine that runs the job (local mode's execution environments share the test's), so the outage
ends at an event the test saw, not after a number of seconds a loaded machine may overrun.
Payload rules: ``functions/jobs/schemas/demo.flaky.schema.json``.
"""

from __future__ import annotations

import os
import time
from typing import Any

from tiered_jobs.runtime import JobContext, PermanentError, TransientError, job


@job("demo.flaky")
def flaky(payload: dict[str, Any], ctx: JobContext) -> dict[str, Any]:
    if time.time() < payload.get("down_until", 0) or os.path.exists(payload.get("down_while_file", "")):
        raise TransientError(f"demo.flaky: the downstream is down (attempt {ctx.attempt})")
    if ctx.attempt <= payload["fail_times"]:
        if payload.get("error", "transient") == "permanent":
            raise PermanentError(f"demo.flaky: permanent failure on attempt {ctx.attempt}")
        raise TransientError(f"demo.flaky: simulated outage on attempt {ctx.attempt} of {payload['fail_times']}")
    return {"succeeded_on_attempt": ctx.attempt}
