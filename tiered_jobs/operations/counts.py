"""Live job counts: completed, failed (for good), retried and held jobs over the last 1, 5 and 60
minutes, per tier and per job type, from the counters the consumer already writes as EMF.

Why counts and not a rate: at low volume a per-second average over minutes reads ``0.00`` while
jobs are in fact running; "3 completed in the last minute" never rounds to nothing.

How they are read, within :func:`tiered_jobs.operations.status.read_status`'s single
``GetMetricData`` call: one query per (tier or job type, counter), each the counter's ``Sum`` per
minute over the last hour. The three windows are sums of the same 60 datapoints, so three windows
cost no more queries than one. A window of ``N`` minutes is the ``N`` most recent whole-minute
periods, the current minute included (as the throttles' 5 minutes are): the periods line up with
CloudWatch's datapoints, so a refresh a few seconds later reads the same figures.

The job types are not known in advance (a route is a pattern): one ``ListMetrics`` (a page per 500
metrics) finds the ``[Stage, Tier, JobType]`` series of the stage active in the last
:data:`RECENTLY_ACTIVE` (CloudWatch's only choice), filtered on one counter, since every EMF
document the consumer writes holds every counter (0 included).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ..contract.names import Metrics

#: Window label -> its length in minutes; the labels are the JSON keys.
WINDOWS: dict[str, int] = {"1m": 1, "5m": 5, "60m": 60}
#: The longest window, the span every count query reads.
SPAN_MINUTES = max(WINDOWS.values())
#: Count -> the consumer's counter (docs/consumer.md, "Metrics"). ``held``: records the rate limit
#: held back and sent again with a delay (never an attempt, never a failure).
COUNTERS: dict[str, str] = {
    "completed": Metrics.SUCCEEDED,
    "failed": Metrics.FAILED,
    "retried": Metrics.RETRIED,
    "held": Metrics.RATE_LIMITED,
}
#: The counter ``ListMetrics`` filters on to find the job types (any would do: all are written).
LISTED_COUNTER = Metrics.SUCCEEDED
#: ``ListMetrics``' ``RecentlyActive``: the one value CloudWatch takes (3 hours), past the longest window.
RECENTLY_ACTIVE = "PT3H"
PERIOD_SECONDS = 60


@dataclass(frozen=True)
class WindowCounts:
    """Jobs over one window: completed (succeeded, duplicates included), failed for good, attempts
    retried, records held by the rate limit."""

    completed: int = 0
    failed: int = 0
    retried: int = 0
    held: int = 0


@dataclass(frozen=True)
class JobTypeCounts:
    """One job type of one tier, with its counts per window label (:data:`WINDOWS`)."""

    tier: str
    job_type: str
    counts: dict[str, WindowCounts]


def tier_dimensions(stage: str, tier: str) -> list[dict[str, str]]:
    """The ``[service, Stage, Tier]`` set: one tier, every job type summed (what the alarms read)."""
    return [
        {"Name": Metrics.DIM_SERVICE, "Value": Metrics.SERVICE},
        {"Name": Metrics.DIM_STAGE, "Value": stage},
        {"Name": Metrics.DIM_TIER, "Value": tier},
    ]


def job_type_dimensions(stage: str, tier: str, job_type: str) -> list[dict[str, str]]:
    """The ``[Stage, Tier, JobType]`` set (the breakdown; Powertools adds no ``service`` to it)."""
    return [
        {"Name": Metrics.DIM_STAGE, "Value": stage},
        {"Name": Metrics.DIM_TIER, "Value": tier},
        {"Name": Metrics.DIM_JOB_TYPE, "Value": job_type},
    ]


def count_queries(prefix: str, dimensions: list[dict[str, str]]) -> list[dict[str, Any]]:
    """One ``GetMetricData`` query per count: its counter's per-minute ``Sum``, ids ``<prefix>_<count>``."""
    return [
        {
            "Id": f"{prefix}_{count}",
            "ReturnData": True,
            "MetricStat": {
                "Metric": {"Namespace": Metrics.NAMESPACE, "MetricName": metric, "Dimensions": dimensions},
                "Period": PERIOD_SECONDS,
                "Stat": "Sum",
            },
        }
        for count, metric in COUNTERS.items()
    ]


def window_counts(
    points: Mapping[str, Iterable[tuple[datetime, float]]], prefix: str, end: datetime
) -> dict[str, WindowCounts]:
    """``{window label: WindowCounts}`` from the datapoints of :func:`count_queries`' ids; ``end`` is
    the end of the current minute (the queries' ``EndTime``)."""
    found = {count: list(points.get(f"{prefix}_{count}", ())) for count in COUNTERS}
    result: dict[str, WindowCounts] = {}
    for label, minutes in WINDOWS.items():
        since = end - timedelta(minutes=minutes)
        sums = {count: round(sum(value for stamp, value in found[count] if stamp >= since)) for count in COUNTERS}
        result[label] = WindowCounts(**sums)
    return result


def job_types(cloudwatch: Any, stage: str, tiers: Iterable[str]) -> list[tuple[str, str]]:
    """``[(tier, job type)]`` of the stage's tiers among ``tiers`` with a series in the last 3 hours,
    sorted: one ``ListMetrics`` page per 500 of the stage's series of :data:`LISTED_COUNTER`."""
    wanted = set(tiers)
    found: set[tuple[str, str]] = set()
    pages = cloudwatch.get_paginator("list_metrics").paginate(
        Namespace=Metrics.NAMESPACE,
        MetricName=LISTED_COUNTER,
        Dimensions=[{"Name": Metrics.DIM_STAGE, "Value": stage}],
        RecentlyActive=RECENTLY_ACTIVE,
    )
    for page in pages:
        for metric in page.get("Metrics", []):
            dimensions = {item["Name"]: item["Value"] for item in metric.get("Dimensions", [])}
            # The [service, Stage, Tier] series of the same counter has no JobType: it is the tier's sum.
            tier, job_type = dimensions.get(Metrics.DIM_TIER), dimensions.get(Metrics.DIM_JOB_TYPE)
            if tier in wanted and job_type:
                found.add((tier, job_type))
    return sorted(found)
