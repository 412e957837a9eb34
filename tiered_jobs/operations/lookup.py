"""What happened to job X? The answer of ``tiered-jobs job TYPE KEY`` and the console's job lookup.

Three independent sources, each read once:

* the **idempotency record** (``GetItem`` on the stage's idempotency table, the id from
  :func:`tiered_jobs.contract.idempotency.record_id`): in progress (until when, and whether a
  cancel asked it to stop), completed (with its stored result), cancelled or expired (the record
  holds an end marker: :mod:`tiered_jobs.contract.job_ends`; the job was archived unrun), or unknown.
  *Unknown* means no live record: never published, not consumed
  yet, failed without completing, or its idempotency window has passed. It is never "pending":
  the table cannot tell a job waiting in a queue from one that never existed.
* the **dead-letter queues**: every non-empty DLQ of the stage is read (at most
  ``max_letters`` letters each, held while read, then visible again) for letters whose envelope
  has this type and key, with their ``DeadLetter.*`` reasons.
* the **unique lock** (``GetItem`` on the stage's unique jobs' table): a job published with
  ``unique_for=`` that has not finished holds it until its window ends; a job with no live
  idempotency record but a lock is ``queued (unique until ...)``, the one state the lookup can call
  pending, because the lock says a publish happened and the job has not finished;
* the **one-time schedule**: a job published for later (``at=``, or a delay past SQS's 15 minutes)
  waits in the stage's EventBridge Scheduler group under a name made from its type and key
  (:func:`tiered_jobs.stage.scheduling.one_time_job`), so one ``GetSchedule`` finds its pending run,
  or that there is none. The group is the stage's (``Schedules.group_name``: the construct names it
  so), so no discovery call is spent on it.

With no record of a run, two more reads say what can be said: the job's **tier queue**
(:mod:`tiered_jobs.operations.lookup_queue`: its counts and whether the tier is paused; a queued job
on a paused tier reads ``paused``), and a **debounced key's runs**, each under ``KEY@minute``
(:mod:`tiered_jobs.operations.lookup_debounce`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from tiered_jobs.operations.errors import OperatorError
from tiered_jobs.operations.replays import read_letters
from tiered_jobs.operations.status import queue_name
from tiered_jobs.stage import scheduling
from tiered_jobs.stage.target import Target

from ..contract import envelope, job_ends, steps
from ..contract.idempotency import RecordAttributes, RecordStatus, record_id
from ..contract.names import DeadLetter, Schedules, Ssm
from ..contract.progress import Progress, of_item
from ..contract.routing import UnknownRouteError
from ..contract.unique import KEY_ATTRIBUTE as LOCK_KEY_ATTRIBUTE
from ..contract.unique import held_until, lock_key
from .lookup_debounce import DEFAULT_HOURS, RunSearch, find_runs
from .lookup_queue import QueueCheck, check_queue

#: Letters read per DLQ when looking for a job (a bound on the calls: one receive per 10 letters).
DEFAULT_MAX_LETTERS = 1000

IN_PROGRESS = "in_progress"
#: Not a state of the record: a unique lock (``unique_for=``) says the job was published and has not finished.
QUEUED = "queued"
#: A queued job (see ``QUEUED``) whose tier is paused: it waits until the tier is resumed.
PAUSED = "paused"
COMPLETED = "completed"
CANCELLED = job_ends.CANCELLED
EXPIRED = job_ends.EXPIRED
UNKNOWN = "unknown"


@dataclass(frozen=True)
class RecordState:
    """The job's idempotency record, read now."""

    state: str  # IN_PROGRESS | COMPLETED | CANCELLED | EXPIRED | UNKNOWN
    #: A sentence for people ("completed; result stored until ...").
    detail: str
    record_id: str
    #: When the record stops protecting the job (epoch seconds), if there is one.
    expires_at: float | None = None
    #: In progress: when another attempt may take over (its Lambda ran out of time), epoch seconds.
    in_progress_until: float | None = None
    #: Completed: expiry minus the tier's idempotency window, when that window is known.
    completed_at: float | None = None
    result: Any = None
    #: The last progress the job stored (``ctx.progress``), running or finished.
    progress: Progress | None = None
    #: A job longer than one invocation: the step running or due (``ctx.checkpoint``).
    step: int | None = None


@dataclass(frozen=True)
class FoundLetter:
    """A dead letter of the job looked up, with the reasons its consumer wrote."""

    tier: str
    message_id: str
    body: str
    #: ``{"DeadLetter.Reason": "permanent", ...}``: the reasons the consumer wrote (empty: SQS redrive).
    reasons: dict[str, str]


@dataclass(frozen=True)
class ScheduledRun:
    """A pending run of the job: its one-time schedule, not yet fired."""

    at: datetime
    schedule: str
    detail: str = ""


