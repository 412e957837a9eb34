"""9. An analytics flood on the bulk tier: the critical tier's end-to-end latency, measured by small
payments published one by one, quiet and during the flood, stays low (the tiers share nothing)."""

from __future__ import annotations

import statistics
import threading
import time

from demo.context import ACCOUNT_IDS, Demo
from emulator.view import job_total, queue_counts
from tiered_jobs.contract.names import Metrics

FLOOD_EVENTS = 400
#: Payments published one by one to measure the critical tier's latency, quiet and during the flood.
PROBES = 10


def flood(demo: Demo) -> None:
    demo.console.rule(f"9. An analytics flood of {FLOOD_EVENTS} events on the bulk tier, critical keeps going")
    baseline = probe_critical(demo, "probe-quiet")
    flooding = threading.Thread(
        target=demo.publisher.publish_batch,
        args=(
            [
                {"job_type": "analytics.record_event", "idempotency_key": f"evt-{i}", "payload": {"event": "page_view"}}
                for i in range(FLOOD_EVENTS)
            ],
        ),
        name="demo-flood",
    )
    started = time.monotonic()
    flooding.start()
    during = probe_critical(demo, "probe-flood")
    bulk_backlog = sum(queue_counts(demo.session, demo.tier("bulk").queue_url))
    flooding.join()
    demo.wait_for(lambda: demo.drained("bulk"), 90)
    drain = time.monotonic() - started
    quiet_p50, flood_p50 = statistics.median(baseline), statistics.median(during)
    demo.figures["critical latency, quiet (p50 / max)"] = f"{quiet_p50:.0f} / {max(baseline):.0f} ms"
    demo.figures["critical latency, during flood (p50 / max)"] = f"{flood_p50:.0f} / {max(during):.0f} ms"
    demo.figures["bulk flood drained in"] = f"{drain:.1f} s ({FLOOD_EVENTS} events)"
    demo.expect(
        "flood",
        "the bulk tier had a backlog while the critical probes ran",
        bulk_backlog > 0 or drain > 2,
        f"{bulk_backlog} bulk messages still queued after the probes",
    )
    demo.expect(
        "flood",
        "critical latency during the flood stayed under 2 s (p50)",
        flood_p50 < 2000,
        f"p50 {flood_p50:.0f} ms vs {quiet_p50:.0f} ms quiet",
    )
    demo.expect(
        "flood",
        f"all {FLOOD_EVENTS} analytics events were processed",
        job_total(demo.session, "bulk", Metrics.SUCCEEDED) >= FLOOD_EVENTS,
    )


def probe_critical(demo: Demo, prefix: str) -> list[float]:
    """Publish small payments one by one; their end-to-end latencies (publish -> deleted), in ms."""
    mark = demo.latency_mark("critical")
    for i in range(PROBES):
        demo.publisher.publish("payments.update_balance", {"account_id": ACCOUNT_IDS[0], "amount": 1}, f"{prefix}-{i}")
        demo.expected_balances[ACCOUNT_IDS[0]] += 1
        time.sleep(0.2)
    demo.wait_for(lambda: len(demo.new_latencies("critical", mark)) >= PROBES, 20)
    return demo.new_latencies("critical", mark)
