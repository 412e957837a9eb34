"""Job metrics as CloudWatch EMF (through Powertools), one flush per invocation.

Each job type in a batch gets one EMF document with two dimension sets:
``[service, Stage, Tier]`` (what the stack's alarms and dashboard read, summing over job types)
and ``[Stage, Tier, JobType]`` (the breakdown). Values are lists, one per record.
"""

from __future__ import annotations

from collections import defaultdict

from tiered_jobs.contract.names import Metrics as M

#: Outcome -> the counters it increments (every record also counts as processed).
OUTCOME_METRICS: dict[str, tuple[str, ...]] = {
    "succeeded": (M.SUCCEEDED,),
    "duplicate": (M.SUCCEEDED, M.DUPLICATE),
    "retried": (M.FAILED, M.RETRIED),
    "dead_lettered": (M.FAILED, M.DEAD_LETTERED),
    # The DLQ refused the copy: the message stays and comes back; a failure all the same.
    "kept": (M.FAILED,),
    # Held by the rate limit and re-sent with a delay: not an attempt, not a failure.
    "rate_limited": (M.RATE_LIMITED,),
}
#: Outcomes that are not attempts: they count neither as processed nor in the duration.
NOT_ATTEMPTS = frozenset({"rate_limited"})


class BatchMetrics:
    def __init__(self, stage: str, tier: str):
        self.stage = stage
        self.tier = tier
        self._counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        self._durations: dict[str, list[float]] = defaultdict(list)

    def record(self, job_type: str, outcome: str, duration_ms: float) -> None:
        counts = self._counts[job_type]
        for name in OUTCOME_METRICS[outcome]:
            counts[name] += 1
        if outcome in NOT_ATTEMPTS:
            return
        counts[M.PROCESSED] += 1
        self._durations[job_type].append(round(duration_ms, 3))

    def totals(self) -> dict[str, int]:
        total: dict[str, int] = defaultdict(int)
        for counts in self._counts.values():
            for name, value in counts.items():
                total[name] += value
        return dict(total)

    def flush(self) -> None:
        if not self._counts:
            return
        from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit

        for job_type, counts in self._counts.items():
            emf = EphemeralMetrics(namespace=M.NAMESPACE, service=M.SERVICE)
            emf.add_dimension(name=M.DIM_STAGE, value=self.stage)
            emf.add_dimension(name=M.DIM_TIER, value=self.tier)
            emf.add_dimensions(**{M.DIM_STAGE: self.stage, M.DIM_TIER: self.tier, M.DIM_JOB_TYPE: job_type})
            for name in (M.PROCESSED, M.SUCCEEDED, M.FAILED, M.RETRIED, M.DEAD_LETTERED, M.DUPLICATE, M.RATE_LIMITED):
                emf.add_metric(name=name, unit=MetricUnit.Count, value=counts.get(name, 0))
            for value in self._durations[job_type]:
                emf.add_metric(name=M.DURATION, unit=MetricUnit.Milliseconds, value=value)
            emf.flush_metrics()
        self._counts.clear()
        self._durations.clear()
