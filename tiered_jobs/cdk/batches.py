"""The stage's batches table (``publisher.batch``, ``publisher.chain``) and what each side may do in it.

Always created, like the unique jobs' table: publishers decide per call whether to open a batch, and an
on-demand table with no items costs nothing. It is retained or deleted with the stack's other tables
(``disposable``), so ``teardown`` removes only what the stack created. TTL (``expires``) removes a
batch's items 30 days after it was opened (:data:`tiered_jobs.contract.batches.TTL_SECONDS`).

Grants, each on this table only:

* a consumer counts a finished member (``TransactWriteItems`` of a ``Put`` and an ``Update``: IAM
  checks them as ``PutItem`` and ``UpdateItem``), reads the head back (``GetItem``) and marks callbacks
  fired (``UpdateItem``); it sends a callback or a chain's next link to the tier that job routes to, so
  it may ``SendMessage`` to every tier queue of the stage (never a DLQ, never another stage);
* a publisher opens a batch or chain (``PutItem``), seals it and marks the callbacks it sent itself
  (``UpdateItem``): :data:`PUBLISHER_ACTIONS`, added to the publisher policy.

The replay function needs nothing here: a replayed letter is counted by the consumer that runs it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from constructs import Construct

from tiered_jobs.contract import batches
from tiered_jobs.contract.names import Env

from .shared import DataTable

if TYPE_CHECKING:
    from .settings import AppSettings
    from .tier import Tier

#: A consumer's actions on the table.
CONSUMER_ACTIONS = ("dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:GetItem")
#: A publisher's actions on the table.
PUBLISHER_ACTIONS = ("dynamodb:PutItem", "dynamodb:UpdateItem")
#: A consumer's action on the stage's tier queues: a callback or a chain's next link.
CALLBACK_SEND_ACTIONS = ("sqs:SendMessage",)


class BatchTable(Construct):
    """The table, its name in every consumer's environment, and the consumers' grants."""

    def __init__(self, scope: Construct, construct_id: str, *, settings: AppSettings, tiers: Sequence[Tier]) -> None:
        super().__init__(scope, construct_id)
        self.table: dynamodb.ITable = DataTable(
            self,
            "Table",
            settings=settings,
            partition_key=batches.KEY,
            sort_key=batches.MEMBER,
            ttl_attribute=batches.EXPIRES,
        ).table
        queues = [tier.queue.queue_arn for tier in tiers]
        for tier in tiers:
            tier.consumer.add_environment(Env.BATCH_TABLE, self.table.table_name)
            tier.consumer.add_to_role_policy(
                iam.PolicyStatement(actions=list(CONSUMER_ACTIONS), resources=[self.table.table_arn])
            )
            tier.consumer.add_to_role_policy(iam.PolicyStatement(actions=list(CALLBACK_SEND_ACTIONS), resources=queues))

    def publisher_statement(self) -> iam.PolicyStatement:
        return iam.PolicyStatement(
            sid="OpenAndSealBatches", actions=list(PUBLISHER_ACTIONS), resources=[self.table.table_arn]
        )
