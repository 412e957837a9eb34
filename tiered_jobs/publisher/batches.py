"""Batches with callbacks and chains, as a publisher opens them (:mod:`tiered_jobs.contract.batches`).

    with publisher.batch(on_complete=("reports.notify", {"report": "r1"})) as batch:
        batch.publish("payments.email", {...}, "pay_1-email")
        batch.publish("payments.stats", {...}, "pay_1-stats")
    # sealed here: the callback is sent once every member has finished

    publisher.chain(("orders.reserve", {...}, "o1-reserve"), ("orders.charge", {...}, "o1-charge"))

Everything is checked before anything is written or sent: the callbacks' types, routes and payloads
(at :meth:`Publisher.batch`, so a callback that could never be sent refuses the batch), each member
like any job, and a member a batch could never count (``unique_for``: it may not be sent;
``debounce``: it runs under another key). The batch's head item is written with the first member,
and the ``with`` block's end seals it with its total: a block left by an exception is not sealed,
so its callbacks never fire (its members still run). An empty batch is refused, nothing written.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ..contract import batches
from ..contract.sqs_limits import MAX_JOB_MESSAGE_BYTES, message_size
from ..contract.times import iso_text
from .errors import InvalidJobError
from .models import Job, Prepared, PublishResult, as_job

if TYPE_CHECKING:
    from .client import Publisher

#: What a callback is given as: ``(type, payload)``, or a :class:`Job` (its key is replaced by the batch id).
Callback = tuple[str, Mapping[str, Any]] | Job
#: What a chain's link is given as: ``(type, payload, idempotency_key)``, a :class:`Job` or its dict.
Link = tuple[str, Mapping[str, Any], str] | Job | Mapping[str, Any]


@dataclass(frozen=True)
class ChainResult:
    """A chain opened: its id (``tiered-jobs batch ID``) and its first link's publish."""

    chain_id: str
    first: PublishResult


class Batch:
    """A batch being filled (``with publisher.batch(...) as batch``); sealed when the block ends."""

    def __init__(
        self,
        publisher: Publisher,
        table: str,
        *,
        on_success: Callback | None,
        on_complete: Callback | None,
        batch_id: str | None,
        clock: Callable[[], datetime],
    ):
        self.batch_id = batch_id if batch_id is not None else batches.new_id()
        problems = batches.field_problems({"id": self.batch_id})
        if on_success is None and on_complete is None:
            problems.append("a batch needs a callback: give on_success=(type, payload), on_complete=..., or both")
        callbacks = {
            name: spec for name, spec in ((batches.ON_SUCCESS, on_success), (batches.ON_COMPLETE, on_complete)) if spec
        }
        prepared = {}
        for name, spec in callbacks.items():
            try:
                prepared[name] = _callback(publisher, name, spec, self.batch_id)
            except InvalidJobError as exc:
                problems.extend(exc.problems)
        types = {message.job_type for message in prepared.values()}
        if len(prepared) == 2 and len(types) == 1:
            problems.append(
                "on_success and on_complete have the same type: both would run under the batch's id as their "
                "idempotency key, so the second would be taken for the first; give them different types"
            )
        if problems:
            raise InvalidJobError([f"batch: {problem}" for problem in problems])
        self._publisher, self._table, self._clock = publisher, table, clock
        self._callbacks = prepared
        self._members: set[tuple[str, str]] = set()
        self._opened = False
        self.sealed: batches.Head | None = None

    def __enter__(self) -> Batch:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is None:  # a block left by an exception stays open: its callbacks never fire
            self.seal()

    @property
    def total(self) -> int:
        return len(self._members)

    def publish(self, job_type: str, payload: Mapping[str, Any], idempotency_key: str, **options: Any) -> PublishResult:
        """Publish one member (``options`` as :meth:`Publisher.publish` takes them)."""
        return self.publish_batch([Job(job_type, payload, idempotency_key, **options)])[0]

    def publish_batch(self, jobs: Iterable[Job | Mapping[str, Any]]) -> list[PublishResult]:
        """Publish members with as few calls as SQS allows (see :meth:`Publisher.publish_batch`)."""
        if self.sealed is not None:
            raise InvalidJobError([f"batch {self.batch_id} is sealed: open a new batch for more jobs"])
        items = [as_job(job) for job in jobs]
        problems = [problem for job in items for problem in _member_problems(job)]
        keys = [(job.job_type, job.idempotency_key) for job in items]
        repeated = sorted({key for key in keys if keys.count(key) > 1 or key in self._members})
        problems += [
            f"{job_type} (key {key!r}) is in the batch already: a member is counted once per type and key"
            for job_type, key in repeated
        ]
        if problems:
            raise InvalidJobError([f"batch {self.batch_id}: {problem}" for problem in problems])
        prepared = [_with_field(item, {"id": self.batch_id}) for item in self._publisher._prepare_all(items)]
        if not self._opened:
            now = self._clock()
            item = batches.head_item(
                self.batch_id, batches.BATCH, created_at=iso_text(now), now=now.timestamp(), callbacks=self._callbacks
            )
            self._publisher.dynamodb.put_item(**batches.create_request(self._table, item))
            self._opened = True
        self._members.update(keys)  # counted in the total even if the send fails: it may have been sent
        return self._publisher._publish_prepared(prepared)

    def seal(self) -> batches.Head:
        """Seal the batch with its total; send the callbacks already due (members that finished first)."""
        if self.sealed is not None:
            return self.sealed
        if not self._members:
            raise InvalidJobError([f"batch {self.batch_id} is empty: publish at least one job in it"])
        publisher = self._publisher
        item = publisher.dynamodb.update_item(**batches.seal_request(self._table, self.batch_id, self.total))
        head = batches.Head.from_item(item["Attributes"])
        fired = batches.fire_due(head, publisher.sqs, publisher.dynamodb, self._table)
        self.sealed = replace(head, fired=head.fired | set(fired))
        return self.sealed


