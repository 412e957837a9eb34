"""The consumer on offloaded bodies (``large_payloads``): it fetches the stored body before it reads the
envelope, keeps the pointer as the message every copy and letter sends again, and sends a body it cannot
fetch to the DLQ (permanent) or back to its backoff (transient), never drops it."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from tests.support.tier import REGION, Tier
from tiered_jobs.contract import large_payloads
from tiered_jobs.contract.envelope import build
from tiered_jobs.contract.large_payloads import Offload, Pointer
from tiered_jobs.contract.names import DeadLetter
from tiered_jobs.runtime.consumer import Consumer
from tiered_jobs.runtime.registry import registry

BUCKET = "test-large-payloads"


@pytest.fixture
def s3(aws) -> Any:
    client = boto3.client("s3", region_name=REGION)
    client.create_bucket(Bucket=BUCKET)
    return client


class Flaky:
    """The S3 client, whose ``get_object`` raises ``errors`` one after another before it answers."""

    def __init__(self, real: Any, *errors: ClientError):
        self.real, self.errors, self.gets = real, list(errors), 0

    def get_object(self, **kwargs: Any) -> Any:
        self.gets += 1
        if self.errors:
            raise self.errors.pop(0)
        return self.real.get_object(**kwargs)


def s3_error(code: str, status: int) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": code}, "ResponseMetadata": {"HTTPStatusCode": status}}, "Op")


def consumer(tier: Tier, s3: Any, offload: Offload | None = Offload(BUCKET, 0), **retry: Any) -> Consumer:
    config = dataclasses.replace(tier.config(**retry), large_payloads=offload)
    clients = {"sqs": tier.sqs, "dynamodb": tier.dynamodb, "s3": s3}
    return Consumer(config, registry, client=clients.__getitem__, rand=lambda: 0.5)


def send_pointer(
    tier: Tier, s3: Any, body: str, *, key: str = "9f2c-java-uuid", attribute: str = "ExtendedPayloadSize"
) -> str:
    """What AWS's extended clients do (the Java library's default key is a bare UUID): store, then point."""
    s3.put_object(Bucket=BUCKET, Key=key, Body=body.encode("utf-8"))
    pointer = Pointer(BUCKET, key).body()
    tier.sqs.send_message(
        QueueUrl=tier.queue_url,
        MessageBody=pointer,
        MessageAttributes={attribute: {"DataType": "Number", "StringValue": str(len(body.encode("utf-8")))}},
    )
    return pointer


def big_job(key: str, size: int = 1_500_000) -> str:  # past SQS's 1 MiB: what no message could hold
    return build("testjobs.ok", {"label": "report", "blob": "x" * size}, key).to_json()


def attrs(message: dict) -> dict[str, str]:
    return {name: value["StringValue"] for name, value in message.get("MessageAttributes", {}).items()}


def test_the_pointer_is_the_extended_clients_format_byte_for_byte():
    body = Pointer("bucket-1", "critical/abc").body()
    assert json.loads(body) == [
        "software.amazon.payloadoffloading.PayloadS3Pointer",
        {"s3BucketName": "bucket-1", "s3Key": "critical/abc"},
    ]
    assert large_payloads.read_pointer(body) == Pointer("bucket-1", "critical/abc")
    legacy = '["com.amazon.sqs.javamessaging.MessageS3Pointer",{"s3BucketName":"b","s3Key":"k"}]'
    assert large_payloads.read_pointer(legacy) == Pointer("b", "k")
    with pytest.raises(large_payloads.PointerError):
        large_payloads.read_pointer('{"type": "x"}')
    assert large_payloads.lifecycle_days(4, 14, 18 * 86_400) == 40  # the default tier: 2 x 4 + 14 + 18


@pytest.mark.parametrize("attribute", ["ExtendedPayloadSize", "SQSLargePayloadSize"])
def test_a_java_format_pointer_is_fetched_and_its_job_runs_with_the_stored_body(tier, s3, recorded, attribute):
    send_pointer(tier, s3, big_job("report-1"), attribute=attribute)
    assert tier.run_batch(consumer(tier, s3)) == {"batchItemFailures": []}
    ((key, payload),) = recorded
    assert key == "report-1" and len(payload["blob"]) == 1_500_000
    assert tier.receive() == [] and tier.dlq_messages() == []


def test_a_missing_object_is_a_permanent_letter_whose_body_is_still_the_pointer(tier, s3, recorded):
    pointer = send_pointer(tier, s3, big_job("report-2"))
    s3.delete_object(Bucket=BUCKET, Key="9f2c-java-uuid")  # expired by the lifecycle, or deleted by hand
    assert tier.run_batch(consumer(tier, s3)) == {"batchItemFailures": []}
    (letter,) = tier.dlq_messages()
    reasons = attrs(letter)
    assert reasons[DeadLetter.REASON] == DeadLetter.REASON_PERMANENT
    assert reasons[DeadLetter.ERROR_TYPE] == "OffloadedBodyMissing"
    assert f"s3://{BUCKET}/9f2c-java-uuid" in reasons[DeadLetter.ERROR_MESSAGE]
    assert letter["Body"] == pointer and reasons["ExtendedPayloadSize"] == str(len(big_job("report-2")))
    # SQS's 10 attributes: the pointer's one and every reason, the traceback included.
    assert set(reasons) == {*DeadLetter.ALL, DeadLetter.TRACEBACK, "ExtendedPayloadSize"} and len(reasons) == 10
    assert recorded == [] and tier.receive() == []


def test_a_throttling_bucket_is_transient_the_message_keeps_its_pointer_and_runs_once_it_answers(tier, s3, recorded):
    pointer = send_pointer(tier, s3, big_job("report-3"))
    flaky = Flaky(s3, s3_error("SlowDown", 503))
    run = consumer(tier, s3=flaky)
    response = tier.run_batch(run)
    assert len(response["batchItemFailures"]) == 1 and recorded == [] and tier.dlq_messages() == []
    tier.make_visible()
    (again,) = tier.receive_for_batch()
    assert again["Body"] == pointer  # retried as the same message: nothing re-uploaded, nothing inlined
    tier.run_messages(run, [again])
    assert [key for key, _ in recorded] == ["report-3"] and flaky.gets == 2


def test_a_bucket_that_refuses_access_is_permanent(tier, s3, recorded):
    send_pointer(tier, s3, big_job("report-4"))
    tier.run_batch(consumer(tier, s3=Flaky(s3, s3_error("AccessDenied", 403))))
    (letter,) = tier.dlq_messages()
    assert attrs(letter)[DeadLetter.REASON] == DeadLetter.REASON_PERMANENT
    assert attrs(letter)[DeadLetter.ERROR_TYPE] == "OffloadedBodyUnavailable" and recorded == []


def test_a_refusal_letter_names_the_missing_object_it_may_hide(tier, s3, recorded):
    """S3 answers ``AccessDenied``, not ``NoSuchKey``, for a missing object to a reader without
    ``s3:ListBucket``: the letter says so, so an expired body is not read as an IAM problem only."""
    send_pointer(tier, s3, big_job("report-7"))
    tier.run_batch(consumer(tier, s3=Flaky(s3, s3_error("AccessDenied", 403))))
    (letter,) = tier.dlq_messages()
    says = attrs(letter)[DeadLetter.ERROR_MESSAGE]
    assert f"s3://{BUCKET}/9f2c-java-uuid" in says and "s3:ListBucket" in says and "may not exist" in says


@pytest.mark.parametrize(
    ("offload", "says"),
    [(None, "does not read offloaded bodies"), (Offload("another-bucket", 0), "not this stage's bucket")],
)
def test_a_pointer_a_tier_may_not_follow_is_refused_permanent_without_reading_s3(tier, s3, recorded, offload, says):
    send_pointer(tier, s3, big_job("report-5"))
    flaky = Flaky(s3)
    tier.run_batch(consumer(tier, s3=flaky, offload=offload))
    (letter,) = tier.dlq_messages()
    assert attrs(letter)[DeadLetter.ERROR_TYPE] == "PointerRefused" and says in attrs(letter)[DeadLetter.ERROR_MESSAGE]
    assert flaky.gets == 0 and recorded == []


class SpentContext:
    """An invocation whose time is spent after it starts: every record is deferred."""

    def __init__(self) -> None:
        self.calls = 0

    def get_remaining_time_in_millis(self) -> int:
        self.calls += 1
        return 30_000 if self.calls == 1 else 1_000


def test_a_deferred_copy_resends_the_pointer_and_its_size_attribute_not_the_body(tier, s3, recorded):
    pointer = send_pointer(tier, s3, big_job("report-6"))
    tier.run_batch(consumer(tier, s3), context=SpentContext())
    assert recorded == []
    (copy,) = tier.receive()
    assert copy["Body"] == pointer and attrs(copy)["ExtendedPayloadSize"] == str(len(big_job("report-6")))
    assert len(s3.list_objects_v2(Bucket=BUCKET)["Contents"]) == 1  # nothing uploaded again
