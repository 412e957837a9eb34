"""``ctx.progress(done, total, note=...)``: stored in the job's idempotency record while it runs, at most
once per interval (the first call at once, the last one when the job returns), bounded, never failing
the job for a write, and refusing bad arguments at the call."""

from __future__ import annotations

import pytest

from tests.support.context import lambda_context
from tiered_jobs.contract import progress as contract
from tiered_jobs.contract.idempotency import RecordAttributes, record_id
from tiered_jobs.runtime.progress import ProgressWriter
from tiered_jobs.runtime.registry import JobContext, JobRegistry


class Seconds:
    """A monotonic clock moved by hand (the writer's interval is measured on one)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def record(tier, job_type: str, key: str) -> dict:
    return tier.dynamodb.get_item(
        TableName=tier.idempotency_table, Key={RecordAttributes.KEY: {"S": record_id(job_type, key)}}
    ).get("Item", {})


def test_progress_is_visible_while_the_job_runs_and_its_last_call_stays_with_the_result(tier):
    seen: list = []
    registry = JobRegistry()

    @registry.job("t.rows", progress_every_seconds=900)  # one write per 15 minutes: every later call is coalesced
    def rows(payload, ctx: JobContext):
        for done in range(0, 101, 10):
            ctx.progress(done, 100, note=f"row {done}")
        seen.append(contract.of_item(record(tier, "t.rows", ctx.idempotency_key)))
        return {"rows": 100}

    tier.publish("t.rows", {}, "rows-1")
    tier.run_batch(tier.consumer(registry=registry), lambda_context())

    assert seen == [contract.Progress(0, 100, "row 0", seen[0].at)]  # the first call, written at once
    item = record(tier, "t.rows", "rows-1")
    final = contract.of_item(item)
    assert (final.done, final.total, final.note, final.percent) == (100, 100, "row 100", 100.0)  # the last, at the end
    assert item[RecordAttributes.DATA]["S"] == '{"rows": 100}'  # Powertools' completion kept the attribute


def test_calls_within_the_interval_are_coalesced_and_the_last_one_is_flushed(tier):
    tier.dynamodb.put_item(
        TableName=tier.idempotency_table,
        Item={RecordAttributes.KEY: {"S": record_id("t.x", "k")}, RecordAttributes.STATUS: {"S": "INPROGRESS"}},
    )
    clock = Seconds()
    writer = ProgressWriter(tier.dynamodb, tier.idempotency_table, "t.x", "k", interval=5, clock=clock)
    for done in range(10):  # 10 calls within one interval
        writer(done, 10)
    assert writer.writes == 1
    clock.advance(5)
    writer(7, 10)  # the interval has passed: written now
    assert writer.writes == 2
    writer(8, 10)
    writer.flush()
    writer.flush()  # nothing kept: no write
    assert writer.writes == 3
    assert contract.of_item(record(tier, "t.x", "k")).done == 8


def test_a_write_never_creates_or_touches_a_finished_record_and_never_fails_the_job(tier):
    warnings: list = []

    class Logger:
        def warning(self, message, extra):
            warnings.append(message)

    writer = ProgressWriter(tier.dynamodb, tier.idempotency_table, "t.x", "gone", logger=Logger())
    writer(1, 2)  # no record: the condition fails, the job goes on
    writer.flush()
    assert record(tier, "t.x", "gone") == {}
    assert warnings == ["could not store the job's progress"]


def test_a_job_without_idempotency_has_no_record_and_its_progress_goes_nowhere(tier):
    registry = JobRegistry()

    @registry.job("t.plain", idempotent=False)
    def plain(payload, ctx: JobContext):
        ctx.progress(1, 1)
        return {}

    tier.publish("t.plain", {}, "plain-1")
    tier.run_batch(tier.consumer(registry=registry), lambda_context())
    assert record(tier, "t.plain", "plain-1") == {}
    assert not tier.dlq_messages()


@pytest.mark.parametrize(
    ("done", "total", "note", "error", "says"),
    [
        (11, 10, "", ValueError, r"done \(11\) is more than total \(10\)"),
        (-1, 10, "", ValueError, "done must be between 0 and 2\\*\\*53"),
        (1, -5, "", ValueError, "total must be between 0 and 2\\*\\*53"),
        (1.5, 10, "", TypeError, "done must be a whole number"),
        (True, 10, "", TypeError, "done must be a whole number"),
        (1, 10, 42, TypeError, "note must be a string"),
    ],
)
def test_bad_progress_fails_at_the_call_naming_the_argument(done, total, note, error, says):
    ctx = JobContext("t.x", "k", 1, 3, "critical", "m", None, lambda_remaining_ms=lambda: 1000)
    with pytest.raises(error, match=says):
        ctx.progress(done, total, note)


def test_a_long_note_is_cut_at_the_stated_limit():
    cut = contract.checked(1, 2, "n" * 1000)
    assert len(cut.note) == contract.NOTE_MAX_CHARS and cut.note.endswith("…")
    assert len(contract.checked(1, 2, "n" * contract.NOTE_MAX_CHARS).note) == contract.NOTE_MAX_CHARS
    assert len(cut.encode().encode()) < 512  # the attribute stays small whatever a job passes


@pytest.mark.parametrize("interval", [-1, "5", True, 10_000])
def test_the_interval_is_checked_when_the_job_registers(interval):
    with pytest.raises(ValueError, match="progress_every_seconds must be a number of seconds"):
        JobRegistry().job("t.bad", progress_every_seconds=interval)
