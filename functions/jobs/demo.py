"""``demo.flaky`` (any tier): fails on purpose, for demos and tests of retry behaviour.

Payload ``{"fail_times": int, "error": "transient" | "permanent"}``: raises that kind of error
while the attempt number is at most ``fail_times``, then succeeds.
"""

from __future__ import annotations

from typing import Any

from functions.runtime.errors import PayloadValidationError, PermanentError, TransientError
from functions.runtime.registry import JobContext, job, require

ERROR_KINDS = ("transient", "permanent")


def validate(payload: dict) -> None:
    fail_times = require(payload, "fail_times", int)
    if fail_times < 0:
        raise PayloadValidationError("payload field 'fail_times' must be >= 0")
    if payload.get("error", "transient") not in ERROR_KINDS:
        raise PayloadValidationError(f"payload field 'error' must be one of {', '.join(ERROR_KINDS)}")


@job("demo.flaky", validate=validate)
def flaky(payload: dict, ctx: JobContext) -> dict[str, Any]:
    if ctx.attempt <= payload["fail_times"]:
        if payload.get("error", "transient") == "permanent":
            raise PermanentError(f"demo.flaky: permanent failure on attempt {ctx.attempt}")
        raise TransientError(f"demo.flaky: simulated outage on attempt {ctx.attempt} of {payload['fail_times']}")
    return {"succeeded_on_attempt": ctx.attempt}
