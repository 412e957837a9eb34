"""Letters whose body is an S3 pointer (``large_payloads``): a replay sends the pointer back unchanged, ``show``
reads the stored body back and says so, and ``discard`` archives the stored body (readable after the object
expires) and never deletes the object."""

from __future__ import annotations

import boto3
import pytest

from tests.replay.test_replay import Dlq, job, make_dlq
from tiered_jobs.contract.large_payloads import Pointer, size_attribute
from tiered_jobs.replay import JsonLinesArchive, read_archive

BUCKET = "stage-large-payloads"
KEY = "critical/5b1f"


@pytest.fixture
def dlq(aws) -> Dlq:
    return make_dlq()


@pytest.fixture
def s3(aws):
    client = boto3.client("s3", region_name="us-east-1")
    client.create_bucket(Bucket=BUCKET)
    return client


def offloaded_letter(dlq: Dlq, s3, key: str = "k1", stored: bool = True) -> tuple[str, str, str]:
    """``(message id, pointer body, stored body)`` of a letter whose job the publisher offloaded."""
    body = job(key=key, blob="x" * 2_000)
    if stored:
        s3.put_object(Bucket=BUCKET, Key=KEY, Body=body.encode("utf-8"))
    pointer = Pointer(BUCKET, KEY).body()
    return dlq.dead_letter(pointer, attributes=size_attribute(len(body))), pointer, body


def test_a_replay_sends_the_pointer_and_its_size_attribute_back_unchanged(dlq, s3):
    _, pointer, body = offloaded_letter(dlq, s3)
    assert dlq.run({"action": "replay"})["moved"] == 1
    (copy,) = dlq.take_all(dlq.queue_url)
    assert copy["Body"] == pointer
    assert copy["MessageAttributes"]["ExtendedPayloadSize"]["StringValue"] == str(len(body))


def test_a_replayed_offloaded_letter_keeps_the_tenant_it_was_dead_lettered_with(dlq, s3):
    body = job(key="k9", blob="x" * 2_000)
    s3.put_object(Bucket=BUCKET, Key=KEY, Body=body.encode("utf-8"))
    dlq.sqs.send_message(  # as the consumer dead-letters a job of tenant acme: the group from its envelope
        QueueUrl=dlq.dlq_url,
        MessageBody=Pointer(BUCKET, KEY).body(),
        MessageAttributes=size_attribute(len(body)),
        MessageGroupId="acme",
    )
    assert dlq.run({"action": "replay"})["moved"] == 1
    (copy,) = dlq.sqs.receive_message(QueueUrl=dlq.queue_url, MessageSystemAttributeNames=["All"])["Messages"]
    assert copy["Attributes"]["MessageGroupId"] == "acme"


def test_show_reads_the_stored_body_back_and_says_it_was_offloaded(dlq, s3):
    message_id, pointer, body = offloaded_letter(dlq, s3)
    (letter,) = dlq.run({"action": "show", "message_ids": [message_id]})["letters"]
    assert letter["body"] == body
    assert letter["offloaded"] == {
        "pointer": pointer,
        "size": len(body),
        "bucket": BUCKET,
        "key": KEY,
        "url": f"s3://{BUCKET}/{KEY}",
        "error": None,
    }


def test_discard_archives_the_stored_body_and_leaves_the_object_to_the_lifecycle(dlq, s3, tmp_path):
    _, pointer, body = offloaded_letter(dlq, s3)
    response = dlq.run({"action": "discard"}, archive=JsonLinesArchive(tmp_path / "a.jsonl"))
    assert response["discarded"] == 1 and dlq.take_all(dlq.dlq_url) == []
    (record,) = read_archive(tmp_path / "a.jsonl")
    assert record["body"] == body and record["offloaded"]["pointer"] == pointer
    assert s3.get_object(Bucket=BUCKET, Key=KEY)["Body"].read().decode() == body  # never deleted here


def test_a_letter_whose_object_is_gone_is_still_shown_and_archived_with_its_pointer_and_why(dlq, s3, tmp_path):
    message_id, pointer, _ = offloaded_letter(dlq, s3, stored=False)
    (letter,) = dlq.run({"action": "show", "message_ids": [message_id]})["letters"]
    assert letter["body"] == pointer and "NoSuchKey" in letter["offloaded"]["error"]
    dlq.run({"action": "discard"}, archive=JsonLinesArchive(tmp_path / "a.jsonl"))
    (record,) = read_archive(tmp_path / "a.jsonl")
    assert record["body"] == pointer and "NoSuchKey" in record["offloaded"]["error"]
