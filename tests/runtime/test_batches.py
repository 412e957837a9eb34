"""Batches and chains through the consumer (moto in-process): every path a member takes is counted once,
and each callback is sent exactly once, crashes between a member's completion and its count included."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from tests.support.aws_faults import conflict_response, error_response, lose_answers, refuse
from tests.support.batches import CALLBACK_TYPE, CALLBACKS_TIER, create_batch_table, head, publisher_for
from tiered_jobs.contract import batches
from tiered_jobs.contract.names import DeadLetter
from tiered_jobs.publisher import Job, PublishError
from tiered_jobs.runtime import JobContext, PermanentError, TransientError
from tiered_jobs.runtime.batches import finished
from tiered_jobs.runtime.consumer import Consumer
from tiered_jobs.runtime.registry import JobRegistry

TABLE = "test-batches"
NOW = datetime(2030, 5, 1, 12, 0, tzinfo=timezone.utc)
#: The gate jobs fail (permanently) while their label is here.
FAILING: set[str] = set()
#: ``(idempotency key, ctx.previous_result())`` of every gate job that ran.
RUNS: list[tuple[str, Any]] = []

registry = JobRegistry()


@registry.job("testjobs.gate")
def gate(payload: dict[str, Any], ctx: JobContext) -> dict[str, Any]:
    if payload["label"] in FAILING:
        raise PermanentError(f"gate {payload['label']} is closed")
    RUNS.append((ctx.idempotency_key, ctx.previous_result()))
    return {"label": payload["label"]}


@registry.job("testjobs.flaky")
def flaky(payload: dict[str, Any], ctx: JobContext) -> str:
    if ctx.attempt == 1:
        raise TransientError("the first attempt fails")
    return "ok"


ON_SUCCESS = (CALLBACK_TYPE, {"counter": "on-success", "amount": 1})
#: Sent to the callbacks' queue too (the test jobs' types go to the tier unless told).
ON_COMPLETE = Job("testjobs.ok", {"label": "on-complete"}, "replaced", tier=CALLBACKS_TIER)


@pytest.fixture(autouse=True)
def _reset() -> None:
    FAILING.clear()
    RUNS.clear()


@pytest.fixture
def setup(tier):
    create_batch_table(tier.dynamodb, TABLE)
    callbacks = tier.sqs.create_queue(QueueName="reports")["QueueUrl"]
    return tier, callbacks, publisher_for(tier, TABLE, callbacks)


class Crashing:
    """A client that raises once on the named call of the batches' table or the callbacks' queue (not the
    idempotency layer's own calls), as a crash just before it would."""

    def __init__(self, inner: Any, call: str, target: str):
        self.inner, self.call, self.target, self.left = inner, call, target, 1

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.inner, name)
        if name != self.call:
            return method

        def maybe_crash(**request: Any) -> Any:
            aimed = self.target in json.dumps(request, default=str)
            if aimed and self.left > 0:
                self.left -= 1
                raise ConnectionError(f"crashed before {name}")
            return method(**request)

        return maybe_crash


def consumer(tier, *, dynamodb: Any = None, sqs: Any = None, now: Any = None, **retry: Any) -> Consumer:
    clients = {"sqs": sqs or tier.sqs, "dynamodb": dynamodb or tier.dynamodb}
    config = replace(tier.config(**retry), batch_table=TABLE)
    options = {"now": now} if now is not None else {}
    return Consumer(config, registry, client=clients.__getitem__, rand=lambda: 0.5, **options)


def sent_callbacks(tier, url: str) -> list[tuple[str, str]]:
    """``(type, idempotency key)`` of what reached the callbacks' queue, in order (then removed)."""
    found = []
    while messages := tier.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
        for message in messages:
            body = json.loads(message["Body"])
            found.append((body["type"], body["idempotency_key"]))
            tier.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return found


