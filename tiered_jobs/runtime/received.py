"""One record of a batch, read once: its envelope (or why it has none), and what the job carries.

The consumer reads every record of its batch here before it decides anything, so the rate
limiter, the time budget and the run all see the same parsed envelope and the same attempt
number (the envelope is parsed once per record, never once per feature).

**What a job carries.** SQS counts receives per *message*; the consumer sometimes sends a job
again as a new message (a copy: held by the rate limit, or deferred by the time budget), and an
operator moves letters back (replay). A copy starts with a fresh receive count and a fresh
``SentTimestamp``, so it carries what the job had before in ``TieredJobs.*`` attributes
(:class:`~tiered_jobs.contract.names.Attributes`):

* the attempt number is ``TieredJobs.PriorAttempts`` + ``ApproximateReceiveCount``;
* the job entered its queue at ``TieredJobs.EnqueuedAt``, else at this message's ``SentTimestamp``;
* it first failed at ``TieredJobs.FirstFailedAt``, else at this message's first receive when it
  was received before (every earlier receive of a message ran and failed: holds and deferrals
  never return a message, they send a copy), else now.

A letter moved back by SQS's own ``StartMessageMoveTask`` (native replay) still has every
attribute of its letter: its ``DeadLetter.*`` reasons say it was dead-lettered, so it starts a
new run (attempts from 1, enqueued now, as SQS gives it a new id and enqueue time) and keeps only
its first failure (``DeadLetter.FirstFailedAt``).

**An offloaded body** (``tiered_jobs.contract.large_payloads``): ``body`` stays the pointer, which
every copy, letter and replay sends again; the envelope is parsed from the stored body the
consumer fetched (``fetch``), and a fetch that failed is ``body_error``, raised when the record runs.

Only the standard library and the contract: this runs at cold start.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from tiered_jobs.contract import carry
from tiered_jobs.contract import envelope as envelope_rules
from tiered_jobs.contract import trace_header as traces
from tiered_jobs.contract.names import DeadLetter
from tiered_jobs.contract.times import parse_iso

#: Job type label for records whose envelope could not be read, or whose type is not registered
#: (keeps metric dimensions bounded whatever publishers send).
INVALID_JOB_TYPE = "invalid"
UNREGISTERED_JOB_TYPE = "unregistered"


class Carried:
    """What earlier messages of this job handed on (see the module's docstring).

    This and :class:`Received` are plain classes, read-only by convention: a dataclass's generated
    methods cost about a millisecond each of every cold start, and a frozen one's ``__init__`` a few
    microseconds of every record."""

    __slots__ = ("prior_attempts", "enqueued_at", "first_failed_at", "turn", "replayed_natively")

    def __init__(
        self,
        prior_attempts: int = 0,
        enqueued_at: datetime | None = None,
        first_failed_at: datetime | None = None,
        turn: str | None = None,
        replayed_natively: bool = False,
    ):
        self.prior_attempts = prior_attempts
        self.enqueued_at = enqueued_at
        self.first_failed_at = first_failed_at
        #: The turn the rate limit reserved when it held the job (``TieredJobs.Turn``, as sent).
        self.turn = turn
        #: A letter moved back by native replay: a new run of the job.
        self.replayed_natively = replayed_natively

    @classmethod
    def read(cls, attributes: Mapping[str, Any]) -> Carried:
        if not attributes:
            return NOTHING_CARRIED  # a job's first message: most records of a healthy tier
        text = {name: (value or {}).get("stringValue") for name, value in attributes.items()}
        if any(name.startswith(DeadLetter.PREFIX) for name in text):
            return cls(first_failed_at=parse_iso(text.get(DeadLetter.FIRST_FAILED_AT)), replayed_natively=True)
        state = carry.Read(text)
        return cls(
            prior_attempts=state.prior_attempts,
            enqueued_at=parse_iso(state.enqueued_at),
            first_failed_at=parse_iso(state.first_failed_at),
            turn=state.turn,
        )


#: What a message without attributes carries (read-only: one instance serves every such record).
NOTHING_CARRIED = Carried()


class Received:
    """One SQS record of the batch (Lambda's event shape), parsed (read-only by convention, as :class:`Carried`)."""

    __slots__ = (
        "message_id",
        "receipt_handle",
        "body",
        "attributes",
        "receive_count",
        "sent_at",
        "first_received_ms",
        "source",
        "group_id",
        "envelope",
        "envelope_error",
        "carried",
        "label",
        "body_error",
        "trace_header",
    )

    def __init__(
        self,
        message_id: str,
        receipt_handle: str,
        body: str,
        attributes: Mapping[str, Any],
        receive_count: int,
        sent_at: datetime,
        first_received_ms: str | None,
        source: str,
        group_id: str | None,
        envelope: envelope_rules.Envelope | None,
        envelope_error: envelope_rules.EnvelopeError | None,
        carried: Carried,
        label: str,
        body_error: BaseException | None = None,
        trace_header: str | None = None,
    ):
        self.message_id = message_id
        self.receipt_handle = receipt_handle
        self.body = body
        #: Lambda's ``messageAttributes`` of the record, as delivered.
        self.attributes = attributes
        #: SQS's ``ApproximateReceiveCount`` of this message.
        self.receive_count = receive_count
        self.sent_at = sent_at
        #: SQS's ``ApproximateFirstReceiveTimestamp`` as delivered (epoch milliseconds, as text; ``None`` when
        #: absent): parsed only when asked (:attr:`first_received_at`), which only a failure or a copy does.
        self.first_received_ms = first_received_ms
        #: The queue it came from (``eventSourceARN``).
        self.source = source
        #: ``MessageGroupId`` as SQS delivered it (a fair queue's tenant, when the sender set one).
        self.group_id = group_id
        self.envelope = envelope
        #: Why the body is not an envelope (``None`` when it is).
        self.envelope_error = envelope_error
        self.carried = carried
        #: The metric label: the job type when it is registered, else ``invalid`` / ``unregistered``.
        self.label = label
        #: Why an offloaded body could not be fetched (``None``: the body was not offloaded, or was fetched).
        self.body_error = body_error
        #: The X-Ray header its publisher sent (``AWSTraceHeader``): every copy, letter and replay sends it
        #: on, so the job's runs all link to the publishing request (:mod:`tiered_jobs.contract.trace_header`).
        self.trace_header = trace_header

    @property
    def first_received_at(self) -> datetime | None:
        """SQS's ``ApproximateFirstReceiveTimestamp`` of this message (``None`` when absent or unreadable)."""
        return _epoch_ms(self.first_received_ms)

    @property
    def attempt(self) -> int:
        """This receive's attempt number: the attempts earlier copies spent plus this message's receives."""
        return self.carried.prior_attempts + self.receive_count

    @property
    def reserved_turn(self) -> str | None:
        """The rate limit's reserved turn, on the copy's first receive only: a message received
        again (a retry, a crash) has had its turn, and claims a token like any other."""
        return self.carried.turn if self.receive_count == 1 else None

    @property
    def enqueued_at(self) -> datetime:
        return self.carried.enqueued_at or self.sent_at

    @property
    def tenant(self) -> str | None:
        """The envelope's tenant, else the group SQS delivered: the ``MessageGroupId`` of every copy."""
        if self.envelope is not None and self.envelope.tenant is not None:
            return self.envelope.tenant
        if isinstance(self.envelope_error, envelope_rules.EnvelopeTooNew) and self.envelope_error.tenant:
            return self.envelope_error.tenant  # a newer producer's job: held, its copies keep their group
        return self.group_id

    @property
    def job_type(self) -> str:
        """The envelope's type (``invalid`` without an envelope)."""
        return self.envelope.type if self.envelope is not None else INVALID_JOB_TYPE

    def first_failed_at(self, now: datetime) -> datetime:
        """When the job first failed, if it fails now (see the module's docstring)."""
        if self.carried.first_failed_at is not None:
            return self.carried.first_failed_at
        if self.receive_count > 1 and self.first_received_at is not None:
            return self.first_received_at
        return now

    def age_seconds(self, now: datetime) -> float:
        """How long the job has waited since it entered its queue (``JobAge``)."""
        return max(0.0, (now - self.enqueued_at).total_seconds())

    def api_attributes(self) -> dict[str, dict[str, Any]]:
        """The message attributes in the SQS API's ``MessageAttributes`` shape (what a send takes)."""
        return api_attributes(self.attributes)


#: Fetches an offloaded record's stored body (the raw record in, the body or why not out).
Fetch = Callable[[Mapping[str, Any]], str | BaseException]


def read_batch(event: Mapping[str, Any], registered: Any, fetch: Fetch | None = None) -> list[Received]:
    """Every record of a Lambda SQS event, in order; ``registered`` answers ``job_type in registered``;
    ``fetch`` reads an offloaded body (``None``: a pointer is read as the body it is, and refused)."""
    return [read(raw, registered, fetch) for raw in event.get("Records") or []]


def read(raw: Mapping[str, Any], registered: Any, fetch: Fetch | None = None) -> Received:
    system = raw.get("attributes") or {}
    attributes = raw.get("messageAttributes") or {}
    body = raw.get("body") or ""
    envelope: envelope_rules.Envelope | None = None
    error: envelope_rules.EnvelopeError | None = None
    text: str | BaseException = body
    # Only a record with message attributes can be a pointer: the others never load its module (_offloaded).
    offloaded = fetch is not None and bool(attributes) and _offloaded(attributes)
    if offloaded:
        assert fetch is not None
        text = fetch(raw)
    try:
        if isinstance(text, str):  # a stored body is past SQS's size by design: no message holds it
            envelope = envelope_rules.parse(text, max_bytes=None) if offloaded else envelope_rules.parse(text)
    except envelope_rules.EnvelopeError as exc:
        error = exc
    if envelope is None:
        label = INVALID_JOB_TYPE
    else:
        label = envelope.type if envelope.type in registered else UNREGISTERED_JOB_TYPE
    return Received(
        message_id=raw["messageId"],
        receipt_handle=raw.get("receiptHandle", ""),
        body=body,
        attributes=attributes,
        receive_count=max(1, _count(system.get("ApproximateReceiveCount"), default=1)),
        sent_at=_epoch_ms(system.get("SentTimestamp")) or datetime.now(timezone.utc),
        first_received_ms=system.get("ApproximateFirstReceiveTimestamp"),
        source=raw.get("eventSourceARN", ""),
        group_id=system.get("MessageGroupId") or None,
        envelope=envelope,
        envelope_error=error,
        carried=Carried.read(attributes),
        label=label,
        body_error=text if isinstance(text, BaseException) else None,
        trace_header=system.get(traces.ATTRIBUTE) or None,
    )


def api_attributes(event_attributes: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """Lambda's ``messageAttributes`` shape -> the SQS API's ``MessageAttributes`` shape."""
    result: dict[str, dict[str, Any]] = {}
    for name, attr in (event_attributes or {}).items():
        data_type = attr.get("dataType") or attr.get("DataType")
        value: dict[str, Any] = {"DataType": data_type}
        if attr.get("stringValue") is not None:
            value["StringValue"] = attr["stringValue"]
        elif attr.get("binaryValue") is not None:
            value["BinaryValue"] = base64.b64decode(attr["binaryValue"])
        else:
            continue  # list values are reserved by SQS and never set on real messages
        result[name] = value
    return result


def by_id(records: Sequence[Received]) -> dict[str, Received]:
    return {record.message_id: record for record in records}


def _offloaded(attributes: Mapping[str, Any]) -> bool:
    """Is a record with message attributes a pointer? Asked only of such a record: a job's first delivery
    carries none, so a cold start whose first batch is all first deliveries never loads the pointer's module
    (and its two dataclasses: about 2 ms)."""
    from tiered_jobs.contract import large_payloads

    return large_payloads.is_offloaded(attributes)


def _count(value: Any, default: int = 0) -> int:
    try:
        return max(0, int(value)) if value is not None else default
    except (TypeError, ValueError):
        return default


def _epoch_ms(value: Any) -> datetime | None:
    try:
        return datetime.fromtimestamp(int(value) / 1000, tz=timezone.utc) if value is not None else None
    except (TypeError, ValueError, OverflowError, OSError):
        return None
