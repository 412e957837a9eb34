"""Every receive of the run, numbered as SQS numbers it: what explains a letter SQS's redrive moved.

SQS moves a message to the DLQ on the receive after its ``maxReceiveCount``-th, without the
consumer's reasons. The receive ledger (docs/consumer.md) allows that only when the consumer never
settled the message on its last receive: the invocation crashed, or ran past the visibility timeout
(on Lambda a batch invoked or finished late is received again, a real production path), or the
mapping died before its acknowledgement. So the run records each receive by ``(message id, receive
count)`` and what became of it, and the checker excuses a letter without reasons only by the receive
numbered ``maxReceiveCount`` of that very message.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

#: What ended a receive's invocation without the consumer's decision being kept.
CRASHED = "crashed"  # the injected crash (``SimulatedCrash``): the process died mid-invocation
ACK_CRASHED = "ack_crashed"  # the invocation answered, the mapping died before ``DeleteMessageBatch``
OVERRAN = "overran"  # held past the visibility timeout from its receive: it was visible again
ERROR = "error"  # any other invocation error, or a response Lambda reads as a failed batch: unexplained
#: Longest body kept as a pointer (a pointer is a few hundred characters; a body near 1 MiB is not kept).
MAX_POINTER_CHARS = 4096


@dataclass
class Receive:
    """One receive of one message: SQS's count, the attempt the consumer numbered it, and its end."""

    message_id: str
    count: int
    #: The job's idempotency key (``None``: a body that is not an envelope, or a large body's pointer).
    key: str | None
    #: ``TieredJobs.PriorAttempts`` + the receive count: the attempt the consumer gives this receive.
    attempt: int
    received_at: float
    ended_at: float | None = None
    #: Why the consumer's decision on this receive was not kept (:data:`CRASHED`, ...), or ``None``.
    lost: set[str] = field(default_factory=set)
    #: The invocation's error, ``type: message``, when it had one.
    error: str | None = None
    #: A body that is no envelope, when it is short: a large body's pointer (the checker finds its key).
    pointer: str | None = None
    #: The consumer named it in ``batchItemFailures``: back in the queue by its own decision (a retry, a copy
    #: SQS refused, a letter the DLQ refused, a batch count not written), its receive spent.
    returned: bool = False

    def decision_lost(self) -> bool:
        """Crashed, overran or acknowledged by a dying mapping: SQS may receive it again unsettled."""
        return bool(self.lost)

    def said(self) -> str:
        why = ", ".join(sorted(self.lost)) or ("returned to the queue" if self.returned else "settled")
        return f"receive {self.count} (attempt {self.attempt}) of {self.message_id}: {why}" + (
            f" ({self.error})" if self.error else ""
        )


class Receives:
    """The run's receives, recorded by the mapping's SQS client and its invocations (thread-safe)."""

    def __init__(self, visibility_timeout: float, clock: Any = time.monotonic):
        self.visibility_timeout = visibility_timeout
        self._clock = clock
        self._lock = threading.Lock()
        self._by_id: dict[tuple[str, int], Receive] = {}
        self._by_handle: dict[str, Receive] = {}
        self.all: list[Receive] = []
        #: Invocations that raised something other than the injected crash: ``type: message``.
        self.unexplained: list[str] = []
        #: Invocations that raised the injected crash.
        self.crashes = 0

    def received(self, messages: list[dict[str, Any]]) -> None:
        """A ``ReceiveMessage`` answer of the mapping's poller."""
        now = self._clock()
        with self._lock:
            for message in messages:
                count = int(message.get("Attributes", {}).get("ApproximateReceiveCount", "1"))
                prior = message.get("MessageAttributes", {}).get("TieredJobs.PriorAttempts", {}).get("StringValue")
                body, key = message["Body"], _key(message["Body"])
                pointer = body if key is None and len(body) <= MAX_POINTER_CHARS else None
                receive = Receive(message["MessageId"], count, key, count + int(prior or 0), now, pointer=pointer)
                self._by_id[(receive.message_id, count)] = receive
                self._by_handle[message["ReceiptHandle"]] = receive
                self.all.append(receive)

    def invoked(
        self, event: dict[str, Any], error: str | None, crashed: bool, returned: frozenset[str] = frozenset()
    ) -> None:
        """An invocation ended: ``error`` its error (``None``: it answered), ``crashed`` the injected crash,
        ``returned`` the message ids its answer named in ``batchItemFailures``."""
        now = self._clock()
        with self._lock:
            if error is not None and not crashed:
                self.unexplained.append(error)
            self.crashes += crashed
            for record in event["Records"]:
                count = int(record.get("attributes", {}).get("ApproximateReceiveCount", "1"))
                receive = self._by_id.get((record["messageId"], count))
                if receive is None:
                    continue
                receive.ended_at, receive.error = now, error
                receive.returned = record["messageId"] in returned
                if error is not None:
                    receive.lost.add(CRASHED if crashed else ERROR)
                if now - receive.received_at >= self.visibility_timeout:
                    receive.lost.add(OVERRAN)

    def unexplained_errors(self, mapping_errors: int) -> list[str]:
        """The unexplained invocation errors, given the mapping's own count of failed batches
        (``MappingStats.invocation_errors``): one it counted that no invocation showed (its batch handling
        raised) is unexplained too."""
        with self._lock:
            missing = mapping_errors - self.crashes - len(self.unexplained)
            return self.unexplained + ["a batch the mapping failed to handle (see its log)"] * max(0, missing)

    def ack_crashed(self, handles: list[str]) -> None:
        """The mapping died before deleting these records: their decisions are lost."""
        with self._lock:
            for handle in handles:
                receive = self._by_handle.get(handle)
                if receive is not None:
                    receive.lost.add(ACK_CRASHED)

    def overruns(self) -> list[Receive]:
        with self._lock:
            return [receive for receive in self.all if OVERRAN in receive.lost]


def _key(body: str) -> str | None:
    try:
        key = json.loads(body)["idempotency_key"]
    except (ValueError, KeyError, TypeError):
        return None
    return key if isinstance(key, str) else None
