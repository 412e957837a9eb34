"""The metrics AWS would produce, produced locally: EMF from the functions' logs, Lambda's own metrics.

On AWS, CloudWatch Logs turns every EMF line a function prints into metrics, and Lambda publishes
``Invocations`` / ``Errors`` / ``Duration`` / ``Throttles`` per function. Locally the worker
processes' log streams come through :meth:`MetricStore.log_line` (EMF lines become datapoints) and
the event-source runtime reports each invocation to :meth:`MetricStore.invocation`. Datapoints are
kept here for the alarm evaluator (moto's CloudWatch has no percentiles and no metric math) and
copied to moto's CloudWatch with ``PutMetricData`` so ``aws cloudwatch list-metrics`` shows them.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from emulator.esm import FunctionConfig, Invocation

#: Datapoints older than this are dropped (alarm periods here are at most 5 minutes).
RETENTION_SECONDS = 900
LAMBDA_NAMESPACE = "AWS/Lambda"

Dimensions = frozenset[tuple[str, str]]


@dataclass(frozen=True)
class Datapoint:
    namespace: str
    name: str
    dimensions: Dimensions
    value: float
    timestamp: float
    unit: str = "None"


def emf_datapoints(line: str) -> list[Datapoint]:
    """The datapoints of one EMF log line (``[]`` for any other line)."""
    if '"_aws"' not in line:
        return []
    try:
        document = json.loads(line)
        meta = document["_aws"]
        timestamp = meta["Timestamp"] / 1000
        points = []
        for directive in meta["CloudWatchMetrics"]:
            for dimension_set in directive["Dimensions"]:
                dimensions = frozenset((name, str(document[name])) for name in dimension_set)
                for metric in directive["Metrics"]:
                    values = document[metric["Name"]]
                    for value in values if isinstance(values, list) else [values]:
                        points.append(
                            Datapoint(
                                directive["Namespace"],
                                metric["Name"],
                                dimensions,
                                float(value),
                                timestamp,
                                metric.get("Unit", "None"),
                            )
                        )
        return points
    except (ValueError, KeyError, TypeError):
        return []  # not EMF after all: CloudWatch ignores it too


def statistic(values: list[float], stat: str) -> float | None:
    """A CloudWatch statistic (``Sum``, ``Average``, ``Minimum``, ``Maximum``, ``SampleCount``, ``pNN``)."""
    if not values:
        return None
    if stat == "Sum":
        return sum(values)
    if stat == "Average":
        return sum(values) / len(values)
    if stat == "Minimum":
        return min(values)
    if stat == "Maximum":
        return max(values)
    if stat == "SampleCount":
        return float(len(values))
    if stat.startswith("p"):
        ordered = sorted(values)
        rank = max(1, math.ceil(float(stat[1:]) / 100 * len(ordered)))
        return ordered[rank - 1]
    raise ValueError(f"statistic {stat!r} is not evaluated locally")


class MetricStore:
    """Recent datapoints, queryable like ``GetMetricStatistics`` over the last period."""

    def __init__(self, cloudwatch: Any | None = None, now: Callable[[], float] = time.time):
        self._points: deque[Datapoint] = deque()
        self._lock = threading.Lock()
        self._cloudwatch = cloudwatch
        self._now = now

    def put(self, points: Iterable[Datapoint]) -> None:
        points = list(points)
        if not points:
            return
        with self._lock:
            self._points.extend(points)
            horizon = self._now() - RETENTION_SECONDS
            while self._points and self._points[0].timestamp < horizon:
                self._points.popleft()
        if self._cloudwatch is not None:
            self._copy_to_cloudwatch(points)

    def _copy_to_cloudwatch(self, points: list[Datapoint]) -> None:
        cloudwatch = self._cloudwatch
        assert cloudwatch is not None  # only called with a CloudWatch client
        by_namespace: dict[str, list[dict[str, Any]]] = {}
        for point in points:
            by_namespace.setdefault(point.namespace, []).append(
                {
                    "MetricName": point.name,
                    "Value": point.value,
                    "Unit": point.unit,
                    "Timestamp": point.timestamp,
                    "Dimensions": [{"Name": n, "Value": v} for n, v in sorted(point.dimensions)],
                }
            )
        for namespace, data in by_namespace.items():
            for start in range(0, len(data), 1000):
                try:
                    cloudwatch.put_metric_data(Namespace=namespace, MetricData=data[start : start + 1000])
                except Exception:  # noqa: BLE001 - a copy for browsing; the local store stays the source
                    return

    def values(
        self,
        namespace: str,
        name: str,
        dimensions: Mapping[str, str],
        period_seconds: float,
        ending_seconds_ago: float = 0.0,
    ) -> list[float]:
        """The datapoints of the period that ended ``ending_seconds_ago`` (0: the one ending now)."""
        wanted = frozenset(dimensions.items())
        until = self._now() - ending_seconds_ago
        since = until - period_seconds
        with self._lock:
            return [
                p.value
                for p in self._points
                if p.name == name
                and p.namespace == namespace
                and p.dimensions == wanted
                and since <= p.timestamp <= until
            ]

    def log_line(self, function_name: str, line: str) -> None:
        """A line of a function's log stream: EMF becomes datapoints (what CloudWatch Logs does)."""
        self.put(emf_datapoints(line))

    def invocation(self, function: FunctionConfig, invocation: Invocation) -> None:
        """Lambda's own per-function metrics for one invocation."""
        dimensions = frozenset({("FunctionName", function.name)})
        now = self._now()
        points = [
            Datapoint(LAMBDA_NAMESPACE, "Invocations", dimensions, 1.0, now, "Count"),
            Datapoint(LAMBDA_NAMESPACE, "Errors", dimensions, float(invocation.error is not None), now, "Count"),
            Datapoint(LAMBDA_NAMESPACE, "Duration", dimensions, invocation.duration_ms, now, "Milliseconds"),
        ]
        self.put(points)
