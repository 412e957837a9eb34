"""The completion hook: a finished member of a batch or chain is counted, and what is due is sent.

The consumer calls :func:`finished` for a job whose envelope carries ``batch``, before the record is
acknowledged: after a success (or a duplicate's stored answer), before a letter's send, before an
unrun job's archive write. So a crash anywhere before the count leaves the record in the queue, and
its next delivery (the idempotency layer answering from the stored result) counts it then: the count
is one conditional transaction per member (:func:`tiered_jobs.contract.batches.count`), so a count already
written is not written twice, and the head is read and what is due sent on every delivery all the same.

A count that cannot be written (the table refused it) raises :class:`CountNotWritten`: the consumer
keeps the record, as it keeps one whose letter the DLQ refused.

Loaded on the first member only: a job outside any batch pays nothing for it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from random import random as _unit_random
from typing import Any

from tiered_jobs.contract import batches, transactions
from tiered_jobs.contract.envelope import Envelope
from tiered_jobs.contract.idempotency import record_id
from tiered_jobs.contract.times import iso_text


class CountNotWritten(Exception):
    """The member's count, or what its completion made due, could not be written or sent: keep the record."""


@dataclass(frozen=True)
class Counted:
    """What one member's completion did."""

    #: The count was written now (``False``: an earlier delivery wrote it, or the batch is unknown).
    counted: bool
    #: The callbacks sent (``on_complete``, ``on_success``) and the chain's next link, if any.
    fired: tuple[str, ...] = ()
    next_link: str | None = None
    #: The batch has no head: expired past its items' TTL, or opened in another stage.
    unknown: bool = False


def finished(
    dynamodb: Any,
    sqs: Any,
    table: str,
    envelope: Envelope,
    outcome: str,
    *,
    detail: str,
    now: datetime,
    retries: transactions.Retries = transactions.Retries(),
    sleep: Callable[[float], None] = time.sleep,
    random: Callable[[], float] = _unit_random,
) -> Counted:
    """Count the member ``envelope`` as ``outcome`` (``succeeded`` / ``failed``) and send what is due.

    A count cancelled by another member's on the same head (or by throttling) is tried again here,
    after a short random wait (``retries``): a large fan-out's members finishing together would
    otherwise each spend a receive of their record on the conflict."""
    assert envelope.batch is not None
    batch_id = str(envelope.batch["id"])
    member = batches.member_id(envelope.batch, record_id(envelope.type, envelope.idempotency_key))
    at, stamp = iso_text(now), now.timestamp()
    try:
        counted = batches.count(
            dynamodb,
            table,
            batch_id,
            member,
            outcome,
            detail=detail,
            at=at,
            now=stamp,
            retries=retries,
            sleep=sleep,
            random=random,
        )
        if counted is None:
            return Counted(False, unknown=True)
        item = dynamodb.get_item(**batches.read_head_request(table, batch_id)).get("Item")
        if not item:
            return Counted(counted, unknown=True)
        head = batches.Head.from_item(item)
        link = None
        if outcome == batches.SUCCEEDED and "step" in envelope.batch:
            following = batches.next_link(head, int(envelope.batch["step"]))
            if following is not None:
                following.send(sqs)  # the link's own key: a second send after a crash runs once
                link = f"{following.job_type} ({following.idempotency_key})"
        fired = batches.fire_due(head, sqs, dynamodb, table)
    except Exception as exc:  # any refusal keeps the record for its next delivery
        raise CountNotWritten(f"batch {batch_id}: {exc!r}") from exc
    return Counted(counted, tuple(fired), link)


def previous_result(dynamodb: Any, table: str, idempotency_table: str, field_value: dict[str, Any]) -> Any:
    """``ctx.previous_result()``: the stored result of the chain's link before this one (``None`` for the
    first link, a job outside a chain, or a link whose record is gone or holds none)."""
    from tiered_jobs.contract import job_ends
    from tiered_jobs.contract.idempotency import RecordAttributes

    step = field_value.get("step")
    if not step:
        return None
    item = dynamodb.get_item(**batches.read_head_request(table, str(field_value["id"]))).get("Item")
    if not item:
        return None
    head = batches.Head.from_item(item)
    if step > len(head.links):
        return None
    before = head.links[step - 1]
    record = dynamodb.get_item(
        TableName=idempotency_table,
        Key={RecordAttributes.KEY: {"S": record_id(before.job_type, before.idempotency_key)}},
        ConsistentRead=True,
    ).get("Item")
    if not record:
        return None
    return job_ends.stored_result(record.get(RecordAttributes.DATA, {}).get("S"))