def drain(tier, run: Consumer, rounds: int = 12) -> None:
    """Run the tier's consumer until its queue is empty (backoffs and kept records made visible)."""
    for _ in range(rounds):
        messages = tier.receive_for_batch()
        if not messages:
            return
        tier.run_messages(run, messages)
        tier.make_visible()
    raise AssertionError("the queue did not empty")


def replay_letters(tier) -> int:
    """Move every letter back to the queue, body unchanged, as a replay does."""
    letters = tier.dlq_messages()
    for letter in letters:
        tier.send_raw(letter["Body"])
        tier.sqs.delete_message(QueueUrl=tier.dlq_url, ReceiptHandle=letter["ReceiptHandle"])
    return len(letters)


def counts(tier, batch_id: str) -> tuple[int, int, int, int, str]:
    state = head(tier.dynamodb, TABLE, batch_id)
    return state.total, state.done, state.succeeded, state.failed, state.state


def test_every_member_succeeded_sends_on_complete_then_on_success_once_each(setup):
    tier, url, publisher = setup
    with publisher.batch(on_success=ON_SUCCESS, on_complete=ON_COMPLETE) as batch:
        for n in range(3):
            batch.publish("testjobs.gate", {"label": f"m{n}"}, f"m{n}")
    drain(tier, consumer(tier))
    assert counts(tier, batch.batch_id) == (3, 3, 3, 0, "succeeded")
    assert sent_callbacks(tier, url) == [("testjobs.ok", batch.batch_id), (CALLBACK_TYPE, batch.batch_id)]
    assert head(tier.dynamodb, TABLE, batch.batch_id).fired == {batches.ON_SUCCESS, batches.ON_COMPLETE}


def test_a_dead_lettered_member_fires_on_complete_only_and_its_replay_to_success_fires_on_success_once(setup):
    tier, url, publisher = setup
    FAILING.add("b")
    with publisher.batch(on_success=ON_SUCCESS, on_complete=ON_COMPLETE) as batch:
        batch.publish("testjobs.gate", {"label": "a"}, "a")
        batch.publish("testjobs.gate", {"label": "b"}, "b")
    drain(tier, consumer(tier))
    assert counts(tier, batch.batch_id) == (2, 2, 1, 1, "failed")
    assert sent_callbacks(tier, url) == [("testjobs.ok", batch.batch_id)]
    FAILING.clear()
    assert replay_letters(tier) == 1
    drain(tier, consumer(tier))
    assert counts(tier, batch.batch_id) == (2, 2, 2, 0, "succeeded")
    assert sent_callbacks(tier, url) == [(CALLBACK_TYPE, batch.batch_id)]
    # A second replay of the same job (answered from its record) moves nothing and sends nothing.
    tier.publish("testjobs.gate", {"label": "b"}, "b")
    drain(tier, consumer(tier))
    assert counts(tier, batch.batch_id) == (2, 2, 2, 0, "succeeded")
    assert sent_callbacks(tier, url) == []


def test_a_member_failing_again_after_its_replay_is_counted_once(setup):
    tier, url, publisher = setup
    FAILING.add("b")
    with publisher.batch(on_complete=ON_COMPLETE) as batch:
        batch.publish("testjobs.gate", {"label": "b"}, "b")
    drain(tier, consumer(tier))
    replay_letters(tier)
    drain(tier, consumer(tier))
    assert counts(tier, batch.batch_id) == (1, 1, 0, 1, "failed")
    assert sent_callbacks(tier, url) == [("testjobs.ok", batch.batch_id)]


def test_a_retry_counts_nothing_until_the_member_finishes(setup):
    tier, url, publisher = setup
    with publisher.batch(on_success=ON_SUCCESS) as batch:
        batch.publish("testjobs.flaky", {}, "f")
    run = consumer(tier)
    tier.run_batch(run)
    assert counts(tier, batch.batch_id) == (1, 0, 0, 0, "running")
    assert sent_callbacks(tier, url) == []
    tier.make_visible()
    drain(tier, run)
    assert counts(tier, batch.batch_id) == (1, 1, 1, 0, "succeeded")
    assert sent_callbacks(tier, url) == [(CALLBACK_TYPE, batch.batch_id)]


