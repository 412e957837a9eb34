"""What a lost answer does to the conditional writes of the rate limit, of a job's steps and of a cancel.

botocore sends a request again, same body, when its answer was lost; a conditional write that was
applied then meets its own item on the retry (docs/architecture.md, "Conditional writes").
``tests/support/aws_faults.lose_answers`` makes botocore do it on moto, through its own retry.
"""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from tests.runtime.test_ratelimit import T0, US, FakeTime
from tests.runtime.test_steps import drain, jobs, record
from tests.support.aws_faults import lose_answers
from tests.support.context import lambda_context
from tests.support.tier import create_rate_limit_table
from tiered_jobs.contract import steps as contract
from tiered_jobs.contract.idempotency import RecordAttributes, RecordStatus
from tiered_jobs.contract.rate_limits import RateLimit
from tiered_jobs.runtime import consumer as consumer_module
from tiered_jobs.runtime.ratelimit import TAT_ATTRIBUTE, TokenBucket
from tiered_jobs.stage.cancelling import MarkTarget, mark_cancelled


def _update(expression: str):
    """Picks the ``UpdateItem`` calls whose update expression starts with ``expression``."""

    def when(request: dict[str, Any]) -> bool:
        body = request.get("body") or b""
        text = body.decode() if isinstance(body, bytes) else str(body)
        return json.loads(text or "{}").get("UpdateExpression", "").startswith(expression)

    return when


# --- the rate limit's claims ------------------------------------------------------------------


def _bucket(clock: FakeTime) -> tuple[TokenBucket, Any]:
    dynamodb = boto3.client("dynamodb")
    create_rate_limit_table(dynamodb, "buckets")
    return TokenBucket(dynamodb, "buckets", "critical#tier", RateLimit(10, 2), clock), dynamodb


def _tat(dynamodb: Any) -> int:
    item = dynamodb.get_item(TableName="buckets", Key={"bucket": {"S": "critical#tier"}}, ConsistentRead=True)
    return int(item["Item"][TAT_ATTRIBUTE]["N"])


def test_an_idle_claim_whose_answer_was_lost_is_granted_its_jobs_once(aws):
    clock = FakeTime()
    bucket, dynamodb = _bucket(clock)
    with lose_answers(dynamodb, "UpdateItem") as lost:
        claim = bucket.claim(3, 1.0)
    assert lost.count == 1
    # The retry met the claim's own write: its jobs are granted (burst 2, then one 0.1 s later), not lost.
    assert claim.starts == pytest.approx((T0, T0, T0 + 0.1))
    assert _tat(dynamodb) == int(T0 * US) + 3 * 100_000  # written once


def test_a_busy_claim_whose_answer_was_lost_is_applied_once_and_granted(aws):
    clock = FakeTime()
    bucket, dynamodb = _bucket(clock)
    bucket.claim(2, 1.0)  # the bucket is now busy: tat = T0 + 0.2 s
    with lose_answers(dynamodb, "UpdateItem") as lost:
        claim = bucket.claim(3, 1.0)
    assert lost.count == 1
    assert claim.starts == pytest.approx((T0 + 0.1, T0 + 0.2, T0 + 0.3))
    assert _tat(dynamodb) == int(T0 * US) + 5 * 100_000  # the retry did not add its three tokens again


# --- a job's steps -------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def no_continuation_delay(monkeypatch):
    monkeypatch.setattr(consumer_module, "CONTINUATION_DELAY_SECONDS", 0)


@pytest.mark.parametrize(
    "write",
    [
        "SET #step = :step",  # the next step's marker, written when a step checkpoints
        "SET #status = :inprogress",  # a later step's claim of its record
        "SET #status = :completed, #data = :data",  # that step's completion
    ],
)
def test_a_step_write_whose_answer_was_lost_runs_each_step_once_without_a_retry(tier, write):
    done: list = []
    consumer = tier.consumer(registry=jobs(done))
    tier.publish("t.stepped", {"items": 5}, "lost-1")
    with lose_answers(tier.dynamodb, "UpdateItem", when=_update(write)) as lost:
        drain(tier, consumer)
    assert lost.count == 1
    assert done == [(0, 0, 1), (0, 1, 1), (1, 2, 1), (1, 3, 1), (2, 4, 1)]  # each item once, every attempt the first
    item = record(tier, "t.stepped", "lost-1")
    assert item[RecordAttributes.STATUS]["S"] == RecordStatus.COMPLETED
    assert json.loads(item[RecordAttributes.DATA]["S"]) == {"items": 5, "steps": 3}
    assert contract.RECORD_OWNER not in item and not tier.dlq_messages()


