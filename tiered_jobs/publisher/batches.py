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
so its callbacks never fire (its members still run). An empty batch is refused, nothing written;
an id in use is refused as bad input.

A batch finishes whatever its members' sends did: a member whose publish was refused may be
published again, and one still not sent at the seal is counted failed there, with why
(``Sealed.not_sent``). A lost answer is not a refusal: the head and the seal tell their own write,
met again on botocore's retry, by the head's token (docs/architecture.md, conditional writes).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from types import TracebackType
from typing import Any, Protocol

from ..contract import batches, transactions
from ..contract.idempotency import record_id
from ..contract.times import iso_text
from .errors import InvalidJobError, PublishError
from .models import Job, Prepared, PublishResult
from .prepare import Destinations, as_job, prepare


class Opener(Destinations, Protocol):
    """What a batch or a chain asks of the publisher that opened it (``Publisher`` has it; a protocol, so
    that this module does not import the publisher's)."""

    @property
    def dynamodb(self) -> Any: ...

    @property
    def sqs(self) -> Any: ...

    def send(self, prepared: list[Prepared]) -> list[PublishResult]: ...


#: What a callback is given as: ``(type, payload)``, or a :class:`Job` (its key is replaced by the batch id).
Callback = tuple[str, Mapping[str, Any]] | Job
#: What a chain's link is given as: ``(type, payload, idempotency_key)``, a :class:`Job` or its dict.
Link = tuple[str, Mapping[str, Any], str] | Job | Mapping[str, Any]


@dataclass(frozen=True)
class Sealed(batches.Head):
    """The batch's head as its seal left it, and the members counted failed there as never sent."""

    #: ``{(type, key): why}``: members whose publish was refused and never sent again.
    not_sent: dict[tuple[str, str], str] = field(default_factory=dict)


@dataclass(frozen=True)
class ChainResult:
    """A chain opened: its id (``tiered-jobs batch ID``) and its first link's publish."""

    chain_id: str
    first: PublishResult


