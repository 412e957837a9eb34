"""Idempotency in memory, with the consumer's rules and none of its DynamoDB.

What the consumer's Powertools store does (:mod:`tiered_jobs.runtime.idempotency`), kept in a dict:
the key is the job type and the envelope's idempotency key; a run's result is the bounded,
JSON-safe form :func:`~tiered_jobs.runtime.results.storable` makes; a second run of a key with the
same payload answers the stored result and does not run the job; another payload under the same key is an
:class:`~tiered_jobs.runtime.errors.IdempotencyConflictError` (permanent); a failed run stores
nothing, so the next attempt runs again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tiered_jobs.runtime.errors import IdempotencyConflictError
from tiered_jobs.runtime.idempotency import Outcome
from tiered_jobs.runtime.results import storable


class MemoryIdempotency:
    """Completed runs by ``(job type, idempotency key)``: ``(payload, stored result)``."""

    def __init__(self) -> None:
        self.completed: dict[tuple[str, str], tuple[dict[str, Any], Any]] = {}

    def run(self, job_type: str, idempotency_key: str, payload: dict[str, Any], execute: Callable[[], Any]) -> Outcome:
        done = self.completed.get((job_type, idempotency_key))
        if done is not None:
            stored_payload, stored_result = done
            if stored_payload != payload:
                raise IdempotencyConflictError(
                    f"idempotency key {idempotency_key!r} was already used for {job_type!r} with a different payload"
                )
            return Outcome(result=stored_result, duplicate=True)
        result = storable(execute())  # what the consumer returns and stores, on the first run too
        self.completed[(job_type, idempotency_key)] = (payload, result)
        return Outcome(result=result, duplicate=False)

    def forget(self) -> None:
        """As if the idempotency window had passed for every key."""
        self.completed.clear()
