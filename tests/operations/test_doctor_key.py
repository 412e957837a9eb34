"""``doctor``'s stage key check on moto (which has KMS): found on a tier queue, enabled, and its policy admitting
CloudWatch and CloudWatch Logs; no check for a stage under SSE-SQS."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from tiered_jobs.operations import doctor
from tiered_jobs.operations.doctor_key import CHECK_NAME, key_checks

REGION = "eu-west-1"
ACCOUNT = "123456789012"
ROOT = {
    "Sid": "Root",
    "Effect": "Allow",
    "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:root"},
    "Action": "kms:*",
    "Resource": "*",
}
CLOUDWATCH = {
    "Effect": "Allow",
    "Principal": {"Service": "cloudwatch.amazonaws.com"},
    "Action": ["kms:Decrypt", "kms:GenerateDataKey*"],
    "Resource": "*",
}
LOGS = {
    "Effect": "Allow",
    "Principal": {"Service": f"logs.{REGION}.amazonaws.com"},
    "Action": ["kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:Describe*"],
    "Resource": "*",
}


@pytest.fixture
def client() -> Iterator[Any]:
    with mock_aws():
        session = boto3.session.Session(region_name=REGION)
        yield lambda service, **_: session.client(service)


def _queue(client: Any, statements: list[dict[str, Any]] | None) -> str:
    attributes = {"SqsManagedSseEnabled": "true"}
    if statements is not None:
        policy = json.dumps({"Version": "2012-10-17", "Statement": [ROOT, *statements]})
        key = client("kms").create_key(Policy=policy)["KeyMetadata"]["Arn"]
        attributes = {"KmsMasterKeyId": key}
    return client("sqs").create_queue(QueueName="tiered-jobs-prod-bulk", Attributes=attributes)["QueueUrl"]


def test_a_stage_under_sse_sqs_has_no_key_to_check(client):
    assert key_checks(_queue(client, None), client) == []


def test_an_enabled_key_admitting_cloudwatch_and_its_logs_is_ok(client):
    (check,) = key_checks(_queue(client, [CLOUDWATCH, LOGS]), client)
    assert (check.name, check.status) == (CHECK_NAME, doctor.OK)


def test_a_policy_without_cloudwatch_logs_fails_naming_it_and_the_fix(client):
    (check,) = key_checks(_queue(client, [CLOUDWATCH]), client)
    assert check.status == doctor.FAIL
    assert f"does not allow logs.{REGION}.amazonaws.com" in check.detail
    assert "cloudwatch.amazonaws.com" not in check.detail
    assert "Your own key" in check.fix


def test_a_disabled_key_fails_first(client):
    url = _queue(client, [CLOUDWATCH, LOGS])
    key = client("sqs").get_queue_attributes(QueueUrl=url, AttributeNames=["KmsMasterKeyId"])["Attributes"]
    client("kms").disable_key(KeyId=key["KmsMasterKeyId"].rsplit("/", 1)[1])  # moto looks keys up by id only
    (check,) = key_checks(url, client)
    assert check.status == doctor.FAIL and "Disabled" in check.detail and "enable the key" in check.fix
