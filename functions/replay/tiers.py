"""Where each tier's queues are: the stack passes them as JSON in ``Env.REPLAY_TIERS``."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass

from tiered_jobs.contract.names import Env


@dataclass(frozen=True)
class TierQueues:
    """A tier's main queue (where replayed letters go) and its dead-letter queue."""

    queue_url: str
    dlq_url: str


def tiers_from_env(environ: Mapping[str, str] = os.environ) -> dict[str, TierQueues]:
    """Read ``{tier: {"queue_url": ..., "dlq_url": ...}}``; a broken value is a deployment bug, said plainly."""
    raw = environ.get(Env.REPLAY_TIERS)
    if not raw:
        raise RuntimeError(f"{Env.REPLAY_TIERS} is not set: the stack sets it to "
                           '{"<tier>": {"queue_url": "...", "dlq_url": "..."}}')
    try:
        table = json.loads(raw)
        return {tier: TierQueues(queue_url=urls["queue_url"], dlq_url=urls["dlq_url"]) for tier, urls in table.items()}
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise RuntimeError(
            f"{Env.REPLAY_TIERS} must be a JSON object "
            f'{{"<tier>": {{"queue_url": "...", "dlq_url": "..."}}}}, got {raw[:200]!r} ({exc!r})'
        ) from None
