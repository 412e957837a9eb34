"""The event-source-mapping runtime: what Lambda's SQS poller does, run locally against moto.

One :class:`MappingRuntime` per deployed mapping. It starts ``maximum_concurrency`` pollers; each
poller owns one execution environment (see :mod:`emulator.invokers`) and loops:

1. long-poll the queue (``MaxNumberOfMessages`` <= 10, all system and message attributes), and
   keep polling inside the mapping's batching window until the batch is full, as Lambda does;
2. build the exact Lambda SQS event and invoke the function's handler with a Lambda context;
3. delete exactly the records not named in ``batchItemFailures`` (``DeleteMessageBatch``); on a
   handler error, a timeout or an invalid response delete nothing: the whole batch comes back
   after its visibility timeout.

Because each poller invokes synchronously, at most ``maximum_concurrency`` invocations of a
mapping run at once: the same bound Lambda's ``ScalingConfig.MaximumConcurrency`` gives.

The mapping's ``Enabled`` state and its ``MaximumConcurrency`` can change while it runs
(``UpdateEventSourceMapping``: a paused tier, a lowered concurrency): each poller reads them
(``control``) before every receive, so a disabled mapping receives nothing (a batch in flight
finishes, as on Lambda) and a lowered concurrency idles the pollers above it. A concurrency raised
above the one deployed takes effect at the next start.

Given ``wait_for_messages`` (local mode's: a wait on the queue in moto's own store, see
:mod:`emulator.store_reads`), an idle poller waits there for a message instead of sending an empty
long poll every second: six idle pollers' polls were about 0.035 of a core for a whole session.
The receive itself is still ``ReceiveMessage``, made as soon as the queue holds a visible message.
"""

from __future__ import annotations

import base64
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from tiered_jobs.contract.names import SQS_MAX_BATCH_ENTRIES

log = logging.getLogger(__name__)

#: Longest single long poll. Lambda waits up to 20 s; a shorter wait lets :meth:`stop` return
#: within about a second, at the price of one empty ReceiveMessage per idle poller per second.
DEFAULT_POLL_WAIT_SECONDS = 1
#: How many recent end-to-end latencies each mapping keeps (for the live view and benchmarks).
LATENCY_WINDOW = 2000
#: How often an idle poller (mapping disabled, or above the maximum concurrency) reads the mapping again.
CONTROL_WAIT_SECONDS = 0.2


@dataclass(frozen=True)
class MappingControl:
    """What ``UpdateEventSourceMapping`` may change while a mapping runs."""

    enabled: bool = True
    maximum_concurrency: int | None = None


@dataclass(frozen=True)
class FunctionConfig:
    """A deployed Lambda function, as the runtime needs it (read from the deployed resources)."""

    name: str
    arn: str
    handler: str
    environment: dict[str, str]
    timeout_seconds: int
    memory_mb: int
    region: str
    #: The directory that plays ``/var/task``: the function's code asset.
    code_root: str
    #: The CloudWatch Logs group its output goes to (``LoggingConfig.LogGroup``; ``""``: ``/aws/lambda/<name>``).
    log_group: str = ""
    #: The ``python`` folders of its layers that local mode has (the job folder's packages), which play
    #: ``/opt/python``: on the path after the code, before the interpreter's own packages, as on Lambda.
    layer_paths: tuple[str, ...] = ()

    @property
    def log_group_name(self) -> str:
        return self.log_group or f"/aws/lambda/{self.name}"


@dataclass(frozen=True)
class MappingConfig:
    """A deployed SQS event source mapping."""

    function: FunctionConfig
    queue_url: str
    queue_arn: str
    batch_size: int
    batching_window_seconds: int
    maximum_concurrency: int
    #: ``ReportBatchItemFailures`` in ``FunctionResponseTypes``: without it Lambda ignores the
    #: response and deletes the whole batch when the handler returns.
    report_batch_item_failures: bool = True

    def __post_init__(self) -> None:
        if self.batch_size < 1:
            raise ValueError(f"batch size must be >= 1, got {self.batch_size}")
        if self.batch_size > SQS_MAX_BATCH_ENTRIES and self.batching_window_seconds < 1:
            raise ValueError("a batch size above 10 needs a batching window (Lambda's own rule)")
        if self.maximum_concurrency < 1:
            raise ValueError(f"maximum concurrency must be >= 1, got {self.maximum_concurrency}")


@dataclass(frozen=True)
class InvocationError:
    """Why an invocation produced no usable response (Lambda's ``errorType`` / ``errorMessage``)."""

    error_type: str
    message: str
    timed_out: bool = False


@dataclass(frozen=True)
class Invocation:
    """What one invocation returned."""

    response: Any = None
    error: InvocationError | None = None
    duration_ms: float = 0.0
    cold_start: bool = False