@dataclass(frozen=True)
class JobLookup:
    """What happened to one job: its idempotency record, its letters and where they were looked for."""

    job_type: str
    key: str
    record: RecordState
    letters: list[FoundLetter]
    #: DLQs read (tier names) and how many letters were looked at in each.
    letters_read: dict[str, int]
    #: The pending runs (``[]``: none); ``None`` when the schedules could not be read (a note says why).
    scheduled: list[ScheduledRun] | None
    #: Sources that could not be read (missing permission...): shown, never fatal.
    notes: list[str] = field(default_factory=list)
    #: ``unique_for``: when the job's lock ends (``None``: it holds none, or it could not be read).
    unique_until: datetime | None = None
    #: With no record of a run: the job's tier queue (``None``: not read, or its route is unknown).
    queue: QueueCheck | None = None
    #: With no record of ``key``: its debounced runs' keys found, and the minutes looked at.
    runs: RunSearch | None = None
    #: The record of each debounced run found, in the order of ``runs.run_keys``.
    run_records: list[RecordState] = field(default_factory=list)

    @property
    def state(self) -> str:
        """The record's state, or ``queued`` when the record knows nothing and a unique lock says it was published
        (``paused`` when its tier is paused). Never ``queued`` from the queue alone: SQS cannot be searched by key."""
        if self.record.state == UNKNOWN and self.unique_until is not None:
            return PAUSED if self.queue is not None and self.queue.paused else QUEUED
        return self.record.state

    def describe_state(self) -> str:
        if self.state in (QUEUED, PAUSED):
            assert self.unique_until is not None
            return f"{self.state} (unique until {_iso(self.unique_until.timestamp())})"
        return self.state.replace("_", " ")

    def to_dict(self) -> dict[str, Any]:
        return {
            "job_type": self.job_type,
            "key": self.key,
            "state": self.state,
            "unique_until": _iso(self.unique_until.timestamp()) if self.unique_until else None,
            "record": {
                **self.record.__dict__,
                "expires_at": _iso(self.record.expires_at),
                "in_progress_until": _iso(self.record.in_progress_until),
                "completed_at": _iso(self.record.completed_at),
                "progress": self.record.progress.to_dict() if self.record.progress else None,
            },
            "dead_letters": [letter.__dict__ for letter in self.letters],
            "dlq_letters_read": self.letters_read,
            "scheduled_runs": None
            if self.scheduled is None
            else [
                {"at": _iso(run.at.timestamp()), "schedule": run.schedule, "detail": run.detail}
                for run in self.scheduled
            ],
            "queue": self.queue.to_dict() if self.queue else None,
            "debounced_runs": None
            if self.runs is None
            else {
                "since": _iso(self.runs.since.timestamp()),
                "until": _iso(self.runs.until.timestamp()),
                "unanswered_minutes": self.runs.unanswered,
                "runs": [
                    {"key": run_key, "state": record.state, "detail": record.detail}
                    for run_key, record in zip(self.runs.run_keys, self.run_records, strict=True)
                ],
            },
            "notes": self.notes,
        }


def lookup_job(
    target: Target,
    job_type: str,
    key: str,
    *,
    max_letters: int = DEFAULT_MAX_LETTERS,
    debounce_hours: float = DEFAULT_HOURS,
    now: Callable[[], float] = time.time,
) -> JobLookup:
    """Read the three sources for ``job_type`` + ``key`` (see the module's docstring)."""
    from botocore.exceptions import ClientError

    if not job_type or not key:
        raise OperatorError("give a job type and an idempotency key", 2)
    deployment = target.deployment()
    notes: list[str] = []
    try:
        record = read_record(target, job_type, key, now=now)
    except ClientError as exc:
        record = RecordState(
            UNKNOWN, f"the idempotency record could not be read ({_error_text(exc)})", record_id(job_type, key)
        )
        notes.append(record.detail)
    letters: list[FoundLetter] = []
    read: dict[str, int] = {}
    sqs = target.client("sqs")
    for tier, urls in deployment.tiers.items():
        if not urls.dlq_url:
            continue
        try:
            if not _depth(sqs, urls.dlq_url):
                read[tier] = 0
                continue
            letters += _letters_of(target, tier, job_type, key, max_letters, read)
        except (ClientError, OperatorError) as exc:
            notes.append(f"the {tier} DLQ could not be read ({_error_text(exc)})")
    scheduled: list[ScheduledRun] | None
    try:
        scheduled = scheduled_runs(target, job_type, key, now=now)
    except ClientError as exc:
        scheduled = None
        notes.append(f"the scheduled runs could not be read ({_error_text(exc)})")
    unique_until = None
    try:
        unique_until = unique_lock_until(target, job_type, key, now=now)
    except ClientError as exc:
        notes.append(f"the unique lock could not be read ({_error_text(exc)})")
    queue, runs, run_records = None, None, []
    if record.state == UNKNOWN:  # no record of a run: what the queue and a debounced key's runs can say
        try:
            queue = check_queue(target, deployment.routes.tier_for(job_type))
        except UnknownRouteError as exc:
            notes.append(f"its tier queue was not read ({exc})")
        except ClientError as exc:
            notes.append(f"its tier queue could not be read ({_error_text(exc)})")
        try:
            runs = find_runs(target, job_type, key, hours=debounce_hours, now=now)
            run_records = [read_record(target, job_type, run_key, now=now) for run_key in runs.run_keys] if runs else []
        except ClientError as exc:
            runs = None
            notes.append(f"its debounced runs could not be read ({_error_text(exc)})")
    return JobLookup(
        job_type,
        key,
        record,
        letters,
        read,
        scheduled,
        notes,
        unique_until=unique_until,
        queue=queue,
        runs=runs,
        run_records=run_records,
    )


