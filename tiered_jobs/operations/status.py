"""A tier's status: the one read behind ``tiered-jobs status``, the console's Tiers page and the
emulator's live view. Each renders the same :class:`TierStatus` rows its own way, so the three
never disagree about a figure or about what it costs to read it.

Its AWS calls, for ``n`` tiers (the console's budget per refresh; the stage's discovery is the
caller's, done once):

* ``2n`` ``GetQueueAttributes``: each queue and each DLQ, every counter in one call. Counts are
  queue attributes: exact enough, and free.
* one ``DescribeAlarms`` (a page per 100 alarms of the stage), by the alarm name prefix the stack uses.
* **one** ``GetMetricData`` for every CloudWatch figure of every tier (more only past CloudWatch's
  500 queries, 55 tiers, or when its answer is paged):

  - ``ApproximateAgeOfOldestMessage`` is *not* a queue attribute: SQS publishes it to CloudWatch
    (``AWS/SQS``, dimension ``QueueName``, one datapoint a minute for active queues). Reading it
    never consumes a message (peeking would hide letters from consumers). Locally the emulator
    publishes it (``emulator.sqs_metrics``).
  - the consumer's ``Throttles`` (``AWS/Lambda``, dimension ``FunctionName``) of the last
    :data:`RECENT_SECONDS`: batches Lambda refused for lack of concurrency (a new account's low
    quota, a reservation). A throttled batch returns to its queue having spent one receive of each
    of its messages toward the redrive count.
  - the consumer's own metrics (``TieredJobs``, dimensions ``service, Stage, Tier``) over the last
    :data:`WINDOW_SECONDS`: the mean retry delay, the duration p50/p99; and the live counts
    (:mod:`tiered_jobs.operations.counts`): jobs completed, failed for good, retried and held over
    the last 1, 5 and 60 minutes, the hour's totals among them. Four queries per tier, and with
    ``by_job_type`` four per job type, in the same call.

With ``by_job_type`` the read adds **one** ``ListMetrics`` (a page per 500 series), before that
call: it finds the job types of the last 3 hours, which no deployment lists (a route is a pattern).

Queue counts are the core of the read; alarms and CloudWatch figures are extras: a role without
their permission still sees its queues, with a note saying what could not be read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from ..contract.names import Alarms, Metrics, consumer_function_name
from ..contract.tiers import TierQueues
from . import counts as live
from .errors import client_error_text

#: CloudWatch namespace and dimension of SQS's own metrics.
SQS_NAMESPACE = "AWS/SQS"
SQS_QUEUE_DIMENSION = "QueueName"
AGE_OF_OLDEST_MESSAGE = "ApproximateAgeOfOldestMessage"
#: Queue attribute -> the ``AWS/SQS`` metric SQS publishes for it.
COUNT_METRICS: dict[str, str] = {
    "ApproximateNumberOfMessages": "ApproximateNumberOfMessagesVisible",
    "ApproximateNumberOfMessagesNotVisible": "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesDelayed": "ApproximateNumberOfMessagesDelayed",
}
#: Lambda's own metrics of a function: invocations refused for lack of concurrency.
LAMBDA_NAMESPACE = "AWS/Lambda"
LAMBDA_FUNCTION_DIMENSION = "FunctionName"
THROTTLES = "Throttles"

#: The window of the job figures (succeeded, failed, retried, retry delay, durations).
WINDOW_SECONDS = 3600
#: The window of what is happening now: throttles.
RECENT_SECONDS = 300
#: How far back the age is looked for: SQS publishes it every minute while a queue is active, and
#: stops for a queue inactive for hours; a datapoint older than this says nothing about now.
AGE_LOOKBACK_SECONDS = 900
#: SQS and Lambda publish one datapoint a minute: the period the recent figures are read with.
MINUTE = 60
#: Queries one ``GetMetricData`` call takes at most.
MAX_QUERIES = 500

#: (figure, metric, statistic) of the consumer's own metrics, each over :data:`WINDOW_SECONDS`; the
#: hour's succeeded, failed and retried jobs are the live counts' 60 minutes.
_JOB_FIGURES: tuple[tuple[str, str, str], ...] = (
    ("mean_retry_delay_seconds", Metrics.RETRY_DELAY, "Average"),
    ("p50_ms", Metrics.DURATION, "p50"),
    ("p99_ms", Metrics.DURATION, "p99"),
)


@dataclass(frozen=True)
class TierStatus:
    """One tier, read now. ``None``: the figure could not be read (no permission) or has no datapoint."""

    tier: str
    visible: int
    #: Received and not yet deleted: being processed, or waiting out a retry backoff (SQS cannot tell them apart).
    in_flight: int
    #: Sent with a delay (``DelaySeconds``) and not yet visible.
    delayed: int
    #: Visible letters in the tier's DLQ (what its alarm counts); ``None`` when the deployment names no DLQ.
    dlq: int | None
    #: SQS's latest ``ApproximateAgeOfOldestMessage`` within :data:`AGE_LOOKBACK_SECONDS`.
    oldest_age_seconds: float | None = None
    #: Batches Lambda refused the consumer in the last :data:`RECENT_SECONDS` (0: none published).
    throttles: float | None = None
    #: ``{alarm kind: state}`` of the tier's alarms.
    alarms: dict[str, str] = field(default_factory=dict)
    #: Over the last :data:`WINDOW_SECONDS`: jobs succeeded, failed for good, attempts retried.
    succeeded: float | None = None
    failed: float | None = None
    retried: float | None = None
    mean_retry_delay_seconds: float | None = None
    p50_ms: float | None = None
    p99_ms: float | None = None
    #: ``{"1m" | "5m" | "60m": WindowCounts}``: jobs completed, failed, retried, held (``None``: not read).
    counts: dict[str, live.WindowCounts] | None = None

    @property
    def success_rate(self) -> float | None:
        """Succeeded / (succeeded + failed) over the window; ``None`` without jobs."""
        done = (self.succeeded or 0) + (self.failed or 0)
        return (self.succeeded or 0) / done if done else None

    @property
    def firing(self) -> list[str]:
        """The alarm kinds in ``ALARM``."""
        return [kind for kind, state in self.alarms.items() if state == "ALARM"]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class StageStatus:
    """A stage's status: every tier's figures, and the notes on what could not be read."""

    stage: str
    #: Where the tiers were found, e.g. ``stack TieredJobs-dev``.
    source: str
    tiers: list[TierStatus]
    #: Figures that could not be read (e.g. no CloudWatch permission): shown as notes, never fatal.
    notes: list[str] = field(default_factory=list)
    #: The live counts per job type, by tier then type (read with ``by_job_type`` only).
    job_types: list[live.JobTypeCounts] = field(default_factory=list)

    def tier(self, name: str) -> TierStatus:
        return next(status for status in self.tiers if status.tier == name)


def read_status(
    stage: str,
    tiers: Mapping[str, TierQueues],
    client: Callable[[str], Any],
    *,
    source: str,
    now: datetime | None = None,
    by_job_type: bool = False,
) -> StageStatus:
    """Every tier's status, in the calls the module's docstring counts. ``client(service)`` is a boto3
    client (an operator's ``Target.client``, the emulator session's ``clients``). ``by_job_type``
    adds the live counts of each job type (one ``ListMetrics`` more)."""
    from botocore.exceptions import ClientError

    sqs = client("sqs")
    counts = {name: queue_counts(sqs, urls.queue_url) for name, urls in tiers.items()}
    letters = {
        name: queue_counts(sqs, urls.dlq_url)["ApproximateNumberOfMessages"]
        for name, urls in tiers.items()
        if urls.dlq_url
    }
    notes: list[str] = []
    cloudwatch = client("cloudwatch")
    try:
        states = alarm_states(cloudwatch, stage)
    except ClientError as exc:
        states = {}
        notes.append(f"alarm states unavailable ({client_error_text(exc)})")
    types: list[tuple[str, str]] = []
    if by_job_type:
        try:  # its own permission (cloudwatch:ListMetrics): without it the tiers' figures still show
            types = live.job_types(cloudwatch, stage, tiers)
        except ClientError as exc:
            notes.append(f"job types unavailable ({client_error_text(exc)})")
    try:
        figures, by_type = metric_figures(cloudwatch, stage, tiers, now=now, job_types=types)
    except ClientError as exc:
        figures, by_type = {}, []
        notes.append(f"CloudWatch figures unavailable ({client_error_text(exc)})")
    rows = [
        TierStatus(
            tier=name,
            visible=counts[name]["ApproximateNumberOfMessages"],
            in_flight=counts[name]["ApproximateNumberOfMessagesNotVisible"],
            delayed=counts[name]["ApproximateNumberOfMessagesDelayed"],
            dlq=letters.get(name),
            alarms=tier_alarms(states, stage, name),
            **figures.get(name, {}),
        )
        for name in tiers
    ]
    return StageStatus(stage, source, rows, notes, by_type)


def queue_name(queue_url: str) -> str:
    """``https://sqs.<region>.amazonaws.com/<account>/<name>`` -> ``<name>`` (the metrics' dimension)."""
    return queue_url.rstrip("/").rsplit("/", 1)[-1]


