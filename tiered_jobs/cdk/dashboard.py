"""One CloudWatch dashboard: a row per tier (its alarms' states, backlog, DLQ, job outcomes, duration) and the
tier's busiest job types.

Every graphed metric comes from the tier's ``TierMetrics``, the same the alarms watch.

**Per job type.** The consumer's EMF documents carry a second dimension set, ``[Stage, Tier, JobType]``
(``runtime/metrics.py``): one set of three out of EMF's 30 dimensions, and bounded cardinality, since a
type the registry does not know is counted as ``unregistered`` (or ``invalid``), never under what a
publisher wrote. The job types are not known at synthesis, so each tier's per-type widgets are queries:
Metrics Insights (``GROUP BY JobType ORDER BY SUM() DESC LIMIT`` :data:`TOP_JOB_TYPES`) for the counters,
and a ``SEARCH`` sorted to the same number for the duration percentiles, which Metrics Insights cannot
compute. CloudWatch's limits hold with room to spare: 500 widgets per dashboard (this one has
``tiers × 11``, plus one per rate-limited tier and one per further 100 alarms of a tier), 500 metrics
per widget and 2 500 per dashboard (the searches count every type of their tier they read, the
queries at most their limit each).

**Alarms.** Each tier's alarm states head its row, in widgets of at most :data:`MAX_ALARMS_PER_WIDGET`:
an alarm status widget takes 1 to 100 alarm ARNs (CloudWatch's dashboard body structure), and one
widget of every alarm of every tier would be refused by ``PutDashboard`` past 100, at about a dozen
tiers.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import aws_cloudwatch as cloudwatch
from constructs import Construct

from tiered_jobs.contract.names import Metrics, dashboard_name

from .metrics import ONE_MINUTE, TierMetrics
from .tier import Tier

#: Job outcomes graphed per tier, in the order of a job's life (``JobsFailed``: jobs failed for good).
JOB_METRICS = (
    Metrics.PROCESSED,
    Metrics.SUCCEEDED,
    Metrics.FAILED,
    Metrics.DEAD_LETTERED,
    Metrics.DUPLICATE,
    Metrics.RATE_LIMITED,
    # Ended unrun, archived (their deadline passed, or they were cancelled): never failures, so no alarm.
    Metrics.EXPIRED,
    Metrics.CANCELLED,
    # Held for a newer consumer, or dead-lettered past the bound (docs/upgrading.md): a rollback shows here.
    Metrics.TOO_NEW,
)
#: Retries are expected (a transient error, then success): their own widget, and no alarm.
RETRY_METRICS = (Metrics.RETRIED,)
#: The job types each tier's per-type widgets show: the busiest by each counter, the slowest by duration.
TOP_JOB_TYPES = 10
#: Per job type: (the widget's words, the counter), completed, failed for good, retried.
JOB_TYPE_COUNTERS = (
    ("completed", Metrics.SUCCEEDED),
    ("failed for good", Metrics.FAILED),
    ("retried", Metrics.RETRIED),
)
#: Per job type: the duration percentiles graphed.
JOB_TYPE_PERCENTILES = ("p50", "p99")
#: The most alarms one alarm status widget shows (its ``alarms``: 1 to 100 ARNs).
MAX_ALARMS_PER_WIDGET = 100


__all__ = [
    "JOB_METRICS",
    "MAX_ALARMS_PER_WIDGET",
    "RETRY_METRICS",
    "TOP_JOB_TYPES",
    "Dashboard",
    "alarm_widgets",
    "dashboard_name",
]


class Dashboard(Construct):
    """The stage's dashboard: per tier, its alarms' states, its graphs and its busiest job types."""

    def __init__(self, scope: Construct, construct_id: str, *, stage: str, tiers: Sequence[Tier]) -> None:
        super().__init__(scope, construct_id)
        self.dashboard_name = dashboard_name(stage)
        self.dashboard = cloudwatch.Dashboard(self, "Dashboard", dashboard_name=self.dashboard_name)
        for tier in tiers:
            metrics = tier.metrics
            self.dashboard.add_widgets(*alarm_widgets(tier.name, list(tier.alarms.values())))
            self.dashboard.add_widgets(
                cloudwatch.GraphWidget(
                    title=f"{tier.name}: queue depth; oldest message and job age (s)",
                    width=5,
                    left=[metrics.queue_depth()],
                    right=[metrics.oldest_message_age(), metrics.job_age()],
                ),
                cloudwatch.GraphWidget(
                    title=f"{tier.name}: DLQ depth (visible + in flight)",
                    width=4,
                    left=[metrics.dlq_depth()],
                ),
                cloudwatch.GraphWidget(
                    title=f"{tier.name}: jobs, and failure rate (%)",
                    width=5,
                    left=[metrics.job(name, period=ONE_MINUTE) for name in JOB_METRICS],
                    right=[metrics.failure_rate()],
                ),
                cloudwatch.GraphWidget(
                    title=f"{tier.name}: retries (expected; never an alarm)",
                    width=5,
                    left=[metrics.job(name, period=ONE_MINUTE) for name in RETRY_METRICS],
                ),
                cloudwatch.GraphWidget(
                    title=f"{tier.name}: consumer duration (ms)",
                    width=5,
                    left=[metrics.duration(statistic, ONE_MINUTE) for statistic in ("p50", "p99", "Maximum")],
                ),
            )
            if tier.settings.limits is not None:
                self.dashboard.add_widgets(_rate_widget(metrics))
            self.dashboard.add_widgets(*_job_type_counters(metrics))
            self.dashboard.add_widgets(*_job_type_durations(metrics))


def alarm_widgets(tier: str, alarms: Sequence[cloudwatch.IAlarm]) -> list[cloudwatch.AlarmStatusWidget]:
    """The states of ``tier``'s alarms, :data:`MAX_ALARMS_PER_WIDGET` a widget, numbered when more than one."""
    parts = [alarms[start : start + MAX_ALARMS_PER_WIDGET] for start in range(0, len(alarms), MAX_ALARMS_PER_WIDGET)]
    return [
        cloudwatch.AlarmStatusWidget(
            title=f"{tier}: alarms" + (f" ({number} of {len(parts)})" if len(parts) > 1 else ""),
            width=24,
            alarms=list(part),
        )
        for number, part in enumerate(parts, start=1)
    ]


