"""Opening batches and chains: bad input is refused before anything is written or sent (moto in-process)."""

from __future__ import annotations

import json

import pytest

from bench.calls import CallCounter
from tests.support.aws_faults import lose_answers
from tests.support.batches import CALLBACK_TYPE, CALLBACKS_TIER, create_batch_table, head, publisher_for
from tiered_jobs.contract import batches
from tiered_jobs.contract.idempotency import record_id
from tiered_jobs.publisher import InvalidJobError, Job, Publisher
from tiered_jobs.stage.discovery import DiscoveryError

TABLE = "publisher-batches"
ON_SUCCESS = (CALLBACK_TYPE, {"counter": "done", "amount": 1})


@pytest.fixture
def publisher(tier, counter) -> Publisher:
    create_batch_table(tier.dynamodb, TABLE)
    callbacks = tier.sqs.create_queue(QueueName="reports")["QueueUrl"]
    made = publisher_for(tier, TABLE, callbacks)
    made._sqs, made._dynamodb = counter.attach(tier.sqs), counter.attach(tier.dynamodb)
    return made


def items(tier) -> list[dict]:
    return tier.dynamodb.scan(TableName=TABLE)["Items"]


WRITES = {"SendMessage", "SendMessageBatch", "PutItem", "UpdateItem", "TransactWriteItems"}


def nothing_done(tier, counter: CallCounter) -> bool:
    """No write or send was made, and neither the table nor the queue holds anything."""
    writes = sum(n for (_, operation), n in counter.counts.items() if operation in WRITES)
    return writes == 0 and not items(tier) and not tier.receive()


@pytest.mark.parametrize(
    ("callbacks", "message"),
    [
        ({}, "needs a callback"),
        ({"on_success": ("nosuch.type", {})}, "no route"),
        ({"on_success": ("Not A Type", {})}, "'type' must match"),
        ({"on_success": (CALLBACK_TYPE, {"counter": "x", "amount": 0})}, "amount"),
        ({"on_complete": (CALLBACK_TYPE, "not an object")}, "'payload' must be a JSON object"),
        ({"on_success": ("testjobs.ok",)}, "must be (type, payload) or a Job"),
        ({"on_success": Job(CALLBACK_TYPE, {"counter": "x", "amount": 1}, "k", delay=5)}, "drop delay"),
        ({"on_success": ON_SUCCESS, "on_complete": (CALLBACK_TYPE, {"counter": "y", "amount": 1})}, "same type"),
        ({"on_success": ON_SUCCESS, "batch_id": "no spaces"}, "'batch.id' must be"),
    ],
)
def test_a_callback_that_could_not_be_published_refuses_the_batch_with_nothing_written_or_sent(
    publisher, tier, counter, callbacks, message
):
    with pytest.raises(InvalidJobError) as refused:
        publisher.batch(**callbacks)
    assert message.lower() in str(refused.value).lower()
    assert nothing_done(tier, counter)


def test_callbacks_the_batchs_item_could_not_hold_refuse_the_batch_naming_the_limit(publisher, tier, counter):
    """SQS takes a message of 1 MiB; DynamoDB's item, which keeps the callbacks until sent, 400 KB."""
    blob = {"label": "big", "data": {"blob": "x" * 350_000}}
    with pytest.raises(InvalidJobError) as refused:
        publisher.batch(on_success=ON_SUCCESS, on_complete=Job("testjobs.ok", blob, "k", tier=CALLBACKS_TIER))
    assert f"over {batches.MAX_HEAD_MESSAGE_BYTES}" in str(refused.value)
    assert "400 KB" in str(refused.value)
    assert nothing_done(tier, counter)


def test_callbacks_are_measured_as_the_item_stores_them_escaped(publisher, tier, counter):
    """A body's quotes are escaped again in the stored JSON: 80 000 of them are 160 KB in the body, 320 KB there."""
    quoted = {"label": "quoted", "data": {"q": '"' * 80_000}}
    with pytest.raises(InvalidJobError, match="as the batch's item stores them"):
        publisher.batch(on_complete=Job("testjobs.ok", quoted, "k", tier=CALLBACKS_TIER))
    assert nothing_done(tier, counter)


