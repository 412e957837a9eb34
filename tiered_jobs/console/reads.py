"""What one refresh of the Tiers page reads, in a bounded number of AWS calls.

Per refresh, for ``n`` tiers: ``2n`` ``GetQueueAttributes`` (each queue and each DLQ, every
counter in one call), one ``DescribeAlarms`` page per 100 alarms of the stage (one for three
tiers), and **one** ``GetMetricData`` for every CloudWatch figure of every tier (the consumer's
``Throttles`` of the last 5 minutes among them). Three tiers: 8 calls. The deployment itself is
discovered once per console (one ``DescribeStacks``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from tiered_jobs.contract.names import Alarms, Metrics, consumer_function_name
from tiered_jobs.operations.status import (
    LAMBDA_FUNCTION_DIMENSION,
    LAMBDA_NAMESPACE,
    THROTTLE_LOOKBACK_SECONDS,
    THROTTLES,
)
from tiered_jobs.stage.target import Target

#: The window of the CloudWatch figures.
WINDOW_SECONDS = 3600
#: SQS publishes ``ApproximateAgeOfOldestMessage`` once a minute: the latest of the last 5 minutes is shown.
AGE_LOOKBACK_SECONDS = 300
QUEUE_COUNTERS = ("ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible",
                  "ApproximateNumberOfMessagesDelayed")

#: (query id suffix, namespace or None for ours, metric, statistic, period) read per tier.
_FIGURES: tuple[tuple[str, str, str, int], ...] = (
    ("succeeded", Metrics.SUCCEEDED, "Sum", WINDOW_SECONDS),
    ("failed", Metrics.FAILED, "Sum", WINDOW_SECONDS),
    ("retried", Metrics.RETRIED, "Sum", WINDOW_SECONDS),
    ("retrydelay", Metrics.RETRY_DELAY, "Average", WINDOW_SECONDS),
    ("p50", Metrics.DURATION, "p50", WINDOW_SECONDS),
    ("p99", Metrics.DURATION, "p99", WINDOW_SECONDS),
)


@dataclass
class TierStatus:
    tier: str
    visible: int
    #: Received and not yet deleted: being processed, or waiting out a retry backoff (SQS cannot tell them apart).
    not_visible: int
    #: Sent with a delay (``DelaySeconds``) and not yet visible.
    delayed: int
    dlq: int | None
    oldest_age_seconds: float | None
    alarms: dict[str, str]
    succeeded: float | None = None
    failed: float | None = None
    retried: float | None = None
    mean_retry_delay_seconds: float | None = None
    p50_ms: float | None = None
    p99_ms: float | None = None
    #: Batches Lambda refused the consumer for lack of concurrency, last 5 minutes (each spent a receive).
    throttles: float | None = None

    @property
    def success_rate(self) -> float | None:
        """Succeeded / (succeeded + failed) over the window; ``None`` without jobs."""
        done = (self.succeeded or 0) + (self.failed or 0)
        return (self.succeeded or 0) / done if done else None

    @property
    def firing(self) -> list[str]:
        return [kind for kind, state in self.alarms.items() if state == "ALARM"]


@dataclass
class Snapshot:
    stage: str
    source: str
    tiers: list[TierStatus]
    #: Figures that could not be read (e.g. no CloudWatch permission): shown as notes, never fatal.
    notes: list[str] = field(default_factory=list)


def snapshot(target: Target, now: Callable[[], float] = time.time) -> Snapshot:
    """Every figure of the Tiers page (see the module's docstring for the calls it makes)."""
    from botocore.exceptions import ClientError

    from tiered_jobs.operations.errors import client_error_text

    deployment = target.deployment()
    sqs = target.client("sqs")
    tiers: list[TierStatus] = []
    for name, urls in deployment.tiers.items():
        main = _counters(sqs, urls.queue_url, QUEUE_COUNTERS)
        dlq = _counters(sqs, urls.dlq_url, QUEUE_COUNTERS[:1])["ApproximateNumberOfMessages"] if urls.dlq_url else None
        tiers.append(TierStatus(
            tier=name, visible=main["ApproximateNumberOfMessages"],
            not_visible=main["ApproximateNumberOfMessagesNotVisible"],
            delayed=main["ApproximateNumberOfMessagesDelayed"], dlq=dlq, oldest_age_seconds=None, alarms={},
        ))
    result = Snapshot(stage=target.stage, source=deployment.source, tiers=tiers)
    cloudwatch = target.client("cloudwatch")
    try:
        states = alarm_states(cloudwatch, target.stage)
        for status in tiers:
            status.alarms = {kind: states[alarm] for kind in Alarms.ALL_KINDS
                             if (alarm := Alarms.name(target.stage, status.tier, kind)) in states}
    except ClientError as exc:
        result.notes.append(f"alarm states unavailable ({client_error_text(exc)})")
    try:
        _metric_figures(cloudwatch, target.stage, tiers, {n: u.queue_url for n, u in deployment.tiers.items()}, now())
    except ClientError as exc:
        result.notes.append(f"CloudWatch figures unavailable ({client_error_text(exc)})")
    return result


def alarm_states(cloudwatch: Any, stage: str) -> dict[str, str]:
    """``{alarm name: state}`` of the stage's alarms (found by the name prefix the stack uses)."""
    states: dict[str, str] = {}
    for page in cloudwatch.get_paginator("describe_alarms").paginate(AlarmNamePrefix=Alarms.prefix(stage)):
        states.update({alarm["AlarmName"]: alarm["StateValue"] for alarm in page.get("MetricAlarms", [])})
    return states


def _counters(sqs: Any, queue_url: str, names: tuple[str, ...]) -> dict[str, int]:
    attributes = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=list(names))["Attributes"]
    return {name: int(attributes.get(name, 0)) for name in names}


