"""Unique jobs (``publish(..., unique_for=seconds)``): the lock the publisher takes and the consumer releases.

One item per job type + idempotency key in the stage's unique-jobs table. The publisher writes it
with one conditional ``PutItem`` (or one ``TransactWriteItems`` per group of a batch) that succeeds
only when no lock exists or the one there has passed its window; the job's envelope then carries
the lock's token (``unique_lock``). The consumer deletes the item when the job finishes (success or
letter), on the condition that it still holds that token: a lock a later publish took after the
window ended is not the finished job's to release.

The window's end is checked by the condition itself, never left to DynamoDB's TTL, which deletes
expired items only some time later: TTL only keeps the table from growing.

Standard library only: the consumer imports it in Lambda.
"""

from __future__ import annotations

import re
import uuid
from datetime import datetime, timezone
from typing import Any

from .times import iso_text

#: The table's partition key: ``<job type>#<idempotency key>`` (a type never holds ``#``).
KEY_ATTRIBUTE = "lock"
#: The token of the publish that holds the lock (the envelope's ``unique_lock``).
TOKEN_ATTRIBUTE = "token"
#: Epoch seconds when the window ends: the condition compares it, and it is the table's TTL attribute.
EXPIRES_ATTRIBUTE = "expires_at"
#: The same moment as text, for people reading the item (``tiered-jobs job``).
UNTIL_ATTRIBUTE = "until"
TIER_ATTRIBUTE = "tier"

#: A token: what the envelope's ``unique_lock`` may hold (the publisher writes 32 hex characters).
TOKEN_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
#: The longest window: a lock longer than 30 days is far more likely seconds mistaken for
#: milliseconds than intended, and a publisher that dies between its lock and its send holds it that long.
MAX_WINDOW_SECONDS = 30 * 86_400

#: Taking a lock: none there, or the one there has passed its window (TTL deletes it only later).
ACQUIRE_CONDITION = "attribute_not_exists(#k) OR #e <= :now"
#: Releasing a lock: only the one this job's publish took.
RELEASE_CONDITION = "#t = :token"


def lock_key(job_type: str, idempotency_key: str) -> str:
    return f"{job_type}#{idempotency_key}"


def new_token() -> str:
    return uuid.uuid4().hex


def token_problems(token: Any) -> list[str]:
    """Why ``token`` cannot be an envelope's ``unique_lock`` (an empty list when it can)."""
    if isinstance(token, str) and TOKEN_PATTERN.fullmatch(token):
        return []
    shown = token[:80] if isinstance(token, str) else token
    return [f"'unique_lock' must be 1-64 letters, digits, '-' or '_', got {shown!r}"]


def lock_item(job_type: str, idempotency_key: str, token: str, until: datetime, tier: str) -> dict[str, Any]:
    """The lock's item, in DynamoDB's attribute-value form."""
    return {
        KEY_ATTRIBUTE: {"S": lock_key(job_type, idempotency_key)},
        TOKEN_ATTRIBUTE: {"S": token},
        EXPIRES_ATTRIBUTE: {"N": str(window_end_seconds(until))},
        UNTIL_ATTRIBUTE: {"S": iso_text(until)},
        TIER_ATTRIBUTE: {"S": tier},
    }


def acquire_expression(now: datetime) -> dict[str, Any]:
    """The condition arguments of a lock's ``Put``."""
    return {
        "ConditionExpression": ACQUIRE_CONDITION,
        "ExpressionAttributeNames": {"#k": KEY_ATTRIBUTE, "#e": EXPIRES_ATTRIBUTE},
        "ExpressionAttributeValues": {":now": {"N": str(int(now.timestamp()))}},
    }


def release_request(table: str, job_type: str, idempotency_key: str, token: str) -> dict[str, Any]:
    """The arguments of the conditional ``DeleteItem`` that releases this publish's lock; refused, the lock
    there comes back (none: the lock is gone already, as after a retry of a delete whose answer was lost)."""
    return {
        "TableName": table,
        "Key": {KEY_ATTRIBUTE: {"S": lock_key(job_type, idempotency_key)}},
        "ConditionExpression": RELEASE_CONDITION,
        "ExpressionAttributeNames": {"#t": TOKEN_ATTRIBUTE},
        "ExpressionAttributeValues": {":token": {"S": token}},
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }


def window_end_seconds(until: datetime) -> int:
    """Epoch seconds of the window's end, rounded up: a lock never ends before the window asked for."""
    stamp = until.timestamp()
    return int(stamp) + (0 if stamp == int(stamp) else 1)


def holds_token(item: dict[str, Any] | None, token: str) -> bool:
    """Whether the lock in ``item`` (attribute-value form, as a refused write gives it back) is ``token``'s.

    A write whose answer was lost is sent again by botocore: its condition then fails against the
    lock it wrote itself, and this says the lock is taken, not held by another publish."""
    return item is not None and item.get(TOKEN_ATTRIBUTE, {}).get("S") == token


def held_until(item: dict[str, Any] | None, now: datetime) -> datetime | None:
    """When the lock in ``item`` (attribute-value form) ends; ``None`` when there is none or it has ended."""
    if not item:
        return None
    try:
        end = int(item[EXPIRES_ATTRIBUTE]["N"])
    except (KeyError, TypeError, ValueError):
        return None
    if end <= now.timestamp():
        return None
    return datetime.fromtimestamp(end, timezone.utc)
