"""The alarms: seven per tier, one more on a rate-limited tier (what each watches, its threshold and what
to do), all paging the alarm topic.

A page must say, on a phone at 3 a.m., which tier, what fired and what to type first. CloudWatch sends
its own JSON to the topic, and the one field of it that is ours is the alarm's ``AlarmDescription``
(e-mail, an HTTPS endpoint and AWS Chatbot all show it), so every description has that shape: the
tier, what the alarm measures and when it fires, then ``First run: tiered-jobs --stage <stage> ...``, a
command of the CLI (:func:`first_command`; a test resolves each one against the CLI's own commands).

The metrics come from ``TierMetrics``; this module only decides which of them page, from which
value, and with which words. Every alarm of the stack is made by :func:`page_on`, so each one
notifies the topic on ALARM and on OK (but the circuit breaker's, whose closing page is not its OK),
and treats missing data as "not breaching".
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_sns as sns
from constructs import Construct

from tiered_jobs.contract.names import Alarms

from .metrics import TierMetrics

#: The rate limiter's alarm waits this many one-minute periods in a row: DynamoDB throttling that
#: botocore's retries did not absorb for a minute is a blip (its jobs were only held); for three, an outage.
LIMITER_ERROR_MINUTES = 3


def first_command(stage: str, *command: str) -> str:
    """The command an on-call runs first, for ``stage``: ``tiered-jobs --stage dev dlq inspect critical``."""
    return " ".join(("tiered-jobs", "--stage", stage, *command))


@dataclass(frozen=True)
class AlarmSpec:
    """Page when ``metric`` is above ``threshold`` for ``periods`` periods in a row; ``description`` says what
    fired, ``command`` (:func:`first_command`) what to run first."""

    metric: cloudwatch.Metric | cloudwatch.MathExpression
    threshold: float
    description: str
    command: str
    periods: int = 1

    @property
    def alarm_description(self) -> str:
        """What the page shows: what fired, then the first command."""
        return f"{self.description} First run: {self.command}"


def tier_alarm_specs(metrics: TierMetrics) -> dict[str, AlarmSpec]:
    """The alarms of a tier (``Alarms.KINDS``, and ``Alarms.RATE_LIMITER`` when it is rate-limited)
    and their thresholds from the tier's settings."""
    tier, name = metrics.tier, metrics.name
    status = first_command(metrics.stage, "status")
    inspect = first_command(metrics.stage, "dlq", "inspect", name)
    specs = {
        Alarms.DLQ_DEPTH: AlarmSpec(
            metrics.dlq_depth(),
            tier.dlq_alarm_threshold,
            f"The {name} DLQ holds more than {tier.dlq_alarm_threshold} letter(s), visible or in flight: "
            f"inspect, then replay or discard.",
            inspect,
        ),
        Alarms.OLDEST_MESSAGE_AGE: AlarmSpec(
            metrics.oldest_message_age(),
            tier.oldest_message_age_alarm_seconds,
            f"The oldest {name} job waits longer than {tier.oldest_message_age_alarm_seconds} s.",
            status,
        ),
        Alarms.FAILURE_RATE: AlarmSpec(
            metrics.failure_rate(),
            tier.failure_rate_alarm_percent,
            f"More than {tier.failure_rate_alarm_percent:g} % of {name} jobs failed for good (dead-lettered) "
            f"over 5 minutes, with at least {tier.failure_rate_min_jobs} jobs finished; retries never count.",
            inspect,
        ),
        Alarms.DURATION: AlarmSpec(
            metrics.duration(),
            tier.duration_alarm_threshold_ms,
            f"The {name} consumer's p99 duration is above {tier.duration_alarm_percent_of_timeout:g} % "
            f"of its {tier.timeout_seconds} s timeout.",
            status,
        ),
        Alarms.ERRORS: AlarmSpec(
            metrics.errors(),
            0,
            f"The {name} consumer crashed or timed out (a whole batch returns to the queue); its log says why.",
            status,
        ),
        Alarms.THROTTLES: AlarmSpec(
            metrics.throttles(),
            0,
            f"The {name} consumer is throttled: raise reserved concurrency or lower max_concurrency.",
            first_command(metrics.stage, "doctor"),
        ),
        Alarms.JOB_AGE: AlarmSpec(
            metrics.job_age(),
            tier.oldest_message_age_alarm_seconds,
            f"A {name} job waited longer than {tier.oldest_message_age_alarm_seconds} s before it ran or was "
            f"held again: a backlog (held jobs are new messages, so SQS's own age alarm cannot see it).",
            status,
        ),
    }
    if tier.limits is not None:
        specs[Alarms.RATE_LIMITER] = AlarmSpec(
            metrics.rate_limiter_errors(),
            0,
            f"The {name} rate limiter's table failed for {LIMITER_ERROR_MINUTES} minutes (throttling, an outage "
            f"or a missing permission): its jobs are held, not run. See the consumer's log for the error.",
            status,
            periods=LIMITER_ERROR_MINUTES,
        )
    return specs


def page_on(
    scope: Construct,
    construct_id: str,
    spec: AlarmSpec,
    *,
    alarm_name: str,
    topic: sns.ITopic,
    page_ok: bool = True,
) -> cloudwatch.Alarm:
    """One alarm that notifies ``topic`` when it fires and (unless ``page_ok`` is false) when it recovers."""
    alarm = spec.metric.create_alarm(
        scope,
        construct_id,
        alarm_name=alarm_name,
        alarm_description=spec.alarm_description,
        threshold=spec.threshold,
        comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluation_periods=spec.periods,
        treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
    )
    action = cw_actions.SnsAction(topic)
    alarm.add_alarm_action(action)
    if page_ok:
        alarm.add_ok_action(action)
    return alarm


def tier_alarms(
    scope: Construct, metrics: TierMetrics, topic: sns.ITopic, kinds: Collection[str] | None = None
) -> dict[str, cloudwatch.Alarm]:
    """The tier's alarms, as children of ``scope`` (the tier), keyed by kind; only ``kinds`` when given
    (the stage's profile, ``settings/profile.py``)."""
    return {
        kind: page_on(
            scope, f"Alarm-{kind}", spec, alarm_name=Alarms.name(metrics.stage, metrics.name, kind), topic=topic
        )
        for kind, spec in tier_alarm_specs(metrics).items()
        if kinds is None or kind in kinds
    }
