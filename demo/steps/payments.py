"""1. Payments, each published two or three times, on the critical tier: every balance ends exactly
right, the duplicates recognised by the idempotency store instead of applied again."""

from __future__ import annotations

import json

from demo.context import Demo
from emulator.view import job_total
from tiered_jobs.contract.names import Metrics


def payments_with_duplicates(demo: Demo) -> None:
    demo.console.rule("1. Payments, each published 2-3 times (critical)")
    demo.pay("pay", 12, copies=lambda i: 3 if i % 3 == 0 else 2)
    demo.wait_for(lambda: demo.drained("critical") and demo.balances() == demo.expected_balances, 30)
    balances = demo.balances()
    demo.expect(
        "payments",
        "every balance is exactly the sum of its unique payments",
        balances == demo.expected_balances,
        json.dumps(balances),
    )
    duplicates = job_total(demo.session, "critical", Metrics.DUPLICATE)
    demo.expect(
        "payments",
        "duplicates were recognised, not re-applied",
        duplicates >= 16,
        f"{duplicates} duplicate deliveries absorbed",
    )
