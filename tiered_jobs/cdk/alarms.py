"""The alarms: six per tier (what each watches, its threshold and what to do), all paging the alarm topic.

The metrics come from ``TierMetrics``; this module only decides which of them page, from which
value, and with which words. Every alarm of the stack is made by :func:`page_on`, so each one
notifies the topic on ALARM and on OK, and treats missing data as "not breaching".
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_sns as sns
from constructs import Construct

from tiered_jobs.contract.names import Alarms

from .metrics import TierMetrics


@dataclass(frozen=True)
class AlarmSpec:
    """Page when ``metric`` is above ``threshold`` for one period; ``description`` says what to do."""

    metric: cloudwatch.Metric | cloudwatch.MathExpression
    threshold: float
    description: str


def tier_alarm_specs(metrics: TierMetrics) -> dict[str, AlarmSpec]:
    """The six alarms of a tier (``Alarms.KINDS``) and their thresholds from the tier's settings."""
    tier, name = metrics.tier, metrics.name
    return {
        Alarms.DLQ_DEPTH: AlarmSpec(
            metrics.dlq_depth(),
            tier.dlq_alarm_threshold,
            f"The {name} DLQ holds more than {tier.dlq_alarm_threshold} letter(s), visible or in flight: "
            f"inspect, then replay or discard.",
        ),
        Alarms.OLDEST_MESSAGE_AGE: AlarmSpec(
            metrics.oldest_message_age(),
            tier.oldest_message_age_alarm_seconds,
            f"The oldest {name} job waits longer than {tier.oldest_message_age_alarm_seconds} s.",
        ),
        Alarms.FAILURE_RATE: AlarmSpec(
            metrics.failure_rate(),
            tier.failure_rate_alarm_percent,
            f"More than {tier.failure_rate_alarm_percent:g} % of {name} jobs failed for good (dead-lettered) "
            f"over 5 minutes, with at least {tier.failure_rate_min_jobs} jobs finished; retries never count.",
        ),
        Alarms.DURATION: AlarmSpec(
            metrics.duration(),
            tier.duration_alarm_threshold_ms,
            f"The {name} consumer's p99 duration is above {tier.duration_alarm_percent_of_timeout:g} % "
            f"of its {tier.timeout_seconds} s timeout.",
        ),
        Alarms.ERRORS: AlarmSpec(
            metrics.errors(),
            0,
            f"The {name} consumer crashed or timed out (a whole batch returns to the queue).",
        ),
        Alarms.THROTTLES: AlarmSpec(
            metrics.throttles(),
            0,
            f"The {name} consumer is throttled: raise reserved concurrency or lower max_concurrency.",
        ),
    }


def page_on(scope: Construct, construct_id: str, spec: AlarmSpec, *, alarm_name: str,
            topic: sns.ITopic) -> cloudwatch.Alarm:
    """One alarm that notifies ``topic`` when it fires and when it recovers."""
    alarm = spec.metric.create_alarm(
        scope,
        construct_id,
        alarm_name=alarm_name,
        alarm_description=spec.description,
        threshold=spec.threshold,
        comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluation_periods=1,
        treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
    )
    action = cw_actions.SnsAction(topic)
    alarm.add_alarm_action(action)
    alarm.add_ok_action(action)
    return alarm


def tier_alarms(scope: Construct, metrics: TierMetrics, topic: sns.ITopic) -> dict[str, cloudwatch.Alarm]:
    """The tier's alarms, as children of ``scope`` (the tier), keyed by kind."""
    return {
        kind: page_on(scope, f"Alarm-{kind}", spec, alarm_name=Alarms.name(metrics.stage, metrics.name, kind),
                      topic=topic)
        for kind, spec in tier_alarm_specs(metrics).items()
    }
