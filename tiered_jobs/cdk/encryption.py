"""The stage's own KMS key (``encryption``): one customer-managed key on everything the stage stores.

Without the setting, queues use SSE-SQS, tables the AWS-managed ``aws/dynamodb`` key, buckets SSE-S3,
schedules an AWS-owned key, log groups CloudWatch Logs' own encryption, and the alarm topic a key of its
own (``shared.AlarmTopic``).
With it, ``StageKey.encrypt`` puts the one key on every queue and DLQ, table, bucket (but the access-log
bucket: S3 delivers server access logs only to an SSE-S3 bucket), schedule, log group and topic under the
construct, at their CloudFormation resources, so no part can be built around it.

Who may use the key:

- the stage's roles (functions, schedules' roles, the publisher policy) through IAM: the key policy keeps
  CDK's statement delegating to the account's IAM, and each role is granted the key actions it needs on this
  key only (:meth:`StageKey.grant_use`);
- the services that write with their own principal, in the key policy of a key the stack creates, each
  only when the stage has a resource it writes to (:func:`service_statements`): CloudWatch (alarm
  notifications to the topic), CloudWatch Logs (the log groups, on their encryption context), SNS (an
  undeliverable page to the alarm subscriptions' DLQ), EventBridge (a trigger's event to a tier queue or
  the triggers' DLQ). EventBridge Scheduler delivers with the schedule's role, so it needs no statement.

A key the team brings (``kms_key_arn``) keeps the team's policy: ``docs/deploy.md`` ("Your own key") lists the
statements it must hold, and ``tiered-jobs doctor`` checks them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from aws_cdk import Aws, Tags
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct, IConstruct

from tiered_jobs.contract.names import PROJECT, STAGE_TAG

from .settings import AppSettings
from .settings.encryption import EncryptionSettings

#: What a sender to an encrypted queue or topic, and a reader of an encrypted queue, table or object, needs.
USE_ACTIONS = ("kms:Decrypt", "kms:GenerateDataKey")
#: What CloudWatch Logs asks of a log group's key (AWS's documented key policy for log groups).
LOGS_ACTIONS = ("kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:Describe*")
#: The encryption context CloudWatch Logs gives every call for a log group: its ARN.
LOGS_CONTEXT_KEY = "kms:EncryptionContext:aws:logs:arn"
CLOUDWATCH_PRINCIPAL = "cloudwatch.amazonaws.com"
SNS_PRINCIPAL = "sns.amazonaws.com"
EVENTS_PRINCIPAL = "events.amazonaws.com"
#: The resource types the key goes on, for the template tests and the closing list of ``docs/deploy.md``.
ENCRYPTED_TYPES = (
    "AWS::SQS::Queue",
    "AWS::DynamoDB::Table",
    "AWS::S3::Bucket",
    "AWS::Scheduler::Schedule",
    "AWS::Logs::LogGroup",
    "AWS::SNS::Topic",
)


def stage_key_description(stage: str) -> str:
    return f"Encrypts the {PROJECT} {stage} stage: queues, tables, buckets, schedules, log groups, alarm topic"


def service_statements(settings: AppSettings) -> list[iam.PolicyStatement]:
    """The key policy's statements for services that use the key as themselves (``"*"``: this key)."""
    account = {"StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID}}
    statements = [
        iam.PolicyStatement(
            sid="AllowCloudWatchAlarmsToPublish",
            principals=[iam.ServicePrincipal(CLOUDWATCH_PRINCIPAL)],
            actions=["kms:Decrypt", "kms:GenerateDataKey*"],
            resources=["*"],
            # As the alarm topic's own key has it: AWS documents this statement for alarms without a condition.
        ),
        iam.PolicyStatement(
            sid="AllowCloudWatchLogsForThisAccountsLogGroups",
            principals=[iam.ServicePrincipal(f"logs.{Aws.REGION}.amazonaws.com")],
            actions=list(LOGS_ACTIONS),
            resources=["*"],
            conditions={
                "ArnLike": {LOGS_CONTEXT_KEY: f"arn:{Aws.PARTITION}:logs:{Aws.REGION}:{Aws.ACCOUNT_ID}:log-group:*"}
            },
        ),
    ]
    if settings.alarm_email or settings.alarm_https_url:
        statements.append(
            iam.PolicyStatement(
                sid="AllowSnsToKeepUndeliveredPages",
                principals=[iam.ServicePrincipal(SNS_PRINCIPAL)],
                actions=list(USE_ACTIONS),
                resources=["*"],
                conditions=account,
            )
        )
    if settings.triggers:
        statements.append(
            iam.PolicyStatement(
                sid="AllowEventBridgeRulesToSendToQueues",
                principals=[iam.ServicePrincipal(EVENTS_PRINCIPAL)],
                actions=list(USE_ACTIONS),
                resources=["*"],
                conditions=account,
            )
        )
    return statements


class StageKey(Construct):
    """The stage's one KMS key: made here with rotation and its service statements, or the team's own by ARN."""

    def __init__(
        self, scope: Construct, construct_id: str, *, settings: AppSettings, encryption: EncryptionSettings
    ) -> None:
        super().__init__(scope, construct_id)
        self.key: kms.IKey
        if encryption.kms_key_arn is not None:
            self.key = kms.Key.from_key_arn(self, "Key", encryption.kms_key_arn)
            return
        key = kms.Key(
            self,
            "Key",
            description=stage_key_description(settings.stage),
            enable_key_rotation=True,
            # Retained with the data it encrypts: a deleted key makes every retained queue and table unreadable.
            removal_policy=settings.removal_policy,
        )
        for statement in service_statements(settings):
            key.add_to_resource_policy(statement)
        # Retained with the data: `tiered-jobs teardown` finds it among the stage's leftovers by this tag.
        Tags.of(key).add(STAGE_TAG, settings.stage)
        self.key = key

    @property
    def key_arn(self) -> str:
        return self.key.key_arn

    def grant_use(self, grantee: iam.IGrantable, actions: Sequence[str] = USE_ACTIONS) -> None:
        """``actions`` on this key only, in ``grantee``'s own policy (the key policy delegates to the account's IAM)."""
        grantee.grant_principal.add_to_principal_policy(
            iam.PolicyStatement(sid="UseTheStageKey", actions=list(actions), resources=[self.key_arn])
        )

    def encrypt(self, scope: IConstruct, *, exclude: Iterable[IConstruct] = ()) -> None:
        """Put the key on every encryptable resource under ``scope`` but those under ``exclude``."""
        skipped = {c.node.path for construct in exclude for c in construct.node.find_all()}  # jsii proxies differ
        arn = self.key_arn
        for construct in scope.node.find_all():
            if construct.node.path in skipped:
                continue
            if isinstance(construct, sqs.CfnQueue):
                construct.sqs_managed_sse_enabled = None  # CloudFormation refuses both
                construct.kms_master_key_id = arn
            elif isinstance(construct, dynamodb.CfnTable):
                construct.sse_specification = dynamodb.CfnTable.SSESpecificationProperty(
                    sse_enabled=True, sse_type="KMS", kms_master_key_id=arn
                )
            elif isinstance(construct, s3.CfnBucket):
                construct.bucket_encryption = _bucket_encryption(arn)
            elif isinstance(construct, logs.CfnLogGroup):
                construct.kms_key_id = arn
            elif isinstance(construct, scheduler.CfnSchedule):
                construct.kms_key_arn = arn
            elif isinstance(construct, sns.CfnTopic):
                construct.kms_master_key_id = arn


def _bucket_encryption(arn: str) -> s3.CfnBucket.BucketEncryptionProperty:
    """SSE-KMS with an S3 Bucket Key: one KMS call per bucket key rather than per object."""
    return s3.CfnBucket.BucketEncryptionProperty(
        server_side_encryption_configuration=[
            s3.CfnBucket.ServerSideEncryptionRuleProperty(
                server_side_encryption_by_default=s3.CfnBucket.ServerSideEncryptionByDefaultProperty(
                    sse_algorithm="aws:kms", kms_master_key_id=arn
                ),
                bucket_key_enabled=True,
            )
        ]
    )