def queue_counts(sqs: Any, queue_url: str) -> dict[str, int]:
    """``{attribute: count}`` for the three ``ApproximateNumberOfMessages*`` attributes, in one call."""
    names = list(COUNT_METRICS)
    attributes = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=names)["Attributes"]
    return {name: int(attributes.get(name, 0)) for name in names}


def alarm_states(cloudwatch: Any, stage: str) -> dict[str, str]:
    """``{alarm name: state}`` of the stage's alarms (found by the name prefix the stack uses)."""
    states: dict[str, str] = {}
    for page in cloudwatch.get_paginator("describe_alarms").paginate(AlarmNamePrefix=Alarms.prefix(stage)):
        states.update({alarm["AlarmName"]: alarm["StateValue"] for alarm in page.get("MetricAlarms", [])})
    return states


def tier_alarms(states: Mapping[str, str], stage: str, tier: str) -> dict[str, str]:
    """``{alarm kind: state}`` of one tier's alarms among ``states``."""
    return {kind: states[name] for kind in Alarms.ALL_KINDS if (name := Alarms.name(stage, tier, kind)) in states}


def metric_figures(
    cloudwatch: Any,
    stage: str,
    tiers: Mapping[str, TierQueues],
    *,
    now: datetime | None = None,
    job_types: list[tuple[str, str]] | None = None,
) -> tuple[dict[str, dict[str, Any]], list[live.JobTypeCounts]]:
    """``{tier: {TierStatus field: value}}`` and the live counts of each ``(tier, job type)``: every
    CloudWatch figure of every tier, in one ``GetMetricData`` call (see the module's docstring)."""
    if not tiers:
        return {}, []
    # Whole minutes, the current one included: the periods line up with the datapoints, so a
    # refresh a few seconds later reads the same figures.
    end = (now or datetime.now(timezone.utc)).replace(second=0, microsecond=0) + timedelta(minutes=1)
    queries: list[dict[str, Any]] = []
    types = job_types or []
    for index, (name, urls) in enumerate(tiers.items()):
        ours = live.tier_dimensions(stage, name)
        for figure, metric, stat in _JOB_FIGURES:
            queries.append(_query(f"t{index}_{figure}", Metrics.NAMESPACE, metric, ours, WINDOW_SECONDS, stat))
        queries.extend(live.count_queries(f"t{index}_count", ours))
        queries.append(
            _query(
                f"t{index}_age",
                SQS_NAMESPACE,
                AGE_OF_OLDEST_MESSAGE,
                [{"Name": SQS_QUEUE_DIMENSION, "Value": queue_name(urls.queue_url)}],
                MINUTE,
                "Maximum",
            )
        )
        queries.append(
            _query(
                f"t{index}_throttles",
                LAMBDA_NAMESPACE,
                THROTTLES,
                [{"Name": LAMBDA_FUNCTION_DIMENSION, "Value": consumer_function_name(stage, name)}],
                MINUTE,
                "Sum",
            )
        )
    for index, (tier, job_type) in enumerate(types):
        queries.extend(live.count_queries(f"j{index}_count", live.job_type_dimensions(stage, tier, job_type)))
    points = _datapoints(cloudwatch, queries, end - timedelta(seconds=max(WINDOW_SECONDS, AGE_LOOKBACK_SECONDS)), end)
    recent, aged = end - timedelta(seconds=RECENT_SECONDS), end - timedelta(seconds=AGE_LOOKBACK_SECONDS)
    figures: dict[str, dict[str, Any]] = {}
    for index, name in enumerate(tiers):

        def found(figure: str, index: int = index) -> list[tuple[datetime, float]]:
            return sorted(points.get(f"t{index}_{figure}", []), reverse=True)  # newest first

        row: dict[str, Any] = {}
        for figure, _, _ in _JOB_FIGURES:  # a statistic over the whole window: the latest period's
            values = [value for _, value in found(figure)]
            row[figure] = values[0] if values else None
        # The hour's totals are the counts' 60 minutes; None without a datapoint, as before.
        for figure, count in (("succeeded", "completed"), ("failed", "failed"), ("retried", "retried")):
            values = [value for _, value in found(f"count_{count}")]
            row[figure] = sum(values) if values else None
        row["counts"] = live.window_counts(points, f"t{index}_count", end)
        row["throttles"] = sum(value for stamp, value in found("throttles") if stamp >= recent)
        ages = [value for stamp, value in found("age") if stamp >= aged]
        row["oldest_age_seconds"] = ages[0] if ages else None
        figures[name] = row
    by_type = [
        live.JobTypeCounts(tier, job_type, live.window_counts(points, f"j{index}_count", end))
        for index, (tier, job_type) in enumerate(types)
    ]
    return figures, by_type


