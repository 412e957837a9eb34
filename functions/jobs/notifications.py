"""``notifications.send_email`` (transactional): validate the address, then "deliver".

Delivery is simulated (logged, never sent): this is where a real job would call its e-mail
provider and raise :class:`TransientError` on a 5xx / timeout, :class:`PermanentError` on a 4xx.
"""

from __future__ import annotations

import re
from typing import Any

from functions.runtime.errors import PayloadValidationError
from functions.runtime.registry import JobContext, job, require

#: Deliberately simple: one @, no spaces, a dot in the domain. Providers do the rest.
EMAIL_PATTERN = re.compile(r"[^@\s]{1,64}@[^@\s]+\.[^@\s]{2,}")
MAX_SUBJECT_CHARS = 998  # RFC 5322 line limit


def validate(payload: dict) -> None:
    to = require(payload, "to", str)
    if len(to) > 254 or not EMAIL_PATTERN.fullmatch(to):
        raise PayloadValidationError(f"invalid e-mail address {to[:80]!r}")
    subject = require(payload, "subject", str)
    if len(subject) > MAX_SUBJECT_CHARS:
        raise PayloadValidationError(f"subject is longer than {MAX_SUBJECT_CHARS} characters")


@job("notifications.send_email", validate=validate)
def send_email(payload: dict, ctx: JobContext) -> dict[str, Any]:
    ctx.logger.info("e-mail delivered (simulated)", extra={"to": payload["to"], "subject": payload["subject"]})
    return {"delivered": True, "to": payload["to"], "simulated": True}
