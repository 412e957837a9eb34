"""3b. Pause a tier: the transactional tier is paused as an operator pauses it (``tiered-jobs pause``);
jobs published meanwhile wait in its queue, unreceived (no attempt spent); resumed, each runs once."""

from __future__ import annotations

import time

from demo.context import Demo
from emulator.esm import DEFAULT_POLL_WAIT_SECONDS
from emulator.view import job_total, queue_counts
from tiered_jobs.contract.names import Metrics
from tiered_jobs.operations import pausing

TIER = "transactional"
JOBS = 5


def pause_and_resume(demo: Demo) -> None:
    demo.console.rule(f"3b. Pause a tier: jobs wait in its queue, then run once on resume ({TIER})")
    stage, clients = demo.deployment.stage, demo.session.clients
    mapping = demo.runtime.by_function(demo.tier(TIER).consumer.name)
    pausing.pause_tier(stage, TIER, clients, via="demo")
    time.sleep(DEFAULT_POLL_WAIT_SECONDS + 0.5)  # a long poll already waiting when the pause lands returns first
    received = mapping.stats.snapshot()["records"]
    succeeded = job_total(demo.session, TIER, Metrics.SUCCEEDED, "demo.flaky")
    demo.publisher.publish_batch(
        [
            {"job_type": "demo.flaky", "idempotency_key": f"paused-{i}", "payload": {"fail_times": 0}}
            for i in range(JOBS)
        ]
    )
    time.sleep(2.0)
    state = pausing.read_pauses(stage, [TIER], clients)[TIER]
    demo.console.print(f"  {pausing.paused_line(state, oldest_age_seconds=None, retention=None)}")
    waiting = queue_counts(demo.session, demo.tier(TIER).queue_url)[0]
    demo.expect(
        "pause",
        "jobs published to a paused tier wait in its queue, unreceived",
        state.paused and waiting == JOBS and mapping.stats.snapshot()["records"] == received,
        f"{waiting} waiting",
    )

    started = time.monotonic()
    pausing.resume_tier(stage, TIER, clients)

    def ran() -> bool:
        return job_total(demo.session, TIER, Metrics.SUCCEEDED, "demo.flaky") >= succeeded + JOBS

    demo.wait_for(ran, 30)
    receives = mapping.stats.snapshot()["records"] - received
    demo.expect(
        "pause",
        "resumed: each ran once",
        ran() and receives == JOBS,
        f"{receives} receives for {JOBS} jobs, drained {time.monotonic() - started:.1f} s after the resume",
    )
