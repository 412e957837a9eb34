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
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from tiered_jobs.contract.names import Outputs

from .settings import TABLE, AppSettings, ResourceSettings
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
        if resource.kind == TABLE:
            table: dynamodb.ITable
            if resource.arn is not None:
                table = dynamodb.Table.from_table_arn(self, construct_id, resource.arn)
            else:
                assert resource.partition_key is not None  # the settings require it of a created table
                table = DataTable(self, construct_id, settings=settings, partition_key=resource.partition_key,
                                  sort_key=resource.sort_key).table
            grant = table.grant_read_data if resource.access == "read" else table.grant_read_write_data
            return JobResource(resource, grant, tiers, table)
        assert resource.arn is not None  # the settings accept only existing queues
        queue = sqs.Queue.from_queue_arn(self, construct_id, resource.arn)
        return JobResource(resource, queue.grant_send_messages, tiers, queue)
