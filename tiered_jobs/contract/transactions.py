"""Cancelled DynamoDB transactions: which cancellations another try may cure, and the tries themselves.

DynamoDB cancels a whole ``TransactWriteItems`` when one of its items conflicts with another write
in flight (``TransactionConflict``: two members of a batch counting on its head at once) or its
partition is throttled. The items themselves were fine, so the same transaction is worth another
try after a short random wait: full jitter, so that writers that collided do not collide again at
the same moment. botocore retries a whole call that was throttled, never a cancelled transaction,
so that is left to the caller: here, shared by the publisher's unique locks and the batches' counts.

Each try carries a ``ClientRequestToken`` of its own. botocore sends the same token again when it
retries a call whose answer was lost, and DynamoDB answers that retry as the first for 10 minutes;
a token is never reused for another try, as DynamoDB refuses one reused with other parameters
(``IdempotentParameterMismatch``) and a cancelled try is not an answer to give again.

Standard library only: the consumer imports it in Lambda.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: Cancellation reasons worth another try: the item itself was fine, another write or the capacity was not.
RETRYABLE_CANCELLATIONS = frozenset(
    {"TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded"}
)


@dataclass(frozen=True)
class Retries:
    """How often a transaction cancelled only by conflicts or throttling is tried, and the waits between.

    Defaults: 4 tries, waits drawn from [0, 0.05 s], [0, 0.1 s], [0, 0.2 s] ("full jitter").
    """

    max_attempts: int = 4
    base_seconds: float = 0.05
    max_seconds: float = 1.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {self.max_attempts}")
        if not 0 <= self.base_seconds <= self.max_seconds:
            raise ValueError(f"need 0 <= base_seconds <= max_seconds, got {self.base_seconds} and {self.max_seconds}")

    def wait(self, attempt: int, unit_random: float) -> float:
        """Seconds to wait after failed try ``attempt`` (1-based); ``unit_random`` is in [0, 1)."""
        return float(unit_random * min(self.max_seconds, self.base_seconds * 2 ** (attempt - 1)))


def new_token() -> str:
    """A ``ClientRequestToken`` (1-36 characters)."""
    return uuid.uuid4().hex


def cancellation_reasons(error: Any) -> list[dict[str, Any]]:
    """The per-item reasons of a cancelled transaction, in its items' order (``[]`` for any other error).

    A reason keeps its ``Item`` when the item asked for it (``ReturnValuesOnConditionCheckFailure``)."""
    response = getattr(error, "response", {}) or {}
    reasons = response.get("CancellationReasons") or []
    if reasons:
        return [dict(reason) for reason in reasons]
    # Some clients put them only in the message: "[ConditionalCheckFailed, None]".
    if response.get("Error", {}).get("Code") != "TransactionCanceledException":
        return []
    found = re.search(r"\[([^\]]*)\]", str(response.get("Error", {}).get("Message", "")))
    return [{"Code": part.strip()} for part in found.group(1).split(",")] if found else []


def cancellation_codes(error: Any) -> list[str]:
    """The per-item reason codes of a cancelled transaction (``""`` for an item that was fine)."""
    return [
        "" if str(reason.get("Code") or "None") == "None" else str(reason["Code"])
        for reason in cancellation_reasons(error)
    ]


def only_transient(codes: list[str]) -> bool:
    """Whether a transaction cancelled with ``codes`` failed only on conflicts or throttling."""
    return any(code in RETRYABLE_CANCELLATIONS for code in codes) and all(
        code in RETRYABLE_CANCELLATIONS or code == "" for code in codes
    )


def transact(
    dynamodb: Any,
    request: dict[str, Any],
    *,
    retries: Retries,
    sleep: Callable[[float], None],
    random: Callable[[], float],
) -> None:
    """One ``TransactWriteItems`` (``request``: its arguments), tried again while it is cancelled only by
    conflicts or throttling; any other refusal, or the last try's, raises."""
    attempt = 0
    while True:
        attempt += 1
        try:
            dynamodb.transact_write_items(**request, ClientRequestToken=new_token())
            return
        except Exception as exc:
            if attempt >= retries.max_attempts or not only_transient(cancellation_codes(exc)):
                raise
        sleep(retries.wait(attempt, random()))
