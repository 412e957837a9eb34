"""Testing an app's jobs: run one in-process as its tier's consumer would, or let ``publish`` run them.

    from tiered_jobs.testing import JobRunner, eager, run_job

    run = run_job("invoices.send", {"invoice_id": "inv_1"}, "inv_1")
    assert run.outcome == "succeeded", run

For an app's own tests (``pip install tiered-jobs``): nothing here is imported by the runtime, and
nothing here reaches AWS unless a test hands it real clients. The consumer's own code decides every
outcome (see :mod:`tiered_jobs.testing.runner`); docs/testing.md shows each use.
"""

from .eager import EagerJobs, eager
from .idempotency import MemoryIdempotency
from .runner import OUTCOMES, JobFailed, JobRun, JobRunner, run_job
from .stores import MemoryStores

__all__ = [
    "OUTCOMES",
    "EagerJobs",
    "JobFailed",
    "JobRun",
    "JobRunner",
    "MemoryIdempotency",
    "MemoryStores",
    "eager",
    "run_job",
]
