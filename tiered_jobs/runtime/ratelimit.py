"""A rate limit that holds across every concurrent consumer of a tier: token buckets in DynamoDB.

**The bucket.** Each bucket is one item of the rate-limit table, holding one number: its
*theoretical arrival time* ``tat`` (microseconds since the epoch). This is the token bucket in its
GCRA form ("generic cell rate algorithm", the form network policers use): with ``T = 1 / rate``
and a burst of ``B``, the k-th job of a claim may start at ``max(tat, now) + k*T - (B-1)*T``, and
a claim of ``n`` jobs moves ``tat`` forward by ``n*T``. A full bucket is ``tat <= now``; every
token taken pushes ``tat`` one interval further. It says exactly what a (tokens, last refill)
pair says, in one number, and a claim can be written without reading the item first:

* the bucket is busy (``tat >= now``): ``SET tat = tat + n*T`` on condition
  ``tat BETWEEN now AND now + wait + (B-1)*T - (n-1)*T``. DynamoDB adds on the server, so
  concurrent claims of 20 consumers never conflict with each other: each one lands or finds the
  bucket too far ahead;
* the bucket is idle (``tat < now`` or no item yet): ``SET tat = now + n*T`` on condition
  ``attribute_not_exists(tat) OR tat < now``.

**Per job, as it starts: one conditional write** (a second only when the first lost its condition,
with the exact ``tat`` DynamoDB returned), and a read only on the container's first claim. A batch's
records run one after another: tokens claimed for the whole batch at once are one interval apart,
and behind a job slower than the interval each would pass unused and be forfeited. So a record
claims its own token just before it starts (:meth:`RateLimiter.at_start`), and a consumer holds at
most one token ahead. **Once the bucket is busy past the wait bound** (what this container last saw
of it says so, or a start's claim finds it), the batch's other limited records of that bucket are
claimed together in one write, each held with its turn, and a batch of copies that carry their
turns makes none. The case and the number of jobs are guessed from the last ``tat`` this container
saw (the first claim reads it: ``GetItem``, eventually consistent, half a read unit). ``tat`` only
grows, so the guess errs one way only: the bucket may be further ahead than the container knows.
When it is (another consumer claimed meanwhile), the condition fails, the claim gets nothing and
DynamoDB returns the item as it is (``ReturnValuesOnConditionCheckFailure``): that ``tat`` is the
container's next guess, and the second write is made on it. When the last ``tat`` seen already
leaves no token within what a claim may reserve, the batch is held without any call.

**Claims reserve the future; waiting is a hold, not a sleep.** A claim takes its jobs' tokens
up to :data:`RESERVE_SECONDS` ahead (SQS's longest delay). A claimed job whose start is within the
wait bound (``max_wait_seconds``, about a second) runs in this invocation, the consumer sleeping
until its start; every later one is *held with its turn*: the consumer sends it back to the tier's
queue as a copy (:mod:`tiered_jobs.runtime.requeue`) carrying the turn (``TieredJobs.Turn``),
delayed to come back *within the wait bound before* that start (whole seconds: the fewest that leave
at most the bound to wait), so its consumer sleeps the rest and starts it on its turn, without
claiming again. A second of Lambda time costs more than a copy and its
return (at 256 MB, about $3.3 per million jobs against about $0.2), so a job waits in SQS, where
waiting is free, not in a billed invocation. Jobs no claim could cover (the bucket is
``RESERVE_SECONDS`` ahead, or the write lost its condition twice) are held too, without a turn,
until about when it would come. A copy keeps the attempts the job had spent and has a fresh
receive count, so a held job never spends an attempt toward the redrive count and never comes near
the DLQ.

**The limit holds on starts, in every window.** A provider counts calls, not averages: a job
started late on its turn bunches with the jobs whose turns come next. A token has a *place* in the
bucket (its share of ``tat``); its turn is that place less the burst's tolerance (or the claim's
moment, if later). A start anywhere from the turn to the place keeps GCRA's own bound, ``burst +
floor(rate x L)`` starts in every window of ``L`` seconds (their places lie within ``L`` plus the
tolerance); :func:`start_slack` past the place still keeps every window of one second within
``burst + rate``. Later than that (:func:`latest_start`), a job forfeits its token and claims
again: a copy that came back late (its tier was paused, its consumers were slow), a record of a
batch whose turn passed while the jobs before it ran, a sleep that overran
(:meth:`RateLimiter.at_start`, just before the job runs). ``tests/runtime/test_ratelimit.py`` proves
the bound on a simulated load with an injected clock. A forfeited token is spent unused: the limit
errs on the side of fewer calls.

**When the limiter fails** (its table throttles past botocore's retries, answers 5xx, or the role
lacks a permission), the records of that bucket are held a few seconds (:data:`LIMITER_ERROR_HOLD_SECONDS`)
and counted (``RateLimiterErrors``, which has its alarm): never run past a limit that could not be
checked, never failed, never an attempt.

Clients are injected; nothing but the standard library is imported at import time.
"""

