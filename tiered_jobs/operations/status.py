"""What ``tiered-jobs status`` and the local mode's live view read: queue counts, the age of the
oldest message, alarm states. One module, so both show the same numbers from the same calls, on
AWS and on the local embedded AWS alike.

* Counts are queue attributes (``GetQueueAttributes``): exact enough, and free.
* ``ApproximateAgeOfOldestMessage`` is *not* a queue attribute: SQS publishes it to CloudWatch
  (namespace ``AWS/SQS``, dimension ``QueueName``, one datapoint a minute for active queues). It is
  read with one ``GetMetricData`` call for every queue asked about; reading it never consumes a
  message (peeking would hide letters from consumers). Locally the runtime publishes it (see
  ``emulator.sqs_metrics``).
* Throttles: each tier's consumer's ``Throttles`` (namespace ``AWS/Lambda``, dimension
  ``FunctionName``), summed over the last :data:`THROTTLE_LOOKBACK_SECONDS`: batches Lambda refused
  for lack of concurrency (a new account's low ``ConcurrentExecutions`` quota, a reservation). A
  throttled batch returns to its queue and still spends one receive of each of its messages toward
  the redrive count. Read in the same ``GetMetricData`` call as the ages: no call more.
* Alarm states come from ``DescribeAlarms`` by the stage's alarm name prefix.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from ..contract.names import Alarms

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
#: How far back the age is looked for (SQS stops publishing for a queue that has been inactive).
AGE_LOOKBACK_SECONDS = 900
#: SQS publishes one datapoint a minute: the period the age is read with.
AGE_PERIOD_SECONDS = 60
#: Lambda's own metrics of a function: invocations refused for lack of concurrency.
LAMBDA_NAMESPACE = "AWS/Lambda"
LAMBDA_FUNCTION_DIMENSION = "FunctionName"
THROTTLES = "Throttles"
#: The window throttles are counted over.
THROTTLE_LOOKBACK_SECONDS = 300


def queue_name(queue_url: str) -> str:
    """``https://sqs.<region>.amazonaws.com/<account>/<name>`` -> ``<name>`` (the metrics' dimension)."""
    return queue_url.rstrip("/").rsplit("/", 1)[-1]


def queue_counts(sqs: Any, queue_url: str) -> dict[str, int]:
    """``{attribute: count}`` for the three ``ApproximateNumberOfMessages*`` attributes."""
    names = list(COUNT_METRICS)
    attributes = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=names)["Attributes"]
    return {name: int(attributes.get(name, 0)) for name in names}


def oldest_ages(cloudwatch: Any, queue_urls: Mapping[str, str], *, now: datetime | None = None,
                lookback_seconds: int = AGE_LOOKBACK_SECONDS) -> dict[str, float]:
    """``{key: seconds}``: the latest 1-minute maximum of ``ApproximateAgeOfOldestMessage`` of each
    queue in ``queue_urls`` (``{key: queue url}``), in one ``GetMetricData`` call. A queue without a
    datapoint in the lookback (inactive, or nothing publishes the metric) is left out."""
    return metric_figures(cloudwatch, queue_urls, {}, now=now, lookback_seconds=lookback_seconds).ages


@dataclass(frozen=True)
class Figures:
    """What one ``GetMetricData`` call gives ``status``."""

    #: ``{key: seconds}``: see :func:`oldest_ages`.
    ages: dict[str, float]
    #: ``{key: throttles}`` of each function asked about, over the last :data:`THROTTLE_LOOKBACK_SECONDS`
    #: (0 when CloudWatch holds no datapoint: Lambda publishes none while nothing is throttled).
    throttles: dict[str, float]


