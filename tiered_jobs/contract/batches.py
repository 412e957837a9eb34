"""Batches and chains: the stage's batches table, the envelope's ``batch`` field and the one completion hook.

A batch (``publisher.batch(on_success=..., on_complete=...)``) and a chain (``publisher.chain(a, b, c)``)
are one item each in the stage's batches table, partition key :data:`KEY` (the batch's id), sort key
:data:`MEMBER` (:data:`HEAD` for the batch's own item). The head holds the counters (``done``,
``succeeded``, ``failed``), ``total`` and ``sealed`` (the publisher sets both when the ``with`` block
exits), the callbacks as ready-to-send messages, a chain's links, and which callbacks have been sent
(``fired``). Every member that finishes writes one ``TransactWriteItems``: its own marker item (sort key
its member id), on the condition that it has none yet, and the head's counters. So a member's count is
written once however often its completion is retried, and a batch holds any number of members (no
list of them grows in the head: DynamoDB's 400 KB item limit bounds its callbacks and a chain's links).
A count cancelled by another member's on the same head, or by throttling, is tried again
(:mod:`tiered_jobs.contract.transactions`); the head and each marker keep the token of the write
that made them, so a write whose answer was lost knows its own item on botocore's retry.

The head is read back (one consistent ``GetItem``) after every member's write, and whoever sees the
batch sealed and finished sends the callbacks not yet marked fired (:func:`due`), then marks them. A
crash between the send and the mark, or two members finishing at once, sends a callback twice: its
idempotency key is the batch's id, so it runs once. The publisher makes the same check when it seals,
for members that finished before the seal.

Paths (docs/workflows.md has the table): a succeeded member counts ``succeeded``; a dead-lettered,
expired or cancelled one counts ``failed`` (its marker keeps why); a member counted failed that later
succeeds (a replayed letter) moves its count from failed to succeeded, once (a second conditional
transaction); retries count nothing until the member finishes.

Standard library only: the consumer imports it in Lambda, the publisher and the operator tools too.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from . import transactions

#: The table's partition key: the batch's (or chain's) id.
KEY = "batch"
#: The table's sort key: :data:`HEAD` for the batch's own item, a member id for each finished member.
MEMBER = "member"
HEAD = "#"
#: Epoch seconds after which DynamoDB's TTL removes an item (the table's TTL attribute).
EXPIRES = "expires"
#: How long a batch's items are kept after it is opened: longer than any retry schedule and DLQ
#: retention, so a letter replayed late still finds its batch.
TTL_SECONDS = 30 * 86_400

BATCH = "batch"
CHAIN = "chain"
SUCCEEDED = "succeeded"
FAILED = "failed"
ON_SUCCESS = "on_success"
ON_COMPLETE = "on_complete"
#: The order callbacks are sent in when both are due at once (Sidekiq's order: complete, then success).
CALLBACKS = (ON_COMPLETE, ON_SUCCESS)

#: A batch id: what the envelope's ``batch.id`` may hold (the publisher writes 32 hex characters).
ID_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
#: The most links one chain holds: their messages live in its head item (DynamoDB's 400 KB).
MAX_CHAIN_LINKS = 50
#: The bytes of all a chain's link and callback messages together, leaving the head item room.
MAX_HEAD_MESSAGE_BYTES = 300 * 1024
#: A member's failure as its marker keeps it (what ``tiered-jobs batch`` shows).
MAX_DETAIL_CHARS = 500
#: The head's token of the publish that opened it, and a marker's of the count that wrote it: a write
#: whose answer was lost meets its own item on botocore's retry, and tells it by this token.
TOKEN = "token"


def new_id() -> str:
    return uuid.uuid4().hex


def field_problems(value: Any) -> list[str]:
    """Why ``value`` cannot be an envelope's ``batch`` field (an empty list when it can).

    ``{"id": "<batch id>"}`` for a batch's member; ``{"id": "<chain id>", "step": n}`` for a chain's link n.
    """
    if not isinstance(value, dict):
        return [f"'batch' must be an object {{'id': ..., 'step': ...}}, got {type(value).__name__}"]
    problems = []
    unknown = sorted(set(value) - {"id", "step"})
    if unknown:
        problems.append(f"'batch' has unknown field(s) {', '.join(map(repr, unknown))}; allowed: 'id', 'step'")
    batch_id = value.get("id")
    if not isinstance(batch_id, str) or not ID_PATTERN.fullmatch(batch_id):
        shown = batch_id[:80] if isinstance(batch_id, str) else batch_id
        problems.append(f"'batch.id' must be 1-64 letters, digits, '-' or '_', got {shown!r}")
    if "step" in value:
        step = value["step"]
        if isinstance(step, bool) or not isinstance(step, int) or not 0 <= step < MAX_CHAIN_LINKS:
            problems.append(f"'batch.step' must be an integer 0-{MAX_CHAIN_LINKS - 1}, got {step!r}")
    return problems


def member_id(field_value: dict[str, Any], record_id: str) -> str:
    """A member's sort key: a chain link's step (``step#n``), else its idempotency record's id."""
    step = field_value.get("step")
    return f"step#{step}" if step is not None else record_id


# -- what a callback or link is ------------------------------------------------------------------


@dataclass(frozen=True)
class Message:
    """A job ready to send: its queue, its envelope's JSON and its tenant (validated by the publisher)."""

    queue_url: str
    body: str
    tenant: str | None = None
    job_type: str = ""
    idempotency_key: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "queue_url": self.queue_url,
            "body": self.body,
            "tenant": self.tenant,
            "type": self.job_type,
            "idempotency_key": self.idempotency_key,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Message:
        return cls(
            data["queue_url"], data["body"], data.get("tenant"), data.get("type", ""), data.get("idempotency_key", "")
        )

    def send(self, sqs: Any) -> str:
        """One ``SendMessage``; the message id (a refusal raises, for the caller to keep its record)."""
        request: dict[str, Any] = {"QueueUrl": self.queue_url, "MessageBody": self.body}
        if self.tenant is not None:
            request["MessageGroupId"] = self.tenant
        return str(sqs.send_message(**request)["MessageId"])


# -- the head ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Head:
    """The batch's own item, read."""

    batch_id: str
    kind: str
    sealed: bool
    total: int
    done: int
    succeeded: int
    failed: int
    created_at: str
    callbacks: dict[str, Message] = field(default_factory=dict)
    fired: frozenset[str] = frozenset()
    links: tuple[Message, ...] = ()

    @property
    def finished(self) -> bool:
        return self.sealed and self.done >= self.total

    @property
    def state(self) -> str:
        """``open`` (not sealed), ``running``, ``succeeded`` or ``failed`` (finished with a failure);
        a chain with a failed link is ``stopped`` at once."""
        if not self.sealed:
            return "open"
        if self.kind == CHAIN and self.failed:
            return "stopped"
        if not self.finished:
            return "running"
        return SUCCEEDED if self.succeeded >= self.total else FAILED

    @classmethod
    def from_item(cls, item: dict[str, Any]) -> Head:
        def number(name: str) -> int:
            return int(item.get(name, {}).get("N", "0"))

        callbacks = {name: Message.from_dict(json.loads(item[name]["S"])) for name in CALLBACKS if name in item}
        links = tuple(Message.from_dict(link) for link in json.loads(item["links"]["S"])) if "links" in item else ()
        return cls(
            batch_id=item[KEY]["S"],
            kind=item.get("kind", {}).get("S", BATCH),
            sealed=bool(item.get("sealed", {}).get("BOOL", False)),
            total=number("total"),
            done=number("done"),
            succeeded=number(SUCCEEDED),
            failed=number(FAILED),
            created_at=item.get("created_at", {}).get("S", ""),
            callbacks=callbacks,
            fired=frozenset(item.get("fired", {}).get("SS", [])),
            links=links,
        )


def head_item(
    batch_id: str,
    kind: str,
    *,
    created_at: str,
    now: float,
    callbacks: dict[str, Message],
    links: list[Message] | None = None,
    token: str | None = None,
) -> dict[str, Any]:
    """A new head (DynamoDB's typed form). A chain is sealed at once: its links are known. ``token``:
    the opening publish's (:func:`holds_token`)."""
    item: dict[str, Any] = {
        KEY: {"S": batch_id},
        MEMBER: {"S": HEAD},
        "kind": {"S": kind},
        "sealed": {"BOOL": links is not None},
        "done": {"N": "0"},
        SUCCEEDED: {"N": "0"},
        FAILED: {"N": "0"},
        "created_at": {"S": created_at},
        EXPIRES: {"N": str(int(now) + TTL_SECONDS)},
    }
    for name, message in callbacks.items():
        item[name] = {"S": json.dumps(message.to_dict(), separators=(",", ":"))}
    if token is not None:
        item[TOKEN] = {"S": token}
    if links is not None:
        item["total"] = {"N": str(len(links))}
        item["links"] = {"S": json.dumps([link.to_dict() for link in links], separators=(",", ":"))}
    return item


def create_request(table: str, item: dict[str, Any]) -> dict[str, Any]:
    """The conditional ``PutItem`` of a new head: an id in use is refused, and the head there given back
    (its token tells this publish's own head, written before a lost answer, from another batch's)."""
    return {
        "TableName": table,
        "Item": item,
        "ConditionExpression": "attribute_not_exists(#k)",
        "ExpressionAttributeNames": {"#k": KEY},
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }


def holds_token(item: dict[str, Any] | None, token: str) -> bool:
    """Whether ``item`` (DynamoDB's typed form, as a refused write gives it back) was written with ``token``."""
    return item is not None and item.get(TOKEN, {}).get("S") == token


def stored_bytes(messages: Iterable[Message]) -> int:
    """The bytes ``messages`` take in the head item, as :func:`head_item` stores them (a body's JSON is
    escaped again inside the stored JSON: its quotes count twice)."""
    return sum(len(json.dumps(message.to_dict(), separators=(",", ":")).encode("utf-8")) for message in messages)


def seal_request(table: str, batch_id: str, total: int) -> dict[str, Any]:
    """The ``UpdateItem`` that seals a batch with its total, returning the head as it then is; refused, the
    head as it is (a seal whose answer was lost finds it sealed with this total: sealed)."""
    return {
        "TableName": table,
        "Key": head_key(batch_id),
        "UpdateExpression": "SET #sealed = :true, #total = :total",
        "ConditionExpression": "attribute_exists(#k) AND #sealed = :false",
        "ExpressionAttributeNames": {"#sealed": "sealed", "#total": "total", "#k": KEY},
        "ExpressionAttributeValues": {":true": {"BOOL": True}, ":false": {"BOOL": False}, ":total": {"N": str(total)}},
        "ReturnValues": "ALL_NEW",
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }


def head_key(batch_id: str) -> dict[str, Any]:
    return {KEY: {"S": batch_id}, MEMBER: {"S": HEAD}}


def read_head_request(table: str, batch_id: str) -> dict[str, Any]:
    return {"TableName": table, "Key": head_key(batch_id), "ConsistentRead": True}


# -- one member's completion ---------------------------------------------------------------------


def count_request(
    table: str, batch_id: str, member: str, outcome: str, *, detail: str, at: str, now: float, token: str = ""
) -> dict[str, Any]:
    """The ``TransactWriteItems`` of a member's first completion: its marker (only if it has none; the
    marker there is given back) and the head's counters (only if the head exists). ``token``: this
    count's, kept in the marker (:func:`holds_token`)."""
    marker = {
        KEY: {"S": batch_id},
        MEMBER: {"S": member},
        "outcome": {"S": outcome},
        "detail": {"S": detail[:MAX_DETAIL_CHARS]},
        "at": {"S": at},
        EXPIRES: {"N": str(int(now) + TTL_SECONDS)},
    }
    if token:
        marker[TOKEN] = {"S": token}
    return {
        "TransactItems": [
            {
                "Put": {
                    "TableName": table,
                    "Item": marker,
                    "ConditionExpression": "attribute_not_exists(#k)",
                    "ExpressionAttributeNames": {"#k": KEY},
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            },
            {
                "Update": {
                    "TableName": table,
                    "Key": head_key(batch_id),
                    "UpdateExpression": "ADD #done :one, #outcome :one",
                    "ConditionExpression": "attribute_exists(#k)",
                    "ExpressionAttributeNames": {"#done": "done", "#outcome": outcome, "#k": KEY},
                    "ExpressionAttributeValues": {":one": {"N": "1"}},
                }
            },
        ]
    }


def recount_request(table: str, batch_id: str, member: str, *, at: str) -> dict[str, Any]:
    """The ``TransactWriteItems`` that moves a member counted failed to succeeded (a replayed letter
    that succeeded): only while its marker still says failed, so it moves once."""
    return {
        "TransactItems": [
            {
                "Update": {
                    "TableName": table,
                    "Key": {KEY: {"S": batch_id}, MEMBER: {"S": member}},
                    "UpdateExpression": "SET #outcome = :succeeded, #at = :at, #before = #detail, #detail = :empty",
                    "ConditionExpression": "#outcome = :failed",
                    "ExpressionAttributeNames": {
                        "#outcome": "outcome",
                        "#at": "at",
                        "#detail": "detail",
                        "#before": "failed_before",
                    },
                    "ExpressionAttributeValues": {
                        ":succeeded": {"S": SUCCEEDED},
                        ":failed": {"S": FAILED},
                        ":at": {"S": at},
                        ":empty": {"S": ""},
                    },
                }
            },
            {
                "Update": {
                    "TableName": table,
                    "Key": head_key(batch_id),
                    "UpdateExpression": "ADD #succeeded :one, #failed :minus_one",
                    "ConditionExpression": "attribute_exists(#k)",
                    "ExpressionAttributeNames": {"#succeeded": SUCCEEDED, "#failed": FAILED, "#k": KEY},
                    "ExpressionAttributeValues": {":one": {"N": "1"}, ":minus_one": {"N": "-1"}},
                }
            },
        ]
    }


def cancellation_codes(error: Any) -> list[str]:
    """The per-item reasons of a cancelled transaction (``""`` for an item that was fine)."""
    return transactions.cancellation_codes(error)


def count(
    dynamodb: Any,
    table: str,
    batch_id: str,
    member: str,
    outcome: str,
    *,
    detail: str,
    at: str,
    now: float,
    retries: transactions.Retries,
    sleep: Callable[[float], None],
    random: Callable[[], float],
) -> bool | None:
    """Write a member's count once; ``True`` when written now, ``False`` when an earlier completion did,
    ``None`` when the batch has no head. A transaction cancelled by a conflict with another member's
    count on the same head, or by throttling, is tried again (:func:`transactions.transact`)."""
    token = transactions.new_token()
    request = count_request(table, batch_id, member, outcome, detail=detail, at=at, now=now, token=token)
    try:
        transactions.transact(dynamodb, request, retries=retries, sleep=sleep, random=random)
        return True
    except Exception as exc:
        reasons = transactions.cancellation_reasons(exc)
        codes = transactions.cancellation_codes(exc)
        if not codes:
            raise
        if len(codes) > 1 and codes[1] == "ConditionalCheckFailed":
            return None  # no head
        if codes[0] != "ConditionalCheckFailed":
            raise
        if holds_token(reasons[0].get("Item"), token):
            return True  # its own marker: written, its answer lost, and the retry applied again
    if outcome != SUCCEEDED:
        return False  # counted already (as failed, or it succeeded before: a success is never undone)
    try:  # counted failed before, and now succeeded: a replayed letter
        transactions.transact(
            dynamodb, recount_request(table, batch_id, member, at=at), retries=retries, sleep=sleep, random=random
        )
        return True
    except Exception as exc:
        if "ConditionalCheckFailed" in transactions.cancellation_codes(exc):
            return False  # counted as succeeded already
        raise


# -- what is due ---------------------------------------------------------------------------------


def due(head: Head) -> list[str]:
    """The callbacks to send now, in order: ``on_complete`` once every member finished, ``on_success``
    once every member succeeded (also later, when a failed member's replay succeeds); never twice."""
    if not head.sealed or head.kind == CHAIN and head.failed:
        return []
    names = []
    if head.done >= head.total and ON_COMPLETE in head.callbacks:
        names.append(ON_COMPLETE)
    if head.succeeded >= head.total and ON_SUCCESS in head.callbacks:
        names.append(ON_SUCCESS)
    return [name for name in names if name not in head.fired]


def next_link(head: Head, step: int) -> Message | None:
    """The chain's link after ``step`` once links ``0..step`` have all succeeded, else ``None``."""
    if head.kind != CHAIN or head.failed or step + 1 >= len(head.links) or head.succeeded != step + 1:
        return None
    return head.links[step + 1]


def fired_request(table: str, batch_id: str, names: list[str]) -> dict[str, Any]:
    """The ``UpdateItem`` that marks callbacks sent (what ``tiered-jobs batch`` shows, and :func:`due` skips)."""
    return {
        "TableName": table,
        "Key": head_key(batch_id),
        "UpdateExpression": "ADD #fired :names",
        "ExpressionAttributeNames": {"#fired": "fired"},
        "ExpressionAttributeValues": {":names": {"SS": names}},
    }


def fire_due(head: Head, sqs: Any, dynamodb: Any, table: str) -> list[str]:
    """Send the callbacks :func:`due` names, then mark them; the names sent. A refused send raises
    before anything is marked, so the caller's retry sends it again (its key makes that run once)."""
    names = due(head)
    for name in names:
        head.callbacks[name].send(sqs)
    if names:
        dynamodb.update_item(**fired_request(table, head.batch_id, names))
    return names