def test_an_empty_batch_is_refused_with_nothing_written(publisher, tier, counter):
    with pytest.raises(InvalidJobError, match="is empty"):
        with publisher.batch(on_success=ON_SUCCESS):
            pass
    assert nothing_done(tier, counter)


@pytest.mark.parametrize(
    ("options", "message"),
    [({"unique_for": 60}, "unique_for"), ({"debounce": 60}, "debounce")],
)
def test_a_member_the_batch_could_never_count_is_refused(publisher, tier, counter, options, message):
    with pytest.raises(InvalidJobError, match=message):
        with publisher.batch(on_success=ON_SUCCESS) as batch:
            batch.publish("testjobs.ok", {"label": "a"}, "a", **options)
    assert nothing_done(tier, counter)


def test_the_same_member_twice_is_refused(publisher, tier):
    with pytest.raises(InvalidJobError, match="in the batch already"):
        with publisher.batch(on_success=ON_SUCCESS) as batch:
            batch.publish("testjobs.ok", {"label": "a"}, "a")
            batch.publish("testjobs.ok", {"label": "a"}, "a")
    assert len(tier.receive()) == 1


def test_a_member_with_an_invalid_payload_sends_nothing(publisher, tier, counter):
    with pytest.raises(InvalidJobError):
        with publisher.batch(on_success=ON_SUCCESS) as batch:
            batch.publish("testjobs.ok", {"no_label": True}, "a")
    assert nothing_done(tier, counter)


def test_a_block_left_by_an_exception_is_not_sealed_and_fires_nothing(publisher, tier):
    with pytest.raises(RuntimeError):
        with publisher.batch(on_success=ON_SUCCESS) as batch:
            batch.publish("testjobs.ok", {"label": "a"}, "a")
            raise RuntimeError("the caller failed")
    state = head(tier.dynamodb, TABLE, batch.batch_id)
    assert (state.sealed, state.state) == (False, "open")


def test_members_carry_the_batch_id_and_the_head_its_total_and_callback(publisher, tier):
    with publisher.batch(on_success=ON_SUCCESS) as batch:
        batch.publish_batch([Job("testjobs.ok", {"label": str(n)}, f"k{n}") for n in range(12)])
    bodies = [json.loads(m["Body"]) for m in tier.receive()] + [json.loads(m["Body"]) for m in tier.receive()]
    assert {body["batch"]["id"] for body in bodies} == {batch.batch_id}
    state = head(tier.dynamodb, TABLE, batch.batch_id)
    assert (state.total, state.sealed, state.done) == (12, True, 0)
    assert json.loads(state.callbacks[batches.ON_SUCCESS].body)["idempotency_key"] == batch.batch_id
    with pytest.raises(InvalidJobError, match="sealed"):
        batch.publish("testjobs.ok", {"label": "late"}, "late")


def test_a_batch_id_in_use_is_refused_as_bad_input_naming_it_with_nothing_sent(publisher, tier):
    with publisher.batch(on_success=ON_SUCCESS, batch_id="report-1") as batch:
        batch.publish("testjobs.ok", {"label": "a"}, "a")
    with pytest.raises(InvalidJobError, match="batch id 'report-1' is in use"):
        with publisher.batch(on_success=ON_SUCCESS, batch_id="report-1") as again:
            again.publish("testjobs.ok", {"label": "b"}, "b")
    assert [json.loads(m["Body"])["idempotency_key"] for m in tier.receive()] == ["a"]
    assert head(tier.dynamodb, TABLE, "report-1").total == 1  # the first batch's head, untouched