def test_an_expired_member_counts_as_finished_not_succeeded(setup):
    tier, url, publisher = setup
    with publisher.batch(on_success=ON_SUCCESS, on_complete=ON_COMPLETE) as batch:
        batch.publish("testjobs.gate", {"label": "late"}, "late", expires_in=60)
    later = publisher._clock() + timedelta(hours=1)
    drain(tier, consumer(tier, now=lambda: later))
    assert RUNS == []
    assert counts(tier, batch.batch_id) == (1, 1, 0, 1, "failed")
    assert sent_callbacks(tier, url) == [("testjobs.ok", batch.batch_id)]
    member = tier.dynamodb.query(
        TableName=TABLE,
        KeyConditionExpression="#b = :b",
        ExpressionAttributeNames={"#b": batches.KEY},
        ExpressionAttributeValues={":b": {"S": batch.batch_id}},
    )["Items"]
    details = [item["detail"]["S"] for item in member if item[batches.MEMBER]["S"] != batches.HEAD]
    assert len(details) == 1 and details[0].startswith("expired")


def test_a_cancelled_member_counts_as_finished_not_succeeded(setup):
    tier, url, publisher = setup
    with publisher.batch(on_success=ON_SUCCESS, on_complete=ON_COMPLETE) as batch:
        batch.publish("testjobs.gate", {"label": "no"}, "no")
        batch.publish("testjobs.gate", {"label": "yes"}, "yes")
    run = consumer(tier)
    assert run.runner.mark_ended("testjobs.gate", "no", "cancelled", at="2030-01-01T00:00:00Z")
    drain(tier, run)
    assert [key for key, _ in RUNS] == ["yes"]
    assert counts(tier, batch.batch_id) == (2, 2, 1, 1, "failed")
    assert sent_callbacks(tier, url) == [("testjobs.ok", batch.batch_id)]


def test_members_that_finish_before_the_seal_are_counted_and_the_seal_sends_the_callback(setup):
    tier, url, publisher = setup
    with publisher.batch(on_success=ON_SUCCESS) as batch:
        batch.publish("testjobs.gate", {"label": "early"}, "early")
        drain(tier, consumer(tier))
        assert counts(tier, batch.batch_id) == (0, 1, 1, 0, "open")
        assert sent_callbacks(tier, url) == []
    assert counts(tier, batch.batch_id) == (1, 1, 1, 0, "succeeded")
    assert sent_callbacks(tier, url) == [(CALLBACK_TYPE, batch.batch_id)]


@pytest.mark.parametrize(
    ("client", "call"),
    [
        ("dynamodb", "transact_write_items"),  # after the job's record was written, before its count
        ("dynamodb", "get_item"),  # after the count, before the head is read
        ("sqs", "send_message"),  # before the callback is sent
        ("dynamodb", "update_item"),  # after the callback was sent, before it is marked fired
    ],
)
def test_a_crash_between_a_members_completion_and_its_callback_loses_nothing_and_runs_nothing_twice(
    setup, client, call
):
    tier, url, publisher = setup
    with publisher.batch(on_success=ON_SUCCESS) as batch:
        batch.publish("testjobs.gate", {"label": "one"}, "one")
    crashing = Crashing(getattr(tier, client), call, url if client == "sqs" else TABLE)
    run = consumer(tier, **{client: crashing})
    response = tier.run_batch(run)
    assert len(response["batchItemFailures"]) == 1, "the record is kept when its count or callback was not done"
    tier.make_visible()
    drain(tier, run)
    assert [key for key, _ in RUNS] == ["one"], "the job ran once: its redelivery was answered from its record"
    assert counts(tier, batch.batch_id) == (1, 1, 1, 0, "succeeded")
    sent = sent_callbacks(tier, url)
    assert set(sent) == {(CALLBACK_TYPE, batch.batch_id)}, "a callback sent twice has the one key: it runs once"
    assert len(sent) == (2 if call == "update_item" else 1)


