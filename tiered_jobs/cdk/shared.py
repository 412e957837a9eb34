"""The parts all tiers share: the idempotency table, the alarm topic, and ``DataTable`` for every table
the stack makes."""

from __future__ import annotations

import jsii
from aws_cdk import Aws, Duration, IStableListProducer, Lazy
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from constructs import Construct, IConstruct

from tiered_jobs.contract.names import SQS_MAX_MESSAGE_BYTES, alarm_key_description

from .nag import acknowledge
from .settings import AppSettings

#: Powertools' DynamoDB persistence layer defaults: partition key ``id``, TTL attribute ``expiration``.
IDEMPOTENCY_PARTITION_KEY = "id"
IDEMPOTENCY_TTL_ATTRIBUTE = "expiration"
#: The service principal that publishes alarm notifications (and must be allowed to, by topic and key).
CLOUDWATCH_PRINCIPAL = "cloudwatch.amazonaws.com"
#: What a publisher to a KMS-encrypted SNS topic needs on the key.
TOPIC_KEY_ACTIONS = ("kms:Decrypt", "kms:GenerateDataKey*")
#: The actions an SNS topic policy can name.
TOPIC_ACTIONS = (
    "sns:AddPermission",
    "sns:DeleteTopic",
    "sns:GetTopicAttributes",
    "sns:ListSubscriptionsByTopic",
    "sns:Publish",
    "sns:RemovePermission",
    "sns:SetTopicAttributes",
    "sns:Subscribe",
)


class DataTable(Construct):
    """An on-demand DynamoDB table with point-in-time recovery and encryption, retained unless disposable."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: AppSettings,
        partition_key: str,
        sort_key: str | None = None,
        ttl_attribute: str | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.table = dynamodb.Table(
            self,
            "Table",
            partition_key=dynamodb.Attribute(name=partition_key, type=dynamodb.AttributeType.STRING),
            sort_key=None
            if sort_key is None
            else dynamodb.Attribute(name=sort_key, type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            time_to_live_attribute=ttl_attribute,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            removal_policy=settings.removal_policy,
        )


class AlarmTopic(Construct):
    """SNS topic for alarm and OK notifications: SSL only, encrypted with a key CloudWatch may use.

    Alarms cannot publish to a topic under the AWS-managed ``alias/aws/sns`` key (its policy does
    not admit CloudWatch), hence a customer-managed key with rotation. The topic policy replaces
    SNS's default one, so it must allow CloudWatch to publish itself: :meth:`allow_alarms` does,
    for exactly the stack's alarms.
    """

    def __init__(
        self, scope: Construct, construct_id: str, *, settings: AppSettings, key: kms.IKey | None = None
    ) -> None:
        super().__init__(scope, construct_id)
        if key is not None:  # the stage's own key (``encryption.py``), whose policy admits CloudWatch already
            self.key: kms.IKey = key
        else:
            own = kms.Key(
                self,
                "Key",
                description=alarm_key_description(settings.stage),
                enable_key_rotation=True,
                removal_policy=settings.removal_policy,
            )
            own.add_to_resource_policy(
                iam.PolicyStatement(
                    sid="AllowCloudWatchAlarmsToPublish",
                    principals=[iam.ServicePrincipal(CLOUDWATCH_PRINCIPAL)],
                    actions=list(TOPIC_KEY_ACTIONS),
                    resources=["*"],  # in a key policy, "*" means this key
                )
            )
            self.key = own
        self.topic = sns.Topic(
            self,
            "Topic",
            display_name=f"tiered-jobs {settings.stage} alarms",
            master_key=self.key,
            enforce_ssl=True,  # denies sns:Publish without TLS
        )
        # ...and every other topic action too (reading, subscribing, changing the topic).
        self.topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid="DenyEveryActionWithoutTls",
                effect=iam.Effect.DENY,
                principals=[iam.AnyPrincipal()],
                actions=list(TOPIC_ACTIONS),
                resources=[self.topic.topic_arn],
                conditions={"Bool": {"aws:SecureTransport": "false"}},
            )
        )
        self.delivery_dlq: sqs.Queue | None = None
        if settings.alarm_email or settings.alarm_https_url:
            # A page that cannot be delivered (endpoint down, throttled) is kept here for 14 days.
            self.delivery_dlq = sqs.Queue(
                self,
                "UndeliveredAlarms",
                encryption=sqs.QueueEncryption.SQS_MANAGED,
                enforce_ssl=True,
                retention_period=Duration.days(14),
                max_message_size_bytes=SQS_MAX_MESSAGE_BYTES,
                removal_policy=settings.removal_policy,
            )
            acknowledge(self.delivery_dlq, "AwsSolutions-SQS3", "This queue is the alarm subscriptions' DLQ.")
            acknowledge(self.delivery_dlq, "Serverless-SQSRedrivePolicy", "A dead-letter queue has no DLQ itself.")
        if settings.alarm_email:
            self.topic.add_subscription(
                subscriptions.EmailSubscription(settings.alarm_email, dead_letter_queue=self.delivery_dlq)
            )
        if settings.alarm_https_url:
            self.topic.add_subscription(
                subscriptions.UrlSubscription(settings.alarm_https_url, dead_letter_queue=self.delivery_dlq)
            )

    def allow_alarms_of(self, scope: IConstruct) -> None:
        """Let CloudWatch publish to the topic for the alarms under ``scope`` (this account, their exact
        ARNs), including alarms added after this call (a user's own, in the same stack): the list is
        made when the template is written.

        Exact ARNs rather than a ``tiered-jobs-<stage>-*`` pattern: stage ``dev``'s pattern would
        also admit stage ``dev-eu``'s alarms.
        """
        self.topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid="AllowThisStagesAlarmsToPublish",
                principals=[iam.ServicePrincipal(CLOUDWATCH_PRINCIPAL)],
                actions=["sns:Publish"],
                resources=[self.topic.topic_arn],
                conditions={
                    "StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID},
                    "ArnEquals": {"aws:SourceArn": Lazy.list(AlarmArns(scope))},
                },
            )
        )


@jsii.implements(IStableListProducer)
class AlarmArns:
    """The ARNs of the alarms under ``scope``, when the template is written."""

    def __init__(self, scope: IConstruct) -> None:
        self._scope = scope

    def produce(self) -> list[str]:
        return [c.alarm_arn for c in self._scope.node.find_all() if isinstance(c, cloudwatch.Alarm)]
