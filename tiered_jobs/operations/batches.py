"""A batch or chain as an operator sees it (``tiered-jobs batch ID``, the console's batch page).

One ``Query`` of the batch's partition in the stage's batches table: its head (counters, total,
sealed, the callbacks sent) and one item per finished member (its outcome, and why it failed). A
chain's links are listed in order with the link each is waiting on, so a stopped chain shows its
failed link and the reason.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..contract import batches
from ..contract.errors import USAGE
from ..stage.target import Target
from .errors import OperatorError


@dataclass(frozen=True)
class Member:
    """A finished member: its id (a chain's ``step#n``, else its idempotency record's id) and outcome."""

    member: str
    outcome: str
    detail: str
    at: str
    #: Why it had failed before a replay made it succeed (empty if it never failed).
    failed_before: str = ""


@dataclass(frozen=True)
class BatchView:
    """A batch or chain as an operator reads it: its head, its finished members and a chain's links."""

    head: batches.Head
    members: list[Member]
    #: A chain's links in order: ``(step, type, key, outcome)``; outcome ``pending`` until it finished.
    links: list[tuple[int, str, str, str]] = field(default_factory=list)

    @property
    def failures(self) -> list[Member]:
        return [member for member in self.members if member.outcome == batches.FAILED]

    def to_dict(self) -> dict[str, Any]:
        head = self.head
        return {
            "batch": head.batch_id,
            "kind": head.kind,
            "state": head.state,
            "sealed": head.sealed,
            "total": head.total,
            "done": head.done,
            "succeeded": head.succeeded,
            "failed": head.failed,
            "created_at": head.created_at,
            "callbacks": {name: message.job_type for name, message in head.callbacks.items()},
            "fired": sorted(head.fired),
            "links": [{"step": s, "type": t, "key": k, "outcome": o} for s, t, k, o in self.links],
            "failures": [member.__dict__ for member in self.failures],
        }


def read_batch(target: Target, batch_id: str, *, client: Any = None) -> BatchView:
    """The batch (or chain) ``batch_id`` of the target's stage; ``OperatorError`` when there is none."""
    if batches.field_problems({"id": batch_id}):
        raise OperatorError(f"{batch_id!r} is not a batch id (1-64 letters, digits, '-' or '_')", USAGE)
    table = target.deployment().batch_table_name
    if not table:
        raise OperatorError(
            "this stage has no batches table: deploy a stack version with batches (the BatchTableName output)"
        )
    return read_from(client or target.client("dynamodb"), table, batch_id)


def read_from(dynamodb: Any, table: str, batch_id: str) -> BatchView:
    items: list[dict[str, Any]] = []
    request: dict[str, Any] = {
        "TableName": table,
        "KeyConditionExpression": "#k = :id",
        "ExpressionAttributeNames": {"#k": batches.KEY},
        "ExpressionAttributeValues": {":id": {"S": batch_id}},
        "ConsistentRead": True,
    }
    while True:
        page = dynamodb.query(**request)
        items += page.get("Items", [])
        if "LastEvaluatedKey" not in page:
            break
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    head_items = [item for item in items if item[batches.MEMBER]["S"] == batches.HEAD]
    if not head_items:
        raise OperatorError(f"no batch or chain {batch_id!r} in this stage (or its 30 days have passed)", USAGE)
    head = batches.Head.from_item(head_items[0])
    members = [
        Member(
            item[batches.MEMBER]["S"],
            item.get("outcome", {}).get("S", ""),
            item.get("detail", {}).get("S", ""),
            item.get("at", {}).get("S", ""),
            item.get("failed_before", {}).get("S", ""),
        )
        for item in items
        if item[batches.MEMBER]["S"] != batches.HEAD
    ]
    outcomes = {member.member: member.outcome for member in members}
    links = [
        (step, link.job_type, link.idempotency_key, outcomes.get(f"step#{step}", "pending"))
        for step, link in enumerate(head.links)
    ]
    return BatchView(head, members, links)


def describe(view: BatchView) -> list[str]:
    """The lines ``tiered-jobs batch`` prints (the console shows the same)."""
    head = view.head
    kind = "chain" if head.kind == batches.CHAIN else "batch"
    total = str(head.total) if head.sealed else "? (not sealed)"
    lines = [
        f"{kind} {head.batch_id}: {head.state}",
        f"  members: {total} total, {head.done} finished: {head.succeeded} succeeded, {head.failed} failed",
        f"  opened: {head.created_at}",
    ]
    for name in batches.CALLBACKS:
        if name in head.callbacks:
            sent = "sent" if name in head.fired else "not sent"
            lines.append(f"  {name}: {head.callbacks[name].job_type} ({sent})")
    for step, job_type, key, outcome in view.links:
        lines.append(f"  link {step}: {job_type} {json.dumps(key)}: {outcome}")
    for member in view.failures:
        lines.append(f"  failed {member.member}: {member.detail}")
    if not head.sealed:
        lines.append("  not sealed: its with block has not ended (or ended by an exception), so no callback fires")
    return lines
