"""The stack only composes: shared parts, one ``Tier`` per configured tier, replay, dashboard, discovery."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

from aws_cdk import CfnOutput, Environment, Stack, Tags
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from tiered_jobs.contract.names import (
    RETAINED_RESOURCE_TYPES,
    STAGE_TAG,
    TEMPLATE_METADATA_KEY,
    Outputs,
    Ssm,
    stack_name,
)
from tiered_jobs.contract.rate_limits import BUCKET_KEY_ATTRIBUTE
from tiered_jobs.packaging import JobsSource

from .dashboard import Dashboard
from .function import LambdaPlatform
from .publishers import PublisherPolicy
from .replay import ReplayFunction
from .resources import JobResources
from .schedules import ScheduledJobs
from .settings import AppSettings
from .shared import (
    IDEMPOTENCY_PARTITION_KEY,
    IDEMPOTENCY_TTL_ATTRIBUTE,
    AlarmTopic,
    DataTable,
)
from .tier import Tier, TierProps


def jobs_metadata(stage: str, jobs: JobsSource) -> dict[str, object]:
    """``TEMPLATE_METADATA_KEY``'s value: the stage and the job folder (relative to the app's folder if inside it)."""
    folder = jobs.directory
    with contextlib.suppress(ValueError):
        folder = folder.relative_to(Path.cwd())
    return {"stage": stage, "jobs": {"path": folder.as_posix(), "module": jobs.module}}


class TieredJobsStack(Stack):
    def __init__(self, scope: Construct, *, settings: AppSettings, jobs: JobsSource,
                 env: Environment | None = None) -> None:
        stage = settings.stage
        super().__init__(
            scope,
            stack_name(stage),
            env=env,
            stack_name=stack_name(stage),
            description=f"Tiered Jobs ({stage}): reliable background jobs on SQS and Lambda, one tier per priority",
        )
        self.settings = settings
        # What a deletion leaves behind stays findable by stage (`tiered-jobs teardown`).
        Tags.of(self).add(STAGE_TAG, stage, include_resource_types=list(RETAINED_RESOURCE_TYPES))
        # Local mode finds the stacks that hold Tiered Jobs in any app's assembly by this.
        self.template_options.metadata = {TEMPLATE_METADATA_KEY: jobs_metadata(stage, jobs)}
        platform = LambdaPlatform(self, "Platform", settings=settings, jobs=jobs)
        self.idempotency = DataTable(
            self, "Idempotency", settings=settings,
            partition_key=IDEMPOTENCY_PARTITION_KEY, ttl_attribute=IDEMPOTENCY_TTL_ATTRIBUTE,
        ).table
        # What the jobs declared under ``resources`` in cdk.json (tables, queues), each for the tiers running them.
        self.job_resources = JobResources(self, "Resources", settings=settings)
        self.alarm_topic_parts = AlarmTopic(self, "AlarmTopic", settings=settings)
        self.alarm_topic = self.alarm_topic_parts.topic
        # Token buckets of the rate-limited tiers (only when one has a limit): their own table, so
        # each consumer's policy names one action on its own items (docs/consumer.md, "Rate limits").
        self.rate_limits = DataTable(
            self, "RateLimits", settings=settings, partition_key=BUCKET_KEY_ATTRIBUTE,
        ).table if any(tier.limits is not None for tier in settings.tiers) else None
        self.tiers = [
            Tier(
                self,
                f"Tier-{tier.name}",
                props=TierProps(
                    settings=settings,
                    tier=tier,
                    platform=platform,
                    idempotency_table=self.idempotency,
                    alarm_topic=self.alarm_topic,
                    resources=self.job_resources.for_tier(tier.name),
                    rate_limit_table=self.rate_limits,
                ),
            )
            for tier in settings.tiers
        ]
        self.replay = ReplayFunction(self, "Replay", settings=settings, platform=platform, tiers=self.tiers)
        self.scheduled_jobs = ScheduledJobs(self, "Schedules", settings=settings, tiers=self.tiers,
                                            alarm_topic=self.alarm_topic)
        self.dashboard = Dashboard(self, "Dashboard", stage=stage, tiers=self.tiers)
        self.parameters: dict[str, ssm.StringParameter] = {}
        self._discovery()
        self.publisher_policy = PublisherPolicy(
            self, "Publishers", stage=stage, queues={tier.name: tier.queue for tier in self.tiers},
            parameters={**self.parameters, **self.scheduled_jobs.parameters}, scheduled_jobs=self.scheduled_jobs,
        ).policy
        self._publish(Outputs.PUBLISHER_POLICY_ARN, Ssm.publisher_policy_arn(stage),
                      self.publisher_policy.managed_policy_arn,
                      "Managed policy to attach to a publishing service's role")
        # Last: every alarm of the stack, whoever added it, may notify the topic.
        self.alarm_topic_parts.allow_alarms([c for c in self.node.find_all() if isinstance(c, cloudwatch.Alarm)])

    def _publish(self, key: str, parameter_name: str | None, value: str, description: str, *,
                 output: bool = True) -> None:
        """Output ``key`` and/or an SSM parameter, so other services (and the CLI) find a resource by stage."""
        if output:
            CfnOutput(self, key, value=value, description=description)
        if parameter_name is not None:
            self.parameters[parameter_name] = ssm.StringParameter(
                self, f"Param{key}", parameter_name=parameter_name, string_value=value, description=description,
            )

    def _discovery(self) -> None:
        """Outputs and SSM parameters so other services (and the CLI) find each resource by stage."""
        stage = self.settings.stage
        publish = self._publish
        for tier in self.tiers:
            for what, key, value in (
                (Outputs.QUEUE_URL, Ssm.TIER_QUEUE_URL, tier.queue.queue_url),
                (Outputs.QUEUE_ARN, Ssm.TIER_QUEUE_ARN, tier.queue.queue_arn),
                (Outputs.DLQ_URL, Ssm.TIER_DLQ_URL, tier.dlq.queue_url),
                (Outputs.DLQ_ARN, Ssm.TIER_DLQ_ARN, tier.dlq.queue_arn),
            ):
                publish(Outputs.tier(tier.name, what), Ssm.tier(stage, tier.name, key), value,
                        f"{tier.name} tier: {key}")
            publish(Outputs.tier(tier.name, Outputs.CONSUMER_FUNCTION_NAME), None, tier.consumer.function_name,
                    f"{tier.name} tier: consumer function name")
            # The replay (and the CLI's direct mode) refuse letters older than this window.
            publish(
                Outputs.tier(tier.name, "IdempotencyTtlSeconds"),
                Ssm.tier(stage, tier.name, Ssm.TIER_IDEMPOTENCY_TTL),
                str(tier.settings.idempotency_ttl_seconds),
                f"{tier.name} tier: seconds a finished job's idempotency record is kept",
                output=False,
            )
        publish(Outputs.REPLAY_FUNCTION_NAME, Ssm.replay_function_name(stage), self.replay.function.function_name,
                "Replay function name")
        publish(Outputs.IDEMPOTENCY_TABLE_NAME, Ssm.idempotency_table_name(stage), self.idempotency.table_name,
                "Idempotency table name")
        publish(Outputs.DISCARD_ARCHIVE_BUCKET, Ssm.discard_archive_bucket(stage), self.replay.archive.bucket_name,
                "Bucket where the replay function archives the letters it discards (discarded/<stage>/<tier>/)")
        for resource in self.job_resources.resources:
            publish(Outputs.resource(resource.name), Ssm.resource(stage, resource.name), resource.value,
                    resource.description)
        publish(Outputs.ALARM_TOPIC_ARN, None, self.alarm_topic.topic_arn, "Alarm topic ARN")
        publish(Outputs.DASHBOARD_NAME, None, self.dashboard.dashboard_name, "CloudWatch dashboard name")
        routes = json.dumps(dict(self.settings.routes), sort_keys=True)
        publish(Outputs.ROUTES, Ssm.routes(stage), routes, "Routing table: job type glob -> tier (JSON)")
        self.parameters[Ssm.tiers(stage)] = ssm.StringParameter(
            self, "ParamTiers", parameter_name=Ssm.tiers(stage), string_value=",".join(self.settings.tier_names),
            description="Tier names, comma-separated",
        )
