"""``TieredJobs``: every tier, the shared parts, replay, schedules, triggers, alarms and dashboard as one construct.

Put it in any stack of any CDK app::

    jobs = TieredJobs(self, "Jobs", jobs=JobsCode("src/jobs"), stage="prod",
                      routes={"invoices.*": "transactional"})
    jobs.grant_publish(api_function)

Settings given in code go through the same settings model as ``cdk.json`` (``AppSettings``), with
the same messages, and the same defaults. The construct only composes; each part is its own
construct in this package (``tier.py``, ``shared.py``, ``replay.py``...).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aws_cdk import CfnOutput, Stack, Tags
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from tiered_jobs.cdk.packaging import JobsSource
from tiered_jobs.contract import unique
from tiered_jobs.contract.large_payloads import OFF
from tiered_jobs.contract.names import (
    CONTEXT_KEY,
    LOCAL_OVERRIDES_CONTEXT_KEY,
    RETAINED_RESOURCE_TYPES,
    STAGE_TAG,
    TEMPLATE_METADATA_KEY,
    Env,
    Outputs,
    Schedules,
    Ssm,
)
from tiered_jobs.contract.rate_limits import BUCKET_KEY_ATTRIBUTE

from .batches import BatchTable
from .chat import ChatChannels
from .circuit_breaker import CircuitBreakers
from .dashboard import Dashboard, dashboard_name
from .encryption import StageKey
from .foreign_publishers import ForeignPublishers
from .function import LambdaPlatform
from .large_payloads import LargePayloads, opted_in
from .publishers import PublisherPolicy
from .replacement_guard import ReplacementGuard
from .replay import ReplayFunction
from .resources import JobResources
from .schedules import ScheduledJobs
from .settings import AppSettings, SettingsError, with_local_overrides
from .settings.local import METADATA_KEY as LOCAL_PROFILE_METADATA_KEY
from .settings.local import local_profile_changes
from .shared import (
    IDEMPOTENCY_PARTITION_KEY,
    IDEMPOTENCY_TTL_ATTRIBUTE,
    AlarmTopic,
    DataTable,
)
from .tier import Tier, TierProps
from .triggers import Triggers


@dataclass(frozen=True)
class JobsCode:
    """The app's job folder: a Python package with one module per job-type prefix (``orders.ship``
    lives in ``<package>.orders``), which each consumer imports on its first job of that prefix.

    ``path`` is relative to the app's folder (where ``cdk synth`` runs) or absolute. ``module`` is
    the name the consumer imports it by (default: the folder's name, e.g. ``jobs`` for
    ``src/jobs``). The functions' code is that folder plus the runtime parts of the installed
    ``tiered_jobs``, staged without Docker (``tiered_jobs.cdk.packaging``).
    """

    path: str | Path
    module: str | None = None

    def __post_init__(self) -> None:
        self.source()  # a folder that cannot become code fails here, with the fix

    def source(self) -> JobsSource:
        return JobsSource(Path(self.path), module=self.module or "")


def jobs_metadata(stage: str, jobs: JobsSource) -> dict[str, Any]:
    """``TEMPLATE_METADATA_KEY``'s value: the stage and the job folder (relative to the app's folder if inside it)."""
    folder = jobs.directory
    with contextlib.suppress(ValueError):
        folder = folder.relative_to(Path.cwd())
    return {"stage": stage, "jobs": {"path": folder.as_posix(), "module": jobs.module}}


class TieredJobs(Construct):
    """Tiered Jobs in one construct (one per stack: its outputs keep their documented names).

    Give either ``settings`` (an ``AppSettings`` you validated, e.g. from ``cdk.json``) or the
    settings themselves as keyword arguments (``stage=``, ``tiers=``, ``routes=``, ``resources=``,
    ``schedules=``...: the keys of ``docs/configuration.md``). Local mode's overrides (context
    ``tiered_jobs:local``) apply to keyword settings.

    What to wire to your own resources: ``queues`` / ``dlqs`` (tier name -> queue),
    ``replay_function``, ``alarm_topic``, ``tables`` (``idempotency``, ``rate_limits`` when a tier is
    limited, and each table under ``resources`` by name), ``tiers``, ``dashboard`` (``None`` on a ``dev``
    profile's stage), ``publisher_policy`` and :meth:`grant_publish`.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        jobs: JobsCode,
        settings: AppSettings | None = None,
        **raw_settings: Any,
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        others = [c for c in stack.node.find_all() if isinstance(c, TieredJobs) and c is not self]
        if others:
            raise SettingsError(
                f"stack {stack.node.id!r} already holds TieredJobs {others[0].node.path!r}; use one per stack "
                f"(their outputs and SSM names are per stage): put a second stage in a stack of its own"
            )
        local = self.node.try_get_context(LOCAL_OVERRIDES_CONTEXT_KEY)
        if settings is None:
            raw = with_local_overrides(raw_settings, local)
            settings = AppSettings.from_context(raw, source=f"TieredJobs({construct_id!r})")
            profile_changes = local_profile_changes(raw_settings, local)
        elif raw_settings:
            raise SettingsError(
                f"TieredJobs({construct_id!r}): give settings= or keyword settings "
                f"({', '.join(sorted(raw_settings))}), not both"
            )
        else:  # an app that applied local mode's overrides to its cdk.json settings itself, as this repository's
            profile_changes = local_profile_changes(self.node.try_get_context(CONTEXT_KEY), local, settings.tiers)
        if not settings.routes:
            raise SettingsError(
                f"TieredJobs({construct_id!r}): routes: none given, so no job type would reach a tier; route each "
                f"job-type glob to one of the tiers ({', '.join(settings.tier_names)}), e.g. "
                f"routes={{'invoices.*': '{settings.tier_names[0]}'}}, or every type to one tier with "
                f"routes={{'*': '{settings.tier_names[0]}'}}"
            )
        self.settings = settings
        # Synthesis fails when it would replace a retained queue, DLQ or table the lock file records.
        self.node.add_validation(ReplacementGuard(self, settings.stage))
        stage = settings.stage
        source = jobs.source()
        # Local mode finds the stacks that hold Tiered Jobs in any app's assembly by this, and prints
        # what its profile changed (the list is there in local mode only).
        metadata = jobs_metadata(stage, source)
        if profile_changes:
            metadata[LOCAL_PROFILE_METADATA_KEY] = [change.to_dict() for change in profile_changes]
        stack.add_metadata(TEMPLATE_METADATA_KEY, metadata)
        # What a deletion leaves behind stays findable by stage (`tiered-jobs teardown`).
        Tags.of(self).add(STAGE_TAG, stage, include_resource_types=list(RETAINED_RESOURCE_TYPES))
        # The stage's own key (``encryption``), put on every resource that stores data at the end of this constructor.
        self.stage_key = (
            StageKey(self, "StageKey", settings=settings, encryption=settings.encryption)
            if settings.encryption is not None
            else None
        )
        platform = LambdaPlatform(self, "Platform", settings=settings, jobs=source)
        self.idempotency = DataTable(
            self,
            "Idempotency",
            settings=settings,
            partition_key=IDEMPOTENCY_PARTITION_KEY,
            ttl_attribute=IDEMPOTENCY_TTL_ATTRIBUTE,
        ).table
        # Unique jobs' locks (``publish(..., unique_for=)``): always there, as publishers choose per job; an
        # on-demand table costs nothing until a job uses it. TTL only keeps it small: the publisher's
        # condition, not TTL's late deletion, ends a lock's window.
        self.unique = DataTable(
            self,
            "Unique",
            settings=settings,
            partition_key=unique.KEY_ATTRIBUTE,
            ttl_attribute=unique.EXPIRES_ATTRIBUTE,
        ).table
        # What the jobs declared under ``resources`` (tables, queues), each for the tiers running them.
        self.job_resources = JobResources(self, "Resources", settings=settings)
        self._alarm_topic = AlarmTopic(
            self, "AlarmTopic", settings=settings, key=None if self.stage_key is None else self.stage_key.key
        )
        self.alarm_topic: sns.ITopic = self._alarm_topic.topic
        # The Slack / Teams channels AWS Chatbot posts the pages to (``chat``), subscribed to the topic.
        self.chat = (
            ChatChannels(self, "Chat", stage=stage, chat=settings.chat, topic=self.alarm_topic)
            if settings.chat
            else None
        )
        # Token buckets of the rate-limited tiers (only when one has a limit): their own table, so
        # each consumer's policy names one action on its own items (docs/consumer.md, "Rate limits").
        self.rate_limits = (
            DataTable(
                self,
                "RateLimits",
                settings=settings,
                partition_key=BUCKET_KEY_ATTRIBUTE,
            ).table
            if any(tier.limits is not None for tier in settings.tiers)
            else None
        )
        self.tiers: dict[str, Tier] = {
            tier.name: Tier(
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
                    unique_table=self.unique,
                ),
            )
            for tier in settings.tiers
        }
        tiers = list(self.tiers.values())
        # Batches and chains (publisher.batch / chain): always there, like the unique jobs' table; every
        # consumer counts its finished members there and may send a callback or next link to any tier.
        self.batches = BatchTable(self, "Batches", settings=settings, tiers=tiers)
        self.replay = ReplayFunction(self, "Replay", settings=settings, platform=platform, tiers=tiers)
        # A job that ends unrun (expired, cancelled) is kept by its consumer in the discard archive before
        # its message is deleted: PutObject under the stage's prefix, as the replay's discard.
        for tier in tiers:
            assert tier.consumer.role is not None  # LambdaPlatform gives every function its own role
            self.replay.archive.allow_writes(tier.consumer.role, tier.name)
            tier.consumer.add_environment(Env.DISCARD_ARCHIVE_BUCKET, self.replay.archive.bucket_name)
        # Bodies past a tier's threshold (``large_payloads``): one bucket for the stage, only when a tier opts in.
        replay_role = self.replay.function.role
        assert replay_role is not None  # LambdaPlatform gives every function its own role
        self.large_payloads = (
            LargePayloads(
                self,
                "LargePayloads",
                settings=settings,
                tiers=tiers,
                access_logs=self.replay.archive.access_logs,
                replay_role=replay_role,
                replay_function=self.replay.function,
            )
            if opted_in(tiers)
            else None
        )
        # The tiers with a circuit breaker: its alarms act through the replay function (it may update the mappings).
        self.circuit_breakers = CircuitBreakers(
            self,
            "CircuitBreakers",
            stage=stage,
            tiers=tiers,
            function=self.replay.function,
            topic=self.alarm_topic,
            topic_key=self._alarm_topic.key,
        )
        self.scheduled_jobs = ScheduledJobs(
            self, "Schedules", settings=settings, tiers=tiers, alarm_topic=self.alarm_topic
        )
        # AWS events as jobs: only when cdk.json declares a trigger (no rule, DLQ or alarm otherwise).
        self.triggers = (
            Triggers(self, "Triggers", settings=settings, tiers=tiers, alarm_topic=self.alarm_topic)
            if settings.triggers
            else None
        )
        # A dev stage (``profile``) has none: $3 a month, while `tiered-jobs status` and the console show its tiers.
        self.dashboard: cloudwatch.Dashboard | None = (
            Dashboard(self, "Dashboard", stage=stage, tiers=tiers).dashboard
            if settings.profile_rules.dashboard
            else None
        )
        self.parameters: dict[str, ssm.StringParameter] = {}
        self._discovery()
        self._publishers = PublisherPolicy(
            self,
            "Publishers",
            stage=stage,
            queues=self.queues,
            parameters={**self.parameters, **self.scheduled_jobs.parameters},
            scheduled_jobs=self.scheduled_jobs,
            unique_table=self.unique,
            idempotency_table=self.idempotency,
            batches=self.batches,
            large_payloads=self.large_payloads,
            key=None if self.stage_key is None else self.stage_key.key,
        )
        self.publisher_policy: iam.ManagedPolicy = self._publishers.policy
        self._publish(
            Outputs.PUBLISHER_POLICY_ARN,
            self._unread(Ssm.publisher_policy_arn(stage)),
            self.publisher_policy.managed_policy_arn,
            "Managed policy to attach to a publishing service's role",
        )
        # Every alarm of the stack that notifies the topic (yours too, added later) may publish to it.
        self._alarm_topic.allow_alarms_of(stack)
        # Publishers in other accounts (``publishers``): queue and key policies admit them; the manifest guides them.
        self.foreign_publishers = (
            ForeignPublishers(
                self,
                "ForeignPublishers",
                stage=stage,
                accounts=settings.publishers,
                queues=self.queues,
                routes=settings.routes,
                key=None if self.stage_key is None else self.stage_key.key,
            )
            if settings.publishers is not None
            else None
        )
        if self.stage_key is not None:
            self._encrypt(self.stage_key)

    def _encrypt(self, stage_key: StageKey) -> None:
        """The stage's key on everything the construct made, and its use granted to every role that needs it:
        each function (its queues, tables and objects), each schedule's role (it sends to the tier queues and
        the schedules' DLQ) and the publisher policy."""
        stage_key.encrypt(self, exclude=[self.replay.archive.access_logs])
        # Publishers create one-time schedules: they find the key beside the schedule group's other names.
        self._publish(
            Schedules.OUTPUT_KMS_KEY_ARN,
            Schedules.ssm(self.settings.stage, Schedules.SSM_KMS_KEY_ARN),
            stage_key.key_arn,
            "The stage's own KMS key: one-time schedules keep their payload under it",
        )
        for function in self.node.find_all():
            if isinstance(function, lambda_.Function):
                stage_key.grant_use(function)
        for role in (self.scheduled_jobs.periodic_role, self.scheduled_jobs.one_time_role):
            if role is not None:
                stage_key.grant_use(role)
        # The one-time role is retained with the pending jobs that fire with it: so is its grant on the key.
        grant = self.scheduled_jobs.one_time_role.node.try_find_child("DefaultPolicy")
        assert isinstance(grant, iam.Policy)
        grant.apply_removal_policy(self.settings.removal_policy)

    # What users wire to their own resources.
    @property
    def queues(self) -> dict[str, sqs.IQueue]:
        """Tier name -> the tier's queue (grant your services ``send`` with :meth:`grant_publish`)."""
        return {name: tier.queue for name, tier in self.tiers.items()}

    @property
    def dlqs(self) -> dict[str, sqs.IQueue]:
        """Tier name -> the tier's dead-letter queue."""
        return {name: tier.dlq for name, tier in self.tiers.items()}

    @property
    def replay_function(self) -> lambda_.IFunction:
        return self.replay.function

    @property
    def tables(self) -> Mapping[str, dynamodb.ITable]:
        """``idempotency``, ``unique``, ``rate_limits`` (when a tier is limited) and every table under ``resources``."""
        tables: dict[str, dynamodb.ITable] = {
            "idempotency": self.idempotency,
            "unique": self.unique,
            "batches": self.batches.table,
        }
        if self.rate_limits is not None:
            tables["rate_limits"] = self.rate_limits
        tables.update(self.job_resources.tables)
        return tables

    def grant_publish(self, grantee: iam.IGrantable) -> None:
        """Let ``grantee`` publish as ``tiered_jobs.publisher`` does: send to the tier queues, read the
        stage's SSM names, and create and cancel one-time schedules (jobs due later than SQS can delay).

        The same statements as ``publisher_policy``, added to the grantee's own policy. A principal
        that takes no policy (a service principal, another account) gets a clear error instead.
        """
        for statement in self._publishers.statements():
            if not grantee.grant_principal.add_to_principal_policy(statement).statement_added:
                raise ValueError(
                    f"cannot add a policy to {grantee.grant_principal}: grant_publish needs a role, user or group "
                    f"of this app (or attach publisher_policy / the {Outputs.PUBLISHER_POLICY_ARN} output)"
                )
        if isinstance(grantee, Construct):
            self.scheduled_jobs.acknowledge_one_time_wildcard(grantee)

    def _publish(
        self, key: str, parameter_name: str | None, value: str, description: str, *, output: bool = True
    ) -> None:
        """Output ``key`` and/or an SSM parameter, so other services (and the CLI) find a resource by stage.

        Outputs keep their documented names (``Outputs``) wherever the construct sits in the stack.
        """
        if output:
            CfnOutput(self, key, value=value, description=description).override_logical_id(key)
        if parameter_name is not None:
            self.parameters[parameter_name] = ssm.StringParameter(
                self,
                f"Param{key}",
                parameter_name=parameter_name,
                string_value=value,
                description=description,
            )

    def _unread(self, parameter_name: str) -> str | None:
        """``parameter_name``, or ``None`` (an output only) on a profile without the parameters no publisher
        and no CLI command reads (``settings/profile.py``)."""
        return parameter_name if self.settings.profile_rules.unread_parameters else None

    def _discovery(self) -> None:
        """Outputs and SSM parameters so other services (and the CLI) find each resource by stage."""
        stage = self.settings.stage
        publish = self._publish
        for tier in self.tiers.values():
            for what, key, value in (
                (Outputs.QUEUE_URL, Ssm.TIER_QUEUE_URL, tier.queue.queue_url),
                (Outputs.QUEUE_ARN, Ssm.TIER_QUEUE_ARN, tier.queue.queue_arn),
                (Outputs.DLQ_URL, Ssm.TIER_DLQ_URL, tier.dlq.queue_url),
                (Outputs.DLQ_ARN, Ssm.TIER_DLQ_ARN, tier.dlq.queue_arn),
            ):
                parameter = Ssm.tier(stage, tier.name, key)
                publish(
                    Outputs.tier(tier.name, what),
                    self._unread(parameter) if key == Ssm.TIER_DLQ_ARN else parameter,
                    value,
                    f"{tier.name} tier: {key}",
                )
            publish(
                Outputs.tier(tier.name, Outputs.CONSUMER_FUNCTION_NAME),
                None,
                tier.consumer.function_name,
                f"{tier.name} tier: consumer function name",
            )
            publish(
                Outputs.tier(tier.name, "MappingUuid"),
                Ssm.tier(stage, tier.name, Ssm.TIER_MAPPING_UUID),
                tier.mapping_uuid,
                f"{tier.name} tier: its event source mapping's UUID (pause, resume, status)",
                output=False,
            )
            # Every tier says whether it stores large bodies in S3 ("off" or its setting): a publisher reads them all.
            large = self.large_payloads if tier.settings.large_payloads else None
            offload = large.offload(tier).to_json() if large is not None else OFF
            publish(
                Outputs.tier(tier.name, Outputs.LARGE_PAYLOADS),
                Ssm.tier(stage, tier.name, Ssm.TIER_LARGE_PAYLOADS),
                offload,
                f"{tier.name} tier: its large_payloads setting (bucket and threshold, JSON) or off",
                output=tier.settings.large_payloads,
            )
            # The replay (and the CLI's direct mode) refuse letters older than this window.
            publish(
                Outputs.tier(tier.name, "IdempotencyTtlSeconds"),
                Ssm.tier(stage, tier.name, Ssm.TIER_IDEMPOTENCY_TTL),
                str(tier.settings.idempotency_ttl_seconds),
                f"{tier.name} tier: seconds a finished job's idempotency record is kept",
                output=False,
            )
        publish(
            Outputs.REPLAY_FUNCTION_NAME,
            Ssm.replay_function_name(stage),
            self.replay.function.function_name,
            "Replay function name",
        )
        publish(
            Outputs.IDEMPOTENCY_TABLE_NAME,
            Ssm.idempotency_table_name(stage),
            self.idempotency.table_name,
            "Idempotency table name",
        )
        publish(
            Outputs.UNIQUE_TABLE_NAME,
            Ssm.unique_table_name(stage),
            self.unique.table_name,
            "Unique jobs' locks table name (publish(..., unique_for=))",
        )
        publish(
            Outputs.BATCH_TABLE_NAME,
            Ssm.batch_table_name(stage),
            self.batches.table.table_name,
            "Batches and chains table name (publisher.batch, publisher.chain)",
        )
        publish(
            Outputs.DISCARD_ARCHIVE_BUCKET,
            self._unread(Ssm.discard_archive_bucket(stage)),
            self.replay.archive.bucket_name,
            "Bucket where the replay function archives the letters it discards (discarded/<stage>/<tier>/)",
        )
        if self.large_payloads is not None:
            publish(
                Outputs.LARGE_PAYLOAD_BUCKET,
                None,
                self.large_payloads.bucket.bucket_name,
                "Bucket of the job bodies past their tier's large_payload threshold (<tier>/<uuid>)",
            )
        for resource in self.job_resources.resources:
            publish(
                Outputs.resource(resource.name),
                Ssm.resource(stage, resource.name),
                resource.value,
                resource.description,
            )
        publish(Outputs.ALARM_TOPIC_ARN, None, self.alarm_topic.topic_arn, "Alarm topic ARN")
        if self.dashboard is not None:
            publish(Outputs.DASHBOARD_NAME, None, dashboard_name(stage), "CloudWatch dashboard name")
        routes = json.dumps(dict(self.settings.routes), sort_keys=True)
        publish(Outputs.ROUTES, Ssm.routes(stage), routes, "Routing table: job type glob -> tier (JSON)")
        self.parameters[Ssm.tiers(stage)] = ssm.StringParameter(
            self,
            "ParamTiers",
            parameter_name=Ssm.tiers(stage),
            string_value=",".join(self.settings.tier_names),
            description="Tier names, comma-separated",
        )