def test_a_member_of_an_unknown_batch_runs_and_is_not_kept(setup):
    tier, _, _ = setup
    body = {"type": "testjobs.gate", "idempotency_key": "lost", "payload": {"label": "lost"}, "batch": {"id": "gone"}}
    tier.send_raw(json.dumps(body))
    response = tier.run_batch(consumer(tier))
    assert response["batchItemFailures"] == []
    assert [key for key, _ in RUNS] == ["lost"]


def test_a_chain_publishes_each_link_when_the_one_before_succeeds_with_its_result(setup):
    tier, _, publisher = setup
    opened = publisher.chain(
        ("testjobs.gate", {"label": "a"}, "a"),
        ("testjobs.gate", {"label": "b"}, "b"),
        Job("testjobs.gate", {"label": "c"}, "c"),
    )
    assert opened.first.ok
    drain(tier, consumer(tier))
    assert RUNS == [("a", None), ("b", {"label": "a"}), ("c", {"label": "b"})]
    assert counts(tier, opened.chain_id) == (3, 3, 3, 0, "succeeded")


def test_a_failed_link_stops_the_chain_with_its_reason_and_its_replay_resumes_it(setup):
    tier, _, publisher = setup
    FAILING.add("b")
    opened = publisher.chain(
        ("testjobs.gate", {"label": "a"}, "a"),
        ("testjobs.gate", {"label": "b"}, "b"),
        ("testjobs.gate", {"label": "c"}, "c"),
    )
    drain(tier, consumer(tier))
    assert [key for key, _ in RUNS] == ["a"]
    assert counts(tier, opened.chain_id) == (3, 2, 1, 1, "stopped")
    step = tier.dynamodb.get_item(
        TableName=TABLE, Key={batches.KEY: {"S": opened.chain_id}, batches.MEMBER: {"S": "step#1"}}
    )["Item"]
    assert step["outcome"]["S"] == "failed" and "gate b is closed" in step["detail"]["S"]
    FAILING.clear()
    replay_letters(tier)
    drain(tier, consumer(tier))
    assert [key for key, _ in RUNS] == ["a", "b", "c"]
    assert counts(tier, opened.chain_id) == (3, 3, 3, 0, "succeeded")


def test_a_count_not_written_on_the_last_receive_is_dead_lettered_with_its_reason_and_its_replay_counts_it(setup):
    """On the queue's last receive a kept record would be moved by SQS's redrive without reasons: a
    member that succeeded goes to the DLQ with reason ``batch_count_failed`` instead (counted failed, as
    every letter), and its replay is answered from its record and counted succeeded, the job run once."""
    tier, url, publisher = setup
    with publisher.batch(on_success=ON_SUCCESS) as batch:
        batch.publish("testjobs.gate", {"label": "one"}, "one")
    crashing = Crashing(tier.dynamodb, "transact_write_items", TABLE)
    clients = {"sqs": tier.sqs, "dynamodb": crashing}
    last_receive = replace(tier.config(max_attempts=1), batch_table=TABLE)  # its first receive is its last
    response = tier.run_batch(Consumer(last_receive, registry, client=clients.__getitem__, rand=lambda: 0.5))
    assert response["batchItemFailures"] == [], "acknowledged: its letter holds it"
    (letter,) = tier.dlq_messages()
    attributes = {k: v["StringValue"] for k, v in letter["MessageAttributes"].items() if "StringValue" in v}
    assert attributes[DeadLetter.REASON] == DeadLetter.REASON_BATCH_COUNT_FAILED
    assert "a replay counts it" in attributes[DeadLetter.ERROR_MESSAGE]
    # A letter is a finished member that failed, as every letter is: on_success waits for its replay.
    assert counts(tier, batch.batch_id) == (1, 1, 0, 1, "failed") and sent_callbacks(tier, url) == []
    assert replay_letters(tier) == 1
    drain(tier, consumer(tier))
    assert [key for key, _ in RUNS] == ["one"], "the replay was answered from the job's record"
    assert counts(tier, batch.batch_id) == (1, 1, 1, 0, "succeeded")
    assert sent_callbacks(tier, url) == [(CALLBACK_TYPE, batch.batch_id)]


