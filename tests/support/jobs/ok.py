"""``testjobs.ok``: record the payload, succeed.

Payload rules: ``schemas/testjobs.ok.schema.json`` (a ``label``; any other field is allowed, for a
test's memo or blob).
"""

from __future__ import annotations

from typing import Any

from tiered_jobs.runtime import JobContext, job

#: ``(idempotency key, payload)`` of every run, in order (the suite's ``recorded`` fixture empties it).
RECORDED: list[tuple[str, dict[str, Any]]] = []


@job("testjobs.ok")
def ok(payload: dict[str, Any], ctx: JobContext) -> dict[str, Any]:
    RECORDED.append((ctx.idempotency_key, payload))
    return {"ok": True, "label": payload["label"]}
