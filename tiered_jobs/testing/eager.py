"""Eager mode for an app's own tests: ``publish`` runs the job in-process (Celery's ``task_always_eager``).

    from tiered_jobs.publisher import publish
    from tiered_jobs.testing import eager

    with eager(routes={"invoices.*": "transactional"}) as jobs:
        publish("invoices.send", {"invoice_id": "inv_1"}, "inv_1")  # the code under test
    assert jobs.runs[0].outcome == "succeeded"

Only the publisher's transport is swapped: everything ``publish`` checks before sending (the
envelope, the payload's schema, routing, the tier, the message size, a delay SQS accepts) still
applies, and a job is then run by a :class:`~tiered_jobs.testing.runner.JobRunner` (the consumer's
own steps) instead of going to SQS. A job due later (``delay``, ``at``, ``debounce``) runs at once, as
Celery's eager mode does; a ``unique_for`` job takes no lock: it has finished before its publish
returns, so it would have released it already. A failed job raises
:class:`~tiered_jobs.testing.runner.JobFailed` from ``publish``
(after every job of the call has run), unless ``raise_failures=False``: then look at ``runs``.

One attempt per publish: a job that fails transiently is not retried in place (its run says
``retry``); :meth:`JobRunner.run_until_settled` plays the attempts when a test wants them. A job
that returns ``ctx.checkpoint(...)`` runs its next steps within the publish (steps are not
attempts), and its run is its last step's.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from tiered_jobs.contract import envelope as envelope_rules
from tiered_jobs.contract.routing import Routes
from tiered_jobs.publisher import Publisher, configure, configured
from tiered_jobs.publisher.models import Prepared
from tiered_jobs.publisher.unique import LockOutcome
from tiered_jobs.stage.scheduling import Scheduled

from .runner import CHECKPOINTED, JobFailed, JobRun, JobRunner

#: The queue URL of tier ``<tier>`` in an eager publisher (never an address: nothing is sent).
EAGER_QUEUE_PREFIX = "eager://"


class EagerJobs:
    """What ran while eager mode was on: ``runs`` (one :class:`JobRun` per published job, in order)."""

    def __init__(self, runner: JobRunner, raise_failures: bool):
        self.runner = runner
        self.raise_failures = raise_failures
        self.runs: list[JobRun] = []

    def run_body(self, tier: str, body: str) -> JobRun:
        job = envelope_rules.parse(body)  # the publisher built it: parsing it again is what the consumer does
        run = self.runner.run(job.type, job.payload, job.idempotency_key, tier=tier)
        while run.outcome == CHECKPOINTED:  # its next steps, as the consumer sends them: not attempts
            run = self.runner.run(job.type, job.payload, job.idempotency_key, tier=tier, step=run.next_step or 0)
        self.runs.append(run)
        return run

    def settle(self, runs: list[JobRun]) -> None:
        failed = [run for run in runs if not run.succeeded]
        if failed and self.raise_failures:
            raise JobFailed(failed[0]) from failed[0].error


class _Transport:
    """The publisher's SQS client in eager mode: each entry of a batch runs at once."""

    def __init__(self, jobs: EagerJobs, queues: Mapping[str, str]):
        self.jobs = jobs
        self.tiers = {url: tier for tier, url in queues.items()}

    def send_message_batch(self, *, QueueUrl: str, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        runs = [self.jobs.run_body(self.tiers[QueueUrl], entry["MessageBody"]) for entry in Entries]
        self.jobs.settle(runs)
        return {"Successful": [{"Id": entry["Id"], "MessageId": str(uuid.uuid4())} for entry in Entries]}


class _OneTimeJobs:
    """A job due beyond SQS's 15 minutes, in eager mode: run now, as if its schedule had fired."""

    def __init__(self, jobs: EagerJobs):
        self.jobs = jobs

    def create(self, *, tier: str, fire_at: datetime, body: str, **_: Any) -> Scheduled:
        run = self.jobs.run_body(tier, body)
        self.jobs.settle([run])
        return Scheduled(
            schedule_name=f"eager-{run.job_type}-{run.idempotency_key}", fire_at=fire_at, already_scheduled=False
        )

    #: A debounced job's run, at once: each publish of a burst runs (a test sees every payload).
    debounce = create


class _UniqueLocks:
    """``unique_for`` in eager mode: every lock is free, as the job before it finished within its publish."""

    def acquire(self, items: list[Prepared]) -> dict[int, LockOutcome]:
        return {item.index: LockOutcome(taken=True) for item in items}

    def release(self, items: list[Prepared]) -> None:
        return None


@contextmanager
def eager(
    routes: Routes | Mapping[str, str] | None = None,
    *,
    publisher: Publisher | None = None,
    runner: JobRunner | None = None,
    raise_failures: bool = True,
) -> Iterator[EagerJobs]:
    """Make ``publish`` (the module-level one, or ``publisher``'s) run jobs in-process until the block ends.

    ``routes``: the app's routing table (``{job type glob: tier}``, as in ``cdk.json``), for an eager
    publisher made here and set as the default one; or ``publisher``: an existing one whose
    transport is swapped (and restored after). ``runner``: the :class:`JobRunner` (resources,
    client stubs, tier settings); a fresh one by default.
    """
    if (routes is None) == (publisher is None):
        raise ValueError("eager(...) takes either routes (an eager publisher is made) or publisher=, not both")
    jobs = EagerJobs(runner if runner is not None else JobRunner(), raise_failures)
    made = publisher is None
    if publisher is None:
        table = routes if isinstance(routes, Routes) else Routes(routes or {})
        publisher = Publisher({tier: f"{EAGER_QUEUE_PREFIX}{tier}" for tier in sorted(table.tiers())}, table)
    previous = configured()
    saved = {name: publisher.__dict__.get(name) for name in ("_sqs", "one_time_jobs", "unique_locks")}
    publisher._sqs = _Transport(jobs, publisher.queues)
    publisher.one_time_jobs = lambda: _OneTimeJobs(jobs)  # type: ignore[method-assign,assignment,return-value]
    publisher.unique_locks = lambda: _UniqueLocks()  # type: ignore[method-assign,assignment,return-value]
    if made:
        configure(publisher)
    try:
        yield jobs
    finally:
        publisher._sqs = saved["_sqs"]
        for name in ("one_time_jobs", "unique_locks"):
            if saved[name] is None:
                delattr(publisher, name)
            else:
                setattr(publisher, name, saved[name])
        if made:
            configure(previous)
