"""One tier: main queue + DLQ + consumer function + SQS event source; its metrics and alarms.

Tiers share nothing but the idempotency table, the alarm topic and the Lambda platform, so one
tier's backlog or failures never delay another tier (its own queue, its own concurrency cap).
The tier's metrics come from ``TierMetrics`` (``metrics.py``), its alarms from ``alarms.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from aws_cdk import Aws, Duration
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from tiered_jobs.contract.names import (
    SQS_MAX_MESSAGE_BYTES,
    Env,
    Handlers,
    Metrics,
    Ssm,
    function_name,
    queue_name,
)
from tiered_jobs.contract.rate_limits import tier_key_prefix

from .alarms import tier_alarms
from .deployment import ROLLBACK_ALARMS, ConsumerDeployment, uses_codedeploy
from .function import FunctionProps, LambdaPlatform
from .metrics import TierMetrics
from .nag import acknowledge
from .resources import JobResource
from .settings import AppSettings, TierSettings

#: What a consumer does in the unique jobs' table: delete a finished job's lock, on its token's condition.
UNIQUE_RELEASE_ACTIONS = ("dynamodb:DeleteItem",)


@dataclass(frozen=True)
class TierProps:
    """What one Tier is built from: its settings and the stage's shared parts it uses."""

    settings: AppSettings
    tier: TierSettings
    platform: LambdaPlatform
    idempotency_table: dynamodb.ITable
    alarm_topic: sns.ITopic
    #: The resources of ``cdk.json`` whose job types this tier runs (and no other: least privilege).
    resources: Sequence[JobResource] = ()
    #: The token buckets' table; required when the tier has a rate limit.
    rate_limit_table: dynamodb.ITable | None = None
    #: The unique jobs' locks: the consumer releases a finished job's lock there (``None``: it has none).
    unique_table: dynamodb.ITable | None = None


