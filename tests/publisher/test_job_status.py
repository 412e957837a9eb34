"""``Publisher.get_status(type, key)``: a job's state, progress, result or error, read from its
idempotency record (one GetItem) while a consumer runs it on moto, step by step and to the end."""

from __future__ import annotations

import pytest

from tests.support.context import lambda_context
from tiered_jobs.contract import job_status
from tiered_jobs.contract.idempotency import RecordAttributes, record_id
from tiered_jobs.contract.routing import Routes
from tiered_jobs.publisher import Publisher
from tiered_jobs.runtime import consumer as consumer_module
from tiered_jobs.runtime.registry import JobContext, JobRegistry
from tiered_jobs.stage.cancelling import MarkTarget, mark_cancelled
from tiered_jobs.stage.discovery import DiscoveryError


@pytest.fixture
def publisher(tier) -> Publisher:
    return Publisher(
        {"critical": tier.queue_url},
        Routes({"*": "critical"}),
        sqs=tier.sqs,
        dynamodb=tier.dynamodb,
        idempotency_table=tier.idempotency_table,
    )


def test_a_caller_waiting_on_a_job_sees_its_progress_its_steps_and_then_its_result(tier, publisher, monkeypatch):
    monkeypatch.setattr(consumer_module, "CONTINUATION_DELAY_SECONDS", 0)
    seen: list = []
    registry = JobRegistry()

    @registry.job("t.export", progress_every_seconds=0)
    def export(payload, ctx: JobContext):
        ctx.progress(ctx.step * 50, 100, note=f"step {ctx.step}")
        seen.append(publisher.get_status("t.export", ctx.idempotency_key))  # as a caller sees it mid-step
        if ctx.step == 0:
            return ctx.checkpoint({"cursor": 50})
        ctx.progress(100, 100, note="done")
        return {"rows": 100, "resumed_at": ctx.state["cursor"]}

    assert publisher.get_status("t.export", "exp-1") == job_status.JobStatus("unknown")
    publisher.publish("t.export", {}, "exp-1")
    consumer = tier.consumer(registry=registry)
    tier.run_batch(consumer, lambda_context())

    between = publisher.get_status("t.export", "exp-1")
    assert (between.state, between.step, between.result, between.finished) == ("in_progress", 1, None, False)
    assert (between.progress.done, between.progress.note) == (0, "step 0")
    tier.run_batch(consumer, lambda_context())

    assert [(s.state, s.step, s.progress.done) for s in seen] == [("in_progress", None, 0), ("in_progress", 1, 50)]
    done = publisher.get_status("t.export", "exp-1")
    assert done.state == "completed" and done.finished
    assert done.result == {"rows": 100, "resumed_at": 50}
    assert (done.progress.done, done.progress.total, done.progress.note, done.step) == (100, 100, "done", None)
    assert done.to_dict()["progress"]["percent"] == 100.0


def test_a_cancelled_job_reads_as_cancelled_with_why(tier, publisher):
    target = MarkTarget(tier.idempotency_table, {"critical": 3600})
    mark_cancelled(tier.dynamodb, target, "critical", "t.export", "exp-2")
    status = publisher.get_status("t.export", "exp-2")
    assert status.state == "cancelled" and status.finished and status.error.startswith("cancelled at ")


def test_a_record_past_its_window_reads_as_unknown(tier, publisher):
    tier.dynamodb.put_item(
        TableName=tier.idempotency_table,
        Item={
            RecordAttributes.KEY: {"S": record_id("t.export", "old")},
            RecordAttributes.STATUS: {"S": "COMPLETED"},
            RecordAttributes.EXPIRATION: {"N": "1000"},
            RecordAttributes.DATA: {"S": "{}"},
        },
    )
    assert publisher.get_status("t.export", "old").state == "unknown"


def test_without_the_idempotency_table_get_status_says_how_to_build_the_publisher(tier):
    bare = Publisher({"critical": tier.queue_url}, Routes({"*": "critical"}), sqs=tier.sqs, dynamodb=tier.dynamodb)
    with pytest.raises(DiscoveryError, match="Publisher.from_stage"):
        bare.get_status("t.export", "k")
