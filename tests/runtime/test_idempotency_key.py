"""The operator tools and the consumer derive the same idempotency record for a job.

``tiered_jobs.contract.idempotency.record_id`` (used by ``tiered-jobs job`` and the console) must
name exactly the item Powertools writes when the consumer runs the job; otherwise a lookup would
report a completed job as unknown.
"""

from __future__ import annotations

import boto3
import pytest

from tiered_jobs.contract.idempotency import RecordAttributes, RecordStatus, record_id
from tiered_jobs.runtime.idempotency import IdempotentRunner


@pytest.mark.parametrize(
    "job_type, key",
    [
        ("testjobs.effect", "pay_123"),
        ("testjobs.ok", 'clé-ünïcode "quoted" 7'),
    ],
)
def test_record_id_names_the_item_the_runtime_writes(tier, job_type, key):
    dynamodb = boto3.client("dynamodb", region_name="us-east-1")
    runner = IdempotentRunner(tier.idempotency_table, ttl_seconds=3600, dynamodb_client=dynamodb)
    envelope = {"type": job_type, "idempotency_key": key, "payload": {"n": 1}}

    outcome = runner.run(envelope, lambda: {"done": key})

    assert not outcome.duplicate
    assert runner.persistence._get_hashed_idempotency_key(envelope) == record_id(job_type, key)
    item = dynamodb.get_item(
        TableName=tier.idempotency_table, Key={RecordAttributes.KEY: {"S": record_id(job_type, key)}}
    )["Item"]
    assert item[RecordAttributes.STATUS]["S"] == RecordStatus.COMPLETED
    assert RecordAttributes.EXPIRATION in item and RecordAttributes.DATA in item


def test_record_id_depends_on_type_and_key_only():
    assert record_id("a.b", "k1") == record_id("a.b", "k1")
    assert len({record_id("a.b", "k1"), record_id("a.b", "k2"), record_id("a.c", "k1")}) == 3
    assert record_id("a.b", "k1").startswith("tiered-jobs#")
