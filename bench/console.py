"""The console's cost per refresh: AWS calls (botocore's event hooks) and render time of the Tiers
table and of the Job types table.

Three tiers with messages in their queues and DLQs on moto's server (HTTP on 127.0.0.1, as a real
endpoint), an hour of the consumer's counters (one datapoint a minute) for each tier and for
:data:`JOB_TYPES` job types, the console served by uvicorn from a thread, ``GET /fragments/tiers``
and ``GET /fragments/job-types`` (what htmx polls) timed end to end. ``python -m bench.console``
prints the figures.
"""

from __future__ import annotations

import logging
import statistics
import time
import urllib.request
from typing import Any

from tiered_jobs.contract.names import DEFAULT_TIERS, queue_name, stack_name
from tiered_jobs.contract.routing import Routes
from tiered_jobs.stage import discovery

STAGE = "bench"
#: Job types with an hour of counts (spread over the tiers).
JOB_TYPES = 20


def _an_hour_of_counts(cloudwatch: Any, tiers: list[str]) -> None:
    """What the consumer's EMF becomes: every counter, one datapoint a minute, per tier and per job type."""
    from datetime import datetime, timedelta, timezone

    from tiered_jobs.operations import counts

    now = datetime.now(timezone.utc)
    series = [counts.tier_dimensions(STAGE, tier) for tier in tiers] + [
        counts.job_type_dimensions(STAGE, tiers[n % len(tiers)], f"bench.type_{n:02d}") for n in range(JOB_TYPES)
    ]
    data = [
        {"MetricName": metric, "Value": 1.0, "Timestamp": now - timedelta(minutes=minute), "Dimensions": dimensions}
        for dimensions in series
        for minute in range(60)
        for metric in counts.COUNTERS.values()
    ]
    for first in range(0, len(data), 1000):
        cloudwatch.put_metric_data(Namespace=counts.Metrics.NAMESPACE, MetricData=data[first : first + 1000])


def measure(refreshes: int = 20) -> dict[str, Any]:
    from emulator.server import FAKE_CREDENTIALS, EmbeddedAws
    from tiered_jobs.console.app import counted
    from tiered_jobs.console.security import Security
    from tiered_jobs.console.server import start_in_thread
    from tiered_jobs.stage.target import Target

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    with EmbeddedAws() as endpoint:
        target = counted(
            Target(
                STAGE,
                stack_name(STAGE),
                endpoint.region,
                endpoint.url,
                credentials={k.lower(): v for k, v in FAKE_CREDENTIALS.items()},
            )
        )
        sqs = target.client("sqs")
        tiers = {}
        for tier in DEFAULT_TIERS:
            urls = [sqs.create_queue(QueueName=queue_name(STAGE, tier, dlq=dlq))["QueueUrl"] for dlq in (False, True)]
            for url in urls:
                sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": "{}"} for i in range(5)])
            tiers[tier] = discovery.TierQueues(*urls)
        target._deployment = discovery.Deployment(tiers=tiers, routes=Routes({}), source="bench", stage=STAGE)
        _an_hour_of_counts(target.client("cloudwatch"), list(tiers))
        console = start_in_thread(target, Security())
        try:
            tiers_page = _refreshes(console.url + "fragments/tiers", refreshes)
            job_types_page = _refreshes(console.url + "fragments/job-types", refreshes)
        finally:
            console.stop()
    return {
        "tiers": len(DEFAULT_TIERS),
        "refreshes": refreshes,
        **tiers_page,
        "job_types": JOB_TYPES,
        **{f"job_types_{name}": value for name, value in job_types_page.items()},
    }


def _refreshes(url: str, refreshes: int) -> dict[str, Any]:
    calls, times = [], []
    for _ in range(refreshes + 1):
        started = time.perf_counter()
        with urllib.request.urlopen(url, timeout=30) as answer:
            html = answer.read().decode()
        times.append((time.perf_counter() - started) * 1000)
        calls.append(int(html.split("refreshed with ", 1)[1].split(" AWS calls", 1)[0]))
    calls, times = calls[1:], times[1:]  # the first one warms the clients up
    return {
        "calls_per_refresh": max(calls),
        "render_ms_median": round(statistics.median(times), 1),
        "render_ms_max": round(max(times), 1),
    }


if __name__ == "__main__":
    figures = measure()
    print(
        f"console, {figures['tiers']} tiers, {figures['refreshes']} refreshes of the Tiers table: "
        f"{figures['calls_per_refresh']} AWS calls per refresh, render {figures['render_ms_median']} ms median "
        f"({figures['render_ms_max']} ms max); the Job types table ({figures['job_types']} job types): "
        f"{figures['job_types_calls_per_refresh']} AWS calls per refresh, render "
        f"{figures['job_types_render_ms_median']} ms median ({figures['job_types_render_ms_max']} ms max)"
    )
