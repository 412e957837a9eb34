"""The one shape of "a tier's queues", shared by discovery, the publisher, the CLI, the replay domain
(its Lambda reads them from ``Env.REPLAY_TIERS``) and the emulator, and how long their messages live
by default.

The defaults are here, not in the settings, because two parts that never import each other need
the same numbers: the settings (``tiered_jobs.cdk``) derive a tier's idempotency window from them,
and the runtime falls back to that window when its environment does not say (a hand-made
environment, a test): a smaller fallback would forget finished jobs that a replay can still bring back.
"""

from __future__ import annotations

from dataclasses import dataclass

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


@dataclass(frozen=True)
class TierQueues:
    """A tier's main queue (where jobs and replayed letters go), its dead-letter queue, and its idempotency window.

    The one shape of "a tier's queues": discovery finds them, the publisher and the CLI use them,
    the replay moves letters between them.

    ``idempotency_ttl_seconds``: how long the consumer remembers a completed job; ``None`` when
    the deployment does not say (deployed before replay knew it): then no letter is known to be
    inside the window, and a replay moves none without ``allow_outside_idempotency_window``.
    """

    queue_url: str
    #: ``None`` when the source does not tell (discovery from the environment; a publisher never needs
    #: it). The replay's tiers always have one.
    dlq_url: str | None = None
    idempotency_ttl_seconds: int | None = None