def test_a_step_given_back_whose_answer_was_lost_is_back_at_its_checkpoint_and_retried_from_there(tier):
    done: list = []
    consumer = tier.consumer(registry=jobs(done, fail_at={1: "transient"}))
    tier.publish("t.stepped", {"items": 5}, "lost-2")
    tier.run_messages(consumer, tier.receive_for_batch(), lambda_context())  # step 0
    with lose_answers(tier.dynamodb, "UpdateItem", when=_update("SET #status = :completed REMOVE")) as lost:
        tier.run_messages(consumer, tier.receive_for_batch(), lambda_context())  # step 1 fails, is given back
    assert lost.count == 1
    item = record(tier, "t.stepped", "lost-2")
    assert item[RecordAttributes.STATUS]["S"] == RecordStatus.COMPLETED and contract.RECORD_OWNER not in item
    assert item[contract.RECORD_STEP]["N"] == "1"  # due again, at its checkpoint
    tier.make_visible()
    drain(tier, consumer)
    assert [item for _, item, _ in done] == [0, 1, 2, 3, 4]


# --- a cancel's end marker -------------------------------------------------------------------------


def test_a_cancel_marker_whose_answer_was_lost_says_marked(tier):
    target = MarkTarget(tier.idempotency_table, {"critical": 3600})
    with lose_answers(tier.dynamodb, "PutItem") as lost:
        answer = mark_cancelled(tier.dynamodb, target, "critical", "t.ok", "lost-cancel")
    assert lost.count == 1
    # The retry met the cancel's own marker: it was written by this cancel, not found from an earlier one.
    assert answer.outcome == "marked" and answer.cancelled and answer.until is not None
    assert mark_cancelled(tier.dynamodb, target, "critical", "t.ok", "lost-cancel").outcome == "already cancelled"


def test_a_stop_request_whose_answer_was_lost_says_running(tier):
    ran: list[str] = []
    answers = []
    target = MarkTarget(tier.idempotency_table, {"critical": 3600})
    from tiered_jobs.runtime.registry import JobRegistry

    registry = JobRegistry()

    @registry.job("t.busy")
    def busy(payload, ctx):
        with lose_answers(tier.dynamodb, "UpdateItem", when=_update("SET #c = :at")) as lost:
            answers.append(mark_cancelled(tier.dynamodb, target, "critical", "t.busy", "lost-stop"))
        ran.append(f"lost {lost.count}")
        return {"cancelled_seen": ctx.cancelled()}

    tier.publish("t.busy", {}, "lost-stop")
    assert tier.run_batch(tier.consumer(registry=registry)) == {"batchItemFailures": []}
    assert ran == ["lost 1"] and [a.outcome for a in answers] == ["running"]
    assert json.loads(record(tier, "t.busy", "lost-stop")[RecordAttributes.DATA]["S"]) == {"cancelled_seen": True}


# --- a job's idempotency record (Powertools' INPROGRESS put) --------------------------------------


def test_a_jobs_in_progress_put_whose_answer_was_lost_runs_the_job_at_once_and_once(tier):
    """Without its token, the retried put met the job's own ``INPROGRESS`` record: "already in progress"
    until the lease ended, and a job whose attempts ran out first was dead-lettered unrun."""
    from tiered_jobs.runtime.registry import JobRegistry

    ran: list[str] = []
    registry = JobRegistry()

    @registry.job("t.once")
    def once(payload, ctx):
        ran.append(ctx.idempotency_key)
        return {"ok": True}

    consumer = tier.consumer(registry=registry)
    tier.publish("t.once", {}, "lost-put")
    in_progress = lambda request: RecordStatus.IN_PROGRESS.encode() in (request.get("body") or b"")  # noqa: E731
    with lose_answers(tier.dynamodb, "PutItem", when=in_progress) as lost:
        tier.run_messages(consumer, tier.receive_for_batch(), lambda_context())
    assert lost.count == 1
    assert ran == ["lost-put"]  # on its first receive, not after its lease
    item = record(tier, "t.once", "lost-put")
    assert item[RecordAttributes.STATUS]["S"] == RecordStatus.COMPLETED
    tier.make_visible()
    assert tier.receive_for_batch() == [] and not tier.dlq_messages()
