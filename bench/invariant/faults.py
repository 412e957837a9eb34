"""The faults AWS has and moto lacks, on the composed run's real boto3 clients, with a seeded probability.

Injected through botocore's own events (``tests/support/aws_faults.py``), under the clients the
consumers, the publisher and the replays are given, never in the code under test:

- a **lost answer** on every mutating call (``MUTATING``): the request is applied, its answer lost (a
  read timeout, a reset, a 5xx after the write), and botocore's own retry sends the same request
  again, same body, same idempotency token;
- a **transaction conflict** on a batch member's count (``TransactWriteItems`` on the batches table):
  DynamoDB cancels it with ``TransactionConflict`` before applying anything, as when another
  transaction holds the same batch's head.

moto answers a retried ``TransactWriteItems`` by applying it again (its conditions then cancel it),
where DynamoDB answers a token it applied in the last 10 minutes as the first: the code under test
must hold under both, and moto shows the harder one.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

from tests.support.aws_faults import conflict_response, lose_answers, refuse

from .plan import FaultPlan

#: The mutating operations of the services the runtime, the publisher and the replay write to (the
#: reads, which change nothing, lose nothing by a lost answer).
MUTATING = {
    "sqs": (
        "SendMessage",
        "SendMessageBatch",
        "DeleteMessage",
        "DeleteMessageBatch",
        "ChangeMessageVisibility",
        "ChangeMessageVisibilityBatch",
    ),
    "dynamodb": ("PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"),
    "s3": ("PutObject", "DeleteObject", "CopyObject"),
}
#: Enough for any run: each injector acts by its roll, not by a count.
_UNBOUNDED = 10**12


def lose_answers_of(client: Any, plan: FaultPlan, stack: ExitStack) -> Any:
    """Lose the answers of ``client``'s applied mutating calls with ``plan.lost_answer``'s probability, until
    ``stack`` closes; counted per operation in ``plan.injected`` (``lost_answer:<service>.<Operation>``)."""
    service = client.meta.service_model.service_name
    for operation in MUTATING.get(service, ()):
        when = _roll(plan, f"{service}.{operation}")
        stack.enter_context(lose_answers(client, operation, times=_UNBOUNDED, when=when))
    return client


def conflict_batch_counts(client: Any, plan: FaultPlan, batch_table: Callable[[], str], stack: ExitStack) -> Any:
    """Cancel a batch member's count on ``client`` with ``TransactionConflict`` (``plan.batch_count_conflict``),
    until ``stack`` closes; counted as ``batch_count_conflict``. ``batch_table()`` names the batches table."""

    def answer(params: dict[str, Any]) -> Any:
        items = params.get("TransactItems", [])
        writes = any(op.get("TableName") == batch_table() for item in items for op in item.values())
        if writes and plan.roll("batch_count_conflict", plan.batch_count_conflict):
            return conflict_response(len(items))
        return None

    stack.enter_context(refuse(client, "TransactWriteItems", answer, times=_UNBOUNDED))
    return client


def _roll(plan: FaultPlan, name: str) -> Callable[[dict[str, Any]], bool]:
    def when(request: dict[str, Any]) -> bool:
        return plan.roll(f"lost_answer:{name}", plan.lost_answer)

    return when
