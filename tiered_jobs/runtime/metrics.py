"""Job metrics as CloudWatch EMF, written by Powertools' ``EphemeralMetrics``, one flush per invocation.

Each job type in a batch gets one EMF document with two dimension sets:
``[Stage, Tier, service]`` (what the stack's alarms and dashboard read, summing over job types)
and ``[Stage, Tier, JobType]`` (the breakdown). Values are lists, one per record; past EMF's 100 values
of a metric Powertools prints one more document. Powertools' ``POWERTOOLS_METRICS_DISABLED`` rule
holds.

``JobsFailed`` counts jobs that failed for good (dead-lettered, or kept because the DLQ refused
the final copy); a retried attempt counts only ``JobsRetried``; a record the time budget left
unstarted counts only ``JobsDeferred`` (it is not processed), one the rate limit held only
``JobsRateLimited``. ``JobAge`` has one value per record whose fate was decided (run, held or
deferred): how long its job has waited since it entered the queue.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

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
#: EMF's limit of values per metric in one document (Powertools prints another document past it).
MAX_VALUES = 100


class BatchMetrics:
    """One batch's metrics per job type, flushed as one EMF document."""

    def __init__(self, stage: str, tier: str, clock: Callable[[], float] | None = None):
        """``clock``: the documents' timestamp (epoch seconds; ``None``: Powertools' own, the time of the flush)."""
        self.stage = stage
        self.tier = tier
        self.clock = clock
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
        """Print each job type's document (Powertools checks each value as it adds it), then forget them."""
        if self._counts:
            from aws_lambda_powertools.metrics import EphemeralMetrics

            for job_type, counts in self._counts.items():
                emf = EphemeralMetrics(namespace=M.NAMESPACE, service=M.SERVICE)
                if self.clock is not None:
                    emf.set_timestamp(int(self.clock() * 1000))
                emf.add_dimension(name=M.DIM_STAGE, value=self.stage)
                emf.add_dimension(name=M.DIM_TIER, value=self.tier)
                emf.add_dimensions(**{M.DIM_STAGE: self.stage, M.DIM_TIER: self.tier, M.DIM_JOB_TYPE: job_type})
                for name in COUNTERS:
                    emf.add_metric(name=name, unit="Count", value=float(counts.get(name, 0)))
                for name, found in (
                    (M.DURATION, self._durations.get(job_type)),
                    (M.RETRY_DELAY, self._retry_delays.get(job_type)),
                    (M.JOB_AGE, self._ages.get(job_type)),
                ):
                    for value in found or ():
                        emf.add_metric(name=name, unit=UNITS[name], value=float(value))
                emf.flush_metrics()
        self._counts.clear()
        self._durations.clear()
        self._retry_delays.clear()
        self._ages.clear()
