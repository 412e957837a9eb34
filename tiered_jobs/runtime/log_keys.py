"""A record's keys on every log line while it is handled.

These are what ``tiered-jobs search`` filters on (docs/consumer.md's log table): the job's type, key,
tenant and tags, its tier and attempt, and the trace and batch it belongs to. A key whose value is
``None`` is left off the line by Powertools, so a job without tags, batch or trace pays nothing for
them. Nothing of the payload is ever a key.
"""

from __future__ import annotations

from typing import Any

from tiered_jobs.contract.trace_header import root

from .received import INVALID_JOB_TYPE, Received


class LogKeys:
    """The record's keys on every log line while it is handled (a context manager: removed after)."""

    KEYS = ("tier", "job_type", "idempotency_key", "message_id", "attempt", "tenant", "tags", "batch_id", "trace_id")

    def __init__(self, logger: Any, received: Received, tier: str):
        self.logger, self.received, self.tier = logger, received, tier

    def __enter__(self) -> None:
        envelope = self.received.envelope
        self.logger.append_keys(
            tier=self.tier,
            job_type=envelope.type if envelope else INVALID_JOB_TYPE,
            idempotency_key=envelope.idempotency_key if envelope else None,
            message_id=self.received.message_id,
            attempt=self.received.attempt,
            tenant=self.received.tenant,
            # Logged as ``tags.<name>`` fields by Logs Insights' JSON discovery: what ``search --tag`` filters.
            tags=envelope.tags if envelope else None,
            batch_id=envelope.batch["id"] if envelope and envelope.batch else None,
            trace_id=root(self.received.trace_header),
        )

    def __exit__(self, *_: object) -> None:
        self.logger.remove_keys(list(self.KEYS))