from __future__ import annotations

import math
import os
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from tiered_jobs.contract.names import SQS_MAX_DELAY_SECONDS
from tiered_jobs.contract.rate_limits import BUCKET_KEY_ATTRIBUTE as KEY_ATTRIBUTE
from tiered_jobs.contract.rate_limits import Bucket, RateLimit, RateLimits

#: The attribute of a bucket item holding its theoretical arrival time (microseconds).
TAT_ATTRIBUTE = "tat"
#: The attribute of a bucket item naming the last claim written to it: a claim whose answer was lost
#: knows its own write when botocore's retry meets it (docs/architecture.md, "Conditional writes").
CLAIM_ATTRIBUTE = "claim"
#: Waiting never takes more than this share of the invocation's remaining time.
WAIT_SHARE_OF_REMAINING = 0.5
#: How far ahead a claim reserves tokens for the jobs it holds: SQS's longest message delay, so a
#: held job's copy can be delayed to its own turn.
RESERVE_SECONDS = float(SQS_MAX_DELAY_SECONDS)
#: The longest a start may follow its place in the bucket at a low rate (:func:`start_slack`): later,
#: the copy of a stalled tier claims again rather than run on a turn long gone.
MAX_START_SLACK_SECONDS = 1.0
#: A held job's copy comes back up to this long before its turn, and its consumer sleeps the rest (so
#: it may wait this long for its turn even where the tier's wait bound is shorter): SQS delays a
#: message by whole seconds, so no shorter lead brings every copy back before its turn.
COPY_LEAD_SECONDS = 1.0
_US = 1_000_000


def _interval_us(limit: RateLimit) -> int:
    """The bucket's interval between two tokens (microseconds)."""
    return max(1, round(_US / limit.per_second))


def start_slack(limit: RateLimit) -> float:
    """How long after its place in the bucket a job may still start on its token (seconds).

    A job that starts no later than its place starts within the burst's tolerance before it, so the
    starts in any window of ``L`` seconds have their places in ``L + (burst - 1) / rate`` seconds,
    where the bucket puts at most ``burst + floor(rate x L)``: GCRA's own bound, for every window. A
    slack past the place widens that by ``slack``: half the gap between ``rate`` and the next whole
    number of jobs, over the rate, keeps every window of one second within ``burst + rate`` (1/6 s
    at 3/s, 50 ms at 10/s, 5 ms at 100/s; at most :data:`MAX_START_SLACK_SECONDS`)."""
    rate = limit.per_second
    return min(MAX_START_SLACK_SECONDS, (math.floor(rate) + 1 - rate) / (2 * rate))


def latest_start(limit: RateLimit, position: float) -> float:
    """The latest a job may start on the token at ``position`` in the bucket (see :func:`start_slack`)."""
    return position + start_slack(limit)


def turn_position(limit: RateLimit, turn: float) -> float:
    """A held job's place in the bucket: its turn was in the future when it was claimed, so it is that
    place less the burst's tolerance exactly (never moved up to the claim's moment)."""
    return turn + (limit.burst - 1) * _interval_us(limit) / _US


def turn_text(bucket_key: str, start: float) -> str:
    """A reserved turn as a held job's copy carries it (``TieredJobs.Turn``)."""
    return f"{round(start * _US)} {bucket_key}"


