"""Job metrics as CloudWatch EMF, one flush per invocation.

Each job type in a batch gets one EMF document with two dimension sets:
``[Stage, Tier, service]`` (what the stack's alarms and dashboard read, summing over job types)
and ``[Stage, Tier, JobType]`` (the breakdown). Values are lists, one per record.

The document is the one Powertools' ``EphemeralMetrics`` prints for the same calls (its layout, its
units, its ``POWERTOOLS_METRICS_DISABLED`` rule; past EMF's 100 values of a metric, one document per
100, where Powertools flushes when a metric reaches 100), written here in one pass: Powertools
checks each value in its own ``add_metric`` call, and a batch of 10 jobs makes 33 of them, about 40
µs of every job's CPU on the warm path; our names, units and values are fixed by this module, so
there is nothing left to check per value.

``JobsFailed`` counts jobs that failed for good (dead-lettered, or kept because the DLQ refused
the final copy); a retried attempt counts only ``JobsRetried``; a record the time budget left
unstarted counts only ``JobsDeferred`` (it is not processed), one the rate limit held only
``JobsRateLimited``. ``JobAge`` has one value per record whose fate was decided (run, held or
deferred): how long its job has waited since it entered the queue.
"""

from __future__ import annotations

import functools
import json
import time
from collections import defaultdict
from typing import Any

from tiered_jobs.contract.names import Metrics as M

from .outcomes import Outcome

#: Outcome -> the counters it increments (each outcome carries its own: :mod:`~tiered_jobs.runtime.outcomes`).
OUTCOME_METRICS: dict[str, tuple[str, ...]] = {outcome.value: outcome.counters for outcome in Outcome}
#: Every counter, in the order of the EMF document (each is written, 0 included).
COUNTERS: tuple[str, ...] = (
    M.PROCESSED,
    M.SUCCEEDED,
    M.FAILED,
    M.RETRIED,
    M.DEAD_LETTERED,
    M.DUPLICATE,
    M.DEFERRED,
    M.RATE_LIMITED,
    M.RATE_LIMITER_ERRORS,
    M.REQUEUE_FAILED,
    M.EXPIRED,
    M.CANCELLED,
    M.TOO_NEW,
)


#: The metrics that are not counts, by unit (CloudWatch's unit names, as Powertools' ``MetricUnit`` spells them).
UNITS: dict[str, str] = {M.DURATION: "Milliseconds", M.RETRY_DELAY: "Seconds", M.JOB_AGE: "Seconds"}
#: EMF's limit of values per metric in one document.
MAX_VALUES = 100


class BatchMetrics:
    """One batch's metrics per job type, flushed as one EMF document."""

    def __init__(self, stage: str, tier: str):
        self.stage = stage
        self.tier = tier
        self._counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        self._durations: dict[str, list[float]] = defaultdict(list)
        self._retry_delays: dict[str, list[float]] = defaultdict(list)
        self._ages: dict[str, list[float]] = defaultdict(list)

    def record(
        self, job_type: str, outcome: str, duration_ms: float | None = None, retry_delay_seconds: float | None = None
    ) -> None:
        counts = self._counts[job_type]
        for name in OUTCOME_METRICS[outcome]:
            counts[name] += 1
        if duration_ms is not None:
            self._durations[job_type].append(round(duration_ms, 3))
        if retry_delay_seconds is not None:
            self._retry_delays[job_type].append(retry_delay_seconds)

    def age(self, job_type: str, seconds: float) -> None:
        """One record's ``JobAge``: how long its job had waited when its fate was decided."""
        self._ages[job_type].append(round(seconds, 3))

    def flush(self) -> None:
        if not self._counts:
            return
        from aws_lambda_powertools.metrics.functions import is_metrics_disabled

        if not is_metrics_disabled():
            timestamp = int(time.time() * 1000)
            for job_type, counts in self._counts.items():
                values: dict[str, list[float]] = {name: [float(counts.get(name, 0))] for name in COUNTERS}
                for name, found in (
                    (M.DURATION, self._durations.get(job_type)),
                    (M.RETRY_DELAY, self._retry_delays.get(job_type)),
                    (M.JOB_AGE, self._ages.get(job_type)),
                ):
                    if found:
                        values[name] = [float(value) for value in found]
                for line in self._documents(job_type, values, timestamp):
                    print(line)
        self._counts.clear()
        self._durations.clear()
        self._retry_delays.clear()
        self._ages.clear()

    def _documents(self, job_type: str, values: dict[str, list[float]], timestamp: int) -> list[str]:
        """One document, or one per ``MAX_VALUES`` values of the longest list (a batch window's thousands
        of records): EMF takes at most 100 values per metric in a document."""
        longest = max(len(found) for found in values.values())
        return [
            self._document(
                job_type,
                {name: found[start : start + MAX_VALUES] for name, found in values.items() if found[start:]},
                timestamp,
            )
            for start in range(0, longest, MAX_VALUES)
        ]

    def _document(self, job_type: str, values: dict[str, list[float]], timestamp: int) -> str:
        """The document as one JSON line: its declarations and dimensions (the same for every batch of a job
        type) are written once per container, and only the timestamp and the values are written per batch
        (json.dumps of the whole document took half the flush's CPU). Each value is a finite float (a count,
        a duration, an age, a delay), whose ``repr`` is the form JSON writes."""
        head = _head(self.stage, self.tier, job_type, tuple(values))
        written = ",".join(f'"{name}":[{",".join(map(repr, found))}]' for name, found in values.items())
        return f'{{"_aws":{{"Timestamp":{timestamp},{head},{written}}}'


@functools.lru_cache(maxsize=256)
def _head(stage: str, tier: str, job_type: str, names: tuple[str, ...]) -> str:
    """A document's text between its timestamp and its values: the metric declarations, ``}`` closing
    ``_aws``, and the dimensions' values (the names are this module's, JSON-safe as they are; the
    values go through json.dumps)."""
    declarations = {
        "CloudWatchMetrics": [
            {
                "Namespace": M.NAMESPACE,
                "Dimensions": [[M.DIM_STAGE, M.DIM_TIER, "service"], [M.DIM_STAGE, M.DIM_TIER, M.DIM_JOB_TYPE]],
                "Metrics": [{"Name": name, "Unit": UNITS.get(name, "Count")} for name in names],
            }
        ]
    }
    dimensions = {M.DIM_STAGE: stage, M.DIM_TIER: tier, "service": M.SERVICE, M.DIM_JOB_TYPE: job_type}
    return f"{_members(declarations)}}},{_members(dimensions)}"


def _members(mapping: dict[str, Any]) -> str:
    """A JSON object's members, without its braces."""
    return json.dumps(mapping, separators=(",", ":"))[1:-1]
