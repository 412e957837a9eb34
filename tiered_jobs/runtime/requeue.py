"""Sending a job back to its own queue as a fresh copy: how a held or deferred record gives its receive back.

SQS counts every receive of a message toward the queue's redrive (``maxReceiveCount``), and the
consumer cannot give a receive back: a record it returns unstarted (a batch item failure) has
spent one, and on its last receive SQS itself would move it to the DLQ, with no reason and without
its last attempt. So a record the consumer decides not to run now -- held by the rate limit,
deferred by the time budget -- is sent again as a **copy** (a new message: receive count 1) with
a delay, and the original is acknowledged. The copy carries what the job had
(:mod:`tiered_jobs.runtime.received`): the attempts it spent, when it entered the queue and when
it first failed, as ``TieredJobs.*`` attributes; the receive that found it held or deferred ran
nothing, so it is not one of its attempts. A job the rate limit held with a token reserved for
later carries that turn too, so its copy runs then without a second claim.

A copy is the job, nothing of its history as a letter: the publisher's attributes are kept, the
``DeadLetter.*``, ``Replay.*`` and old ``TieredJobs.*`` ones are not, and its ``MessageGroupId``
(a fair queue's tenant) comes from the envelope's ``tenant``, since Lambda does not always
deliver the group id of a standard queue's message.

Copies are packed into ``SendMessageBatch`` calls by SQS's rules (10 entries, 1 MiB in all,
counting every attribute: :func:`tiered_jobs.contract.sqs_limits.pack_batches`). The publisher
leaves room for these attributes (``RUNTIME_ATTRIBUTES_HEADROOM_BYTES``), so a job it sent always
has a copy that fits.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from tiered_jobs.contract import carry
from tiered_jobs.contract.names import (
    SQS_MAX_MESSAGE_ATTRIBUTES,
    SQS_MAX_MESSAGE_BYTES,
    Attributes,
)
from tiered_jobs.contract.sqs_limits import message_size, pack_batches
from tiered_jobs.contract.steps import step_of
from tiered_jobs.contract.times import iso_text
from tiered_jobs.contract.trace_header import system_attributes

from .received import Received


class Copy:
    """The copy of one record to send, and when it should become visible (a plain class: a dataclass's
    generated methods cost a millisecond of every cold start each)."""

    __slots__ = ("record", "delay_seconds", "turn", "step", "enqueued_at")

    def __init__(
        self,
        record: Received,
        delay_seconds: int,
        turn: str | None = None,
        step: int | None = None,
        enqueued_at: datetime | None = None,
    ):
        self.record = record
        self.delay_seconds = delay_seconds
        #: A held job's reserved turn (``TieredJobs.Turn``): the copy runs then without claiming again.
        self.turn = turn
        #: The job's step (``TieredJobs.Step``): a continuation's next one; ``None``: the record's own, carried.
        self.step = step
        #: When this copy enters the queue as a new run of the job's time (a continuation: now); ``None``: carried.
        self.enqueued_at = enqueued_at

    def attributes(self) -> dict[str, dict[str, Any]] | None:
        """The copy's attributes; ``None`` when SQS's 10 attributes leave no room for the attempts."""
        record = self.record
        first_failed = record.carried.first_failed_at or (
            record.first_received_at if record.receive_count > 1 else None
        )
        return carry.write(
            carry.kept(record.api_attributes()),
            # The receive that held or deferred the job ran nothing: not one of its attempts.
            prior_attempts=record.attempt - 1,
            enqueued_at=iso_text(self.enqueued_at or record.enqueued_at),
            first_failed_at=iso_text(first_failed) if first_failed is not None else None,
            step=self.step if self.step is not None else step_of(record.attributes),
            turn=self.turn,
        )

    def entry(self, entry_id: str) -> dict[str, Any] | None:
        """The ``SendMessageBatch`` entry, or ``None`` when no copy SQS would accept can be made."""
        attributes = self.attributes()
        if attributes is None:
            return None
        entry: dict[str, Any] = {
            "Id": entry_id,
            "MessageBody": self.record.body,
            "DelaySeconds": self.delay_seconds,
            "MessageAttributes": attributes,
        }
        if self.record.tenant:
            entry["MessageGroupId"] = self.record.tenant
        if self.record.trace_header:
            # The copy's run links to the publishing request as the original's did (outside the size).
            entry["MessageSystemAttributes"] = system_attributes(self.record.trace_header)
        return entry


def requeue(sqs: Any, queue_url: str, copies: Sequence[Copy]) -> dict[str, str | None]:
    """Send every copy; returns ``{message id: None}`` for those SQS accepted, else the reason it did not.

    Never raises: a refused copy only means its record stays in the queue (the caller decides).
    """
    outcome: dict[str, str | None] = {}
    entries: list[tuple[Copy, dict[str, Any]]] = []
    for index, copy in enumerate(copies):
        entry = copy.entry(str(index))
        if entry is None:
            outcome[copy.record.message_id] = (
                f"no room for the {Attributes.PRIOR_ATTEMPTS} attribute: the "
                f"message has {SQS_MAX_MESSAGE_ATTRIBUTES} attributes already"
            )
            continue
        size = message_size(entry["MessageBody"], entry["MessageAttributes"])
        if size > SQS_MAX_MESSAGE_BYTES:
            outcome[copy.record.message_id] = (
                f"the copy would be {size} bytes, over SQS's {SQS_MAX_MESSAGE_BYTES}-byte limit"
            )
            continue
        entries.append((copy, entry))
    for batch in pack_batches(entries, lambda item: message_size(item[1]["MessageBody"], item[1]["MessageAttributes"])):
        by_id = {entry["Id"]: copy for copy, entry in batch}
        try:
            response = sqs.send_message_batch(QueueUrl=queue_url, Entries=[entry for _, entry in batch])
        except Exception as exc:  # noqa: BLE001 -- every copy of this call stays where it is, reported
            outcome.update({copy.record.message_id: repr(exc) for copy in by_id.values()})
            continue
        for ok in response.get("Successful", []):
            if ok.get("Id") in by_id:
                outcome[by_id.pop(ok["Id"]).record.message_id] = None
        for failed in response.get("Failed", []):
            if failed.get("Id") in by_id:
                copy = by_id.pop(failed["Id"])
                outcome[copy.record.message_id] = f"{failed.get('Code', '')}: {failed.get('Message', '')}".strip()
        for copy in by_id.values():  # neither Successful nor Failed: never assume it was sent
            outcome[copy.record.message_id] = "not reported by SQS"
    return outcome
