"""3. Transient outages: ``demo.flaky`` fails twice, is retried with backoff (about 1 s, then 2 s)
and succeeds; nothing more reaches the DLQ."""

from __future__ import annotations

import time

from demo.context import Demo
from emulator.view import job_total
from tiered_jobs.contract.names import Metrics


def transient_outages(demo: Demo) -> None:
    demo.console.rule("3. Transient outages: demo.flaky fails twice, then succeeds (transactional)")
    demo.publisher.publish_batch(
        [{"job_type": "demo.flaky", "idempotency_key": f"flaky-{i}", "payload": {"fail_times": 2}} for i in range(3)]
    )

    def done() -> bool:
        return job_total(demo.session, "transactional", Metrics.SUCCEEDED, "demo.flaky") >= 3

    started = time.monotonic()
    demo.wait_for(done, 30)
    retried = job_total(demo.session, "transactional", Metrics.RETRIED, "demo.flaky")
    demo.expect(
        "outages",
        "each flaky job was retried twice with backoff, then succeeded",
        done() and retried == 6,
        f"{retried} retries, done in {time.monotonic() - started:.1f} s",
    )
    demo.expect("outages", "nothing more reached the DLQ", demo.dlq_depth("transactional") == 3)
