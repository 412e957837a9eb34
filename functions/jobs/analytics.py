"""``analytics.record_event`` (bulk): record one analytics event (simulated sink).

Payload rules: ``functions/jobs/schemas/analytics.record_event.schema.json`` (checked by the
publisher and, before this handler runs, by the consumer).
"""

from __future__ import annotations

from typing import Any

from tiered_jobs.runtime import JobContext, job


@job("analytics.record_event")
def record_event(payload: dict[str, Any], ctx: JobContext) -> dict[str, Any]:
    ctx.logger.debug("analytics event recorded (simulated)", extra={"event": payload["event"]})
    return {"recorded": True, "event": payload["event"]}
