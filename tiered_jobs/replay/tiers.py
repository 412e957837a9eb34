"""Where each tier's queues are: the stack passes them as JSON in ``Env.REPLAY_TIERS``."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from tiered_jobs.contract.names import Env
from tiered_jobs.contract.tiers import TierQueues

__all__ = ["TierQueues", "tiers_from_env"]

_SHAPE = '{"<tier>": {"queue_url": "...", "dlq_url": "...", "idempotency_ttl_seconds": 1555200}}'


def tiers_from_env(environ: Mapping[str, str] = os.environ) -> dict[str, TierQueues]:
    """Read ``{tier: {"queue_url", "dlq_url", "idempotency_ttl_seconds"}}``; a broken value is a deployment
    bug, said plainly."""
    raw = environ.get(Env.REPLAY_TIERS)
    if not raw:
        raise RuntimeError(f"{Env.REPLAY_TIERS} is not set: the stack sets it to {_SHAPE}")
    try:
        table = json.loads(raw)
        tiers = {
            tier: TierQueues(
                queue_url=urls["queue_url"],
                dlq_url=urls["dlq_url"],
                idempotency_ttl_seconds=urls.get("idempotency_ttl_seconds"),
            )
            for tier, urls in table.items()
        }
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise RuntimeError(f"{Env.REPLAY_TIERS} must be a JSON object {_SHAPE}, got {raw[:200]!r} ({exc!r})") from None
    for tier, queues in tiers.items():
        ttl = queues.idempotency_ttl_seconds
        if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int) or ttl < 0):
            raise RuntimeError(
                f"{Env.REPLAY_TIERS}: tier {tier!r} has 'idempotency_ttl_seconds' {ttl!r}; "
                "expected a whole number of seconds"
            )
    return tiers
