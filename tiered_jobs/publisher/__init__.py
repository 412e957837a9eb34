"""Publish jobs from any service in one line, correctly.

    from tiered_jobs.publisher import publish
    publish("payments.update_balance", {"account_id": "acc_1", "amount": 500}, "pay_123")

What a publish guarantees:

- **Validated before anything is sent**: the envelope v1 rules (the same ones the consumer and
  ``envelope.schema.json`` apply), the job type's payload schema when the contract ships one
  (``contract/schemas/<type>.schema.json``, applied by the consumer too), a JSON-serialisable
  payload, only characters SQS accepts (no control characters, lone surrogates, U+FFFE, U+FFFF),
  a message within SQS's 1 MiB, a routable job type, a known tier, a delay SQS accepts.
  A batch with one bad job sends nothing.
- **Routed** by the stack's own routing table (an explicit ``tier=`` overrides it).
- **Batched**: per tier, ``SendMessageBatch`` calls of at most 10 entries and 1 MiB.
- **Later**: ``at=`` (an aware datetime) or a ``delay`` beyond SQS's 15 minutes becomes a
  one-time EventBridge Scheduler schedule (``tiered_jobs.scheduling``), cancellable with
  :meth:`Publisher.cancel`; within 15 minutes SQS's own message delay is used.
- **Never a silent drop**: entries SQS reports failed are retried (only those, exponential
  backoff with full jitter); senders' faults are not retried. If anything still failed,
  :class:`PublishError` names every such job and carries every entry's :class:`PublishResult`.
  Publishing the same job again is always safe: the consumer is idempotent on the key.

The publisher needs boto3 and the contract only (no CDK, nothing from ``functions/``).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from .. import discovery
from ..contract.names import Env
from .client import Publisher
from .errors import InvalidJobError, PublishError
from .models import Job, PublishResult, ResendPolicy

__all__ = [
    "InvalidJobError", "Job", "PublishError", "PublishResult", "Publisher", "ResendPolicy",
    "cancel", "configure", "default_publisher", "publish", "publish_batch",
]


# -- the default publisher, for the one-line calls --------------------------------------------

_default: Publisher | None = None
_default_lock = threading.Lock()


def default_publisher() -> Publisher:
    """The process-wide publisher, built on first use from the environment.

    ``TIERED_JOBS_QUEUE_URL_<TIER>`` variables (with ``TIERED_JOBS_ROUTES``) win; otherwise
    ``TIERED_JOBS_STAGE`` names the stage whose SSM parameters are read. :func:`configure` sets it
    explicitly instead.
    """
    global _default
    with _default_lock:
        if _default is None:
            if discovery.queue_urls_in_env(os.environ):
                _default = Publisher.from_env()
            elif os.environ.get(Env.STAGE):
                _default = Publisher.from_stage(os.environ[Env.STAGE])
            else:
                raise discovery.DiscoveryError(
                    f"no publisher configured: set {Env.STAGE} (the stage whose SSM parameters name the "
                    f"queues), or {Env.tier_var(Env.QUEUE_URL, '<tier>')} and {Env.ROUTES}, "
                    "or call tiered_jobs.publisher.configure(Publisher(...))"
                )
        return _default


def configure(publisher: Publisher | None) -> None:
    """Set the publisher the module-level functions use (``None``: rebuild from the environment)."""
    global _default
    with _default_lock:
        _default = publisher


def publish(
    job_type: str,
    payload: Mapping[str, Any],
    idempotency_key: str,
    *,
    tier: str | None = None,
    delay: int | timedelta | None = None,
    at: datetime | None = None,
    tenant: str | None = None,
) -> PublishResult:
    """:meth:`Publisher.publish` on the :func:`default_publisher`."""
    return default_publisher().publish(job_type, payload, idempotency_key, tier=tier, delay=delay, at=at, tenant=tenant)


def cancel(job_type: str, idempotency_key: str) -> bool:
    """:meth:`Publisher.cancel` on the :func:`default_publisher`."""
    return default_publisher().cancel(job_type, idempotency_key)


def publish_batch(jobs: Iterable[Job | Mapping[str, Any]]) -> list[PublishResult]:
    """:meth:`Publisher.publish_batch` on the :func:`default_publisher`."""
    return default_publisher().publish_batch(jobs)