class Invoker(Protocol):
    """One execution environment of a function: invokes it serially, one event at a time."""

    def invoke(self, event: dict[str, Any]) -> Invocation: ...

    def close(self) -> None: ...


InvokerFactory = Callable[[FunctionConfig], Invoker]
#: Called after every invocation (the local metrics emulation publishes Lambda's own metrics).
InvocationListener = Callable[[FunctionConfig, Invocation], None]


@dataclass
class MappingStats:
    """What a mapping did since it started. Read :meth:`snapshot` from other threads."""

    batches: int = 0
    records: int = 0
    deleted: int = 0
    #: Records the handler named in ``batchItemFailures`` (they come back after their visibility).
    item_failures: int = 0
    #: Invocations that raised, crashed, timed out or answered with an invalid response.
    invocation_errors: int = 0
    timeouts: int = 0
    delete_failures: int = 0
    cold_starts: int = 0
    in_flight: int = 0
    #: Reads of the mapping's state that held a poller back (disabled, or above its concurrency): each
    #: a receive declined. What a test waits on to know the pollers have looked, instead of sleeping.
    held: int = 0
    #: Milliseconds from ``SentTimestamp`` to the record's deletion, most recent last.
    latencies_ms: deque[float] = field(default_factory=lambda: deque(maxlen=LATENCY_WINDOW))
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, **deltas: int) -> None:
        with self._lock:
            for name, delta in deltas.items():
                setattr(self, name, getattr(self, name) + delta)

    def add_latencies(self, values: Iterable[float]) -> None:
        with self._lock:
            self.latencies_ms.extend(values)

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {
                "batches": self.batches,
                "records": self.records,
                "deleted": self.deleted,
                "item_failures": self.item_failures,
                "invocation_errors": self.invocation_errors,
                "timeouts": self.timeouts,
                "delete_failures": self.delete_failures,
                "cold_starts": self.cold_starts,
                "in_flight": self.in_flight,
                "held": self.held,
                "latencies_ms": list(self.latencies_ms),
            }


# --------------------------------------------------------------------------------------------
# The event Lambda builds


def lambda_record(message: dict[str, Any], queue_arn: str, region: str) -> dict[str, Any]:
    """One SQS ``ReceiveMessage`` message in the shape Lambda gives the handler."""
    record: dict[str, Any] = {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": dict(message.get("Attributes", {})),
        "messageAttributes": {
            name: _lambda_message_attribute(value) for name, value in message.get("MessageAttributes", {}).items()
        },
        "md5OfBody": message["MD5OfBody"],
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": region,
    }
    if "MD5OfMessageAttributes" in message:
        record["md5OfMessageAttributes"] = message["MD5OfMessageAttributes"]
    return record


def _lambda_message_attribute(value: dict[str, Any]) -> dict[str, Any]:
    """``{StringValue, BinaryValue, DataType}`` -> Lambda's camel-case shape (binary as base64)."""
    shaped: dict[str, Any] = {
        "stringListValues": list(value.get("StringListValues", [])),
        "binaryListValues": [_b64(item) for item in value.get("BinaryListValues", [])],
        "dataType": value["DataType"],
    }
    if "StringValue" in value:
        shaped["stringValue"] = value["StringValue"]
    if "BinaryValue" in value:
        shaped["binaryValue"] = _b64(value["BinaryValue"])
    return shaped


def _b64(data: bytes | str) -> str:
    return base64.b64encode(data if isinstance(data, bytes) else data.encode()).decode("ascii")


def sqs_event(messages: Sequence[dict[str, Any]], queue_arn: str, region: str) -> dict[str, Any]:
    """The ``{"Records": [...]}`` event for a batch."""
    return {"Records": [lambda_record(message, queue_arn, region) for message in messages]}


def failed_message_ids(response: Any, message_ids: Sequence[str]) -> set[str] | None:
    """The records to keep, read from a partial batch response as Lambda reads it.

    Lambda treats an empty or null response, or an empty/null ``batchItemFailures``, as complete
    success, and an identifier that is empty, null, misnamed or not in the batch as complete
    failure. Returns the ids to keep, or ``None`` when the whole batch failed.
    """
    if response is None or response == {}:
        return set()
    if not isinstance(response, dict):
        return None
    failures = response.get("batchItemFailures")
    if failures is None or failures == []:
        return set()
    if not isinstance(failures, list):
        return None
    known = set(message_ids)
    kept: set[str] = set()
    for item in failures:
        identifier = item.get("itemIdentifier") if isinstance(item, dict) else None
        if not isinstance(identifier, str) or identifier not in known:
            return None
        kept.add(identifier)
    return kept


