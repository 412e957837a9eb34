"""How long a tier's messages live, and how long its finished jobs are remembered, by default.

The defaults are here, not in the settings, because two parts that never import each other need
the same numbers: the settings (``tiered_jobs.cdk``) derive a tier's idempotency window from them,
and the runtime falls back to that window when its environment does not say (a hand-made
environment, a test): a smaller fallback would forget finished jobs that a replay can still bring back.
A module of its own, apart from the queues' shape (:mod:`tiered_jobs.contract.tiers`): the consumer
needs these numbers at every cold start, and not that dataclass.
"""

from __future__ import annotations

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
