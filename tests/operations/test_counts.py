"""The live counts of ``status``: completed, failed, retried and held jobs over 1, 5 and 60 minutes,
per tier and per job type, read from known datapoints put into moto's CloudWatch, and their budget."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import boto3
import pytest

from tiered_jobs.contract.names import Metrics, stack_name
from tiered_jobs.operations import counts as live
from tiered_jobs.operations import status as stage_status
from tiered_jobs.operations.counts import WindowCounts
from tiered_jobs.stage.target import Target

#: (seconds before ``now``, value): one per span, each value a distinct power of ten so a sum names
#: the datapoints it took. ``now`` is 30 s into its minute, so every point's minute is certain.
POINTS = ((10, 1), (120, 10), (270, 100), (300, 1_000), (3_540, 10_000), (3_660, 100_000))


@pytest.fixture(autouse=True)
def series_listed_once() -> None:
    """CloudWatch's ListMetrics, which in-process moto needs patched for (the emulator's gap 16)."""
    from emulator import moto_patches

    moto_patches.cloudwatch_list_metrics_by_series()


@pytest.fixture
def now() -> datetime:
    return datetime.now(timezone.utc).replace(second=30, microsecond=0)


def _target(deployment) -> Target:
    return Target(deployment.stage, stack_name(deployment.stage), "us-east-1", None)


def put(stage: str, tier: str, metric: str, now: datetime, job_type: str | None = None, scale: int = 1) -> None:
    """What the consumer's EMF becomes in CloudWatch: the tier's ``[service, Stage, Tier]`` series, or
    one job type's ``[Stage, Tier, JobType]`` series. In the query's order: in-process moto compares
    dimensions in order (the emulator's gap 15, patched in local mode only)."""
    if job_type is None:
        dimensions = live.tier_dimensions(stage, tier)
    else:
        dimensions = live.job_type_dimensions(stage, tier, job_type)
    boto3.client("cloudwatch").put_metric_data(
        Namespace=Metrics.NAMESPACE,
        MetricData=[
            {
                "MetricName": metric,
                "Value": float(value * scale),
                "Unit": "Count",
                "Timestamp": now - timedelta(seconds=seconds_ago),
                "Dimensions": dimensions,
            }
            for seconds_ago, value in POINTS
        ],
    )


def test_each_window_counts_the_minutes_it_covers(deployment, now):
    """1 minute: the current one; 5: it and the 4 before; 60: the hour. Older datapoints count nowhere."""
    stage = deployment.stage
    for scale, metric in enumerate(live.COUNTERS.values(), start=1):
        put(stage, "bulk", metric, now, scale=scale)

    read = stage_status.read_status(stage, _target(deployment).deployment().tiers, boto3.client, source="t", now=now)

    bulk = read.tier("bulk")
    assert bulk.counts == {
        "1m": WindowCounts(completed=1, failed=2, retried=3, held=4),
        "5m": WindowCounts(completed=111, failed=222, retried=333, held=444),
        "60m": WindowCounts(completed=11_111, failed=22_222, retried=33_333, held=44_444),
    }
    assert (bulk.succeeded, bulk.failed, bulk.retried) == (11_111, 22_222, 33_333)  # the hour's totals
    assert read.tier("critical").counts == {label: WindowCounts() for label in live.WINDOWS}
    assert read.tier("critical").succeeded is None  # no datapoint: unknown, not 0
    assert read.job_types == []  # not asked for


def test_per_job_type_counts_come_from_the_breakdown_series(deployment, now):
    stage = deployment.stage
    put(stage, "bulk", Metrics.SUCCEEDED, now, job_type="analytics.record_event")
    put(stage, "bulk", Metrics.RATE_LIMITED, now, job_type="analytics.record_event", scale=3)
    put(stage, "bulk", Metrics.SUCCEEDED, now, job_type="demo.hello", scale=2)
    put(stage, "critical", Metrics.SUCCEEDED, now, job_type="payments.update_balance", scale=5)
    put(stage, "critical", Metrics.FAILED, now, job_type="payments.update_balance")
    put("other", "bulk", Metrics.SUCCEEDED, now, job_type="analytics.other_stage")  # another stage's
    put(stage, "gone", Metrics.SUCCEEDED, now, job_type="old.tier_removed")  # a tier no longer deployed

    read = stage_status.read_status(
        stage, _target(deployment).deployment().tiers, boto3.client, source="t", now=now, by_job_type=True
    )

    rows = {(row.tier, row.job_type): row.counts for row in read.job_types}
    assert list(rows) == [
        ("bulk", "analytics.record_event"),
        ("bulk", "demo.hello"),
        ("critical", "payments.update_balance"),
    ]
    assert rows["bulk", "analytics.record_event"]["5m"] == WindowCounts(completed=111, held=333)
    assert rows["bulk", "demo.hello"]["1m"] == WindowCounts(completed=2)
    assert rows["critical", "payments.update_balance"]["60m"] == WindowCounts(completed=55_555, failed=11_111)
    # The tiers' own series were never written here: a job type's count is never added to its tier's twice.
    assert read.tier("bulk").counts["60m"] == WindowCounts()


def _counted() -> tuple[list[str], object]:
    calls: list[str] = []

    def client(service: str):
        made = boto3.client(service)
        made.meta.events.register("before-call", lambda model, **_: calls.append(model.name))
        return made

    return calls, client


@pytest.mark.parametrize("job_types", [0, 3, 110])
def test_every_count_of_every_tier_and_job_type_is_one_get_metric_data(deployment, now, job_types):
    """The budget of docs/cli.md: 2 GetQueueAttributes per tier, one DescribeAlarms, one ListMetrics
    and one GetMetricData, whatever the number of job types up to what one call's 500 queries hold
    (3 tiers x 9 queries + 110 job types x 4 = 467)."""
    stage, tiers = deployment.stage, _target(deployment).deployment().tiers
    for n in range(job_types):
        put(stage, "bulk", Metrics.SUCCEEDED, now, job_type=f"bulk.type_{n:03d}")
    calls, client = _counted()

    read = stage_status.read_status(stage, tiers, client, source="t", now=now, by_job_type=True)

    assert len(read.job_types) == job_types
    if job_types:
        assert read.job_types[-1].counts["5m"] == WindowCounts(completed=111)
    assert sorted(calls) == sorted(
        ["GetQueueAttributes"] * 2 * len(tiers) + ["DescribeAlarms", "ListMetrics", "GetMetricData"]
    )


def test_without_the_breakdown_the_read_lists_no_metric(deployment, now):
    calls, client = _counted()

    stage_status.read_status(deployment.stage, _target(deployment).deployment().tiers, client, source="t", now=now)

    assert "ListMetrics" not in calls and calls.count("GetMetricData") == 1


def test_job_types_are_listed_page_by_page(deployment, now):
    """ListMetrics answers 500 series a page: a stage with more is read to its end."""
    stage = deployment.stage
    data = [
        {
            "MetricName": Metrics.SUCCEEDED,
            "Value": 1.0,
            "Timestamp": now,
            "Dimensions": live.job_type_dimensions(stage, "bulk", f"many.type_{n:04d}"),
        }
        for n in range(520)
    ]
    cloudwatch = boto3.client("cloudwatch")
    for first in range(0, len(data), 500):
        cloudwatch.put_metric_data(Namespace=Metrics.NAMESPACE, MetricData=data[first : first + 500])
    pages: list[int] = []
    cloudwatch.meta.events.register("after-call.cloudwatch.ListMetrics", lambda parsed, **_: pages.append(1))

    found = live.job_types(cloudwatch, stage, ["bulk"])

    assert len(found) == 520 and found[0] == ("bulk", "many.type_0000") and len(pages) == 2


def test_without_list_metrics_the_tiers_still_count(deployment, now, monkeypatch):
    """A role without cloudwatch:ListMetrics: no job types, a note naming why, the tiers' counts read."""
    from botocore.exceptions import ClientError

    put(deployment.stage, "bulk", Metrics.SUCCEEDED, now)

    def denied(*_, **__):
        raise ClientError({"Error": {"Code": "AccessDenied", "Message": "not allowed"}}, "ListMetrics")

    monkeypatch.setattr(live, "job_types", denied)

    read = stage_status.read_status(
        deployment.stage, _target(deployment).deployment().tiers, boto3.client, source="t", now=now, by_job_type=True
    )

    assert read.job_types == [] and read.tier("bulk").counts["5m"] == WindowCounts(completed=111)
    assert [note for note in read.notes if note.startswith("job types unavailable (")] == read.notes
    assert "AccessDenied" in read.notes[0] or "not allowed" in read.notes[0]