def metric_figures(cloudwatch: Any, queue_urls: Mapping[str, str], function_names: Mapping[str, str], *,
                   now: datetime | None = None, lookback_seconds: int = AGE_LOOKBACK_SECONDS) -> Figures:
    """The oldest age of each queue of ``queue_urls`` and the recent throttles of each function of
    ``function_names`` (both ``{key: url or name}``), in one ``GetMetricData`` call (more only past
    CloudWatch's 500 queries, or when its answer is paged)."""
    if not queue_urls and not function_names:
        return Figures({}, {})
    now = now or datetime.now(timezone.utc)
    queries: list[dict[str, Any]] = []
    keys: dict[str, tuple[str, str]] = {}  # query id -> (figure, key)
    for index, key in enumerate(queue_urls):
        keys[f"q{index}"] = ("age", key)
        queries.append({"Id": f"q{index}", "MetricStat": {
            "Metric": {"Namespace": SQS_NAMESPACE, "MetricName": AGE_OF_OLDEST_MESSAGE,
                       "Dimensions": [{"Name": SQS_QUEUE_DIMENSION, "Value": queue_name(queue_urls[key])}]},
            "Period": AGE_PERIOD_SECONDS, "Stat": "Maximum"}})
    for index, key in enumerate(function_names):
        keys[f"f{index}"] = ("throttles", key)
        queries.append({"Id": f"f{index}", "MetricStat": {
            "Metric": {"Namespace": LAMBDA_NAMESPACE, "MetricName": THROTTLES,
                       "Dimensions": [{"Name": LAMBDA_FUNCTION_DIMENSION, "Value": function_names[key]}]},
            "Period": AGE_PERIOD_SECONDS, "Stat": "Sum"}})
    ages: dict[str, float] = {}
    throttles: dict[str, float] = dict.fromkeys(function_names, 0.0)
    since = now - timedelta(seconds=THROTTLE_LOOKBACK_SECONDS)
    start = now - timedelta(seconds=max(lookback_seconds, THROTTLE_LOOKBACK_SECONDS))
    token = None
    while True:  # 1 call for up to 500 queries (CloudWatch's limit); pages only when results are long
        request: dict[str, Any] = {"MetricDataQueries": queries, "StartTime": start,
                                   "EndTime": now + timedelta(seconds=AGE_PERIOD_SECONDS),  # the current minute too
                                   "ScanBy": "TimestampDescending"}
        if token:
            request["NextToken"] = token
        response = cloudwatch.get_metric_data(**request)
        for result in response.get("MetricDataResults", []):
            figure, key = keys[result["Id"]]
            points = list(zip(result.get("Timestamps", []), result.get("Values", []), strict=True))
            if figure == "throttles":  # a page holds some of the datapoints: add them all up
                throttles[key] += sum(value for stamp, value in points if stamp >= since)
            elif points and key not in ages:
                ages[key] = float(max(points)[1])  # the latest, whatever order is returned
        token = response.get("NextToken")
        if not token:
            return Figures(ages, throttles)


def alarm_states(cloudwatch: Any, stage: str) -> dict[str, str]:
    """``{alarm name: state}`` of the stage's alarms (found by the name prefix the stack uses)."""
    states: dict[str, str] = {}
    for page in cloudwatch.get_paginator("describe_alarms").paginate(AlarmNamePrefix=Alarms.prefix(stage)):
        states.update({alarm["AlarmName"]: alarm["StateValue"] for alarm in page.get("MetricAlarms", [])})
    return states


def tier_alarms(states: Mapping[str, str], stage: str, tier: str) -> dict[str, str]:
    """``{alarm kind: state}`` of one tier's alarms among ``states``."""
    return {kind: states[name] for kind in Alarms.ALL_KINDS if (name := Alarms.name(stage, tier, kind)) in states}


def alarm_summary(states: Mapping[str, str]) -> str:
    """One cell (rich markup) for ``{kind: state}``: the kinds in ALARM, else how many are OK / without data."""
    if not states:
        return "–"
    firing = [kind for kind, state in states.items() if state == "ALARM"]
    if firing:
        return f"[bold red]ALARM: {', '.join(firing)}[/]"
    ok = sum(state == "OK" for state in states.values())
    no_data = len(states) - ok
    parts = ([f"[green]{ok} OK[/]"] if ok else []) + ([f"{no_data} no data"] if no_data else [])
    return ", ".join(parts)


def format_duration(seconds: float | None) -> str:
    """``3725`` -> ``1h 2m``; ``None`` -> ``–``."""
    if seconds is None:
        return "–"
    seconds = int(seconds)
    for unit, size, smaller, smaller_size in (("d", 86400, "h", 3600), ("h", 3600, "m", 60), ("m", 60, "s", 1)):
        if seconds >= size:
            rest = (seconds % size) // smaller_size
            return f"{seconds // size}{unit} {rest}{smaller}" if rest else f"{seconds // size}{unit}"
    return f"{seconds}s"
