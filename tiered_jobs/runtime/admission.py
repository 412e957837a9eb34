"""The rate limit's part of triage: which records of a batch run now, which wait for their turn, which are held.

Before anything runs, :func:`admit` gives the limiter the batch's runnable records (valid, registered,
not past their deadline): the records it holds at once (their bucket busy past the wait bound, or its
table failed) are sent back as copies with their turns, together. Just before each record runs,
:func:`until_turn` claims its token (or reads the turn its copy carries), and says how long to wait
for it; a record its claim holds, and the batch's other records its claim held with it, are sent back
then. :func:`in_turn_order` runs the batch's records in the order their turns come. The limiter itself
is :mod:`~tiered_jobs.runtime.ratelimit`; the copies are sent by :class:`~tiered_jobs.runtime.settle.Settle`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from .invocation import Invocation
from .outcomes import Outcome
from .ratelimit import Gate, RateLimiter
from .received import Received
from .registry import JobRegistry
from .settle import Settle

#: What a held record's copy counts as: the limiter's table failed, or the record waits for its turn.
LIMITER_ERROR_LINE = "rate limiter unavailable: its jobs are held, not run"


def admit(limiter: RateLimiter, invocation: Invocation, settle: Settle, registry: JobRegistry, now: datetime) -> None:
    """Admit the batch; send the records held at once back as copies, before anything runs."""
    runnable = [
        record
        for record in invocation.records.values()
        if record.envelope is not None
        and record.envelope.type in registry
        and not record.envelope.expired(now)  # dropped before they run, never given a token
    ]
    gate = invocation.gate = limiter.admit(runnable, invocation.remaining_ms() / 1000)
    for error in gate.errors:
        settle.logger.error(LIMITER_ERROR_LINE, extra={"error": error})
    _send_held(invocation, settle, gate, runnable)


def until_turn(limiter: RateLimiter, received: Received, invocation: Invocation, settle: Settle) -> float:
    """Seconds until the record's turn under the rate limit. A start later than its turn's slack would
    bunch with the next turns (:meth:`~tiered_jobs.runtime.ratelimit.RateLimiter.at_start`): it claims
    again; if that holds it, its copy is sent (with those of the batch's records its claim held too)
    and its fate is decided here."""
    gate = invocation.gate
    assert gate is not None
    verdict = limiter.at_start(gate, received, invocation.remaining_ms() / 1000)
    if verdict is not None and verdict.held:
        if verdict.limiter_error:
            settle.logger.error(LIMITER_ERROR_LINE, extra={"error": verdict.limiter_error})
        undecided = [record for record in invocation.records.values() if record.message_id not in invocation.fates]
        _send_held(invocation, settle, gate, undecided)
        return 0.0
    return gate.wait_seconds(received.message_id)


def in_turn_order(event: dict[str, Any], invocation: Invocation) -> dict[str, Any]:
    """The batch in the order its limited records' turns come (the others first, in their order): the
    records run one after another, and one run before an earlier turn would make that turn's job
    start late, so forfeit its token. The copies of held jobs come back together, in any order. The
    answer names records by id, so their order is free."""
    gate = invocation.gate
    assert gate is not None

    def turn(record: dict[str, Any]) -> float:
        verdict = gate.verdicts.get(record["messageId"])
        return verdict.start if verdict is not None and verdict.start is not None else float("-inf")

    records = sorted(event["Records"], key=turn)  # stable: equal turns keep the batch's order
    invocation.order = [record["messageId"] for record in records]
    return {**event, "Records": records}


def _send_held(invocation: Invocation, settle: Settle, gate: Gate, records: list[Received]) -> None:
    """The copies of ``records`` the gate holds, in one send, each carrying its turn."""
    held = [(record, verdict) for record in records if (verdict := gate.held(record.message_id)) is not None]
    settle.copies(
        invocation,
        [
            (
                record,
                Outcome.LIMITER_ERROR if verdict.limiter_error else Outcome.RATE_LIMITED,
                verdict.hold_seconds or 0,
            )
            for record, verdict in held
        ],
        turns=gate.turn,
    )
