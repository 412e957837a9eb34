"""``testjobs.effect``: add ``amount`` to a counter in a DynamoDB table, exactly once per idempotency key.

The table is the resource :data:`TABLE` (``ctx.resource``), partition key ``id``. Powertools
idempotency stops duplicates, but not a crash after the write and before its record completes; so
the write is idempotent too: the counter's update and a per-key marker item go in one transaction
that fails if the marker exists, and a second run of the key changes nothing. Any other failure of
the transaction is raised as it is, for the consumer to classify. Payload rules (a ``counter``, a
non-zero integer ``amount``): ``schemas/testjobs.effect.schema.json``.
"""

from __future__ import annotations

from typing import Any

from tiered_jobs.runtime import JobContext, cancelled_only_by_condition, job

#: The counters' table, as a consumer is given it under ``resources``.
TABLE = "testjobs_counters"
#: Marker items live in the counters' table under this key prefix.
MARKER_PREFIX = "applied#"


def marker_key(job_type: str, idempotency_key: str) -> str:
    return f"{MARKER_PREFIX}{job_type}#{idempotency_key}"


@job("testjobs.effect")
def effect(payload: dict[str, Any], ctx: JobContext) -> dict[str, Any]:
    table = ctx.resource(TABLE)
    counter, amount = payload["counter"], payload["amount"]
    try:
        ctx.client("dynamodb").transact_write_items(
            TransactItems=[
                {
                    "Update": {
                        "TableName": table,
                        "Key": {"id": {"S": counter}},
                        "UpdateExpression": "ADD #total :amount",
                        "ExpressionAttributeNames": {"#total": "total"},
                        "ExpressionAttributeValues": {":amount": {"N": str(amount)}},
                    }
                },
                {
                    "Put": {
                        "TableName": table,
                        "Item": {
                            "id": {"S": marker_key(ctx.job_type, ctx.idempotency_key)},
                            "counter": {"S": counter},
                            "amount": {"N": str(amount)},
                        },
                        "ConditionExpression": "attribute_not_exists(id)",
                    }
                },
            ]
        )
    except Exception as exc:
        if cancelled_only_by_condition(exc, item=1):
            return {"counter": counter, "amount": amount, "applied": False}
        raise
    return {"counter": counter, "amount": amount, "applied": True}