def unique_lock_until(
    target: Target, job_type: str, key: str, *, now: Callable[[], float] = time.time
) -> datetime | None:
    """When the job's unique lock ends (one ``GetItem``); ``None`` when it holds none, or the stage has no table."""
    table = target.deployment().unique_table_name
    if not table:  # a stage deployed before unique jobs
        return None
    item = (
        target.client("dynamodb")
        .get_item(
            TableName=table,
            Key={LOCK_KEY_ATTRIBUTE: {"S": lock_key(job_type, key)}},
            ConsistentRead=True,
        )
        .get("Item")
    )
    return held_until(item, datetime.fromtimestamp(now(), timezone.utc))


def scheduled_runs(
    target: Target, job_type: str, key: str, *, now: Callable[[], float] = time.time
) -> list[ScheduledRun]:
    """The job's pending one-time run, if it has one (one ``GetSchedule``; see the module's docstring)."""
    found = scheduling.one_time_job(
        target.client("scheduler"),
        Schedules.group_name(target.stage),
        job_type,
        key,
        now=datetime.fromtimestamp(now(), timezone.utc),
    )
    if found is None or found.next_fire is None:  # none, or fired (Scheduler deletes it some time after)
        return []
    tiers = {queue_name(urls.queue_url): tier for tier, urls in target.deployment().tiers.items()}
    queue = found.tier or "?"  # the target queue's name, from its ARN
    detail = f"one-time, to the {tiers.get(queue, queue)} queue"
    if found.idempotency_key and found.idempotency_key.startswith(f"{key}@"):  # debounced_run_key
        detail = (
            f"debounced: the burst's one run, with the last payload published (run key {found.idempotency_key}), "
            f"to the {tiers.get(queue, queue)} queue"
        )
    return [ScheduledRun(found.next_fire, found.name, detail)]


def read_record(target: Target, job_type: str, key: str, *, now: Callable[[], float] = time.time) -> RecordState:
    """The job's idempotency record (one ``GetItem``, plus one ``GetParameter`` for a completed job's time)."""
    deployment = target.deployment()
    rid = record_id(job_type, key)
    table = deployment.idempotency_table_name
    if not table:
        raise OperatorError(f"{deployment.source} names no idempotency table")
    item = (
        target.client("dynamodb")
        .get_item(
            TableName=table,
            Key={RecordAttributes.KEY: {"S": rid}},
            ConsistentRead=True,
        )
        .get("Item")
    )
    if not item:
        return RecordState(
            UNKNOWN,
            "no idempotency record: never published, not consumed yet, failed without "
            "completing, or its idempotency window has passed",
            rid,
        )
    status = item.get(RecordAttributes.STATUS, {}).get("S")
    expires = _number(item, RecordAttributes.EXPIRATION)
    progress = of_item(item)
    due = _number(item, steps.RECORD_STEP)
    step = int(due) if due is not None else None
    if expires is not None and expires < now():
        return RecordState(
            UNKNOWN,
            f"the record expired at {_iso(expires)} (the idempotency window has passed; "
            "DynamoDB deletes it later): a new delivery would run the job again",
            rid,
            expires_at=expires,
        )
    if status == RecordStatus.IN_PROGRESS:
        until_ms = _number(item, RecordAttributes.IN_PROGRESS_EXPIRATION)
        until = until_ms / 1000 if until_ms is not None else None
        if until is not None and until < now():
            detail = (
                f"in progress, but its attempt ran out of time at {_iso(until)}: the next delivery of the "
                "message runs the job again"
            )
        else:
            detail = f"in progress: an attempt is running (until {_iso(until)} at the latest)"
        asked = item.get(job_ends.CANCEL_REQUESTED, {}).get("S")
        if asked:
            detail += f"; a cancel asked it to stop at {asked} (the job sees it if it calls ctx.cancelled())"
        if step is not None:  # a later step of a job longer than one invocation: its own lease (ms)
            lease = _number(item, steps.RECORD_LEASE)
            until = lease / 1000 if lease is not None else until
            detail = f"step {step} running (until {_iso(until)} at the latest)"
        return RecordState(
            IN_PROGRESS, detail, rid, expires_at=expires, in_progress_until=until, progress=progress, step=step
        )
    if status == RecordStatus.COMPLETED:
        result = _json(item.get(RecordAttributes.DATA, {}).get("S"))
        ended = job_ends.marker_kind(result)
        if ended is not None:
            return _ended(ended, result, rid, expires)
        if steps.marker_step(result) is not None:  # between two steps of a job longer than one invocation
            return RecordState(
                IN_PROGRESS,
                f"between steps: step {step} is due (its message is queued; the record keeps the last "
                f"checkpoint until {_iso(expires)})",
                rid,
                expires_at=expires,
                progress=progress,
                step=step,
            )
        completed = _completed_at(target, job_type, expires)
        when = f" at {_iso(completed)}" if completed is not None else ""
        return RecordState(
            COMPLETED,
            f"completed{when}; duplicates are answered from the stored result until {_iso(expires)}",
            rid,
            expires_at=expires,
            completed_at=completed,
            result=result,
            progress=progress,
        )
    return RecordState(UNKNOWN, f"a record with an unexpected status {status!r}", rid, expires_at=expires)


