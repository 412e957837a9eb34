"""``tiered-jobs batch ID``: a batch's counts and callbacks, a chain's links, why a member failed (moto)."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timezone

import boto3
import pytest

from tiered_jobs.contract import batches
from tiered_jobs.contract.envelope import build
from tiered_jobs.contract.routing import Routes
from tiered_jobs.publisher import Publisher
from tiered_jobs.runtime.batches import finished

NOW = datetime(2030, 5, 1, 12, 0, tzinfo=timezone.utc)


@pytest.fixture
def stage_batches(deployment):
    """The stage's batches table (the miniature stack's) and a publisher for it."""
    dynamodb, sqs = boto3.client("dynamodb"), boto3.client("sqs")
    table = deployment.batch_table
    publisher = Publisher(
        deployment.queue_urls, Routes(deployment.routes), sqs=sqs, dynamodb=dynamodb, batch_table=table
    )
    return publisher, dynamodb, sqs, table


def member_finished(stage_batches, batch_field: dict, key: str, outcome: str, detail: str = "") -> None:
    _, dynamodb, sqs, table = stage_batches
    envelope = build("payments.capture", {"n": 1}, key)
    finished(dynamodb, sqs, table, replace(envelope, batch=batch_field), outcome, detail=detail, now=NOW)


def test_a_finished_batch_shows_its_counts_callbacks_and_failed_member(cli, stage_batches):
    publisher = stage_batches[0]
    with publisher.batch(on_complete=("notifications.report", {"report": "r1"})) as batch:
        batch.publish("payments.capture", {"n": 1}, "p1")
        batch.publish("payments.capture", {"n": 2}, "p2")
    member_finished(stage_batches, {"id": batch.batch_id}, "p1", batches.SUCCEEDED)
    member_finished(stage_batches, {"id": batch.batch_id}, "p2", batches.FAILED, "permanent: CardDeclined: no")
    result = cli("batch", batch.batch_id)
    assert result.exit_code == 0, result.output
    assert f"batch {batch.batch_id}: failed" in result.output
    assert "members: 2 total, 2 finished: 1 succeeded, 1 failed" in result.output
    assert "on_complete: notifications.report (sent)" in result.output
    assert "permanent: CardDeclined: no" in result.output
    shown = json.loads(cli("batch", batch.batch_id, "--json").output)
    assert (shown["state"], shown["succeeded"], shown["failed"], shown["fired"]) == ("failed", 1, 1, ["on_complete"])


def test_a_stopped_chain_shows_each_link_and_the_reason(cli, stage_batches):
    publisher = stage_batches[0]
    chain = publisher.chain(("payments.capture", {"n": 1}, "c1"), ("payments.capture", {"n": 2}, "c2"))
    member_finished(stage_batches, {"id": chain.chain_id, "step": 0}, "c1", batches.FAILED, "permanent: Boom: no")
    result = cli("batch", chain.chain_id)
    assert result.exit_code == 0, result.output
    assert f"chain {chain.chain_id}: stopped" in result.output
    assert 'link 0: payments.capture "c1": failed' in result.output
    assert 'link 1: payments.capture "c2": pending' in result.output
    assert "failed step#0: permanent: Boom: no" in result.output


def test_an_unknown_batch_is_a_usage_error(cli, stage_batches):
    result = cli("batch", "nosuchbatch")
    assert result.exit_code == 2, result.output
    assert "no batch or chain 'nosuchbatch'" in result.output
