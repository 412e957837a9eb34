"""How long a tier's messages live, and how long its finished jobs are remembered, by default.

The defaults are here, not in the settings, because two parts that never import each other need
the same numbers: the settings (``tiered_jobs.cdk``) derive a tier's idempotency window from them,
and the runtime falls back to that window when its environment does not say (a hand-made
environment, a test): a smaller fallback would forget finished jobs that a replay can still bring back.
A module of its own, apart from the queues' shape (:mod:`tiered_jobs.contract.tiers`): the consumer
needs these numbers at every cold start, and not that dataclass.

It also holds the time limits SQS puts on a job's retries, which the settings check against a
tier's own retry schedule at synthesis and the consumer against a job's own (``@job(...)``):
:func:`max_backoff_seconds` and :func:`longest_stay_seconds`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .names import SQS_MAX_VISIBILITY_SECONDS

#: Days SQS keeps a message in a tier's main queue, and then as a letter in its DLQ (counted from
#: when it was first sent: SQS keeps the original enqueue time), unless the tier says otherwise.
DEFAULT_RETENTION_DAYS = 4
DEFAULT_DLQ_RETENTION_DAYS = 14


def replay_window_seconds(retention_days: int, dlq_retention_days: int) -> int:
    """The longest a job's message lives (its queue, then its DLQ): how far back a replay reaches."""
    return (retention_days + dlq_retention_days) * 86_400


#: How long a finished job's idempotency record is kept by default: the replay window of the
#: default retentions (18 days), so a replayed letter never runs a finished job again.
DEFAULT_IDEMPOTENCY_TTL_SECONDS = replay_window_seconds(DEFAULT_RETENTION_DAYS, DEFAULT_DLQ_RETENTION_DAYS)


# -- what a job's retries may ask of its queue -----------------------------------------------

#: SQS's longest message retention (14 days): a job whose retries alone outlast it fits no tier.
SQS_MAX_RETENTION_SECONDS = 14 * 86_400


def max_backoff_seconds(timeout_seconds: int, batching_window_seconds: int) -> int:
    """The longest backoff the consumer may set on a record of a tier.

    A backoff is a ``ChangeMessageVisibility``, and SQS counts its 12-hour maximum from the
    *receive*, not from the call ("the maximum is 12 hours from the time the message was received";
    a longer one is rejected). The event source mapping may hold a received record for the
    batching window before it invokes the consumer, and the consumer sets the backoff up to its
    timeout after that: so 12 hours less both."""
    return SQS_MAX_VISIBILITY_SECONDS - timeout_seconds - batching_window_seconds


def longest_stay_seconds(
    schedule: Sequence[int],
    jitter: float,
    max_attempts: int,
    *,
    timeout_seconds: int,
    batching_window_seconds: int,
    max_backoff: int = SQS_MAX_VISIBILITY_SECONDS,
) -> int:
    """The longest one message of a job stays in its queue across its attempts: every backoff at the
    top of its jitter (each capped at ``max_backoff``, as the consumer caps it), plus each attempt
    at its longest (the batching window, then the function's timeout).

    A retry is the same message made invisible, and SQS's retention counts from when it was first
    sent: past the retention, SQS deletes it mid-backoff, and no DLQ ever sees it."""
    backoffs = sum(
        min(max_backoff, math.ceil(schedule[min(attempt, len(schedule)) - 1] * (1 + jitter)))
        for attempt in range(1, max_attempts)
    )
    return backoffs + max_attempts * (timeout_seconds + batching_window_seconds)
