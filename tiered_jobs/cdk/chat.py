"""Alarm pages in Slack and Microsoft Teams: AWS Chatbot (Amazon Q Developer in chat applications)
channel configurations subscribed to the stage's alarm topic (``chat`` in ``cdk.json``).

Chatbot subscribes each configuration to the topic itself and posts what CloudWatch publishes there:
the alarm's name, state and ``AlarmDescription`` (the tier, what fired and the first command:
``alarms.py``), and the circuit breaker's closing page. The configurations share one role,
assumed by Chatbot to draw the alarm's graph in the channel: it may read the stage's alarms and
CloudWatch's metrics, nothing else. The same statements are the channels' guardrail, the ceiling
on what anyone in the channel can do through the bot, so a channel member's own role cannot widen
it: a page channel answers questions about the alarm, it is not a console.
"""

from __future__ import annotations

import re

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_chatbot as chatbot
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sns as sns
from constructs import Construct

from tiered_jobs.contract.names import Alarms

from .nag import acknowledge
from .settings.chat import ChatSettings

CHATBOT_PRINCIPAL = "chatbot.amazonaws.com"
#: What drawing an alarm's graph reads: its alarm, then the metrics behind it.
ALARM_READS = ("cloudwatch:DescribeAlarms",)
#: CloudWatch's metric reads take no resource-level permission: ``*`` is the only resource they accept.
METRIC_READS = ("cloudwatch:GetMetricData", "cloudwatch:GetMetricStatistics", "cloudwatch:ListMetrics")
#: A configuration's name: letters, digits, ``-`` and ``_``, at most 128 characters, unique in the account.
_NAME_CHARACTERS = re.compile(r"[^A-Za-z0-9_-]")


def configuration_name(stage: str, kind: str, channel_id: str) -> str:
    """``tiered-jobs-<stage>-slack-<channel>``: unique per stage and channel, as the account requires."""
    return _NAME_CHARACTERS.sub("-", f"tiered-jobs-{stage}-{kind}-{channel_id}")[:128]


class ChatChannels(Construct):
    """One Chatbot configuration per channel of ``chat``, on ``topic``, with a read-only role and guardrail."""

    def __init__(self, scope: Construct, construct_id: str, *, stage: str, chat: ChatSettings, topic: sns.ITopic):
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        alarms = stack.format_arn(
            service="cloudwatch",
            resource="alarm",
            resource_name=f"{Alarms.prefix(stage)}*",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        statements = [
            iam.PolicyStatement(actions=list(ALARM_READS), resources=[alarms]),
            iam.PolicyStatement(actions=list(METRIC_READS), resources=["*"]),
        ]
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal(CHATBOT_PRINCIPAL),
            description=f"AWS Chatbot: reads the {stage} stage's alarms and their metrics to show its pages",
            inline_policies={"ReadAlarms": iam.PolicyDocument(statements=statements)},
        )
        self.guardrail = iam.ManagedPolicy(
            self,
            "Guardrail",
            description=f"Ceiling on what the {stage} stage's page channels may do through AWS Chatbot: read alarms",
            statements=statements,
        )
        for part in (self.role, self.guardrail):
            acknowledge(
                part,
                "AwsSolutions-IAM5[Resource::*]",
                "CloudWatch's metric reads (GetMetricData, GetMetricStatistics, ListMetrics) support no "
                "resource-level permission (AWS requires *).",
            )
            acknowledge(
                part,
                f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:cloudwatch:<AWS::Region>:<AWS::AccountId>:alarm:"
                f"{Alarms.prefix(stage)}*]",
                "DescribeAlarms on the stage's alarms, by their name prefix: the alarms (a user's own included) "
                "are named when the template is written, and a page may come from any of them.",
            )
        self.slack = [
            chatbot.SlackChannelConfiguration(
                self,
                f"Slack-{channel.channel_id}",
                slack_channel_configuration_name=configuration_name(stage, "slack", channel.channel_id),
                slack_workspace_id=channel.workspace_id,
                slack_channel_id=channel.channel_id,
                notification_topics=[topic],
                role=self.role,
                guardrail_policies=[self.guardrail],
                user_role_required=False,
            )
            for channel in chat.slack
        ]
        self.teams = [
            chatbot.CfnMicrosoftTeamsChannelConfiguration(
                self,
                f"Teams-{configuration_name(stage, 'teams', channel.channel_id)}",
                configuration_name=configuration_name(stage, "teams", channel.channel_id),
                iam_role_arn=self.role.role_arn,
                team_id=channel.team_id,
                teams_channel_id=channel.channel_id,
                teams_tenant_id=channel.tenant_id,
                sns_topic_arns=[topic.topic_arn],
                guardrail_policies=[self.guardrail.managed_policy_arn],
                user_role_required=False,
            )
            for channel in chat.teams
        ]
