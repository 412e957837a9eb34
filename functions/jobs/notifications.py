"""``notifications.send_email`` (transactional): validate the address, then "deliver".

Delivery is simulated (logged, never sent): this is where a real job would call its e-mail
provider and raise :class:`TransientError` on a 5xx / timeout, :class:`PermanentError` on a 4xx.
The address and subject rules are in ``functions/jobs/schemas/notifications.send_email.schema.json``.
"""

from __future__ import annotations

from typing import Any

from tiered_jobs.runtime import JobContext, job


@job("notifications.send_email")
def send_email(payload: dict[str, Any], ctx: JobContext) -> dict[str, Any]:
    ctx.logger.info("e-mail delivered (simulated)", extra={"to": payload["to"], "subject": payload["subject"]})
    return {"delivered": True, "to": payload["to"], "simulated": True}
