"""One tier: main queue + DLQ + consumer function + SQS event source + alarms.

Tiers share nothing but the idempotency table, the alarm topic and the Lambda platform, so one
tier's backlog or failures never delay another tier (its own queue, its own concurrency cap).
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Aws, Duration, RemovalPolicy
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from tiered_jobs.contract.names import (
    JOB_MODULES, SQS_MAX_MESSAGE_BYTES, Alarms, Env, Handlers, Metrics, Ssm, function_name, queue_name,
)
from tiered_jobs.contract.rate_limits import tier_key_prefix

from .function import FunctionProps, LambdaPlatform
from .nag import acknowledge
from .settings import AppSettings, TierSettings


@dataclass(frozen=True)
class TierProps:
    settings: AppSettings
    tier: TierSettings
    platform: LambdaPlatform
    idempotency_table: dynamodb.ITable
    alarm_topic: sns.ITopic
    #: Only for the tiers the routes send account jobs to (least privilege).
    accounts_table: dynamodb.ITable | None = None
    #: The token buckets' table; required when the tier has a rate limit.
    rate_limit_table: dynamodb.ITable | None = None


class Tier(Construct):
    """Queue, DLQ, consumer and alarms of one tier; exposes them for outputs, replay and dashboard."""

    def __init__(self, scope: Construct, construct_id: str, *, props: TierProps) -> None:
        super().__init__(scope, construct_id)
        settings, tier = props.settings, props.tier
        stage = settings.stage
        self.name = tier.name
        self.settings = tier
        removal = RemovalPolicy.DESTROY if settings.disposable else RemovalPolicy.RETAIN
        main_name = queue_name(stage, tier.name)

        self.dlq = sqs.Queue(
            self,
            "Dlq",
            queue_name=queue_name(stage, tier.name, dlq=True),
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=Duration.days(tier.dlq_retention_days),
            # Explicit: a queue created before SQS raised its default keeps 256 KiB otherwise.
            max_message_size_bytes=SQS_MAX_MESSAGE_BYTES,
            # Only this tier's main queue may use it: no other queue can park letters here.
            # Named by ARN (not a reference) to avoid a circular dependency with the redrive policy.
            redrive_allow_policy=sqs.RedriveAllowPolicy(
                redrive_permission=sqs.RedrivePermission.BY_QUEUE,
                source_queues=[
                    sqs.Queue.from_queue_arn(
                        self,
                        "MainQueueRef",
                        f"arn:{Aws.PARTITION}:sqs:{Aws.REGION}:{Aws.ACCOUNT_ID}:{main_name}",
                    )
                ],
            ),
            removal_policy=removal,
        )
        acknowledge(self.dlq, "AwsSolutions-SQS3", "This queue is the dead-letter queue of its tier.")
        acknowledge(self.dlq, "Serverless-SQSRedrivePolicy", "A dead-letter queue has no dead-letter queue itself.")

        self.queue = sqs.Queue(
            self,
            "Queue",
            queue_name=main_name,
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=Duration.days(tier.retention_days),
            max_message_size_bytes=SQS_MAX_MESSAGE_BYTES,
            visibility_timeout=Duration.seconds(tier.visibility_timeout),
            dead_letter_queue=sqs.DeadLetterQueue(queue=self.dlq, max_receive_count=tier.max_receive_count),
            removal_policy=removal,
        )

        environment = {
            Env.STAGE: stage,
            Env.TIER: tier.name,
            Env.QUEUE_URL: self.queue.queue_url,
            Env.DLQ_URL: self.dlq.queue_url,
            Env.MAX_ATTEMPTS: str(tier.max_attempts),
            Env.RETRY_SCHEDULE: ",".join(str(s) for s in tier.retry_schedule_seconds),
            Env.RETRY_JITTER: str(tier.retry_jitter),
            Env.IDEMPOTENCY_TABLE: props.idempotency_table.table_name,
            Env.IDEMPOTENCY_TTL_SECONDS: str(tier.idempotency_ttl_seconds),
            Env.TIME_BUDGET_MARGIN_MS: str(tier.time_budget_margin),
            Env.JOB_MODULES: ",".join(JOB_MODULES),
            Env.POWERTOOLS_SERVICE_NAME: Metrics.SERVICE,
            Env.POWERTOOLS_METRICS_NAMESPACE: Metrics.NAMESPACE,
            Env.POWERTOOLS_LOG_LEVEL: "INFO",
        }
        if props.accounts_table is not None:
            environment[Env.ACCOUNTS_TABLE] = props.accounts_table.table_name
        if tier.limits is not None:
            if props.rate_limit_table is None:
                raise ValueError(f"tier {tier.name!r} has a rate limit: TierProps needs rate_limit_table")
            environment[Env.RATE_LIMITS] = tier.limits.to_json()
            environment[Env.RATE_LIMIT_TABLE] = props.rate_limit_table.table_name
        self.consumer = props.platform.function(
            self,
            "Consumer",
            FunctionProps(
                function_name=function_name(stage, f"{tier.name}-consumer"),
                handler=Handlers.CONSUMER,
                description=f"Runs the jobs of the {tier.name} tier ({stage})",
                timeout_seconds=tier.timeout_seconds,
                memory_mb=tier.memory_mb,
                environment=environment,
                reserved_concurrency=tier.reserved_concurrency,
            ),
        )
        acknowledge(
            self.consumer,
            "Serverless-LambdaDLQ",
            "Invoked synchronously by its SQS event source: failures go to the queue's redrive DLQ, "
            "an asynchronous-invocation DLQ would never receive anything.",
        )
        acknowledge(
            self.consumer,
            "Serverless-LambdaAsyncFailureDestination",
            "Invoked synchronously by its SQS event source; failed records go to the tier's DLQ.",
        )
        acknowledge(
            self.consumer,
            "Serverless-LambdaEventSourceMappingDestination",
            "SQS event sources support no on-failure destination; the queue's redrive policy and the consumer "
            "itself move failed jobs to the tier's DLQ.",
        )
        # The event source grants consume on the main queue; the consumer also dead-letters itself.
        self.consumer.add_event_source(
            event_sources.SqsEventSource(
                self.queue,
                batch_size=tier.batch_size,
                max_batching_window=Duration.seconds(tier.batching_window_seconds),
                max_concurrency=tier.max_concurrency,
                report_batch_item_failures=True,
            )
        )
        self.dlq.grant_send_messages(self.consumer)
        props.idempotency_table.grant_read_write_data(self.consumer)
        if props.accounts_table is not None:
            props.accounts_table.grant_read_write_data(self.consumer)
        self._rate_limit(props)

        self.alarms = self._alarms(stage, props.alarm_topic)

    def _rate_limit(self, props: TierProps) -> None:
        """A rate-limited consumer claims tokens (``GetItem`` + ``UpdateItem`` on its own tier's bucket items only)
        and re-sends the jobs it holds back to its own queue; operators find the limits in SSM."""
        limits = self.settings.limits
        if limits is None or props.rate_limit_table is None:
            return
        self.consumer.add_to_role_policy(iam.PolicyStatement(
            actions=["dynamodb:GetItem", "dynamodb:UpdateItem"],
            resources=[props.rate_limit_table.table_arn],
            conditions={"ForAllValues:StringLike": {"dynamodb:LeadingKeys": [f"{tier_key_prefix(self.name)}*"]}},
        ))
        self.queue.grant_send_messages(self.consumer)
        ssm.StringParameter(
            self, "RateLimitsParam", parameter_name=Ssm.tier(props.settings.stage, self.name, Ssm.TIER_RATE_LIMITS),
            string_value=limits.to_json(), description=f"{self.name} tier: rate limits (JSON)",
        )

    def job_metric(self, stage: str, metric_name: str, *, statistic: str = "Sum",
                   period: Duration = Duration.minutes(5)) -> cloudwatch.Metric:
        """One of the consumer's EMF job metrics for this tier (dimensions as Powertools writes them)."""
        return cloudwatch.Metric(
            namespace=Metrics.NAMESPACE,
            metric_name=metric_name,
            dimensions_map={Metrics.DIM_SERVICE: Metrics.SERVICE, Metrics.DIM_STAGE: stage, Metrics.DIM_TIER: self.name},
            statistic=statistic,
            period=period,
        )

    def failure_rate(self, stage: str) -> cloudwatch.MathExpression:
        """100 x jobs failed for good / jobs finished over 5 minutes; 0 below the tier's minimum volume.

        ``JobsFailed`` counts a job once, when it is dead-lettered (or kept because the DLQ refused
        it); a retried attempt only counts ``JobsRetried``. ``FILL`` turns a period without one of
        the two metrics into 0 (a period with only failures is 100 %, not "no data").
        """
        tier = self.settings
        period = Duration.minutes(5)
        failed = self.job_metric(stage, Metrics.FAILED, period=period)
        jobs = cloudwatch.MathExpression(
            expression="FILL(succeeded, 0) + FILL(failed, 0)",
            using_metrics={"succeeded": self.job_metric(stage, Metrics.SUCCEEDED, period=period), "failed": failed},
            label=f"{self.name} jobs finished",
            period=period,
        )
        return cloudwatch.MathExpression(
            expression=f"IF(jobs >= {tier.failure_rate_min_jobs}, 100 * FILL(failed, 0) / jobs, 0)",
            using_metrics={"jobs": jobs, "failed": failed},
            label=f"{self.name} failure rate (%)",
            period=period,
        )

    def dlq_depth(self) -> cloudwatch.MathExpression:
        """Letters in the DLQ, visible or held in flight (a filtered replay holds the ones it skips)."""
        one_minute = Duration.minutes(1)
        return cloudwatch.MathExpression(
            expression="visible + held",
            using_metrics={
                "visible": self.dlq.metric_approximate_number_of_messages_visible(statistic="Maximum", period=one_minute),
                "held": self.dlq.metric_approximate_number_of_messages_not_visible(statistic="Maximum",
                                                                                   period=one_minute),
            },
            label=f"{self.name} DLQ letters (visible + in flight)",
            period=one_minute,
        )

    def _alarms(self, stage: str, topic: sns.ITopic) -> dict[str, cloudwatch.Alarm]:
        tier = self.settings
        one_minute = Duration.minutes(1)
        specs: dict[str, tuple[cloudwatch.IMetric, float, str]] = {
            Alarms.DLQ_DEPTH: (
                self.dlq_depth(),
                tier.dlq_alarm_threshold,
                f"The {self.name} DLQ holds more than {tier.dlq_alarm_threshold} letter(s), visible or in flight: "
                f"inspect, then replay or discard.",
            ),
            Alarms.OLDEST_MESSAGE_AGE: (
                self.queue.metric_approximate_age_of_oldest_message(statistic="Maximum", period=one_minute),
                tier.oldest_message_age_alarm_seconds,
                f"The oldest {self.name} job waits longer than {tier.oldest_message_age_alarm_seconds} s.",
            ),
            Alarms.FAILURE_RATE: (
                self.failure_rate(stage),
                tier.failure_rate_alarm_percent,
                f"More than {tier.failure_rate_alarm_percent:g} % of {self.name} jobs failed for good (dead-lettered) "
                f"over 5 minutes, with at least {tier.failure_rate_min_jobs} jobs finished; retries never count.",
            ),
            Alarms.DURATION: (
                self.consumer.metric_duration(statistic="p99", period=Duration.minutes(5)),
                tier.duration_alarm_threshold_ms,
                f"The {self.name} consumer's p99 duration is above {tier.duration_alarm_percent_of_timeout:g} % "
                f"of its {tier.timeout_seconds} s timeout.",
            ),
            Alarms.ERRORS: (
                self.consumer.metric_errors(statistic="Sum", period=one_minute),
                0,
                f"The {self.name} consumer crashed or timed out (a whole batch returns to the queue).",
            ),
            Alarms.THROTTLES: (
                self.consumer.metric_throttles(statistic="Sum", period=one_minute),
                0,
                f"The {self.name} consumer is throttled: raise reserved concurrency or lower max_concurrency.",
            ),
        }
        action = cw_actions.SnsAction(topic)
        alarms = {}
        for kind, (metric, threshold, description) in specs.items():
            alarm = metric.create_alarm(
                self,
                f"Alarm-{kind}",
                alarm_name=Alarms.name(stage, self.name, kind),
                alarm_description=description,
                threshold=threshold,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
                evaluation_periods=1,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            )
            alarm.add_alarm_action(action)
            alarm.add_ok_action(action)
            alarms[kind] = alarm
        return alarms
