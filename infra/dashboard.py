"""One CloudWatch dashboard: a row per tier (backlog, DLQ, job outcomes, duration) and all alarm states."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from constructs import Construct

from tiered_jobs.contract.names import PROJECT, Metrics

from .tier import Tier

#: Job outcomes graphed per tier, in the order of a job's life (``JobsFailed``: jobs failed for good).
JOB_METRICS = (Metrics.PROCESSED, Metrics.SUCCEEDED, Metrics.FAILED, Metrics.DEAD_LETTERED, Metrics.DUPLICATE,
               Metrics.RATE_LIMITED)
#: Retries are expected (a transient error, then success): their own widget, and no alarm.
RETRY_METRICS = (Metrics.RETRIED,)


def dashboard_name(stage: str) -> str:
    return f"{PROJECT}-{stage}"


class Dashboard(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, stage: str, tiers: Sequence[Tier]) -> None:
        super().__init__(scope, construct_id)
        self.dashboard_name = dashboard_name(stage)
        self.dashboard = cloudwatch.Dashboard(self, "Dashboard", dashboard_name=self.dashboard_name)
        minute = Duration.minutes(1)
        self.dashboard.add_widgets(
            cloudwatch.AlarmStatusWidget(
                title="Alarms", width=24, alarms=[alarm for tier in tiers for alarm in tier.alarms.values()]
            )
        )
        for tier in tiers:
            self.dashboard.add_widgets(
                cloudwatch.GraphWidget(
                    title=f"{tier.name}: queue depth and oldest message (s)",
                    width=5,
                    left=[tier.queue.metric_approximate_number_of_messages_visible(statistic="Maximum", period=minute)],
                    right=[tier.queue.metric_approximate_age_of_oldest_message(statistic="Maximum", period=minute)],
                ),
                cloudwatch.GraphWidget(
                    title=f"{tier.name}: DLQ depth (visible + in flight)",
                    width=4,
                    left=[tier.dlq_depth()],
                ),
                cloudwatch.GraphWidget(
                    title=f"{tier.name}: jobs, and failure rate (%)",
                    width=5,
                    left=[tier.job_metric(stage, name, period=minute) for name in JOB_METRICS],
                    right=[tier.failure_rate(stage)],
                ),
                cloudwatch.GraphWidget(
                    title=f"{tier.name}: retries (expected; never an alarm)",
                    width=5,
                    left=[tier.job_metric(stage, name, period=minute) for name in RETRY_METRICS],
                ),
                cloudwatch.GraphWidget(
                    title=f"{tier.name}: consumer duration (ms)",
                    width=5,
                    left=[tier.consumer.metric_duration(statistic=s, period=minute) for s in ("p50", "p99", "Maximum")],
                ),
            )
            if tier.settings.limits is not None:
                self.dashboard.add_widgets(_rate_widget(stage, tier))


def _rate_widget(stage: str, tier: Tier) -> cloudwatch.GraphWidget:
    """Completions per second against the tier-wide limit, and jobs held back per minute."""
    limits = tier.settings.limits
    assert limits is not None
    minute = Duration.minutes(1)
    done = cloudwatch.MathExpression(
        expression="done / 60", using_metrics={"done": tier.job_metric(stage, Metrics.SUCCEEDED, period=minute)},
        label="completed per second", period=minute,
    )
    annotations = [cloudwatch.HorizontalAnnotation(value=limits.tier.per_second, label="tier rate limit")] \
        if limits.tier is not None else []
    return cloudwatch.GraphWidget(
        title=f"{tier.name}: rate limit {limits.describe()}",
        width=24,
        left=[done],
        left_annotations=annotations,
        right=[tier.job_metric(stage, Metrics.RATE_LIMITED, period=minute)],
    )