# --------------------------------------------------------------------------------------------
# The poller


class MappingRuntime:
    """Runs one mapping: ``maximum_concurrency`` pollers, each with its own execution environment."""

    def __init__(
        self,
        mapping: MappingConfig,
        invoker_factory: InvokerFactory,
        sqs_client: Any,
        *,
        poll_wait_seconds: int = DEFAULT_POLL_WAIT_SECONDS,
        listener: InvocationListener | None = None,
        control: Callable[[], MappingControl] | None = None,
        wait_for_messages: Callable[[float], bool] | None = None,
    ):
        """``wait_for_messages(seconds)`` waits up to ``seconds`` for the queue to hold a visible message
        and says whether it does (unset: every poll is a long poll)."""
        self.mapping = mapping
        self._control = control
        self._wait_for_messages = wait_for_messages
        self.stats = MappingStats()
        self._invoker_factory = invoker_factory
        self._sqs = sqs_client
        self._poll_wait = poll_wait_seconds
        self._listener = listener
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        #: The pollers whose last read of the mapping's state held them back.
        self._holding: set[int] = set()
        self._holding_lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.mapping.function.name

    @property
    def pollers(self) -> int:
        """How many pollers run (the concurrency the mapping started with)."""
        return len(self._threads)

    def holding(self) -> frozenset[int]:
        """The pollers held back by the mapping's state: each read it last as disabled (or itself above
        the maximum concurrency) and receives nothing until a read says otherwise. Once every poller
        holds, a pause has taken effect (Lambda's ``Disabled`` after ``Disabling``): a long poll that
        was already waiting when it landed has returned."""
        with self._holding_lock:
            return frozenset(self._holding)

    def update_function(self, function: FunctionConfig) -> None:
        """The function's configuration changed (``UpdateFunctionConfiguration``): like Lambda, retire
        the execution environments built on the old one; the next batches start new ones."""
        if function.name != self.name:
            raise ValueError(f"mapping of {self.name} cannot run {function.name}")
        self.mapping = replace(self.mapping, function=function)

    def start(self) -> None:
        if self._threads:
            raise RuntimeError(f"mapping of {self.name} is already running")
        self._stop.clear()
        for index in range(self.mapping.maximum_concurrency):
            thread = threading.Thread(
                target=self._poll_forever, args=(index,), name=f"esm-{self.name}-{index}", daemon=True
            )
            self._threads.append(thread)
            thread.start()

    def request_stop(self) -> None:
        """Ask every poller to finish its current batch and exit (see :meth:`stop`)."""
        self._stop.set()

    def stop(self, timeout: float | None = None) -> None:
        """Ask every poller to finish its current batch, then wait for them (and their environments)."""
        self.request_stop()
        for thread in self._threads:
            thread.join(timeout)
        alive = [thread.name for thread in self._threads if thread.is_alive()]
        self._threads = []
        if alive:
            raise RuntimeError(f"pollers did not stop in time: {', '.join(alive)}")

    def may_poll(self, index: int) -> bool:
        """Whether poller ``index`` may receive now: the mapping is enabled and ``index`` is within its concurrency."""
        if self._control is None:
            return True
        try:
            control = self._control()
        except Exception as exc:  # noqa: BLE001 - unreadable state: keep the last behaviour Lambda would, polling
            log.warning("%s: mapping state unreadable: %s", self.name, exc)
            return True
        concurrency = control.maximum_concurrency or self.mapping.maximum_concurrency
        return control.enabled and index < concurrency

    def _poll_forever(self, index: int = 0) -> None:
        invoker: Invoker | None = None
        built_for: FunctionConfig | None = None
        try:
            while not self._stop.is_set():
                allowed = self.may_poll(index)
                with self._holding_lock:
                    if allowed:
                        self._holding.discard(index)
                    else:
                        self._holding.add(index)
                if not allowed:
                    self.stats.add(held=1)
                    self._stop.wait(CONTROL_WAIT_SECONDS)
                    continue
                if self._wait_for_messages is not None and not self._wait_for_messages(self._poll_wait):
                    continue  # nothing within a long poll's wait: read the mapping's state again, as after one
                try:
                    messages = self._receive_batch()
                except Exception as exc:  # noqa: BLE001 - the endpoint went away or throttled: back off, keep going
                    if not self._stop.is_set():
                        log.warning("receive from %s failed: %s", self.mapping.queue_url, exc)
                        self._stop.wait(1.0)
                    continue
                if not messages:
                    continue
                function = self.mapping.function
                if invoker is not None and built_for is not function:
                    invoker.close()
                    invoker = None
                if invoker is None:
                    invoker, built_for = self._invoker_factory(function), function
                try:
                    self.process(invoker, messages)
                except Exception:  # a poller never dies: the batch returns after its visibility timeout
                    log.exception("%s: batch handling failed; its messages will be received again", self.name)
                    self.stats.add(invocation_errors=1)
        finally:
            if invoker is not None:
                invoker.close()

    def _receive(self, count: int, wait_seconds: int) -> list[dict[str, Any]]:
        response = self._sqs.receive_message(
            QueueUrl=self.mapping.queue_url,
            MaxNumberOfMessages=count,
            WaitTimeSeconds=wait_seconds,
            MessageSystemAttributeNames=["All"],
            MessageAttributeNames=["All"],
        )
        messages: list[dict[str, Any]] = response.get("Messages", [])
        return messages

    def _receive_batch(self) -> list[dict[str, Any]]:
        """Long-poll for a first message, then fill the batch within the batching window."""
        mapping = self.mapping
        messages = self._receive(min(SQS_MAX_BATCH_ENTRIES, mapping.batch_size), self._poll_wait)
        if not messages or mapping.batching_window_seconds <= 0:
            return messages
        deadline = time.monotonic() + mapping.batching_window_seconds
        while len(messages) < mapping.batch_size and not self._stop.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            wait = min(int(remaining), self._poll_wait)  # whole seconds: SQS's unit
            more = self._receive(min(SQS_MAX_BATCH_ENTRIES, mapping.batch_size - len(messages)), wait)
            messages.extend(more)
            if not more and wait == 0:
                self._stop.wait(min(remaining, 0.05))  # under a second left: short polls, gently
        return messages

    def process(self, invoker: Invoker, messages: Sequence[dict[str, Any]]) -> Invocation:
        """Invoke the function with one batch and settle it (public so tests can drive one batch)."""
        mapping = self.mapping
        event = sqs_event(messages, mapping.queue_arn, mapping.function.region)
        self.stats.add(batches=1, records=len(messages), in_flight=1)
        try:
            invocation = invoker.invoke(event)
        finally:
            self.stats.add(in_flight=-1)
        if invocation.cold_start:
            self.stats.add(cold_starts=1)
        if self._listener is not None:
            self._listener(mapping.function, invocation)

        ids = [message["MessageId"] for message in messages]
        if invocation.error is not None:
            self.stats.add(invocation_errors=1, timeouts=int(invocation.error.timed_out))
            log.warning(
                "%s failed on a batch of %d: %s: %s",
                self.name,
                len(messages),
                invocation.error.error_type,
                invocation.error.message,
            )
            return invocation
        keep = failed_message_ids(invocation.response, ids) if mapping.report_batch_item_failures else set()
        if keep is None:
            self.stats.add(invocation_errors=1)
            log.warning(
                "%s returned an invalid partial batch response; the whole batch is retried: %r",
                self.name,
                invocation.response,
            )
            return invocation
        self.stats.add(item_failures=len(keep))
        self._delete([message for message in messages if message["MessageId"] not in keep])
        return invocation

    def _delete(self, messages: Sequence[dict[str, Any]]) -> None:
        for start in range(0, len(messages), SQS_MAX_BATCH_ENTRIES):
            chunk = messages[start : start + SQS_MAX_BATCH_ENTRIES]
            try:
                response = self._sqs.delete_message_batch(
                    QueueUrl=self.mapping.queue_url,
                    Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(chunk)],
                )
            except Exception as exc:  # noqa: BLE001 - not deleted: the record comes back, idempotency absorbs it
                log.warning("delete from %s failed: %s", self.mapping.queue_url, exc)
                self.stats.add(delete_failures=len(chunk))
                continue
            failed = {entry["Id"] for entry in response.get("Failed", [])}
            done = [m for i, m in enumerate(chunk) if str(i) not in failed]
            now_ms = time.time() * 1000
            self.stats.add(deleted=len(done), delete_failures=len(failed))
            self.stats.add_latencies(
                now_ms - int(m["Attributes"]["SentTimestamp"])
                for m in done
                if "SentTimestamp" in m.get("Attributes", {})
            )


class EventSourceRuntime:
    """Every mapping of a deployment, started and stopped together."""

    def __init__(self, runtimes: Sequence[MappingRuntime]):
        self.mappings = list(runtimes)

    def start(self) -> None:
        for runtime in self.mappings:
            runtime.start()

    def stop(self, timeout: float | None = 30.0) -> None:
        for runtime in self.mappings:
            runtime.request_stop()  # all at once: every poller finishes its batch in parallel
        for runtime in self.mappings:
            runtime.stop(timeout)

    def by_function(self, function_name: str) -> MappingRuntime:
        for runtime in self.mappings:
            if runtime.name == function_name:
                return runtime
        raise KeyError(function_name)
