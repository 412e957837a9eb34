"""``analytics.record_event`` (bulk): record one analytics event (simulated sink)."""

from __future__ import annotations

import re
from typing import Any

from functions.runtime.errors import PayloadValidationError
from functions.runtime.registry import JobContext, job, require

EVENT_NAME_PATTERN = re.compile(r"[A-Za-z0-9_.:-]{1,128}")


def validate(payload: dict) -> None:
    require(payload, "event", str, pattern=EVENT_NAME_PATTERN)
    if "properties" in payload and not isinstance(payload["properties"], dict):
        raise PayloadValidationError("payload field 'properties' must be an object")


@job("analytics.record_event", validate=validate)
def record_event(payload: dict, ctx: JobContext) -> dict[str, Any]:
    ctx.logger.debug("analytics event recorded (simulated)", extra={"event": payload["event"]})
    return {"recorded": True, "event": payload["event"]}
