"""The runtime the consumer and replay functions share (no CDK, nothing heavy at import).

What job modules use::

    from tiered_jobs.runtime import JobContext, PermanentError, job

    @job("invoices.create")
    def create(payload: dict, ctx: JobContext) -> dict: ...
"""

from .aws_errors import cancelled_only_by_condition
from .errors import JobError, PermanentError, TransientError
from .registry import JobContext, job

__all__ = ["JobContext", "JobError", "PermanentError", "TransientError", "cancelled_only_by_condition", "job"]
