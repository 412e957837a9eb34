"""``testjobs.slow``: work ``steps`` steps of ``step_ms`` milliseconds (sleeping), calling
``ctx.check_time()`` before each, so a job that runs out of time stops between steps with
:class:`JobTimeout` (transient). Payload rules: ``schemas/testjobs.slow.schema.json``.
"""

from __future__ import annotations

import time
from typing import Any

from tiered_jobs.runtime import JobContext, job


@job("testjobs.slow")
def slow(payload: dict[str, Any], ctx: JobContext) -> dict[str, Any]:
    for _ in range(payload["steps"]):
        ctx.check_time()
        time.sleep(payload["step_ms"] / 1000)
    return {"steps": payload["steps"]}
