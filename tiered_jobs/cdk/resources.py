"""The AWS resources the jobs declare in ``cdk.json`` (``resources``), bound to the tiers that run those jobs.

Each one is a table this stack creates (a ``DataTable``: on-demand, point-in-time recovery,
retained unless ``disposable``) or an existing table or queue named by its ARN. A tier whose
routes carry one of the resource's job types gets, on its consumer, the variable
``Env.resource_var(name)`` (the table name or queue URL) and the least grant ``access`` asks for;
no other tier gets either. The stack publishes each value as output ``Outputs.resource(name)`` and
SSM parameter ``Ssm.resource(stage, name)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from tiered_jobs.contract.names import Outputs

from .nag import acknowledge
from .settings import TABLE, AppSettings, ResourceSettings
from .settings.resources import ALL_INDEXES
from .shared import DataTable


@dataclass(frozen=True)
class JobResource:
    """One declared resource, made or imported: what a consumer is told, and how it is granted."""

    settings: ResourceSettings
    grant: Callable[[iam.IGrantable], object]
    #: The tiers that run its jobs.
    tiers: frozenset[str]
    #: The table or queue itself (created here, or imported by ARN).
    target: dynamodb.ITable | sqs.IQueue

    @property
    def name(self) -> str:
        return self.settings.name

    @property
    def value(self) -> str:
        """The table name or queue URL (a token until deployment)."""
        if self.settings.kind == TABLE:
            return cast(dynamodb.ITable, self.target).table_name
        return cast(sqs.IQueue, self.target).queue_url

    @property
    def description(self) -> str:
        return f"Resource {self.name}: the {self.settings.kind} of job types {', '.join(self.settings.job_types)}"


class JobResources(Construct):
    """Every resource of ``settings.resources``; :meth:`for_tier` gives the ones a tier's consumer uses."""

    def __init__(self, scope: Construct, construct_id: str, *, settings: AppSettings) -> None:
        super().__init__(scope, construct_id)
        self.resources = tuple(self._make(settings, resource) for resource in settings.resources)

    @property
    def tables(self) -> dict[str, dynamodb.ITable]:
        """Resource name -> table, for the resources that are tables."""
        return {r.name: cast(dynamodb.ITable, r.target) for r in self.resources if r.settings.kind == TABLE}

    def for_tier(self, tier: str) -> tuple[JobResource, ...]:
        return tuple(resource for resource in self.resources if tier in resource.tiers)

    def _make(self, settings: AppSettings, resource: ResourceSettings) -> JobResource:
        construct_id = Outputs.resource(resource.name).removeprefix("Resource")  # "invoice_lines" -> "InvoiceLines"
        tiers = settings.tiers_using(resource)
        # An existing resource's customer-managed key: CDK's grants then add the key actions their
        # access needs (read: Decrypt, DescribeKey; write and send: Encrypt, ReEncrypt*, GenerateDataKey* too)
        # on that key only, as they do for a key of this stack.
        key = (
            kms.Key.from_key_arn(self, f"{construct_id}Key", resource.kms_key_arn)
            if resource.kms_key_arn is not None
            else None
        )
        if resource.kind == TABLE:
            table: dynamodb.ITable
            if resource.arn is not None:
                table = dynamodb.Table.from_table_attributes(
                    self, construct_id, table_arn=resource.arn, encryption_key=key
                )
            else:
                assert resource.partition_key is not None  # the settings require it of a created table
                table = DataTable(
                    self,
                    construct_id,
                    settings=settings,
                    partition_key=resource.partition_key,
                    sort_key=resource.sort_key,
                ).table
            grant = table.grant_read_data if resource.access == "read" else table.grant_read_write_data
            return JobResource(resource, _with_indexes(grant, resource), tiers, table)
        assert resource.arn is not None  # the settings accept only existing queues
        queue = sqs.Queue.from_queue_attributes(
            self, construct_id, queue_arn=resource.arn, key_arn=resource.kms_key_arn
        )
        return JobResource(resource, _acknowledged(queue.grant_send_messages, resource), tiers, queue)


#: What a job may do on a table's index: only Query and Scan take an index as their resource.
INDEX_ACTIONS = ("dynamodb:Query", "dynamodb:Scan")


def _with_indexes(
    grant: Callable[[iam.IGrantable], object], resource: ResourceSettings
) -> Callable[[iam.IGrantable], object]:
    """``grant``, plus Query and Scan on the named indexes of an existing table (``<arn>/index/<name>``).

    ``Table.from_table_arn`` knows no indexes, so CDK's grant covers the table alone and a query on
    an index would be denied; naming them grants exactly those (``*``: ``<arn>/index/*``).
    """

    def granted(grantee: iam.IGrantable) -> object:
        result = _acknowledged(grant, resource)(grantee)
        if resource.indexes:
            iam.Grant.add_to_principal(
                grantee=grantee,
                actions=list(INDEX_ACTIONS),
                resource_arns=[f"{resource.arn}/index/{index}" for index in resource.indexes],
            )
            if ALL_INDEXES in resource.indexes:
                _acknowledge_on_role(
                    grantee,
                    f"AwsSolutions-IAM5[Resource::{resource.arn}/index/*]",
                    f"resources.{resource.name}.indexes is ['*']: every index of the existing "
                    f"table, as its settings ask (Query and Scan only).",
                )
        return result

    return granted


def _acknowledged(
    grant: Callable[[iam.IGrantable], object], resource: ResourceSettings
) -> Callable[[iam.IGrantable], object]:
    """``grant``, with cdk-nag's findings on CDK's own KMS grant acknowledged on the grantee's role."""

    def granted(grantee: iam.IGrantable) -> object:
        result = grant(grantee)
        if resource.kms_key_arn is not None and resource.access != "read":
            for action in ("kms:ReEncrypt*", "kms:GenerateDataKey*"):
                _acknowledge_on_role(
                    grantee,
                    f"AwsSolutions-IAM5[Action::{action}]",
                    f"CDK's grant on the customer-managed key of resources.{resource.name} "
                    f"({resource.kms_key_arn}), that key only.",
                )
        return result

    return granted


def _acknowledge_on_role(grantee: iam.IGrantable, rule_id: str, reason: str) -> None:
    principal = grantee.grant_principal
    if isinstance(principal, Construct):
        acknowledge(principal, rule_id, reason)
