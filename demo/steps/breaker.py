"""A downstream outage on the bulk tier, whose circuit breaker is on in the demo's stack
(:data:`BREAKER`, deployed by ``demo/start.py``).

``demo.flaky`` with ``down_until`` plays a downstream that is down for :data:`OUTAGE_SECONDS`. The
first attempts fail, the breaker's alarm opens it (the replay function disables the mapping), and
``status`` shows the tier "paused since …, by circuit breaker": its jobs wait in the queue with their
attempts. The downstream recovers; after a window without attempts the probe runs at concurrency 2,
its jobs succeed, and the breaker closes: every job ran once, with 0 letters, and the on-call was paged
twice (it opened, it closed).

The breaker needs a CloudWatch minute with no attempt before it probes, so the story does not wait
for it: :func:`outage_begins` starts the outage before the first step, :func:`breaker_opened` shows
the open breaker after step 3, the steps between run meanwhile (none of them uses the bulk tier), and
:func:`breaker_closes` checks the end after step 7.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from demo.context import Demo
from emulator.view import job_total
from tiered_jobs.contract.names import Alarms, Metrics
from tiered_jobs.operations import pausing
from tiered_jobs.replay.breaker import BREAKER_BY, PAGE_SOURCE, TAG_CIRCUIT

TIER = "bulk"
JOBS = 20
#: The bulk tier in the demo's stack: its breaker (over half of a minute's attempts retried, at least
#: 10), and 5 attempts 6 s apart, so that without the breaker this outage would dead-letter every job
#: (their attempts all fall inside it; ``tests/emulator/test_local_circuit_breaker.py`` measures that).
BREAKER = {"circuit_breaker_percent": 50, "circuit_breaker_min_jobs": 10, "circuit_breaker_minutes": 1}
#: Further apart than the tests' 4 attempts 4 s apart: the breaker opens once its alarm (evaluated every
#: 2 s in the demo) and the replay function (a cold start on a busy machine: up to 15 s measured) have
#: acted, which must come before the jobs' last attempts.
RETRIES = {"max_attempts": 5, "retry_schedule_seconds": [6], "retry_jitter": 0}
#: Longer than the 5 attempts take (the batching window, then 24 s of backoff), shorter than the breaker
#: stays open (a minute without attempts), so its probe meets a downstream that is back.
OUTAGE_SECONDS = 35
#: The breaker opens within seconds of the failed attempts; it closes a minute without attempts later.
OPEN_TIMEOUT_SECONDS = 45
CLOSE_TIMEOUT_SECONDS = 150


@dataclass(frozen=True)
class Outage:
    """What :func:`outage_begins` leaves for the steps that follow the breaker."""

    down_until: float
    attempts_before: int
    succeeded_before: int


def outage_begins(demo: Demo) -> None:
    demo.console.rule(f"0. A downstream outage on the {TIER} tier ({OUTAGE_SECONDS} s), whose circuit breaker is on")
    stats = demo.runtime.by_function(demo.tier(TIER).consumer.name).stats
    outage = Outage(
        down_until=time.time() + OUTAGE_SECONDS,
        attempts_before=stats.snapshot()["records"],
        succeeded_before=job_total(demo.session, TIER, Metrics.SUCCEEDED, "demo.flaky"),
    )
    demo.handoffs[TIER] = outage
    demo.publisher.publish_batch(
        [
            {
                "job_type": "demo.flaky",
                "idempotency_key": f"outage-{i}",
                "payload": {"fail_times": 0, "down_until": outage.down_until},
                "tier": TIER,
            }
            for i in range(JOBS)
        ]
    )
    demo.console.print(
        f"  {JOBS} jobs published; with 5 attempts 6 s apart, each would spend them all inside the outage and be "
        f"dead-lettered without the breaker (3c: it opens; 8: it closes)"
    )


def breaker_opened(demo: Demo) -> None:
    demo.console.rule(f"3c. The {TIER} tier's circuit breaker opened: its jobs wait with their attempts")
    outage = demo.handoffs[TIER]
    assert isinstance(outage, Outage), "outage_begins ran first"
    stage, clients = demo.deployment.stage, demo.session.clients

    def opened() -> bool:
        return pausing.read_pauses(stage, [TIER], clients)[TIER].paused_by == BREAKER_BY

    demo.wait_for(opened, OPEN_TIMEOUT_SECONDS)
    state = pausing.read_pauses(stage, [TIER], clients)[TIER]
    demo.console.print(f"  {pausing.paused_line(state, oldest_age_seconds=None, retention=None)}")
    attempts = demo.runtime.by_function(demo.tier(TIER).consumer.name).stats.snapshot()["records"]
    attempts -= outage.attempts_before
    demo.expect(
        "breaker",
        "the downstream failed: the breaker opened, the tier is paused by circuit breaker, 0 letters",
        state.paused and state.paused_by == BREAKER_BY and demo.dlq_depth(TIER) == 0,
        f"{attempts} attempts for {JOBS} jobs so far",
    )


def breaker_closes(demo: Demo) -> None:
    demo.console.rule(f"8. The downstream is back: the {TIER} tier's circuit breaker probes, then closes")
    outage = demo.handoffs[TIER]
    assert isinstance(outage, Outage), "outage_begins ran first"
    stage, clients = demo.deployment.stage, demo.session.clients
    lambda_client = clients("lambda")
    uuid = pausing.read_pauses(stage, [TIER], clients)[TIER].uuid
    arn = lambda_client.get_event_source_mapping(UUID=uuid)["EventSourceMappingArn"]

    def ran() -> int:
        return job_total(demo.session, TIER, Metrics.SUCCEEDED, "demo.flaky") - outage.succeeded_before

    def closed() -> bool:
        return ran() >= JOBS and TAG_CIRCUIT not in lambda_client.list_tags(Resource=arn)["Tags"]

    demo.wait_for(closed, CLOSE_TIMEOUT_SECONDS)
    drained = time.time() - outage.down_until
    mapping = lambda_client.get_event_source_mapping(UUID=uuid)
    concurrency = mapping.get("ScalingConfig", {}).get("MaximumConcurrency")
    demo.expect(
        "breaker",
        "the probe's jobs succeeded: the breaker closed, the tier runs at its own concurrency again",
        closed() and mapping["State"] == "Enabled" and concurrency == demo.tier(TIER).mapping.maximum_concurrency,
        f"maximum concurrency {concurrency}",
    )
    attempts = demo.runtime.by_function(demo.tier(TIER).consumer.name).stats.snapshot()["records"]
    attempts -= outage.attempts_before
    demo.expect(
        "breaker",
        f"every one of the {JOBS} jobs ran once, 0 letters",
        ran() == JOBS and demo.dlq_depth(TIER) == 0,
        f"{ran()} succeeded, {demo.dlq_depth(TIER)} letters, {attempts} attempts",
    )
    breaker_alarm = Alarms.name(stage, TIER, Alarms.CIRCUIT_BREAKER)

    def breaker_pages() -> list[str]:  # the opening alarm's notifications and the closing page, in order
        about = [p.get("AlarmName") or p.get("Source") for p in demo.inbox.about(TIER)]
        return [str(p) for p in about if p in (breaker_alarm, PAGE_SOURCE)]

    demo.wait_for(lambda: len(breaker_pages()) >= 2, 10)
    demo.expect(
        "breaker",
        "the on-call was paged twice by the breaker: when it opened, when it closed",
        breaker_pages() == [breaker_alarm, PAGE_SOURCE],
        ", ".join(breaker_pages()),
    )
    demo.figures[f"{TIER} outage of {OUTAGE_SECONDS} s, breaker on"] = (
        f"{JOBS} jobs, {demo.dlq_depth(TIER)} letters, {attempts} attempts, "
        f"drained {drained:.0f} s after the downstream recovered"
    )
