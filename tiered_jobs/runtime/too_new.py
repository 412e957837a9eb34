"""Jobs from a newer producer: held for a newer consumer, never dead-lettered as permanent.

A consumer rolled back behind its producers (a failed deploy undone, a canary's rollback) meets
jobs whose envelope it cannot read yet: a ``version`` above its own, or an optional field a newer
release added (``expires_at``, ``unique_lock``...). The envelope's compatibility rule
(:func:`tiered_jobs.contract.envelope.newer_than_known`, docs/upgrading.md) tells those apart from
malformed bodies. Running such a job without the fields it carries could break the promise those
fields make (a deadline, a lock), and dead-lettering it as permanent would strand it behind a
rollback, so the consumer **holds** it: a fresh copy with SQS's longest delay, as the rate limit
holds a job (a hold is never an attempt and spends no receive), until a newer consumer reads it.

Holds are bounded, so no job waits unseen for ever: once the job is older than the tier's bound
(``TieredJobs.EnqueuedAt`` survives every copy), it is dead-lettered with reason
``envelope_too_new``; after deploying the newer consumer an operator replays it.

Only the contract: this runs at cold start.
"""

from __future__ import annotations

from datetime import datetime

from tiered_jobs.contract.envelope import EnvelopeTooNew

from .received import Received

#: The consumer's metric outcome of a held copy, and of the letter once the bound is passed.
HELD = "envelope_too_new"
DEAD_LETTERED = "too_new_dead_lettered"


def too_new(received: Received) -> EnvelopeTooNew | None:
    """Why the record's envelope is newer than this release (``None``: it is not)."""
    error = received.envelope_error
    return error if isinstance(error, EnvelopeTooNew) else None


def past_the_bound(received: Received, now: datetime, max_age_seconds: int) -> bool:
    """Has the job waited longer than the holds' bound (it is then dead-lettered, not held again)?"""
    return received.age_seconds(now) >= max_age_seconds


def letter_message(error: EnvelopeTooNew, age_seconds: float, max_age_seconds: int) -> str:
    """The letter's ``DeadLetter.ErrorMessage``: what the consumer could not read, and what to do."""
    return (
        f"the envelope is newer than this consumer ({'; '.join(error.problems)}); held "
        f"{int(age_seconds)} s for a consumer that reads it, past the {max_age_seconds} s bound: "
        "deploy the newer consumer, then replay this letter"
    )
