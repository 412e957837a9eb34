"""The publisher's common job in one pass: sent now (or after an SQS delay), with no lock, schedule or
deadline of its own, and nothing wrong with it.

:meth:`Publisher._prepare` checks a job rule by rule and names every problem, for more CPU than the
``SendMessageBatch`` call that sends it (34 µs a job against 26 µs). Nearly every job is this one, and
valid, so it is first asked here as yes/no questions: the envelope's fields and its JSON in one
serialization whose text also answers for SQS's characters and the size
(:mod:`~tiered_jobs.publisher.bodies`), the payload's compiled schema, the route remembered per type.
Any "no", or a job with an option this path does not take, goes to the full check, which then says why:
this path only ever accepts what that one accepts, and prepares it the same (the tests hold the two to
it, job by job).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..contract import payloads
from ..contract import trace_header as traces
from ..contract.sqs_limits import MAX_JOB_MESSAGE_BYTES, message_size
from . import large_payloads as offloading
from .bodies import Bodies
from .models import Job, Prepared, string_keys

if TYPE_CHECKING:
    from .client import Publisher


class PlainJobs:
    """The common jobs of one publish call; :meth:`prepare` is ``None`` for every other job."""

    def __init__(self, publisher: Publisher, ambient_trace: str | None):
        self._publisher = publisher
        self._ambient_trace = ambient_trace
        self._bodies = Bodies()
        #: Each type's compiled payload schema, looked up once per call: the search path is the same for all.
        self._checks: dict[str, payloads.Check | None] = {}

    def prepare(self, index: int, job: Job) -> Prepared | None:
        """``Publisher._prepare(index, job)`` when the job is common and valid, else ``None``."""
        if not (
            job.at is None
            and job.unique_for is None
            and job.debounce is None
            and job.expires_at is None
            and job.expires_in is None
        ):
            return None
        publisher = self._publisher
        delay = job.delay
        if delay is None:
            delay = 0
        elif type(delay) is not int or not 0 <= delay <= publisher.schedule_beyond_seconds:
            return None  # a timedelta, a refused delay, or one a schedule sends
        traced = self._ambient_trace
        if job.trace_header is not None:
            try:
                traced = traces.normalise(job.trace_header)
            except traces.TraceHeaderError:
                return None
        body = self._bodies.body(job.job_type, job.payload, job.idempotency_key, job.tenant)
        if body is None or not string_keys(job.payload):
            return None
        try:
            check = self._checks[job.job_type]
        except KeyError:
            check = self._checks[job.job_type] = payloads.checker(job.job_type)
        if check is not None:
            found: list[str] = []
            check(job.payload, (), found)
            if found:
                return None
        routed = publisher._route(job.job_type, job.tier)
        if routed is None:
            return None
        tier, queue_url = routed
        size = len(body) if body.isascii() else message_size(body)  # ASCII: a byte a character
        offload = publisher.large_payloads.get(tier)
        if not offloading.should_offload(offload, size):
            if size > MAX_JOB_MESSAGE_BYTES:
                return None
            offload = None
        # By position, in the fields' order (fire_at, unique_token, unique_until, debounced, trace_header,
        # offload): naming two of them cost half again the dataclass's construction.
        return Prepared(index, job, tier, queue_url, body, size, delay, None, None, None, False, traced, offload)