def _ended(kind: str, marker: dict[str, Any], rid: str, expires: float | None) -> RecordState:
    """A job that ended unrun: its marker says when; the consumer archived every copy that came."""
    if kind == job_ends.CANCELLED:
        detail = (
            f"cancelled at {marker.get('at')}: not run; a copy that arrives (queued, delayed, replayed or published "
            f"again) until {_iso(expires)} is archived unrun (reason cancelled)"
        )
    else:
        detail = (
            f"expired: not started by its deadline ({marker.get('detail') or 'its expires_at'}), archived unrun at "
            f"{marker.get('at')} (reason expired); the record is kept until {_iso(expires)}"
        )
    return RecordState(kind, detail, rid, expires_at=expires)


def _completed_at(target: Target, job_type: str, expires: float | None) -> float | None:
    """Completion time = expiry - the tier's idempotency window (SSM), when both are known."""
    from botocore.exceptions import ClientError

    deployment = target.deployment()
    try:
        tier = deployment.routes.tier_for(job_type)
    except UnknownRouteError:  # the time stays unknown, the state does not
        return None
    if expires is None or not deployment.stage:
        return None
    try:
        ttl = target.client("ssm").get_parameter(Name=Ssm.tier(deployment.stage, tier, Ssm.TIER_IDEMPOTENCY_TTL))[
            "Parameter"
        ]["Value"]
        return expires - int(ttl)
    except (ClientError, ValueError):
        return None


def _letters_of(
    target: Target, tier: str, job_type: str, key: str, max_letters: int, read: dict[str, int]
) -> list[FoundLetter]:
    found: list[FoundLetter] = []
    read[tier] = 0

    def collect(letters: list[Any]) -> None:
        read[tier] += len(letters)
        for letter in letters:
            try:
                job = envelope.parse(letter.body)
            except envelope.EnvelopeError:
                continue
            if job.type == job_type and job.idempotency_key == key:
                found.append(FoundLetter(tier, letter.message_id, letter.body, reasons_of(letter.attributes)))

    read_letters(target, tier, max_messages=max_letters, on_letters=collect)
    return found


def reasons_of(attributes: dict[str, dict[str, Any]]) -> dict[str, str]:
    """The ``DeadLetter.*`` attributes of a letter, in the contract's order."""
    return {name: attributes[name].get("StringValue", "") for name in DeadLetter.ALL if name in attributes}


def _depth(sqs: Any, queue_url: str) -> int:
    attributes = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["ApproximateNumberOfMessages"])
    return int(attributes["Attributes"]["ApproximateNumberOfMessages"])


def _number(item: dict[str, Any], name: str) -> float | None:
    value = item.get(name, {}).get("N")
    return float(value) if value is not None else None


def _json(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def _iso(epoch: float | None) -> str | None:
    if epoch is None:
        return None
    return datetime.fromtimestamp(epoch, timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def _error_text(exc: Exception) -> str:
    response = getattr(exc, "response", None)
    if response:
        error = response.get("Error", {})
        return f"{error.get('Code', 'Error')}: {error.get('Message', '')}"
    return str(exc)
