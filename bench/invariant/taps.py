"""What the checker observes from outside the consumer: every message a queue takes in, and every
fate the consumer records.

* :class:`QueueTap` records each message the embedded SQS adds to a queue, whoever sent it: the
  consumer's letters and copies, the publisher, a replay, and SQS's own redrive (which moves a
  message to the DLQ inside a receive, where no client sees it). The server runs in this process,
  so the tap wraps moto's ``Queue.add_message``; it changes nothing it sees.
* :class:`FateTap` counts the outcomes the consumer records (``BatchMetrics.record``: one per
  decision, the receive ledger's ``outcome`` column), so the run can show that each path it is
  meant to exercise really happened.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Arrival:
    """One message a tapped queue took in."""

    queue: str
    message_id: str
    body: str
    #: Message attribute name -> its string value (binary values as ``None``).
    attributes: dict[str, str | None]
    group_id: str | None
    #: Its ``AWSTraceHeader`` (SQS's one system attribute a sender sets), when it has one.
    trace_header: str | None = None
    #: When the queue took it in (``time.monotonic``; 0: unknown), to find the receive before it.
    at: float = 0.0


class QueueTap:
    """Records every message added to the queues named ``names`` (a context manager)."""

    def __init__(self, *names: str):
        self.names = set(names)
        self.arrivals: list[Arrival] = []
        self._lock = threading.Lock()
        self._original: Any = None

    def __enter__(self) -> QueueTap:
        from moto.sqs.models import Queue

        self._original = original = Queue.add_message
        tap = self

        def add_message(queue: Any, message: Any) -> Any:
            if queue.name in tap.names:
                attributes = {name: value.get("StringValue") for name, value in message.message_attributes.items()}
                with tap._lock:
                    tap.arrivals.append(
                        Arrival(
                            queue.name,
                            message.id,
                            message.body,
                            attributes,
                            message.group_id,
                            _trace(message),
                            time.monotonic(),
                        )
                    )
            return original(queue, message)

        Queue.add_message = add_message  # type: ignore[method-assign]
        return self

    def __exit__(self, *_: object) -> None:
        from moto.sqs.models import Queue

        Queue.add_message = self._original  # type: ignore[method-assign]

    def of(self, queue: str) -> list[Arrival]:
        with self._lock:
            return [arrival for arrival in self.arrivals if arrival.queue == queue]


def _trace(message: Any) -> str | None:
    """The ``AWSTraceHeader`` moto keeps of a message (``SendMessage``'s, and a batch entry's: moto_patches gap 19)."""
    header = (getattr(message, "system_attributes", None) or {}).get("AWSTraceHeader") or {}
    value = header.get("StringValue")
    return value if isinstance(value, str) else None


class FateTap:
    """Counts every outcome the consumer records (a context manager)."""

    def __init__(self) -> None:
        self.outcomes: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._original: Any = None

    def __enter__(self) -> FateTap:
        from tiered_jobs.runtime.metrics import BatchMetrics

        self._original = original = BatchMetrics.record
        tap = self

        def record(metrics: Any, job_type: str, outcome: str, *args: Any, **kwargs: Any) -> None:
            with tap._lock:
                tap.outcomes[outcome] += 1
            original(metrics, job_type, outcome, *args, **kwargs)

        BatchMetrics.record = record  # type: ignore[method-assign]
        return self

    def __exit__(self, *_: object) -> None:
        from tiered_jobs.runtime.metrics import BatchMetrics

        BatchMetrics.record = self._original  # type: ignore[method-assign]
