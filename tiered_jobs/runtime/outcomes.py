"""The paths a record can take through the consumer: one :class:`Outcome` per row of docs/consumer.md's
receive ledger (``tests/runtime/test_receive_ledger.py`` holds the two to each other).

Each outcome carries what the ledger says of its path: the counters it increments (its metric,
:mod:`~tiered_jobs.runtime.metrics`), whether it spends a receive toward the queue's redrive and
whether it counts an attempt, and the level and line the consumer logs it with. A path that takes
another's outcome (the probe, an offloaded body, a batch member) has no member of its own.
"""

from __future__ import annotations

import logging
from enum import Enum

from tiered_jobs.contract.names import Metrics as M

__all__ = ["Outcome"]

INFO, WARNING, ERROR = logging.INFO, logging.WARNING, logging.ERROR


class Outcome(str, Enum):
    """One path of a record (a ledger row): its counters, its cost in receives and attempts, its log line.

    A ``str``: its value is the ledger's name for the path, what the metrics and the logs say."""

    counters: tuple[str, ...]
    spends_receive: bool
    counts_attempt: bool
    level: int
    line: str

    def __new__(
        cls, name: str, counters: tuple[str, ...], spends_receive: bool, counts_attempt: bool, level: int, line: str
    ) -> Outcome:
        member = str.__new__(cls, name)
        member._value_ = name
        member.counters, member.level, member.line = counters, level, line
        member.spends_receive, member.counts_attempt = spends_receive, counts_attempt
        return member

    def __str__(self) -> str:
        return str.__str__(self)

    @classmethod
    def ended(cls, kind: str) -> Outcome:
        """The outcome of a job that ended unrun: its end marker's kind (``expired``, ``cancelled``)."""
        return {cls.EXPIRED.value: cls.EXPIRED, cls.CANCELLED.value: cls.CANCELLED}[kind]

    # -- the job ran ---------------------------------------------------------------------------------
    SUCCEEDED = ("succeeded", (M.PROCESSED, M.SUCCEEDED), True, True, INFO, "job succeeded")
    DUPLICATE = ("duplicate", (M.PROCESSED, M.SUCCEEDED, M.DUPLICATE), True, True, INFO, "job succeeded")
    #: A step of a job longer than one invocation ran and its next step is sent: processed, not yet done.
    CHECKPOINTED = ("checkpointed", (M.PROCESSED,), True, True, INFO, "job step done, next step sent")
    RETRIED = ("retried", (M.PROCESSED, M.RETRIED), True, True, WARNING, "job failed, will retry")
    DEAD_LETTERED = ("dead_lettered", (M.PROCESSED, M.FAILED, M.DEAD_LETTERED), True, True, ERROR, "job dead-lettered")
    #: The DLQ refused the final copy: the message stays and comes back (and may count again).
    KEPT = (
        "kept",
        (M.PROCESSED, M.FAILED),
        True,
        True,
        ERROR,
        "could not dead-letter the job; the message stays in the queue",
    )

    # -- decided before it could run: a copy, not an attempt ----------------------------------------
    #: The invocation's time budget ran out before the record started: sent again.
    DEFERRED = ("deferred", (M.DEFERRED,), False, False, INFO, "deferred by the time budget: sent again")
    #: Held by the rate limit and sent again with a delay: not a failure.
    RATE_LIMITED = (
        "rate_limited",
        (M.RATE_LIMITED,),
        False,
        False,
        INFO,
        "held by the rate limit: sent again with a delay",
    )
    #: Held because the limiter's table failed: sent again after a pause, never run unlimited.
    LIMITER_ERROR = (
        "limiter_error",
        (M.RATE_LIMITED, M.RATE_LIMITER_ERRORS),
        False,
        False,
        INFO,
        "held by the rate limit: sent again with a delay",
    )
    #: Its envelope is newer than this consumer: held as a copy for a newer one.
    ENVELOPE_TOO_NEW = (
        "envelope_too_new",
        (M.TOO_NEW,),
        False,
        False,
        WARNING,
        "envelope newer than this consumer: held for a newer one",
    )
    #: A held or deferred record whose copy SQS refused: it stays in the queue (a receive spent, which
    #: the next receive's number counts)...
    REQUEUE_KEPT = (
        "requeue_kept",
        (M.REQUEUE_FAILED,),
        True,
        True,
        WARNING,
        "could not send the job again; the message stays in the queue (a receive spent)",
    )
    #: ...or, on its last receive, goes to the DLQ with reason ``requeue_failed`` (never silently).
    REQUEUE_DEAD_LETTERED = (
        "requeue_dead_lettered",
        (M.FAILED, M.DEAD_LETTERED, M.REQUEUE_FAILED),
        True,
        False,
        ERROR,
        "job dead-lettered",
    )
    #: Held past the bound: dead-lettered with reason ``envelope_too_new`` (to replay after the upgrade).
    TOO_NEW_DEAD_LETTERED = (
        "too_new_dead_lettered",
        (M.FAILED, M.DEAD_LETTERED, M.TOO_NEW),
        True,
        False,
        ERROR,
        "job dead-lettered",
    )

    # -- ended unrun, kept in the discard archive: not an attempt, never a failure -------------------
    EXPIRED = ("expired", (M.EXPIRED,), True, False, INFO, "job expired: archived, not run")
    CANCELLED = ("cancelled", (M.CANCELLED,), True, False, INFO, "job cancelled: archived, not run")

    # -- a batch member whose count was not written on its queue's last receive ----------------------
    #: Its success was recorded as ``succeeded``: dead-lettered with reason ``batch_count_failed``.
    BATCH_COUNT_DEAD_LETTERED = (
        "batch_count_dead_lettered",
        (M.DEAD_LETTERED,),
        True,
        True,
        ERROR,
        "job dead-lettered",
    )