def _query(
    query_id: str, namespace: str, metric: str, dimensions: list[dict[str, str]], period: int, stat: str
) -> dict[str, Any]:
    return {
        "Id": query_id,
        "ReturnData": True,
        "MetricStat": {
            "Metric": {"Namespace": namespace, "MetricName": metric, "Dimensions": dimensions},
            "Period": period,
            "Stat": stat,
        },
    }


def _datapoints(
    cloudwatch: Any, queries: list[dict[str, Any]], start: datetime, end: datetime
) -> dict[str, list[tuple[datetime, float]]]:
    """``{query id: [(timestamp, value)]}``, every page of every call gathered."""
    points: dict[str, list[tuple[datetime, float]]] = {}
    for first in range(0, len(queries), MAX_QUERIES):
        request: dict[str, Any] = {
            "MetricDataQueries": queries[first : first + MAX_QUERIES],
            "StartTime": start,
            "EndTime": end,
            "ScanBy": "TimestampDescending",
        }
        while True:
            response = cloudwatch.get_metric_data(**request)
            for result in response.get("MetricDataResults", []):
                points.setdefault(result["Id"], []).extend(
                    (stamp, float(value))
                    for stamp, value in zip(result.get("Timestamps", []), result.get("Values", []), strict=True)
                    if value is not None
                )
            if not response.get("NextToken"):
                break
            request["NextToken"] = response["NextToken"]
    return points
