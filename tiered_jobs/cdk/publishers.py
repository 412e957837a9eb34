"""The managed policy a publishing service attaches to its role: one per stage, for everything the publisher does.

It allows exactly what ``tiered_jobs.publisher`` calls when built with ``Publisher.from_stage`` (or
``TIERED_JOBS_STAGE``):

- ``ssm:GetParameters`` on the parameters ``tiered_jobs.stage.discovery.from_ssm`` reads at construction,
  and on those ``tiered_jobs.stage.scheduling.from_ssm`` reads the first time a job needs a schedule;
- ``sqs:SendMessage`` (which also authorizes ``SendMessageBatch``) on the tier queues, not the
  DLQs. The queues use SQS-managed encryption, so no KMS permission is needed, unless the stage has its own
  key (``encryption``): then ``kms:GenerateDataKey`` (a message, a large body, a schedule's payload, a table
  write) and ``kms:Decrypt`` (a status read, a table under the key) on that key only;
- for jobs due later than SQS can delay (``at=``, long delays), debounced jobs and ``cancel``: the
  statements of ``ScheduledJobs.publisher_statements`` (one-time schedules only, and passing the one-time role);
- for ``cancel`` of a queued job: ``dynamodb:PutItem`` (its cancel marker, on a condition) and
  ``dynamodb:UpdateItem`` (a running job asked to stop) on the idempotency table, and
  ``ssm:GetParameters`` on the tiers' ``idempotency-ttl-seconds`` (the marker's window), read on the first cancel;
- for ``get_status`` (a job's state, progress and result): ``dynamodb:GetItem`` on the idempotency table;
- for unique jobs (``unique_for=``): ``dynamodb:PutItem`` on the unique jobs' table (the conditional
  write that takes a lock, alone or in a ``TransactWriteItems``, which needs no action of its own) and
  ``dynamodb:DeleteItem`` (a job not sent gives its lock back).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aws_cdk import Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from tiered_jobs.contract.names import PublisherParameters

from .batches import BatchTable
from .large_payloads import LargePayloads
from .schedules import ScheduledJobs

#: IAM actions of a publisher. ``SendMessageBatch`` has no action of its own: ``sqs:SendMessage`` covers it.
SEND_ACTIONS = ("sqs:SendMessage",)
READ_ACTIONS = ("ssm:GetParameters",)
#: Taking a unique job's lock (``PutItem`` on a condition; a transaction of puts needs the same action)
#: and giving it back when the job could not be sent.
UNIQUE_LOCK_ACTIONS = ("dynamodb:PutItem", "dynamodb:DeleteItem")
#: Cancelling a queued job: its marker (a conditional ``PutItem``), or a running job's stop request (``UpdateItem``).
CANCEL_ACTIONS = ("dynamodb:PutItem", "dynamodb:UpdateItem")
#: ``get_status``: one read of a job's idempotency record (its state, progress and result), nothing else.
STATUS_ACTIONS = ("dynamodb:GetItem",)
#: On the stage's own key: a data key to encrypt what is sent or written, and decrypting what is read.
KEY_ACTIONS = ("kms:GenerateDataKey", "kms:Decrypt")


def publisher_parameter_names(stage: str, tier_names: Sequence[str]) -> list[str]:
    """The SSM parameters a publisher reads (one ``GetParameters`` needs rights on every name it asks for), the
    optional ones (written only with a setting) last."""
    return [*PublisherParameters.every(stage, tier_names), *PublisherParameters.optional(stage)]


class PublisherPolicy(Construct):
    """One customer-managed policy per stage; services attach it to their role (see docs/publishing.md)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        stage: str,
        queues: Mapping[str, sqs.IQueue],
        parameters: Mapping[str, ssm.IStringParameter],
        scheduled_jobs: ScheduledJobs,
        unique_table: dynamodb.ITable,
        idempotency_table: dynamodb.ITable,
        batches: BatchTable | None = None,
        large_payloads: LargePayloads | None = None,
        key: kms.IKey | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self._idempotency_table = idempotency_table
        self._unique_table = unique_table
        self._batches = batches
        self._queues = dict(queues)
        # The optional ones (the stage key's) are asked for whether the stage writes them or not: granted by ARN.
        optional = set(PublisherParameters.optional(stage))
        self._parameter_arns = [
            Stack.of(self).format_arn(service="ssm", resource="parameter", resource_name=name.lstrip("/"))
            if name in optional
            else parameters[name].parameter_arn
            for name in publisher_parameter_names(stage, list(queues))
        ]
        self._scheduled_jobs = scheduled_jobs
        self._large_payloads = large_payloads
        self._key = key
        self.policy = iam.ManagedPolicy(
            self,
            "Policy",
            description=f"Publish jobs to the tiered-jobs {stage} tiers (send to the tier queues, read their SSM "
            f"names, create and cancel one-time schedules)",
            statements=self.statements(),
        )
        scheduled_jobs.acknowledge_one_time_wildcard(self.policy)
        if large_payloads is not None:
            large_payloads.acknowledge_publisher(self.policy)

    def statements(self) -> list[iam.PolicyStatement]:
        """What a publisher needs, as new statements (the policy's, or a grantee's own: ``grant_publish``)."""
        return [
            iam.PolicyStatement(
                sid="SendToTierQueues",
                actions=list(SEND_ACTIONS),
                resources=[queue.queue_arn for queue in self._queues.values()],
            ),
            iam.PolicyStatement(
                sid="FindTheQueuesAndTheScheduleGroup",
                actions=list(READ_ACTIONS),
                resources=list(self._parameter_arns),
            ),
            *self._scheduled_jobs.publisher_statements(),
            iam.PolicyStatement(
                sid="LockAndUnlockUniqueJobs",
                actions=list(UNIQUE_LOCK_ACTIONS),
                resources=[self._unique_table.table_arn],
            ),
            iam.PolicyStatement(
                sid="CancelQueuedJobs",
                actions=list(CANCEL_ACTIONS),
                resources=[self._idempotency_table.table_arn],
            ),
            *([self._batches.publisher_statement()] if self._batches is not None else []),
            iam.PolicyStatement(
                sid="ReadJobStatus",
                actions=list(STATUS_ACTIONS),
                resources=[self._idempotency_table.table_arn],
            ),
            *(self._large_payloads.publisher_statements() if self._large_payloads is not None else []),
            *([self._key_statement(self._key)] if self._key is not None else []),
        ]

    @staticmethod
    def _key_statement(key: kms.IKey) -> iam.PolicyStatement:
        """The stage's own key, that key only: what SQS, S3, Scheduler and DynamoDB ask of the caller."""
        return iam.PolicyStatement(sid="UseTheStageKey", actions=list(KEY_ACTIONS), resources=[key.key_arn])
