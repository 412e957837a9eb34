"""``payments.update_balance`` (critical): add ``amount`` to an account's balance, exactly once.

Powertools idempotency already stops duplicates, but it cannot cover a crash after the write
and before its record completes. So the operation itself is idempotent too (a second line of
defence, for money must never move twice): the balance update and a per-key "applied" marker
are written in one DynamoDB transaction that fails if the marker exists. A second run of the
same key changes nothing.

Payload rules (``account_id``, a non-zero integer ``amount``; negative debits):
``functions/jobs/schemas/payments.update_balance.schema.json``.
"""

from __future__ import annotations

from typing import Any

from tiered_jobs.runtime import JobContext, cancelled_only_by_condition, job

#: The table of balances, as ``cdk.json`` declares it under ``resources`` (bound to this job type).
TABLE = "accounts"
#: Marker items live in the accounts table under this key prefix.
MARKER_PREFIX = "applied#"


def marker_key(job_type: str, idempotency_key: str) -> str:
    return f"{MARKER_PREFIX}{job_type}#{idempotency_key}"


@job("payments.update_balance")
def update_balance(payload: dict[str, Any], ctx: JobContext) -> dict[str, Any]:
    table = ctx.resource(TABLE)
    account_id, amount = payload["account_id"], payload["amount"]
    marker = marker_key(ctx.job_type, ctx.idempotency_key)
    dynamodb = ctx.client("dynamodb")
    try:
        dynamodb.transact_write_items(
            TransactItems=[
                {
                    "Update": {
                        "TableName": table,
                        "Key": {"account_id": {"S": account_id}},
                        "UpdateExpression": "ADD balance :amount",
                        "ExpressionAttributeValues": {":amount": {"N": str(amount)}},
                    }
                },
                {
                    "Put": {
                        "TableName": table,
                        "Item": {
                            "account_id": {"S": marker},
                            "target_account_id": {"S": account_id},
                            "amount": {"N": str(amount)},
                        },
                        "ConditionExpression": "attribute_not_exists(account_id)",
                    }
                },
            ]
        )
    except Exception as exc:
        if cancelled_only_by_condition(exc, item=1):
            ctx.logger.info("payment already applied; nothing to do", extra={"marker": marker})
            return {"account_id": account_id, "amount": amount, "applied": False, "already_applied": True}
        raise
    return {"account_id": account_id, "amount": amount, "applied": True}
