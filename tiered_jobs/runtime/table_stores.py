"""A tier's DynamoDB as the run stage's stores (:class:`~tiered_jobs.runtime.run_stage.JobStores`).

Each job's idempotency record (Powertools' store, :mod:`~tiered_jobs.runtime.idempotency`) and its steps
(:mod:`~tiered_jobs.runtime.steps`), the cancel request and the progress it holds, and a chain's
previous link through the batches table. ``tiered_jobs.testing`` keeps the same things in memory.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .progress import ProgressWriter, discard

if TYPE_CHECKING:
    from .config import TierConfig
    from .idempotency import IdempotentRunner, Outcome
    from .received import Received
    from .registry import JobContext, JobDefinition
    from .steps import Steps


class TableStores:
    """The run stage's stores on the tier's tables (its runner and steps built by the consumer, on first use)."""

    def __init__(
        self,
        config: TierConfig,
        client: Callable[[str], Any],
        runner: Callable[[], IdempotentRunner],
        steps: Callable[[], Steps],
        logger: Any,
    ):
        self.config, self.client, self.runner, self.steps, self.logger = config, client, runner, steps, logger

    def run(
        self,
        received: Received,
        key: dict[str, Any],
        ctx: JobContext,
        handler: Callable[[dict[str, Any], Any], Any],
        flush: Callable[[], None],
    ) -> Outcome:
        return self.steps().run(received, key, ctx, handler, flush)

    def cancel_requested(self, job_type: str, idempotency_key: str) -> bool:
        return self.runner().cancel_requested(job_type, idempotency_key)

    def progress(self, job_type: str, idempotency_key: str, definition: JobDefinition) -> Callable[..., None]:
        """A writer to the job's record, built only for a job that can have one."""
        if not definition.idempotent:
            return discard
        return ProgressWriter(
            self.client("dynamodb"),
            self.config.idempotency_table,
            job_type,
            idempotency_key,
            interval=definition.progress_every_seconds,
            logger=self.logger,
        )

    def previous_result(self, batch: dict[str, Any] | None) -> Callable[[], Any]:
        """Reads only when a chain's link asks."""
        table = self.config.batch_table
        if batch is None or not batch.get("step") or not table:
            return _none

        def read() -> Any:
            from .batches import previous_result  # loaded by a chain's link only

            return previous_result(self.client("dynamodb"), table, self.config.idempotency_table, batch)

        return read


def _none() -> Any:
    return None