def _refused_send(params: dict[str, Any]) -> Any:
    """SQS refusing a whole SendMessageBatch, as it reaches the publisher once botocore's retries are spent."""
    return error_response("InternalError", "We encountered an internal error.", status=500)


def test_a_member_whose_send_was_refused_is_counted_failed_at_the_seal_and_the_batch_finishes(setup):
    tier, url, publisher = setup
    with publisher.batch(on_success=ON_SUCCESS, on_complete=ON_COMPLETE) as batch:
        batch.publish("testjobs.gate", {"label": "sent"}, "sent")
        with refuse(tier.sqs, "SendMessageBatch", _refused_send) as refused:
            with pytest.raises(PublishError):
                batch.publish("testjobs.gate", {"label": "lost"}, "lost")
    assert refused.count == 1
    assert list(batch.sealed.not_sent) == [("testjobs.gate", "lost")]
    assert "InternalError" in batch.sealed.not_sent[("testjobs.gate", "lost")]
    drain(tier, consumer(tier))
    assert counts(tier, batch.batch_id) == (2, 2, 1, 1, "failed")
    assert sent_callbacks(tier, url) == [("testjobs.ok", batch.batch_id)]  # on_complete: every member finished


def test_a_member_whose_send_was_refused_may_be_published_again_and_counts_when_it_finishes(setup):
    tier, url, publisher = setup
    with publisher.batch(on_success=ON_SUCCESS) as batch:
        with refuse(tier.sqs, "SendMessageBatch", _refused_send):
            with pytest.raises(PublishError):
                batch.publish("testjobs.gate", {"label": "m"}, "m")
        assert batch.publish("testjobs.gate", {"label": "m"}, "m").message_id
    assert batch.sealed.not_sent == {}
    drain(tier, consumer(tier))
    assert counts(tier, batch.batch_id) == (1, 1, 1, 0, "succeeded")
    assert sent_callbacks(tier, url) == [(CALLBACK_TYPE, batch.batch_id)]


def test_a_member_counted_not_sent_whose_send_had_gone_through_moves_to_succeeded_when_it_runs(setup):
    """A send refused after SQS took it (a timeout): the seal counted it failed; its run moves it, once."""
    tier, url, publisher = setup
    with publisher.batch(on_success=ON_SUCCESS, on_complete=ON_COMPLETE) as batch:
        with refuse(tier.sqs, "SendMessageBatch", _refused_send):
            with pytest.raises(PublishError):
                batch.publish("testjobs.gate", {"label": "late"}, "late")
    assert counts(tier, batch.batch_id) == (1, 1, 0, 1, "failed")
    assert sent_callbacks(tier, url) == [("testjobs.ok", batch.batch_id)]
    body = {"type": "testjobs.gate", "idempotency_key": "late", "payload": {"label": "late"}}
    tier.send_raw(json.dumps({**body, "batch": {"id": batch.batch_id}}))  # the copy SQS had taken
    drain(tier, consumer(tier))
    assert counts(tier, batch.batch_id) == (1, 1, 1, 0, "succeeded")
    assert sent_callbacks(tier, url) == [(CALLBACK_TYPE, batch.batch_id)]


def _counts_of_the_batch(params: dict[str, Any]) -> bool:
    return any(op.get("TableName") == TABLE for item in params.get("TransactItems", []) for op in item.values())


def _throttled() -> Any:
    """A transaction cancelled as DynamoDB does when the head's partition is throttled."""
    reasons = [{"Code": "None"}, {"Code": "ThrottlingError", "Message": "Throughput exceeds the current capacity"}]
    return error_response("TransactionCanceledException", "Transaction cancelled", CancellationReasons=reasons)