def open_chain(
    publisher: Publisher, table: str, links: Sequence[Link], *, chain_id: str | None, now: datetime
) -> ChainResult:
    """Write the chain's head with every link ready to send, then send the first."""
    chain_id = chain_id if chain_id is not None else batches.new_id()
    problems = batches.field_problems({"id": chain_id})
    if not links:
        problems.append("a chain needs at least one link")
    if len(links) > batches.MAX_CHAIN_LINKS:
        problems.append(f"a chain holds at most {batches.MAX_CHAIN_LINKS} links, got {len(links)}")
    jobs = []
    for position, link in enumerate(links):
        try:
            jobs.append(_link_job(link))
        except InvalidJobError as exc:
            problems.extend(f"link #{position} {problem}" for problem in exc.problems)
    problems += [f"link #{n} {problem}" for n, job in enumerate(jobs) for problem in _member_problems(job)]
    if problems:
        raise InvalidJobError([f"chain: {problem}" for problem in problems])
    prepared = [
        _with_field(item, {"id": chain_id, "step": step}) for step, item in enumerate(publisher._prepare_all(jobs))
    ]
    if any(item.fire_at is not None or item.delay_seconds for item in prepared):
        raise InvalidJobError(["chain: a link runs when the one before it succeeds: drop delay= and at="])
    size = sum(item.size for item in prepared)
    if size > batches.MAX_HEAD_MESSAGE_BYTES:
        raise InvalidJobError(
            [
                f"chain: its links' messages are {size} bytes, over {batches.MAX_HEAD_MESSAGE_BYTES} (they are kept in "
                "one DynamoDB item until sent); pass IDs, not objects"
            ]
        )
    head = batches.head_item(
        chain_id,
        batches.CHAIN,
        created_at=iso_text(now),
        now=now.timestamp(),
        callbacks={},
        links=[_message(item) for item in prepared],
    )
    publisher.dynamodb.put_item(**batches.create_request(table, head))
    return ChainResult(chain_id, publisher._publish_prepared(prepared[:1])[0])


def _member_problems(job: Job) -> list[str]:
    if job.unique_for is not None:
        return [f"{job.describe()}: unique_for= may send nothing, and a batch waits for every member: drop it"]
    if job.debounce is not None:
        return [f"{job.describe()}: debounce= runs the job under another key than the batch counts: drop it"]
    return []


def _link_job(link: Link) -> Job:
    if isinstance(link, tuple):
        if len(link) != 3:
            raise InvalidJobError([f"must be (type, payload, idempotency_key), a Job or a dict, got {len(link)} items"])
        return Job(*link)
    return as_job(link)


def _callback(publisher: Publisher, name: str, spec: Callback, batch_id: str) -> batches.Message:
    """A callback checked as a job under the batch's id, its message ready to send."""
    if isinstance(spec, Job):
        job = replace(spec, idempotency_key=batch_id)
    elif isinstance(spec, tuple) and len(spec) == 2:
        job = Job(spec[0], spec[1], batch_id)
    else:
        raise InvalidJobError([f"{name} must be (type, payload) or a Job, got {spec!r}"[:200]])
    if any(value is not None for value in (job.delay, job.at, job.unique_for, job.debounce)):
        raise InvalidJobError(
            [f"{name}: a callback is sent when the batch finishes: drop delay, at, unique_for, debounce"]
        )
    try:
        (item,) = publisher._prepare_all([job])
    except InvalidJobError as exc:
        raise InvalidJobError([f"{name} {problem}" for problem in exc.problems]) from None
    return _message(item)


def _with_field(item: Prepared, value: dict[str, Any]) -> Prepared:
    """The prepared job with the envelope's ``batch`` field (its size checked again)."""
    body = json.loads(item.body)
    body["batch"] = value
    text = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
    size = message_size(text)
    if size > MAX_JOB_MESSAGE_BYTES:
        raise InvalidJobError(
            [f"{item.job.describe()}: with its batch field the message is over {MAX_JOB_MESSAGE_BYTES} bytes"]
        )
    return replace(item, body=text, size=size)


def _message(item: Prepared) -> batches.Message:
    return batches.Message(item.queue_url, item.body, item.job.tenant, item.job.job_type, item.job.idempotency_key)