def test_a_chain_id_in_use_is_refused_as_bad_input_naming_it(publisher, tier):
    publisher.chain(("testjobs.ok", {"label": "a"}, "a"), chain_id="order-1")
    with pytest.raises(InvalidJobError, match="chain id 'order-1' is in use"):
        publisher.chain(("testjobs.ok", {"label": "b"}, "b"), chain_id="order-1")
    assert [json.loads(m["Body"])["idempotency_key"] for m in tier.receive()] == ["a"]


def test_a_head_whose_answer_was_lost_is_the_batchs_own_and_its_members_are_sent(publisher, tier):
    """botocore writes the head again: its condition fails on the head this batch wrote, which is its own."""
    with lose_answers(tier.dynamodb, "PutItem") as lost:
        with publisher.batch(on_success=ON_SUCCESS, batch_id="report-1") as batch:
            batch.publish("testjobs.ok", {"label": "a"}, "a")
    assert lost.count == 1
    assert len(tier.receive()) == 1
    assert (batch.sealed.total, batch.sealed.state) == (1, "running")


def test_a_chain_whose_head_answer_was_lost_sends_its_first_link(publisher, tier):
    with lose_answers(tier.dynamodb, "PutItem") as lost:
        opened = publisher.chain(("testjobs.ok", {"label": "a"}, "a"), chain_id="order-1")
    assert lost.count == 1 and opened.first.message_id
    assert len(tier.receive()) == 1


def _finish(tier, batch_id: str, job_type: str, key: str) -> None:
    """Count a member succeeded, as the consumer does when it finishes."""
    member = batches.member_id({"id": batch_id}, record_id(job_type, key))
    request = batches.count_request(TABLE, batch_id, member, batches.SUCCEEDED, detail="", at="now", now=0)
    tier.dynamodb.transact_write_items(**request)


def test_a_seal_whose_answer_was_lost_is_sealed_and_sends_the_callback_already_due(publisher, tier):
    """The retried seal meets the batch sealed with this total: sealed, and what is due still goes."""
    callbacks_url = publisher.queues[CALLBACKS_TIER]
    batch = publisher.batch(on_success=ON_SUCCESS)
    batch.publish("testjobs.ok", {"label": "a"}, "a")
    _finish(tier, batch.batch_id, "testjobs.ok", "a")  # finished before the seal
    with lose_answers(tier.dynamodb, "UpdateItem", when=lambda request: b"sealed" in request["body"]) as lost:
        sealed = batch.seal()
    assert lost.count == 1
    assert (sealed.total, sealed.state, sealed.fired) == (1, "succeeded", {batches.ON_SUCCESS})
    messages = tier.sqs.receive_message(QueueUrl=callbacks_url, MaxNumberOfMessages=10).get("Messages", [])
    assert [json.loads(m["Body"])["idempotency_key"] for m in messages] == [batch.batch_id]
    assert head(tier.dynamodb, TABLE, batch.batch_id).fired == {batches.ON_SUCCESS}


def test_a_publisher_without_a_batches_table_says_how_to_get_one(tier):
    bare = Publisher({"critical": tier.queue_url}, publisher_for(tier, TABLE, tier.queue_url).routes)
    with pytest.raises(DiscoveryError, match="batch_table="):
        bare.batch(on_success=ON_SUCCESS)


@pytest.mark.parametrize(
    ("links", "message"),
    [
        ((), "at least one link"),
        ((("testjobs.ok", {"label": "a"}),), "must be (type, payload, idempotency_key)"),
        ((Job("testjobs.ok", {"label": "a"}, "a", delay=10),), "drop delay"),
        ((("testjobs.ok", {"label": "a"}, "a"),) * (batches.MAX_CHAIN_LINKS + 1), "at most"),
        ((("testjobs.ok", {"label": "a"}, "a"), ("nosuch.type", {}, "b")), "no route"),
    ],
)
def test_a_chain_with_a_bad_link_is_refused_with_nothing_written_or_sent(publisher, tier, counter, links, message):
    with pytest.raises(InvalidJobError) as refused:
        publisher.chain(*links)
    assert message.lower() in str(refused.value).lower()
    assert nothing_done(tier, counter)
