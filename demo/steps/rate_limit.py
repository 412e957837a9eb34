"""4. A rate limit: e-mails held to their provider's rate on the transactional tier
while payments published with them go through at once. The limit is the demo stack's own setting
(:data:`RATE_LIMITS`, deployed by ``demo/start.py``)."""

from __future__ import annotations

import time

from demo.context import Demo
from demo.steps.emails import INVALID_ADDRESSES
from emulator.view import job_total
from tiered_jobs.contract.names import Metrics

#: The e-mail provider's rate in the demo (the transactional tier's limit for notifications.send_email).
EMAIL_RATE = 5
#: The transactional tier's ``rate_limits`` setting in the demo's stack.
RATE_LIMITS = {"notifications.send_email": {"per_second": EMAIL_RATE, "burst": 1}}
RATE_LIMITED_EMAILS = 40


def rate_limited_emails(demo: Demo) -> None:
    demo.console.rule(
        f"4. A rate limit: {RATE_LIMITED_EMAILS} e-mails at {EMAIL_RATE}/s (the provider's limit), payments alongside"
    )
    sent = job_total(demo.session, "transactional", Metrics.SUCCEEDED, "notifications.send_email")
    mark = demo.latency_mark("critical")
    started = time.monotonic()
    demo.publisher.publish_batch(
        [
            {
                "job_type": "notifications.send_email",
                "idempotency_key": f"limited-mail-{i}",
                "payload": {"to": f"user{i}@example.com", "subject": "Your statement"},
            }
            for i in range(RATE_LIMITED_EMAILS)
        ]
    )
    demo.pay("limited-pay", 8, copies=lambda _: 1)
    payments_done = demo.wait_for(lambda: len(demo.new_latencies("critical", mark)) >= 8, 20)
    payments_seconds = time.monotonic() - started

    def emails_done() -> bool:
        return (
            job_total(demo.session, "transactional", Metrics.SUCCEEDED, "notifications.send_email") - sent
            >= RATE_LIMITED_EMAILS
        )

    finished = demo.wait_for(emails_done, 3 * RATE_LIMITED_EMAILS / EMAIL_RATE)
    elapsed = time.monotonic() - started
    rate = RATE_LIMITED_EMAILS / elapsed
    held = job_total(demo.session, "transactional", Metrics.RATE_LIMITED, "notifications.send_email")
    demo.figures[f"e-mails at a {EMAIL_RATE}/s limit"] = (
        f"{RATE_LIMITED_EMAILS} in {elapsed:.1f} s = {rate:.2f}/s ({held} re-sent with a delay)"
    )
    demo.expect(
        "rate limit",
        f"all {RATE_LIMITED_EMAILS} e-mails were delivered, none failed",
        finished and demo.dlq_depth("transactional") == len(INVALID_ADDRESSES),
    )
    demo.expect(
        "rate limit",
        f"e-mails went out no faster than {EMAIL_RATE}/s (+20 %)",
        rate <= EMAIL_RATE * 1.2,
        f"{rate:.2f}/s over {elapsed:.1f} s",
    )
    demo.expect(
        "rate limit",
        "payments published with them were done within 5 s (no limit on them)",
        payments_done and payments_seconds < 5,
        f"{payments_seconds:.1f} s",
    )
