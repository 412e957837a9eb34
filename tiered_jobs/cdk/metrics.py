"""Every CloudWatch metric of a tier, made in one place: the alarms and the dashboard only pick them.

Like cdk-monitoring-constructs' metric factories: ``TierMetrics`` knows the dimensions each metric
is published with (the consumer's EMF job metrics, SQS's and Lambda's own), and the math
expressions built on them; it creates no alarm and no widget.
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs

from tiered_jobs.contract.names import Metrics

from .settings import TierSettings

ONE_MINUTE = Duration.minutes(1)
#: The window of the failure rate and of the duration alarm.
FIVE_MINUTES = Duration.minutes(5)


class TierMetrics:
    """The metrics of one tier: its jobs (EMF), its queue and DLQ (SQS), its consumer (Lambda)."""

    def __init__(
        self, *, stage: str, tier: TierSettings, queue: sqs.IQueue, dlq: sqs.IQueue, consumer: lambda_.IFunction
    ) -> None:
        self.stage = stage
        self.tier = tier
        self.name = tier.name
        self._queue, self._dlq, self._consumer = queue, dlq, consumer

    # -- the consumer's job metrics (EMF) --------------------------------------------------------

    def job(self, metric_name: str, *, statistic: str = "Sum", period: Duration = FIVE_MINUTES) -> cloudwatch.Metric:
        """One of the consumer's EMF job metrics for this tier (dimensions as Powertools writes them)."""
        return cloudwatch.Metric(
            namespace=Metrics.NAMESPACE,
            metric_name=metric_name,
            dimensions_map={
                Metrics.DIM_SERVICE: Metrics.SERVICE,
                Metrics.DIM_STAGE: self.stage,
                Metrics.DIM_TIER: self.name,
            },
            statistic=statistic,
            period=period,
        )

    def failure_rate(self) -> cloudwatch.MathExpression:
        """100 x jobs failed for good / jobs finished over 5 minutes; 0 below the tier's minimum volume.

        ``JobsFailed`` counts a job once, when it is dead-lettered (or kept because the DLQ refused
        it); a retried attempt only counts ``JobsRetried``. ``FILL`` turns a period without one of
        the two metrics into 0 (a period with only failures is 100 %, not "no data").
        """
        failed = self.job(Metrics.FAILED)
        jobs = cloudwatch.MathExpression(
            expression="FILL(succeeded, 0) + FILL(failed, 0)",
            using_metrics={"succeeded": self.job(Metrics.SUCCEEDED), "failed": failed},
            label=f"{self.name} jobs finished",
            period=FIVE_MINUTES,
        )
        return cloudwatch.MathExpression(
            expression=f"IF(jobs >= {self.tier.failure_rate_min_jobs}, 100 * FILL(failed, 0) / jobs, 0)",
            using_metrics={"jobs": jobs, "failed": failed},
            label=f"{self.name} failure rate (%)",
            period=FIVE_MINUTES,
        )

    def job_age(self) -> cloudwatch.Metric:
        """The longest a job of the tier had waited when the consumer took it up (``JobAge``, per minute).

        Unlike SQS's ``ApproximateAgeOfOldestMessage``, it survives the copies a rate-limited or
        time-budgeted tier sends: a held job's copy is a new message, whose SQS age starts at 0.
        """
        return self.job(Metrics.JOB_AGE, statistic="Maximum", period=ONE_MINUTE)

    # -- per job type (the EMF documents' second dimension set: Stage, Tier, JobType) ----------------

    def top_job_types(
        self, metric_name: str, *, limit: int, period: Duration = ONE_MINUTE
    ) -> cloudwatch.MathExpression:
        """A counter per job type for the ``limit`` busiest types of the tier: one Metrics Insights query.

        The types are not known at synthesis (an app's job folder registers them, and routes are globs),
        so the query finds them: ``GROUP BY JobType`` over the per-type dimension set, ``ORDER BY SUM()
        DESC LIMIT n`` keeps the busiest. Metrics Insights aggregates with AVG, COUNT, MAX, MIN and SUM
        only, which is all a counter needs; percentiles take :meth:`job_type_durations`.
        """
        dims = Metrics.DIM_STAGE, Metrics.DIM_TIER, Metrics.DIM_JOB_TYPE
        query = (
            f"SELECT SUM({metric_name}) FROM SCHEMA({Metrics.NAMESPACE}, {', '.join(dims)}) "
            f"WHERE {Metrics.DIM_STAGE} = '{self.stage}' AND {Metrics.DIM_TIER} = '{self.name}' "
            f"GROUP BY {Metrics.DIM_JOB_TYPE} ORDER BY SUM() DESC LIMIT {limit}"
        )
        # "${LABEL}": each series keeps its default label, its job type (CDK would label all with the query).
        return cloudwatch.MathExpression(expression=query, using_metrics={}, label="${LABEL}", period=period)

    def job_type_durations(
        self, statistic: str, *, limit: int, period: Duration = FIVE_MINUTES
    ) -> cloudwatch.MathExpression:
        """``JobDuration`` at ``statistic`` (``p50``, ``p99``) per job type, the ``limit`` slowest: a SEARCH
        (which, unlike Metrics Insights, takes percentiles) over the per-type set, ``SORT``-ed by its maximum."""
        dims = ",".join((Metrics.NAMESPACE, Metrics.DIM_STAGE, Metrics.DIM_TIER, Metrics.DIM_JOB_TYPE))
        terms = f'MetricName="{Metrics.DURATION}" {Metrics.DIM_STAGE}="{self.stage}" {Metrics.DIM_TIER}="{self.name}"'
        search = f"SEARCH('{{{dims}}} {terms}', '{statistic}', {int(period.to_seconds())})"
        return cloudwatch.MathExpression(
            expression=f"SORT({search}, MAX, DESC, {limit})",
            using_metrics={},
            label=f"${{PROP('Dim.{Metrics.DIM_JOB_TYPE}')}} {statistic}",
            period=period,
        )

    def rate_limiter_errors(self) -> cloudwatch.Metric:
        """Jobs held because the rate limiter's table failed, per minute."""
        return self.job(Metrics.RATE_LIMITER_ERRORS, period=ONE_MINUTE)

    def completed_per_second(self) -> cloudwatch.MathExpression:
        """Jobs succeeded per second (per minute / 60), to set against a rate limit."""
        return cloudwatch.MathExpression(
            expression="done / 60",
            using_metrics={"done": self.job(Metrics.SUCCEEDED, period=ONE_MINUTE)},
            label="completed per second",
            period=ONE_MINUTE,
        )

    # -- the queues (SQS) --------------------------------------------------------------------------

    def queue_depth(self) -> cloudwatch.Metric:
        return self._queue.metric_approximate_number_of_messages_visible(statistic="Maximum", period=ONE_MINUTE)

    def oldest_message_age(self) -> cloudwatch.Metric:
        return self._queue.metric_approximate_age_of_oldest_message(statistic="Maximum", period=ONE_MINUTE)

    def dlq_depth(self) -> cloudwatch.MathExpression:
        """Letters in the DLQ, visible or held in flight (a filtered replay holds the ones it skips)."""
        return cloudwatch.MathExpression(
            expression="visible + held",
            using_metrics={
                "visible": self._dlq.metric_approximate_number_of_messages_visible(
                    statistic="Maximum", period=ONE_MINUTE
                ),
                "held": self._dlq.metric_approximate_number_of_messages_not_visible(
                    statistic="Maximum", period=ONE_MINUTE
                ),
            },
            label=f"{self.name} DLQ letters (visible + in flight)",
            period=ONE_MINUTE,
        )

    # -- the consumer (Lambda) ---------------------------------------------------------------------

    def duration(self, statistic: str = "p99", period: Duration = FIVE_MINUTES) -> cloudwatch.Metric:
        return self._consumer.metric_duration(statistic=statistic, period=period)

    def errors(self) -> cloudwatch.Metric:
        return self._consumer.metric_errors(statistic="Sum", period=ONE_MINUTE)

    def throttles(self) -> cloudwatch.Metric:
        return self._consumer.metric_throttles(statistic="Sum", period=ONE_MINUTE)
