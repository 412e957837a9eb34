"""A tier's job records in memory: the run stage's stores (:class:`~tiered_jobs.runtime.run_stage.JobStores`)
for :class:`~tiered_jobs.testing.runner.JobRunner`, with the rules the tier's DynamoDB keeps.

* a run is idempotent by job type and key (:class:`~tiered_jobs.testing.idempotency.MemoryIdempotency`);
* a job that returns ``ctx.checkpoint(state)`` is bounded by its ``max_steps`` (the consumer's own check,
  :func:`~tiered_jobs.runtime.steps.check_bound`), and its record says which step is due and keeps the
  state; that step runs once, with ``ctx.step`` and ``ctx.state``; a duplicate of an earlier step runs
  nothing; a failed step leaves the record at its checkpoint;
* :meth:`MemoryStores.cancel` does what ``tiered-jobs cancel`` does (:mod:`tiered_jobs.stage.cancelling`):
  a job with no record gets its end marker (it ends unrun, ``cancelled``), a running one or one between
  two steps is asked to stop (``ctx.cancelled()``), a finished one is left alone;
* ``ctx.progress`` is checked as the consumer checks it and its last call kept (:meth:`MemoryStores.progress_of`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, Literal

from tiered_jobs.contract import job_ends
from tiered_jobs.contract import steps as step_records
from tiered_jobs.contract.progress import Progress, checked
from tiered_jobs.contract.times import iso_text
from tiered_jobs.runtime.errors import TransientError
from tiered_jobs.runtime.idempotency import Outcome
from tiered_jobs.runtime.progress import discard
from tiered_jobs.runtime.results import storable
from tiered_jobs.runtime.steps import Checkpoint, check_bound

from .idempotency import MemoryIdempotency

#: What a cancel found, as ``tiered-jobs cancel`` says it.
Cancelled = Literal["marked", "running", "already done", "already cancelled"]
Key = tuple[str, str]


class StepNotReady(TransientError):
    """A later step run before its record says it is due (the consumer's ``steps.StepNotReady``)."""


class MemoryStores:
    """Completed runs, steps due, cancels and progress, by ``(job type, idempotency key)``."""

    def __init__(self, idempotency: MemoryIdempotency | None = None) -> None:
        self.idempotency = idempotency or MemoryIdempotency()
        #: A stepped job's record between two steps: the step due and the last checkpoint's state.
        self.due: dict[Key, tuple[int, Any]] = {}
        #: The end markers written for jobs that had no record (``cancelled``): they end unrun.
        self.ended: dict[Key, dict[str, Any]] = {}
        #: Jobs asked to stop while they ran, or between two steps.
        self.cancel_requests: set[Key] = set()
        self.running: set[Key] = set()
        self.progress_kept: dict[Key, Progress] = {}

    # -- the run stage's stores ------------------------------------------------------------------

    def run(
        self,
        received: Any,
        key: dict[str, Any],
        ctx: Any,
        handler: Callable[[dict[str, Any], Any], Any],
        flush: Callable[[], None],
    ) -> Outcome:
        job: Key = (key["type"], key["idempotency_key"])
        if job in self.ended:
            return Outcome(result=self.ended[job], duplicate=True)
        step = step_records.step_of(received.attributes)

        def execute(context: Any) -> Any:
            self.running.add(job)
            try:
                result = handler(key["payload"], context)
            finally:
                self.running.discard(job)
            flush()
            if isinstance(result, Checkpoint):
                check_bound(context, result)
                self.due[job] = (result.step, result.state)
                return step_records.marker(result.step)
            self.due.pop(job, None)
            return result

        if step == 0:
            return self.idempotency.run(job[0], job[1], key["payload"], lambda: execute(ctx))
        due = self.due.get(job)
        if due is None or due[0] != step:
            if job in self.idempotency.completed and (due is None or due[0] > step):
                return Outcome(result=self.idempotency.completed[job][1], duplicate=True)  # further on, or done
            raise StepNotReady(f"step {step}: the job's record is not at that step; it runs once it is due")
        stored = storable(execute(replace(ctx, step=step, state=due[1])))
        self.idempotency.completed[job] = (key["payload"], stored)
        return Outcome(result=stored, duplicate=False)

    def cancel_requested(self, job_type: str, idempotency_key: str) -> bool:
        job = (job_type, idempotency_key)
        return job in self.cancel_requests or job_ends.marker_kind(self.ended.get(job)) == job_ends.CANCELLED

    def progress(self, job_type: str, idempotency_key: str, definition: Any) -> Callable[..., None]:
        if not definition.idempotent:
            return discard  # no record to keep it in, as on the tier

        def keep(done: Any, total: Any, note: Any = "") -> None:
            self.progress_kept[(job_type, idempotency_key)] = checked(done, total, note)

        return keep

    def previous_result(self, batch: dict[str, Any] | None) -> Callable[[], Any]:
        return _none  # no batches table: as a consumer without one answers

    # -- what a test asks ------------------------------------------------------------------------

    def cancel(self, job_type: str, idempotency_key: str, *, at: str | None = None) -> Cancelled:
        """Cancel the job as ``tiered-jobs cancel`` would (see the module's docstring)."""
        job = (job_type, idempotency_key)
        if job in self.running or job in self.due:
            self.cancel_requests.add(job)
            return "running"
        if job in self.ended:
            return "already cancelled"
        if job in self.idempotency.completed:
            return "already done"
        from datetime import datetime, timezone

        self.ended[job] = job_ends.marker(job_ends.CANCELLED, at or iso_text(datetime.now(timezone.utc)))
        return "marked"

    def progress_of(self, job_type: str, idempotency_key: str) -> Progress | None:
        """The job's last progress (``None``: it reported none)."""
        return self.progress_kept.get((job_type, idempotency_key))

    def forget(self) -> None:
        """As if the idempotency window had passed for every key."""
        self.idempotency.forget()
        self.due.clear()
        self.ended.clear()
        self.cancel_requests.clear()
        self.progress_kept.clear()


def _none() -> Any:
    return None
