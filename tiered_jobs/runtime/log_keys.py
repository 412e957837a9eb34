"""A record's keys on every log line while it is handled."""

from __future__ import annotations

from typing import Any

from .received import INVALID_JOB_TYPE, Received


class LogKeys:
    """The record's keys on every log line while it is handled (a context manager: removed after)."""

    KEYS = ("tier", "job_type", "idempotency_key", "message_id", "attempt", "tenant")

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
        )

    def __exit__(self, *_: object) -> None:
        self.logger.remove_keys(list(self.KEYS))
