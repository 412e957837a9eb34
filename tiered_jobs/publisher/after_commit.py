"""Enqueue after commit: a job is sent only once the caller's database transaction has committed.

Publishing inside a transaction races the commit: the consumer may run before the row it needs
is visible, and a rollback leaves a job for something that never happened. The fix is to hold
the jobs until the commit succeeds, and drop them if it rolls back.

    with AfterCommitBuffer(publisher) as jobs:      # outside the transaction...
        with db.transaction():                      # ...so it exits after the commit
            order = create_order(...)
            jobs.add("notifications.order_confirmation", {"order_id": order.id}, f"order-{order.id}")
    # committed: the jobs are sent here (one SendMessageBatch per tier). An exception: dropped.

:meth:`AfterCommitBuffer.add` validates at once, so a bad job fails *inside* the transaction and
can still roll it back. Recipes for Django's ``transaction.on_commit`` and SQLAlchemy's session
events are in ``docs/publishing.md``.
"""

from __future__ import annotations

from datetime import timedelta
from types import TracebackType
from typing import Any

from .client import Publisher
from .models import Job, PublishResult


class AfterCommitBuffer:
    """Jobs held until :meth:`flush` (on commit) or :meth:`discard` (on rollback).

    Not thread-safe: use one buffer per transaction (per request, per session).
    """

    def __init__(self, publisher: Publisher):
        self.publisher = publisher
        self._jobs: list[Job] = []

    def __len__(self) -> int:
        return len(self._jobs)

    def add(
        self,
        job_type: str,
        payload: dict[str, Any],
        idempotency_key: str,
        *,
        tier: str | None = None,
        delay: int | timedelta | None = None,
        tenant: str | None = None,
        unique_for: int | timedelta | None = None,
        debounce: int | timedelta | None = None,
    ) -> Job:
        """Validate a job now and hold it; raises :class:`~tiered_jobs.publisher.InvalidJobError`.

        A ``unique_for`` job's lock is taken when it is sent, at :meth:`flush`: a rolled-back
        transaction leaves none behind."""
        job = Job(
            job_type,
            payload,
            idempotency_key,
            tier=tier,
            delay=delay,
            tenant=tenant,
            unique_for=unique_for,
            debounce=debounce,
        )
        self.publisher.validate(job)
        self._jobs.append(job)
        return job

    def flush(self) -> list[PublishResult]:
        """Publish every held job (call after the commit). The buffer is empty afterwards.

        Raises :class:`~tiered_jobs.publisher.PublishError` if some were not accepted: the
        transaction is committed by then, so log it and publish those again (same keys: safe).
        """
        jobs, self._jobs = self._jobs, []
        return self.publisher.publish_batch(jobs) if jobs else []

    def discard(self) -> int:
        """Drop every held job (call on rollback); returns how many were dropped."""
        dropped, self._jobs = len(self._jobs), []
        return dropped

    def __enter__(self) -> AfterCommitBuffer:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, _tb: TracebackType | None
    ) -> None:
        if exc_type is None:
            self.flush()
        else:
            self.discard()
