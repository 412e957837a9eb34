"""Scheduled jobs on EventBridge Scheduler: the stage's schedule group, the periodic schedules of
``cdk.json``, the execution roles, the schedules DLQ with its alarm, and the statements a service
needs to publish one-time jobs (``publish(..., at=...)``), which the stage's one publisher policy
includes (``publishers.py``).

Least privilege, one role per use:

- the **periodic role** may ``sqs:SendMessage`` only to the queues the declared schedules target
  (and to the schedules DLQ, which Scheduler writes with the schedule's execution role);
- the **one-time role** is the one publishers pass to ``CreateSchedule``: a one-time job may go
  to any tier, so it may send to every tier queue (and the schedules DLQ), nothing else.

Lifetimes: the group holds the pending one-time jobs and is retained unless the stage is disposable;
so are what those jobs need when they fire after a destroy: the one-time role (its permissions
inline, in the role itself, so they are retained with it), the tier queues and the schedules DLQ.
The role's name is CloudFormation's, not a fixed one: a deploy after a destroy makes a new role
beside the retained one (a fixed name would stop it with "already exists"), and the old pending
jobs keep running with theirs. Its description (``Schedules.one_time_role_description``) and the
stage tag let ``tiered-jobs teardown`` find every such role. It sets no IAM path: a path, like a
name, replaces a deployed role, and the pending jobs would keep a role without its policy. The
periodic role is not retained: the periodic schedules are deleted with the stack.

Both trust only ``scheduler.amazonaws.com`` acting for this account (``aws:SourceAccount``).
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Aws, CfnOutput, Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_ssm as ssm
from constructs import Construct, IConstruct

from tiered_jobs.contract.names import SQS_MAX_MESSAGE_BYTES, Schedules
from tiered_jobs.contract.schedules import (
    ONE_TIME_PREFIX,
    RETRY_MAX_ATTEMPTS,
    RETRY_MAX_EVENT_AGE_SECONDS,
    periodic_input,
)

from .alarms import AlarmSpec, first_command, page_on
from .metrics import ONE_MINUTE
from .nag import acknowledge
from .settings import AppSettings
from .tier import Tier

SCHEDULER_PRINCIPAL = "scheduler.amazonaws.com"
#: What a publisher calls on its one-time schedules: create (``at=``, long delays), move a debounced job's
#: run (``debounce=``: update on a conflict), and cancel: read its time (a job whose time has come is not
#: cancelled), then delete it.
ONE_TIME_ACTIONS = (
    "scheduler:CreateSchedule",
    "scheduler:UpdateSchedule",
    "scheduler:GetSchedule",
    "scheduler:DeleteSchedule",
)
#: Dead-letter events wait here for 14 days (SQS's longest retention).
DLQ_RETENTION = Duration.days(14)


class ScheduledJobs(Construct):
    """Group, roles, periodic schedules, DLQ + alarm, publisher statements; outputs and SSM parameters."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: AppSettings,
        tiers: Sequence[Tier],
        alarm_topic: sns.ITopic,
    ) -> None:
        super().__init__(scope, construct_id)
        stage = settings.stage
        queues = {tier.name: tier.queue for tier in tiers}
        self.group_name = Schedules.group_name(stage)
        # Retained unless disposable: it holds the pending one-time jobs.
        self.group = scheduler.CfnScheduleGroup(self, "Group", name=self.group_name)
        self.group.apply_removal_policy(settings.removal_policy)

        self.dlq = sqs.Queue(
            self,
            "Dlq",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=DLQ_RETENTION,
            max_message_size_bytes=SQS_MAX_MESSAGE_BYTES,
            removal_policy=settings.removal_policy,
        )
        acknowledge(self.dlq, "AwsSolutions-SQS3", "This queue is the dead-letter queue of the schedules.")
        acknowledge(self.dlq, "Serverless-SQSRedrivePolicy", "A dead-letter queue has no dead-letter queue itself.")
        self.alarm = page_on(
            self,
            "Alarm-undelivered",
            AlarmSpec(
                self.dlq.metric_approximate_number_of_messages_visible(statistic="Maximum", period=ONE_MINUTE),
                0,
                f"Schedules of the {stage} stage: a scheduled job could not be delivered to its tier queue "
                "(fires when the schedules DLQ holds one: Scheduler kept the fire there, with why).",
                first_command(stage, "schedules"),
            ),
            alarm_name=Schedules.dlq_alarm_name(stage),
            topic=alarm_topic,
        )

        periodic_tiers = sorted({schedule.tier for schedule in settings.schedules})
        self.periodic_role = (
            self._role(
                "PeriodicRole",
                [queues[name] for name in periodic_tiers],
                f"EventBridge Scheduler: the {stage} periodic jobs' tier queues",
            )
            if settings.schedules
            else None
        )
        self.one_time_role = self._role(
            "OneTimeRole",
            list(queues.values()),
            Schedules.one_time_role_description(stage, Aws.REGION),
            inline=True,
        )
        # Same lifetime as the group: a pending job fires with this role, even after a destroy.
        self.one_time_role.apply_removal_policy(settings.removal_policy)
        self.schedules = {
            schedule.name: scheduler.CfnSchedule(
                self,
                f"Schedule-{schedule.name}",
                name=schedule.name,
                group_name=self.group_name,
                description=f"{schedule.job_type} -> {schedule.tier} ({stage})",
                schedule_expression=schedule.expression,
                schedule_expression_timezone=schedule.timezone,
                flexible_time_window=scheduler.CfnSchedule.FlexibleTimeWindowProperty(
                    mode="OFF" if schedule.flexible_window_minutes is None else "FLEXIBLE",
                    maximum_window_in_minutes=schedule.flexible_window_minutes,
                ),
                state="ENABLED",
                target=self._target(
                    queues[schedule.tier].queue_arn,
                    self.periodic_role,
                    periodic_input(schedule.name, schedule.job_type, schedule.payload),
                ),
            )
            for schedule in settings.schedules
        }
        for schedule in self.schedules.values():
            schedule.add_resource_dependency(self.group)

        #: The SSM parameters written here (a publisher reads them on its first one-time job).
        self.parameters: dict[str, ssm.StringParameter] = {}
        self._discovery(stage)

    def _role(
        self,
        construct_id: str,
        queues: list[sqs.IQueue],
        description: str,
        *,
        inline: bool = False,
    ) -> iam.Role:
        """``inline``: the permissions in the role resource itself (retained with it), not an ``AWS::IAM::Policy``."""
        # Scheduler delivers to the target *and* writes dead-letter events with the execution role.
        send = iam.PolicyStatement(
            sid="SendToTargetQueuesAndScheduleDlq",
            actions=["sqs:SendMessage"],
            resources=[queue.queue_arn for queue in queues] + [self.dlq.queue_arn],
        )
        role = iam.Role(
            self,
            construct_id,
            description=description,
            assumed_by=iam.ServicePrincipal(
                SCHEDULER_PRINCIPAL, conditions={"StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID}}
            ),
            inline_policies={"SendToTierQueues": iam.PolicyDocument(statements=[send])} if inline else None,
        )
        if not inline:
            role.add_to_policy(send)
        return role

    def _target(self, queue_arn: str, role: iam.IRole | None, body: str) -> scheduler.CfnSchedule.TargetProperty:
        assert role is not None
        return scheduler.CfnSchedule.TargetProperty(
            arn=queue_arn,
            role_arn=role.role_arn,
            input=body,
            dead_letter_config=scheduler.CfnSchedule.DeadLetterConfigProperty(arn=self.dlq.queue_arn),
            retry_policy=scheduler.CfnSchedule.RetryPolicyProperty(
                maximum_event_age_in_seconds=RETRY_MAX_EVENT_AGE_SECONDS,
                maximum_retry_attempts=RETRY_MAX_ATTEMPTS,
            ),
        )

    def one_time_schedule_arn_pattern(self) -> str:
        """The ARNs a publisher's one-time schedules get: ``.../schedule/<group>/once-*``.

        Written with the pseudo parameters even when the stack's region is known, so the template
        (and the cdk-nag acknowledgment of the wildcard) reads the same for every target.
        """
        return (
            f"arn:{Aws.PARTITION}:scheduler:{Aws.REGION}:{Aws.ACCOUNT_ID}:schedule/{self.group_name}/{ONE_TIME_PREFIX}*"
        )

    def publisher_statements(self) -> list[iam.PolicyStatement]:
        """What a service needs to publish (``at=``, long delays) and cancel one-time jobs.

        ``CreateSchedule``, ``GetSchedule`` and ``DeleteSchedule`` on the one-time names only, and
        ``iam:PassRole`` of the one-time role to Scheduler. The stage's publisher policy (``publishers.py``)
        includes them.
        """
        return [
            iam.PolicyStatement(
                sid="CreateAndCancelOneTimeJobs",
                actions=list(ONE_TIME_ACTIONS),
                resources=[self.one_time_schedule_arn_pattern()],
            ),
            iam.PolicyStatement(
                sid="PassTheOneTimeRoleToScheduler",
                actions=["iam:PassRole"],
                resources=[self.one_time_role.role_arn],
                conditions={"StringEquals": {"iam:PassedToService": SCHEDULER_PRINCIPAL}},
            ),
        ]

    def acknowledge_one_time_wildcard(self, policy: IConstruct) -> None:
        """cdk-nag flags the ``once-*`` resource of :meth:`publisher_statements`; say why it is safe on ``policy``."""
        acknowledge(
            policy,
            f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:scheduler:<AWS::Region>:<AWS::AccountId>:"
            f"schedule/{self.group_name}/{ONE_TIME_PREFIX}*]",
            "One-time schedules are created per job under names derived from the job (once-<hash>): the wildcard "
            "covers only those names in this stage's schedule group.",
        )

    def _discovery(self, stage: str) -> None:
        for output_key, ssm_key, value, description in (
            (Schedules.OUTPUT_GROUP_NAME, Schedules.SSM_GROUP_NAME, self.group_name, "Schedule group name"),
            (
                Schedules.OUTPUT_ROLE_ARN,
                Schedules.SSM_ROLE_ARN,
                self.one_time_role.role_arn,
                "Role one-time schedules run with (publishers pass it)",
            ),
            (Schedules.OUTPUT_DLQ_ARN, Schedules.SSM_DLQ_ARN, self.dlq.queue_arn, "Schedules dead-letter queue ARN"),
            (Schedules.OUTPUT_DLQ_URL, None, self.dlq.queue_url, "Schedules dead-letter queue URL"),
        ):
            CfnOutput(self, output_key, value=value, description=description).override_logical_id(output_key)
            if ssm_key is not None:
                name = Schedules.ssm(stage, ssm_key)
                self.parameters[name] = ssm.StringParameter(
                    self, f"Param{output_key}", parameter_name=name, string_value=value, description=description
                )
