"""One X-Ray subsegment per job run, annotated to be found by its key and linked to its publisher's trace.

Powertools' ``Tracer`` (the managed layer's, with the X-Ray SDK) records it: ``## <job type>``, with
the annotations of :data:`ANNOTATIONS` (X-Ray indexes annotations, so
``annotation.job_key = "..."`` finds every run of a job) and ``publisher_trace_id``, the trace of
the request that published the job, read from the record's ``AWSTraceHeader``
(:mod:`tiered_jobs.contract.trace_header`). Every copy, letter and replay of the job carries that
header on, so its retries, holds, deferrals and replays all name the same publishing trace.

**When.** As Powertools decides: on unless ``POWERTOOLS_TRACE_DISABLED`` is true (the stack sets it
from the tier's ``tracing`` setting, with the function's Active tracing), and only in an invocation
X-Ray samples (``Sampled=1`` in Lambda's ``_X_AMZN_TRACE_ID``). An unsampled invocation would record
nothing anyway (the SDK hands out dummy subsegments), so it costs one look at the header per job
and the tracer is not even built: the X-Ray SDK's import (0.2 to 0.4 s) is paid by a container's
first sampled invocation, never by its cold start, and never by a tier with tracing off.

The consumer's own AWS calls are not patched (``auto_patch=False``): a job's trace is its run, its
annotations and its time; patching botocore would add a subsegment per call on every job, and a
team that wants them patches its own clients.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

from tiered_jobs.contract import trace_header as traces
from tiered_jobs.contract.names import Env, Metrics

#: The annotations of every job's subsegment (X-Ray keys: letters, digits and underscores).
ANNOTATIONS = ("job_type", "job_key", "tier", "attempt")
#: The annotation naming the publishing request's trace (``Root`` of the record's ``AWSTraceHeader``).
LINK_ANNOTATION = "publisher_trace_id"
#: Powertools' switch, which the stack sets from the tier's ``tracing`` setting.
DISABLED_VARIABLE = Env.POWERTOOLS_TRACE_DISABLED


def _powertools_tracer() -> Any:
    """Powertools' ``Tracer``, built on first need (it imports the X-Ray SDK)."""
    from aws_lambda_powertools import Tracer

    return Tracer(service=Metrics.SERVICE, auto_patch=False)


class JobTracer:
    """Opens a job's subsegment when tracing is on and the invocation is sampled; else does nothing."""

    def __init__(
        self,
        *,
        disabled: bool = False,
        environ: Mapping[str, str] = os.environ,
        factory: Callable[[], Any] = _powertools_tracer,
    ) -> None:
        """``environ``: where Lambda writes each invocation's ``_X_AMZN_TRACE_ID``; ``factory``: the
        tracer (anything with ``provider.in_subsegment(name=)``), built on the first sampled job."""
        self.disabled = disabled
        self._environ = environ
        self._factory = factory
        self._tracer: Any = None
        self._header: str | None = None
        self._sampled = False

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> JobTracer:
        """Powertools' rule: on unless ``POWERTOOLS_TRACE_DISABLED`` is ``true`` / ``1`` / ``yes`` / ``on``."""
        disabled = environ.get(DISABLED_VARIABLE, "false").strip().lower() in ("true", "1", "yes", "on")
        return cls(disabled=disabled, environ=environ)

    def sampled(self) -> bool:
        """Does X-Ray record the current invocation? (Its header is read per job, for Lambda sets it per
        invocation; the answer is kept for the header, so a batch parses it once.)"""
        if self.disabled:
            return False
        header = self._environ.get(traces.ENVIRONMENT_VARIABLE)
        if header != self._header:
            self._header, self._sampled = header, traces.sampled(header)
        return self._sampled

    def job(self, *, job_type: str, key: str, tier: str, attempt: int, link: str | None) -> AbstractContextManager[Any]:
        """The context of one job's run: its subsegment, or nothing when the invocation is not traced."""
        if not self.sampled():
            return nullcontext()
        if self._tracer is None:
            self._tracer = self._factory()
        values: dict[str, str | int] = {"job_type": job_type, "job_key": key, "tier": tier, "attempt": attempt}
        publisher = traces.root(link)
        if publisher:
            values[LINK_ANNOTATION] = publisher
        return _subsegment(self._tracer, f"## {job_type}", values)


@contextmanager
def _subsegment(tracer: Any, name: str, annotations: Mapping[str, str | int]) -> Iterator[Any]:
    with tracer.provider.in_subsegment(name=name) as subsegment:
        for key, value in annotations.items():
            subsegment.put_annotation(key, value)
        yield subsegment