def read_turn(text: str | None, bucket_key: str) -> float | None:
    """The start (epoch seconds) a copy's ``TieredJobs.Turn`` reserved in ``bucket_key``; ``None``
    when there is none, it is malformed, or it was reserved in another bucket (the tier's limits
    changed since: claim again)."""
    if not text:
        return None
    start, _, key = text.partition(" ")
    if key != bucket_key or not start.isdigit():
        return None
    return int(start) / _US


@dataclass(frozen=True)
class Claim:
    """What one claim on a bucket gave: start times (epoch seconds) for ``len(starts)`` jobs, and
    when the first job not claimed would have its turn."""

    starts: tuple[float, ...]
    next_turn: float
    #: Conditional writes made: 0 or 1.
    writes: int
    #: Reads made: 1 on the container's first claim of the bucket, else 0.
    reads: int = 0
    #: Each granted job's place in the bucket (epoch seconds): the latest it may start and keep the
    #: bucket's bound (its start is that place less the burst's tolerance, or now if later).
    positions: tuple[float, ...] = ()

    @property
    def granted(self) -> int:
        return len(self.starts)

    @property
    def conflicted(self) -> bool:
        """The write's condition failed: the bucket was further ahead than this container knew."""
        return self.writes > 0 and not self.starts


class TokenBucket:
    """One bucket item. Keeps the last ``tat`` it saw (it only grows) to guess the write's case,
    and how far ahead of the clock other consumers' claims had pushed it (the *lead*)."""

    def __init__(
        self,
        dynamodb: Any,
        table: str,
        key: str,
        limit: RateLimit,
        clock: Callable[[], float] = time.time,
        claim_id: Callable[[], str] | None = None,
    ):
        """``claim_id``: a new value per write, which the write leaves on the item (:data:`CLAIM_ATTRIBUTE`)."""
        self.dynamodb = dynamodb
        self.claim_id = claim_id or _claim_id
        self.table = table
        self.key = key
        self.limit = limit
        self.clock = clock
        self.interval_us = _interval_us(limit)
        self.tolerance_us = (limit.burst - 1) * self.interval_us
        self.last_tat_us: int | None = None
        #: ``tat - now`` when this container last saw claims it had not made (a read, a failed
        #: condition, a busy claim that found ``tat`` past what it knew); ``None``: none seen
        #: since the bucket was last seen idle. Other consumers keep claiming meanwhile, so the
        #: next claim guesses that the bucket is still at least as far ahead.
        self.lead_us: int | None = None

    def busy_past(self, max_wait_seconds: float) -> bool:
        """Whether what this container last saw of the bucket leaves it no token within the wait bound
        (``tat`` only grows, and other consumers' lead is assumed to hold): a claim would hold every job.
        ``False`` while it has seen nothing, and no call is made."""
        if self.last_tat_us is None:
            return False
        now_us = int(self.clock() * _US)
        guess = self.last_tat_us if self.lead_us is None else max(self.last_tat_us, now_us + self.lead_us)
        return guess > now_us + int(max_wait_seconds * _US) + self.tolerance_us

    def claim(self, wanted: int, max_wait_seconds: float) -> Claim:
        """Claim up to ``wanted`` jobs that can start within ``max_wait_seconds``: at most one
        conditional write, and a read only on the container's first claim. A failed write claims
        nothing; the claim's ``next_turn`` then comes from the ``tat`` DynamoDB returned."""
        now_us = int(self.clock() * _US)
        horizon_us = now_us + int(max_wait_seconds * _US) + self.tolerance_us
        reads = 0
        if self.last_tat_us is None:  # the container's first claim: nothing seen yet
            self._saw(self._read(), now_us, others=True)
            reads = 1
        known = self.last_tat_us

        def claimable(tat_us: int | None) -> int:
            return (horizon_us - max(tat_us or 0, now_us)) // self.interval_us + 1

        if claimable(known) <= 0:  # tat only grows: no write can get a token within the wait bound
            return Claim((), self._turn(max(known or 0, now_us), now_us), writes=0, reads=reads)
        # A guess too far ahead only claims fewer jobs (a busy claim adds to the real tat); one
        # behind fails the condition. Claim one job at least, so that a wrong lead is corrected.
        guess = known if self.lead_us is None else max(known or 0, now_us + self.lead_us)
        n = min(wanted, max(1, claimable(guess)))
        busy = guess is not None and guess >= now_us
        claim_id = self.claim_id()
        try:
            new_tat = self._write(n, now_us, horizon_us, busy, claim_id)
        except Exception as exc:  # only a failed condition is an answer
            current = _conditional_failure_item(exc)
            if current is _NOT_A_CONDITION_FAILURE:
                raise
            if current and current.get(CLAIM_ATTRIBUTE, {}).get("S") == claim_id:
                # A lost answer: botocore sent the write again and it met its own item. It was applied
                # once (the busy write's condition refuses its own id): the claim is granted as written.
                new_tat = int(current[TAT_ATTRIBUTE]["N"])
            else:
                return self._conflict(current, now_us, reads)
        first = new_tat - n * self.interval_us
        self._saw(new_tat, now_us, others=busy and first > (known or 0))
        starts = tuple(max(now_us, first + k * self.interval_us - self.tolerance_us) / _US for k in range(n))
        positions = tuple((first + k * self.interval_us) / _US for k in range(n))
        return Claim(starts, self._turn(new_tat, now_us), writes=1, reads=reads, positions=positions)

    def _conflict(self, current: Any, now_us: int, reads: int) -> Claim:
        """The write lost its condition to other consumers' claims: nothing granted, ``tat`` as returned."""
        actual = int(current[TAT_ATTRIBUTE]["N"]) if current and TAT_ATTRIBUTE in current else None
        self._saw(actual, now_us, others=True)
        return Claim((), self._turn(max(actual or 0, now_us), now_us), writes=1, reads=reads)

    def _saw(self, tat_us: int | None, now_us: int, others: bool) -> None:
        """Remember the largest ``tat`` seen (it only grows; ``None`` while there is no item), and
        the lead when ``others`` (claims this container did not make) had moved it ahead. An
        idle bucket forgets the lead; a claim of this container's own says nothing new of it."""
        if tat_us is not None:
            self.last_tat_us = max(self.last_tat_us or 0, tat_us)
        if tat_us is None or tat_us < now_us:
            self.lead_us = None
        elif others:
            self.lead_us = tat_us - now_us

    def _read(self) -> int | None:
        """The bucket's ``tat`` (an eventually consistent read: a stale value only costs a failed
        condition, which returns the current one)."""
        item = self.dynamodb.get_item(
            TableName=self.table,
            Key={KEY_ATTRIBUTE: {"S": self.key}},
            ProjectionExpression="#tat",
            ExpressionAttributeNames={"#tat": TAT_ATTRIBUTE},
        ).get("Item")
        return int(item[TAT_ATTRIBUTE]["N"]) if item and TAT_ATTRIBUTE in item else None

    def _turn(self, tat_us: int, now_us: int) -> float:
        return max(now_us, tat_us - self.tolerance_us) / _US

    def _write(self, n: int, now_us: int, horizon_us: int, busy: bool, claim_id: str) -> int:
        common = {
            "TableName": self.table,
            "Key": {KEY_ATTRIBUTE: {"S": self.key}},
            "ReturnValues": "UPDATED_NEW",
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        if busy:
            response = self.dynamodb.update_item(
                **common,
                UpdateExpression="SET #tat = #tat + :claim, #id = :id",
                # The id refuses this write's own retry after a lost answer: adding again would waste its tokens.
                ConditionExpression="#tat BETWEEN :now AND :latest AND (attribute_not_exists(#id) OR #id <> :id)",
                ExpressionAttributeNames={"#tat": TAT_ATTRIBUTE, "#id": CLAIM_ATTRIBUTE},
                ExpressionAttributeValues={
                    ":claim": {"N": str(n * self.interval_us)},
                    ":now": {"N": str(now_us)},
                    ":latest": {"N": str(horizon_us - (n - 1) * self.interval_us)},
                    ":id": {"S": claim_id},
                },
            )
        else:
            response = self.dynamodb.update_item(
                **common,
                UpdateExpression="SET #tat = :tat, #id = :id",
                ConditionExpression="attribute_not_exists(#tat) OR #tat < :now",
                ExpressionAttributeNames={"#tat": TAT_ATTRIBUTE, "#id": CLAIM_ATTRIBUTE},
                ExpressionAttributeValues={
                    ":tat": {"N": str(now_us + n * self.interval_us)},
                    ":now": {"N": str(now_us)},
                    ":id": {"S": claim_id},
                },
            )
        return int(response["Attributes"][TAT_ATTRIBUTE]["N"])


_NOT_A_CONDITION_FAILURE: Any = object()


def _claim_id() -> str:
    return os.urandom(8).hex()


def _conditional_failure_item(exc: BaseException) -> Any:
    """The item DynamoDB returned with a failed condition (``None`` if there was none), or the
    sentinel when ``exc`` is any other error."""
    response = getattr(exc, "response", None)
    if not isinstance(response, dict) or response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
        return _NOT_A_CONDITION_FAILURE
    return response.get("Item")


# -- one batch ------------------------------------------------------------------------------

#: When the limiter's table fails (throttling past botocore's retries, an outage, a permission
#: missing), the batch's limited records are held this long, drawn evenly from the range so that
#: many consumers do not come back in step (docs/consumer.md, "When the limiter fails").
LIMITER_ERROR_HOLD_SECONDS = (5.0, 15.0)


class LimitedRecord(Protocol):
    """What the limiter needs of one record of the batch (``tiered_jobs.runtime.received.Received`` is one)."""

    @property
    def message_id(self) -> str: ...

    @property
    def job_type(self) -> str: ...

    @property
    def reserved_turn(self) -> str | None:
        """The turn a held job's copy carries (``TieredJobs.Turn``), on its first receive only."""
        ...


@dataclass(frozen=True)
class Verdict:
    """What to do with one record: run it at ``start`` (epoch seconds), or hold it ``hold_seconds``."""

    start: float | None = None
    #: Held: to be sent again with this ``DelaySeconds`` (its turn, or a pause when the limiter failed).
    hold_seconds: int | None = None
    #: Held because the limiter's table failed, and how (``None``: held for its turn).
    limiter_error: str | None = None
    #: Held with its token claimed: the turn its copy carries (``None``: it claims when it returns).
    turn: str | None = None
    #: Run: the latest it may start on its token (:func:`latest_start`); later, it claims again.
    latest: float | None = None

    @property
    def held(self) -> bool:
        return self.start is None


@dataclass
class Gate:
    """The verdicts for one batch (``message_id`` -> :class:`Verdict`); records not named run now."""

    verdicts: dict[str, Verdict] = field(default_factory=dict)
    writes: int = 0
    reads: int = 0
    #: One line per bucket whose claim failed with an error other than a lost condition.
    errors: list[str] = field(default_factory=list)
    #: Records that came with a reserved turn and used it (no claim).
    turns_used: int = 0
    #: Records whose turn passed by more than the slack before they could start: they claimed again.
    late_starts: int = 0
    #: Records that claim their token just before they start (:meth:`RateLimiter.at_start`), by bucket key.
    pending: dict[str, str] = field(default_factory=dict)
    clock: Callable[[], float] = time.time

    def held(self, message_id: str) -> Verdict | None:
        verdict = self.verdicts.get(message_id)
        return verdict if verdict is not None and verdict.held else None

    def turn(self, message_id: str) -> str | None:
        """The reserved turn a held record's copy carries (``None``: none)."""
        verdict = self.verdicts.get(message_id)
        return verdict.turn if verdict is not None else None

    def wait_seconds(self, message_id: str) -> float:
        """How long a record that runs must still wait for its turn (0 when it is not limited)."""
        verdict = self.verdicts.get(message_id)
        if verdict is None or verdict.start is None:
            return 0.0
        return max(0.0, verdict.start - self.clock())


class RateLimiter:
    """Admits a batch and each record at its start: claims tokens (one write per start, or one per bucket for
    a batch it holds) and says which records to hold.

    It sends nothing: the consumer sends the held records back as copies
    (:mod:`tiered_jobs.runtime.requeue`), with the deferred ones, so each record's fate is decided once.
    """

    def __init__(
        self,
        limits: RateLimits,
        tier: str,
        table: str,
        *,
        client: Callable[[str], Any],
        clock: Callable[[], float] = time.time,
        rand: Callable[[], float] = random.random,
    ):
        self.limits = limits
        self.tier = tier
        self.table = table
        self.client = client
        self.clock = clock
        self.rand = rand
        self._buckets: dict[str, TokenBucket] = {}

    def bucket(self, spec: Bucket) -> TokenBucket:
        found = self._buckets.get(spec.key)
        if found is None:
            found = self._buckets[spec.key] = TokenBucket(
                self.client("dynamodb"), self.table, spec.key, spec.limit, self.clock
            )
        return found

    def admit(self, records: Sequence[LimitedRecord], remaining_seconds: float) -> Gate:
        """Claim the records' tokens; ``records`` are those that would run a job (valid, registered)."""
        gate = Gate(clock=self.clock)
        wait = self._wait_bound(remaining_seconds)
        # A copy was sent back to come within COPY_LEAD_SECONDS before its turn: it may wait that long.
        turn_wait = min(max(wait, COPY_LEAD_SECONDS), max(0.0, remaining_seconds * WAIT_SHARE_OF_REMAINING))
        now = self.clock()
        groups: dict[str, tuple[Bucket, list[LimitedRecord]]] = {}
        for record in records:
            spec = self.limits.bucket_for(self.tier, record.job_type)
            if spec is None:
                continue
            turn = read_turn(record.reserved_turn, spec.key)
            latest = latest_start(spec.limit, turn_position(spec.limit, turn)) if turn is not None else None
            if turn is not None and latest is not None and now <= latest:
                # its token was claimed when it was held: run at its turn (held again if early)
                gate.verdicts[record.message_id] = _at(spec.key, turn, now, turn_wait, latest)
                gate.turns_used += 1
                continue
            # no turn, or one it came back too late for: a start on it now would bunch with the next turns
            groups.setdefault(spec.key, (spec, []))[1].append(record)
        for spec, members in groups.values():
            if self.bucket(spec).busy_past(wait):
                # none could start within the bound: one write gives each its turn, and their copies go together
                self._admit_group(gate, spec, members, wait)
            else:
                # each claims its token just before it starts: the records of a batch run one after another,
                # and consecutive tokens claimed at once would expire behind a job slower than the interval
                gate.pending.update((record.message_id, spec.key) for record in members)
        return gate

    def at_start(self, gate: Gate, record: LimitedRecord, remaining_seconds: float) -> Verdict | None:
        """Just before ``record`` runs: its verdict, claimed again when its latest start
        (:func:`latest_start`) has passed (the jobs before it in the batch ran long, its consumer overslept).

        ``None``: the record is not limited. A held verdict: the consumer sends it back as a copy."""
        verdict = gate.verdicts.get(record.message_id)
        if verdict is None and record.message_id in gate.pending:
            return self._claim_at_start(gate, record, remaining_seconds)
        if verdict is None or verdict.start is None:
            return verdict
        spec = self.limits.bucket_for(self.tier, record.job_type)
        latest = verdict.latest if verdict.latest is not None else verdict.start
        if spec is None or self.clock() <= latest:
            return verdict
        gate.late_starts += 1  # its token is spent unused: the limit errs on the side of fewer calls
        self._admit_group(gate, spec, [record], self._wait_bound(remaining_seconds))
        return gate.verdicts[record.message_id]

    def _claim_at_start(self, gate: Gate, record: LimitedRecord, remaining_seconds: float) -> Verdict:
        """A pending record's claim, just before it starts: one token. Once the bucket is busy past the wait
        bound (known before, or found by this claim), the batch's other pending records of that bucket are
        claimed together in one write, each held with its turn, as :meth:`admit` holds a batch: the consumer
        sends their copies at once."""
        spec = self.limits.bucket_for(self.tier, record.job_type)
        assert spec is not None  # it was pending in its bucket
        wait = self._wait_bound(remaining_seconds)
        del gate.pending[record.message_id]
        bucket = self.bucket(spec)
        busy = bucket.busy_past(wait)
        claimed = not busy
        if claimed:
            self._admit_group(gate, spec, [record], wait)
            verdict = gate.verdicts[record.message_id]
            if verdict.limiter_error:  # the table failed: the rest of its bucket is held alike, without a call
                for message_id in self._pending_in(gate, spec):
                    gate.verdicts[message_id] = replace(verdict, hold_seconds=self._error_hold())
                return verdict
            busy = verdict.held and bucket.busy_past(wait)
        if busy:  # the rest of the batch in that bucket cannot start within the bound either: one write
            rest: list[LimitedRecord] = [_Pending(message_id) for message_id in self._pending_in(gate, spec)]
            members = rest if claimed else [record, *rest]
            if members:
                self._admit_group(gate, spec, members, wait)
        return gate.verdicts[record.message_id]

    @staticmethod
    def _pending_in(gate: Gate, spec: Bucket) -> list[str]:
        """Take the batch's pending records of ``spec``'s bucket out of the pending ones."""
        taken = [message_id for message_id, key in gate.pending.items() if key == spec.key]
        for message_id in taken:
            del gate.pending[message_id]
        return taken

    def _error_hold(self) -> int:
        low, high = LIMITER_ERROR_HOLD_SECONDS
        return math.ceil(low + (high - low) * self.rand())

    def _wait_bound(self, remaining_seconds: float) -> float:
        return max(0.0, min(self.limits.max_wait_seconds, remaining_seconds * WAIT_SHARE_OF_REMAINING))

    def _admit_group(self, gate: Gate, spec: Bucket, members: list[LimitedRecord], wait: float) -> None:
        """One claim for the ``members`` of one bucket: each runs at its start, or is held."""
        try:
            claim = self._claim(gate, spec, len(members))
        except Exception as exc:  # noqa: BLE001 -- a limiter outage is not a job failure: hold, never fail
            gate.errors.append(f"{spec.key}: {exc!r}")
            for record in members:
                gate.verdicts[record.message_id] = Verdict(hold_seconds=self._error_hold(), limiter_error=repr(exc))
            return
        now = self.clock()
        for record, start, position in zip(members, claim.starts, claim.positions, strict=False):
            gate.verdicts[record.message_id] = _at(spec.key, start, now, wait, latest_start(spec.limit, position))
        for position, record in enumerate(members[claim.granted :]):
            turn = claim.next_turn + position / spec.limit.per_second
            if claim.conflicted and turn <= now + RESERVE_SECONDS:
                # the batch lost both writes, not its tokens: back at once, to claim again
                # on the state the failure returned
                delay = 0
            else:
                delay = min(SQS_MAX_DELAY_SECONDS, max(1, math.ceil(turn - now)))
            gate.verdicts[record.message_id] = Verdict(hold_seconds=delay)

    def _claim(self, gate: Gate, spec: Bucket, wanted: int) -> Claim:
        """Claim up to ``RESERVE_SECONDS`` ahead. A lost condition returned the exact ``tat``, so one
        more write, on it, almost always lands: cheaper than sending the batch back to claim again
        (a copy, a receive and a delete per ten jobs, and the write anyway)."""
        bucket = self.bucket(spec)
        claim = bucket.claim(wanted, RESERVE_SECONDS)
        gate.writes += claim.writes
        gate.reads += claim.reads
        if claim.conflicted and claim.next_turn <= self.clock() + RESERVE_SECONDS:
            claim = bucket.claim(wanted, RESERVE_SECONDS)
            gate.writes += claim.writes
            gate.reads += claim.reads
        return claim


@dataclass(frozen=True)
class _Pending:
    """A pending record of the batch, claimed with another's: only its id is needed."""

    message_id: str
    job_type: str = ""
    reserved_turn: str | None = None


def _at(bucket_key: str, start: float, now: float, wait: float, latest: float) -> Verdict:
    """A claimed job: run at ``start`` (and no later than ``latest``) if it comes within the wait
    bound, else held with its turn, its copy delayed the whole seconds that bring it back within
    :data:`COPY_LEAD_SECONDS` before that turn (so it can start on it, not late)."""
    if start <= now + wait:
        return Verdict(start=start, latest=latest)
    delay = min(SQS_MAX_DELAY_SECONDS, max(0, math.ceil(start - now - COPY_LEAD_SECONDS)))
    return Verdict(hold_seconds=delay, turn=turn_text(bucket_key, start))


def from_config(
    limits: RateLimits | None, tier: str, table: str | None, client: Callable[[str], Any], **options: Any
) -> RateLimiter | None:
    """The tier's limiter, or ``None`` when the tier has no rate limit."""
    if limits is None or not limits.enabled or not table:
        return None
    return RateLimiter(limits, tier, table, client=client, **options)