def _job_type_counters(metrics: TierMetrics) -> list[cloudwatch.GraphWidget]:
    """Completed, failed and retried jobs per minute of the tier's busiest job types."""
    return [
        cloudwatch.GraphWidget(
            title=f"{metrics.name} by job type: {words} per minute (top {TOP_JOB_TYPES})",
            width=24 // len(JOB_TYPE_COUNTERS),
            left=[metrics.top_job_types(name, limit=TOP_JOB_TYPES)],
        )
        for words, name in JOB_TYPE_COUNTERS
    ]


def _job_type_durations(metrics: TierMetrics) -> list[cloudwatch.GraphWidget]:
    """Each percentile of a job's duration (ms) for the tier's slowest job types."""
    return [
        cloudwatch.GraphWidget(
            title=f"{metrics.name} by job type: duration {statistic} (ms) (slowest {TOP_JOB_TYPES})",
            width=24 // len(JOB_TYPE_PERCENTILES),
            left=[metrics.job_type_durations(statistic, limit=TOP_JOB_TYPES)],
        )
        for statistic in JOB_TYPE_PERCENTILES
    ]


def _rate_widget(metrics: TierMetrics) -> cloudwatch.GraphWidget:
    """Completions per second against the tier-wide limit, and jobs held back per minute."""
    limits = metrics.tier.limits
    assert limits is not None
    annotations = (
        [cloudwatch.HorizontalAnnotation(value=limits.tier.per_second, label="tier rate limit")]
        if limits.tier is not None
        else []
    )
    return cloudwatch.GraphWidget(
        title=f"{metrics.name}: rate limit {limits.describe()}",
        width=24,
        left=[metrics.completed_per_second()],
        left_annotations=annotations,
        right=[metrics.job(Metrics.RATE_LIMITED, period=ONE_MINUTE), metrics.rate_limiter_errors()],
    )
