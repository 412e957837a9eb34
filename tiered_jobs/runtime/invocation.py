"""One invocation of a tier's consumer: its clock, its records, and what it has decided of them so far."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .metrics import BatchMetrics
from .outcomes import Outcome
from .received import Received

if TYPE_CHECKING:
    from . import ratelimit

#: Without a Lambda context (tests, scripts), the invocation is taken to last Lambda's longest timeout.
NO_CONTEXT_BUDGET_MS = 900_000


class Fate:
    """A record decided before it could run: held or deferred, and what became of its copy."""

    __slots__ = ("outcome", "refused", "keep_seconds")

    def __init__(self, outcome: Outcome, refused: str | None, keep_seconds: int):
        #: The decision: ``rate_limited``, ``limiter_error``, ``deferred`` or ``envelope_too_new``.
        self.outcome = outcome
        #: Why SQS refused the copy (``None``: the copy was accepted, the original is acknowledged).
        self.refused = refused
        #: When a refused record comes back (its visibility, seconds).
        self.keep_seconds = keep_seconds


class Invocation:
    """What one invocation accumulates: its clock, its records in order, and the verdicts decided before a run."""

    __slots__ = ("remaining_ms", "margin_ms", "metrics", "backoffs", "records", "order", "fates", "gate", "deferred")

    def __init__(self, remaining_ms: Callable[[], int], margin_ms: int, metrics: BatchMetrics, records: list[Received]):
        #: The invocation's clock: milliseconds left before Lambda stops it.
        self.remaining_ms = remaining_ms
        #: No record starts with less than this left: the tier's margin, at most half of the
        #: time the invocation started with (as the stack's settings demand of the timeout).
        self.margin_ms = min(margin_ms, remaining_ms() // 2)
        self.metrics = metrics
        #: (receipt handle, seconds) for the records to retry later (or keep, if their copy was refused).
        self.backoffs: list[tuple[str, int]] = []
        self.records = {record.message_id: record for record in records}
        self.order = [record.message_id for record in records]
        #: The records decided before they could run (held, deferred), by message id.
        self.fates: dict[str, Fate] = {}
        #: The rate limit's verdicts for this batch (``None``: the tier is not limited).
        self.gate: ratelimit.Gate | None = None
        #: Records deferred by the time budget; once one is, every later one is too.
        self.deferred = 0


def remaining_time(context: Any) -> Callable[[], int]:
    """Milliseconds left of the invocation: Lambda's context's, else :data:`NO_CONTEXT_BUDGET_MS` from now."""
    if context is not None and hasattr(context, "get_remaining_time_in_millis"):
        remaining: Callable[[], int] = context.get_remaining_time_in_millis
        return remaining
    deadline = time.monotonic() + NO_CONTEXT_BUDGET_MS / 1000
    return lambda: max(0, int((deadline - time.monotonic()) * 1000))


def ms(started: float) -> float:
    """Milliseconds since ``started`` (a ``time.perf_counter()`` reading)."""
    return (time.perf_counter() - started) * 1000