@pytest.mark.parametrize(
    "cancelled", [lambda: conflict_response(2, conflicted=1), lambda: _throttled()], ids=["conflict", "throttled"]
)
def test_a_count_cancelled_by_another_members_is_written_again_in_the_same_receive(setup, cancelled):
    tier, url, publisher = setup
    with publisher.batch(on_success=ON_SUCCESS) as batch:
        batch.publish("testjobs.gate", {"label": "one"}, "one")

    def conflict(params: dict[str, Any]) -> Any:
        return cancelled() if _counts_of_the_batch(params) else None

    with refuse(tier.dynamodb, "TransactWriteItems", conflict, times=2) as conflicted:
        response = tier.run_batch(consumer(tier))
    assert conflicted.count == 2
    assert response["batchItemFailures"] == [], "a conflict no longer spends a receive"
    assert counts(tier, batch.batch_id) == (1, 1, 1, 0, "succeeded")
    assert sent_callbacks(tier, url) == [(CALLBACK_TYPE, batch.batch_id)]


def _member_envelope(tier, batch_id: str, key: str) -> Any:
    from tiered_jobs.contract.envelope import build

    return replace(build("testjobs.gate", {"label": key}, key), batch={"id": batch_id})


def test_a_count_whose_answer_was_lost_is_written_once_and_said_written_now(setup):
    """botocore sends the applied count again: it meets its own marker (its token), counted now, once."""
    tier, url, publisher = setup
    with publisher.batch(on_success=ON_SUCCESS) as batch:
        batch.publish("testjobs.gate", {"label": "one"}, "one")
    envelope = _member_envelope(tier, batch.batch_id, "one")
    with lose_answers(tier.dynamodb, "TransactWriteItems") as lost:
        counted = finished(tier.dynamodb, tier.sqs, TABLE, envelope, batches.SUCCEEDED, detail="", now=NOW)
    assert lost.count == 1
    assert (counted.counted, counted.fired) == (True, (batches.ON_SUCCESS,))
    assert counts(tier, batch.batch_id) == (1, 1, 1, 0, "succeeded")


def test_a_recount_whose_answer_was_lost_moves_the_member_once(setup):
    tier, url, publisher = setup
    with publisher.batch(on_success=ON_SUCCESS) as batch:
        batch.publish("testjobs.gate", {"label": "one"}, "one")
    envelope = _member_envelope(tier, batch.batch_id, "one")
    finished(tier.dynamodb, tier.sqs, TABLE, envelope, batches.FAILED, detail="dead-lettered", now=NOW)
    with lose_answers(tier.dynamodb, "TransactWriteItems", when=lambda request: b"failed_before" in request["body"]):
        finished(tier.dynamodb, tier.sqs, TABLE, envelope, batches.SUCCEEDED, detail="", now=NOW)
    assert counts(tier, batch.batch_id) == (1, 1, 1, 0, "succeeded")
    assert sent_callbacks(tier, url) == [(CALLBACK_TYPE, batch.batch_id)]


def test_each_try_of_a_count_carries_a_client_request_token_of_its_own(setup):
    tier, _, publisher = setup
    with publisher.batch(on_success=ON_SUCCESS) as batch:
        batch.publish("testjobs.gate", {"label": "one"}, "one")
    envelope = _member_envelope(tier, batch.batch_id, "one")
    conflict = lambda params: conflict_response(2) if _counts_of_the_batch(params) else None  # noqa: E731
    waits: list[float] = []
    with refuse(tier.dynamodb, "TransactWriteItems", conflict, times=2) as conflicted:
        finished(
            tier.dynamodb,
            tier.sqs,
            TABLE,
            envelope,
            batches.SUCCEEDED,
            detail="",
            now=NOW,
            sleep=waits.append,
            random=lambda: 0.5,
        )
    tokens = [params["ClientRequestToken"] for params in conflicted.params]
    assert len(set(tokens)) == 2 and all(tokens)
    assert waits == [0.025, 0.05]  # full jitter: 0.5 x 0.05 s, then 0.5 x 0.1 s