class Tier(Construct):
    """Queue, DLQ, consumer, metrics and alarms of one tier; exposes them for outputs, replay and dashboard."""

    def __init__(self, scope: Construct, construct_id: str, *, props: TierProps) -> None:
        super().__init__(scope, construct_id)
        settings, tier = props.settings, props.tier
        stage = settings.stage
        self.name = tier.name
        self.settings = tier
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
            removal_policy=settings.removal_policy,
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
            removal_policy=settings.removal_policy,
        )

        environment = {
            Env.STAGE: stage,
            Env.TIER: tier.name,
            Env.QUEUE_URL: self.queue.queue_url,
            Env.DLQ_URL: self.dlq.queue_url,
            Env.MAX_ATTEMPTS: str(tier.max_attempts),
            # A job's own retry schedule is checked against them (runtime/job_policy.py: JobPolicy.on_tier).
            Env.RETENTION_SECONDS: str(tier.retention_days * 86_400),
            Env.TIMEOUT_SECONDS: str(tier.timeout_seconds),
            Env.BATCHING_WINDOW_SECONDS: str(tier.batching_window_seconds),
            Env.RETRY_SCHEDULE: ",".join(str(s) for s in tier.retry_schedule_seconds),
            Env.RETRY_JITTER: str(tier.retry_jitter),
            Env.IDEMPOTENCY_TABLE: props.idempotency_table.table_name,
            Env.IDEMPOTENCY_TTL_SECONDS: str(tier.idempotency_ttl_seconds),
            Env.TIME_BUDGET_MARGIN_MS: str(tier.time_budget_margin),
            Env.JOB_MODULES: props.platform.jobs.module,
            Env.POWERTOOLS_SERVICE_NAME: Metrics.SERVICE,
            Env.POWERTOOLS_METRICS_NAMESPACE: Metrics.NAMESPACE,
            Env.POWERTOOLS_LOG_LEVEL: tier.log_level,
            Env.POWERTOOLS_TRACE_DISABLED: "false" if tier.tracing else "true",
        }
        environment.update({Env.resource_var(resource.name): resource.value for resource in props.resources})
        if tier.limits is not None:
            if props.rate_limit_table is None:
                raise ValueError(f"tier {tier.name!r} has a rate limit: TierProps needs rate_limit_table")
            environment[Env.RATE_LIMITS] = tier.limits.to_json()
            environment[Env.RATE_LIMIT_TABLE] = props.rate_limit_table.table_name
        if props.unique_table is not None:
            environment[Env.UNIQUE_TABLE] = props.unique_table.table_name
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
                log_level=tier.log_level,
                tracing=tier.tracing,
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
        # A canary tier's mapping invokes the alias CodeDeploy shifts, so new code takes the tier's
        # work only as fast as its deployment configuration allows (deployment.py).
        self.deployment = (
            ConsumerDeployment(self, "Deployment", consumer=self.consumer, tier=tier) if uses_codedeploy(tier) else None
        )
        invoked = self.consumer if self.deployment is None else self.deployment.alias
        acknowledge(
            invoked,
            "Serverless-LambdaEventSourceMappingDestination",
            "SQS event sources support no on-failure destination; the queue's redrive policy and the consumer "
            "itself move failed jobs to the tier's DLQ.",
        )
        # The event source grants consume on the main queue; the consumer also dead-letters itself.
        source = event_sources.SqsEventSource(
            self.queue,
            batch_size=tier.batch_size,
            max_batching_window=Duration.seconds(tier.batching_window_seconds),
            max_concurrency=tier.max_concurrency,
            report_batch_item_failures=True,
        )
        invoked.add_event_source(source)
        # Pause and resume update this mapping (and only it): operators and the replay function are
        # granted it by ARN, and find it by its UUID (an SSM parameter of the tier).
        self.mapping_uuid = source.event_source_mapping_id
        self.mapping_arn = source.event_source_mapping_arn
        self.dlq.grant_send_messages(self.consumer)
        # A job held by the rate limit or deferred by the time budget goes back as a fresh copy, so it
        # never spends a receive toward the redrive (tiered_jobs/runtime/requeue.py).
        self.queue.grant_send_messages(self.consumer)
        props.idempotency_table.grant_read_write_data(self.consumer)
        for resource in props.resources:
            resource.grant(self.consumer)
        if props.unique_table is not None:
            # Releasing a finished job's lock is all the consumer does there (a conditional delete).
            self.consumer.add_to_role_policy(
                iam.PolicyStatement(actions=list(UNIQUE_RELEASE_ACTIONS), resources=[props.unique_table.table_arn])
            )
        self._rate_limit(props)

        self.metrics = TierMetrics(stage=stage, tier=tier, queue=self.queue, dlq=self.dlq, consumer=self.consumer)
        kinds = props.settings.profile_rules.tier_alarms
        if kinds is not None and self.deployment is not None:
            kinds = kinds | set(ROLLBACK_ALARMS)  # a canary rolls back on these: whatever the profile, they stay
        self.alarms = tier_alarms(self, self.metrics, props.alarm_topic, kinds)
        if self.deployment is not None:
            self.deployment.roll_back_on(self.alarms)

    def _rate_limit(self, props: TierProps) -> None:
        """A rate-limited consumer claims tokens (``GetItem`` + ``UpdateItem`` on its own tier's bucket items only);
        operators find the limits in SSM."""
        limits = self.settings.limits
        if limits is None or props.rate_limit_table is None:
            return
        self.consumer.add_to_role_policy(
            iam.PolicyStatement(
                actions=["dynamodb:GetItem", "dynamodb:UpdateItem"],
                resources=[props.rate_limit_table.table_arn],
                conditions={"ForAllValues:StringLike": {"dynamodb:LeadingKeys": [f"{tier_key_prefix(self.name)}*"]}},
            )
        )
        ssm.StringParameter(
            self,
            "RateLimitsParam",
            parameter_name=Ssm.tier(props.settings.stage, self.name, Ssm.TIER_RATE_LIMITS),
            string_value=limits.to_json(),
            description=f"{self.name} tier: rate limits (JSON)",
        )