def _metric_figures(cloudwatch: Any, stage: str, tiers: list[TierStatus], queue_urls: dict[str, str],
                    now: float) -> None:
    """One ``GetMetricData`` for all tiers: job counts, retry delay and durations, and SQS's oldest age."""
    queries: list[dict[str, Any]] = []
    for index, status in enumerate(tiers):
        dimensions = [{"Name": Metrics.DIM_SERVICE, "Value": Metrics.SERVICE},
                      {"Name": Metrics.DIM_STAGE, "Value": stage}, {"Name": Metrics.DIM_TIER, "Value": status.tier}]
        for suffix, metric, stat, period in _FIGURES:
            queries.append({"Id": f"t{index}{suffix}", "ReturnData": True, "MetricStat": {
                "Metric": {"Namespace": Metrics.NAMESPACE, "MetricName": metric, "Dimensions": dimensions},
                "Period": period, "Stat": stat}})
        queue_name = queue_urls[status.tier].rstrip("/").rsplit("/", 1)[-1]
        queries.append({"Id": f"t{index}age", "ReturnData": True, "MetricStat": {
            "Metric": {"Namespace": "AWS/SQS", "MetricName": "ApproximateAgeOfOldestMessage",
                       "Dimensions": [{"Name": "QueueName", "Value": queue_name}]},
            "Period": 60, "Stat": "Maximum"}})
        queries.append({"Id": f"t{index}throttles", "ReturnData": True, "MetricStat": {
            "Metric": {"Namespace": LAMBDA_NAMESPACE, "MetricName": THROTTLES,
                       "Dimensions": [{"Name": LAMBDA_FUNCTION_DIMENSION,
                                       "Value": consumer_function_name(stage, status.tier)}]},
            "Period": 60, "Stat": "Sum"}})
    end = datetime.fromtimestamp(now, timezone.utc).replace(second=0, microsecond=0) + timedelta(minutes=1)
    answer = cloudwatch.get_metric_data(MetricDataQueries=queries, StartTime=end - timedelta(seconds=WINDOW_SECONDS),
                                        EndTime=end, ScanBy="TimestampDescending")
    values = {result["Id"]: [v for v in result.get("Values", []) if v is not None]
              for result in answer.get("MetricDataResults", [])}
    stamps = {result["Id"]: result.get("Timestamps", []) for result in answer.get("MetricDataResults", [])}
    recent = end - timedelta(seconds=AGE_LOOKBACK_SECONDS)
    for index, status in enumerate(tiers):
        def first(suffix: str, index: int = index) -> float | None:
            found = values.get(f"t{index}{suffix}") or []
            return found[0] if found else None

        def total(suffix: str, index: int = index) -> float | None:
            found = values.get(f"t{index}{suffix}") or []
            return sum(found) if found else None

        status.succeeded, status.failed, status.retried = total("succeeded"), total("failed"), total("retried")
        status.mean_retry_delay_seconds = first("retrydelay")
        status.p50_ms, status.p99_ms = first("p50"), first("p99")
        ages = values.get(f"t{index}age") or []
        times = stamps.get(f"t{index}age") or []
        if ages and times and times[0] >= recent:  # newest first (TimestampDescending); an old one says nothing
            status.oldest_age_seconds = ages[0]
        since = end - timedelta(seconds=THROTTLE_LOOKBACK_SECONDS)
        status.throttles = sum(value for stamp, value in zip(stamps.get(f"t{index}throttles") or [],
                                                             values.get(f"t{index}throttles") or [], strict=False)
                               if stamp >= since)