class Batch:
    """A batch being filled (``with publisher.batch(...) as batch``); sealed when the block ends."""

    def __init__(
        self,
        publisher: Opener,
        table: str,
        *,
        on_success: Callback | None,
        on_complete: Callback | None,
        batch_id: str | None,
        clock: Callable[[], datetime],
        sleep: Callable[[float], None],
        random: Callable[[], float],
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
        stored = batches.stored_bytes(prepared.values())
        if stored > batches.MAX_HEAD_MESSAGE_BYTES:
            # Checked now: the head item holds the callbacks, and DynamoDB refuses an item over 400 KB
            # only when the first member is published.
            problems.append(
                f"its callbacks are {stored} bytes as the batch's item stores them, over "
                f"{batches.MAX_HEAD_MESSAGE_BYTES} (DynamoDB's 400 KB item limit, less room for the batch's "
                "counts); pass IDs, not objects"
            )
        if problems:
            raise InvalidJobError([f"batch: {problem}" for problem in problems])
        self._publisher, self._table, self._clock = publisher, table, clock
        self._sleep, self._random = sleep, random  # a count's retries (transactions.Retries)
        self._callbacks = prepared
        #: Every member in the total: ``(type, key)``.
        self._members: set[tuple[str, str]] = set()
        #: Members whose last publish was not sent (or not known to be), and why: they may be published
        #: again, and those still here at the seal are counted failed then, so the batch finishes.
        self._not_sent: dict[tuple[str, str], str] = {}
        self._token = batches.new_id()  # the head's: tells this batch's own head after a lost answer
        self._opened = False
        self.sealed: Sealed | None = None

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
        repeated = sorted(
            {key for key in keys if keys.count(key) > 1 or key in self._members and key not in self._not_sent}
        )
        problems += [
            f"{job_type} (key {key!r}) is in the batch already: a member is counted once per type and key"
            for job_type, key in repeated
        ]
        if problems:
            raise InvalidJobError([f"batch {self.batch_id}: {problem}" for problem in problems])
        prepared = prepare(self._publisher, items, batch=lambda _: {"id": self.batch_id})
        if not self._opened:
            now = self._clock()
            item = batches.head_item(
                self.batch_id,
                batches.BATCH,
                created_at=iso_text(now),
                now=now.timestamp(),
                callbacks=self._callbacks,
                token=self._token,
            )
            _create_head(self._publisher, self._table, item, self._token, f"batch id {self.batch_id!r}")
            self._opened = True
        # In the total even if the send fails (it may have been sent): the seal counts it failed unless
        # a later publish of it is sent.
        self._members.update(keys)
        try:
            results = self._publisher.send(prepared)
        except PublishError as exc:
            self._note(exc.results)
            raise
        except BaseException as exc:  # not known to be sent: published again, or counted failed at the seal
            self._not_sent.update((key, f"not sent: {exc!r}"[: batches.MAX_DETAIL_CHARS]) for key in keys)
            raise
        self._note(results)
        return results

    def _note(self, results: list[PublishResult]) -> None:
        """Keep which members were not sent, and why; one sent now is no longer."""
        for result in results:
            key = (result.job.job_type, result.job.idempotency_key)
            if result.ok:
                self._not_sent.pop(key, None)
            else:
                why = f"not sent: {result.error_code}: {result.error_message}"
                self._not_sent[key] = why[: batches.MAX_DETAIL_CHARS]

    def seal(self) -> Sealed:
        """Seal the batch with its total; send the callbacks already due (members that finished first).

        A member never sent (its publish refused and not published again) is counted failed first, with
        why: the batch finishes, and ``not_sent`` names it. Had its send in fact gone through (a timeout
        after SQS took it), its run counts it again as a replayed letter's does: a success moves it to
        succeeded, once."""
        if self.sealed is not None:
            return self.sealed
        if not self._members:
            raise InvalidJobError([f"batch {self.batch_id} is empty: publish at least one job in it"])
        publisher = self._publisher
        for (job_type, key), why in self._not_sent.items():
            now = self._clock()
            batches.count(
                publisher.dynamodb,
                self._table,
                self.batch_id,
                batches.member_id({"id": self.batch_id}, record_id(job_type, key)),
                batches.FAILED,
                detail=why,
                at=iso_text(now),
                now=now.timestamp(),
                retries=transactions.Retries(),
                sleep=self._sleep,
                random=self._random,
            )
        head = self._seal_head()
        fired = batches.fire_due(head, publisher.sqs, publisher.dynamodb, self._table)
        self.sealed = Sealed(**{**vars(head), "fired": head.fired | set(fired)}, not_sent=dict(self._not_sent))
        return self.sealed

    def _seal_head(self) -> batches.Head:
        """The seal's write; a refusal that shows this batch sealed with this total is the seal itself,
        its answer lost and botocore's retry refused by its own write."""
        from botocore.exceptions import ClientError

        try:
            item = self._publisher.dynamodb.update_item(**batches.seal_request(self._table, self.batch_id, self.total))
        except ClientError as exc:
            found = exc.response.get("Item")
            if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException" or not found:
                raise
            head = batches.Head.from_item(found)
            if not (head.sealed and head.total == self.total and batches.holds_token(found, self._token)):
                raise
            return head
        return batches.Head.from_item(item["Attributes"])


def open_chain(
    publisher: Opener, table: str, links: Sequence[Link], *, chain_id: str | None, now: datetime
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
    prepared = prepare(publisher, jobs, batch=lambda step: {"id": chain_id, "step": step})
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
    token = batches.new_id()
    head = batches.head_item(
        chain_id,
        batches.CHAIN,
        created_at=iso_text(now),
        now=now.timestamp(),
        callbacks={},
        links=[_message(item) for item in prepared],
        token=token,
    )
    _create_head(publisher, table, head, token, f"chain id {chain_id!r}")
    return ChainResult(chain_id, publisher.send(prepared[:1])[0])


def _create_head(publisher: Opener, table: str, item: dict[str, Any], token: str, named: str) -> None:
    """Write a new head; an id in use is bad input (:class:`InvalidJobError` naming it), unless the head
    there holds ``token``: this publish's own, its answer lost and botocore's retry refused by it."""
    from botocore.exceptions import ClientError

    try:
        publisher.dynamodb.put_item(**batches.create_request(table, item))
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
            raise
        if batches.holds_token(exc.response.get("Item"), token):
            return
        raise InvalidJobError(
            [f"{named} is in use (ids are kept 30 days): give another, or none for a random one"]
        ) from None


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


def _callback(publisher: Opener, name: str, spec: Callback, batch_id: str) -> batches.Message:
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
        (item,) = prepare(publisher, [job])
    except InvalidJobError as exc:
        raise InvalidJobError([f"{name} {problem}" for problem in exc.problems]) from None
    return _message(item)


def _message(item: Prepared) -> batches.Message:
    return batches.Message(item.queue_url, item.body, item.job.tenant, item.job.job_type, item.job.idempotency_key)
