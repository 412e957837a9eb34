"""The one shape of "a tier's queues", shared by discovery, the publisher, the CLI, the replay domain
(its Lambda reads them from ``Env.REPLAY_TIERS``) and the emulator. How long their messages live by
default: :mod:`tiered_jobs.contract.retention`.
"""

from __future__ import annotations

from dataclasses import dataclass


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
