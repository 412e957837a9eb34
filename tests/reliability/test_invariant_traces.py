"""The composed run's trace check can fail: a message the runtime sends for a traced job without its
publisher's ``AWSTraceHeader`` is counted, and only SQS's own moves (redrive, the native replay) are excused."""

from __future__ import annotations

from collections import Counter

from bench.invariant.checker import RUN_TRACE_HEADER, Observed, _off_their_trace
from bench.invariant.taps import Arrival
from tiered_jobs.contract.names import Attributes, DeadLetter

REASONS = {DeadLetter.REASON: "retries_exhausted"}


def arrival(queue: str, body: str, traced: bool, **attributes: str) -> Arrival:
    return Arrival(queue, f"m-{body}-{queue}", body, dict(attributes), None, RUN_TRACE_HEADER if traced else None)


def observed(queue: list[Arrival], dlq: list[Arrival]) -> Observed:
    return Observed(Counter(), [], [], dlq, queue, Counter(), Counter())


def test_a_copy_or_a_letter_without_the_trace_is_counted_and_sqss_own_moves_are_not():
    held = {Attributes.PRIOR_ATTEMPTS: "0"}
    queue = [
        arrival("q", "kept", True),
        arrival("q", "kept", True, **held),  # its held copy carries the trace on
        arrival("q", "dropped", True),
        arrival("q", "dropped", False, **held),  # a copy that lost it: counted
        arrival("q", "redriven", True),
        arrival("q", "native", True),
        arrival("q", "native", False, **REASONS),  # SQS's move task brought the letter back: not ours
        arrival("q", "untraced", False),  # a job sent without a trace (a schedule's fire): nothing to keep
        arrival("q", "untraced", False, **held),
    ]
    dlq = [
        arrival("dlq", "kept", True, **REASONS),
        arrival("dlq", "dropped", False, **REASONS),  # a letter that lost it: counted
        arrival("dlq", "redriven", False),  # SQS's redrive after a crash: not ours
        arrival("dlq", "native", True, **REASONS),
    ]
    assert _off_their_trace(observed(queue, dlq)) == 2
    assert _off_their_trace(observed(queue[:2] + queue[4:], dlq[:1] + dlq[2:])) == 0
