"""The stage's batches table on moto, shaped as the construct makes it (partition key ``batch``, sort key
``member``), and a publisher for one tier with a second queue for callbacks: shared by the batches' tests,
the composed run and the bench."""

from __future__ import annotations

from typing import Any

from tiered_jobs.contract import batches
from tiered_jobs.contract.routing import Routes
from tiered_jobs.publisher import Publisher

#: The tier the callbacks of the tests' batches go to (a queue no consumer reads: the tests receive them).
CALLBACKS_TIER = "reports"
#: The test jobs' type the tests' callbacks have (routed to :data:`CALLBACKS_TIER`).
CALLBACK_TYPE = "testjobs.effect"


def create_batch_table(dynamodb: Any, name: str) -> str:
    dynamodb.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": batches.KEY, "AttributeType": "S"},
            {"AttributeName": batches.MEMBER, "AttributeType": "S"},
        ],
        KeySchema=[
            {"AttributeName": batches.KEY, "KeyType": "HASH"},
            {"AttributeName": batches.MEMBER, "KeyType": "RANGE"},
        ],
    )
    return name


def publisher_for(tier: Any, table: str, callbacks_url: str, **options: Any) -> Publisher:
    """A publisher to ``tier`` (the test jobs' types) whose :data:`CALLBACK_TYPE` goes to ``callbacks_url``."""
    routes = Routes({CALLBACK_TYPE: CALLBACKS_TIER, "testjobs.*": "critical"})
    return Publisher(
        {"critical": tier.queue_url, CALLBACKS_TIER: callbacks_url},
        routes,
        sqs=tier.sqs,
        dynamodb=tier.dynamodb,
        batch_table=table,
        **options,
    )


def head(dynamodb: Any, table: str, batch_id: str) -> batches.Head:
    return batches.Head.from_item(dynamodb.get_item(**batches.read_head_request(table, batch_id))["Item"])
