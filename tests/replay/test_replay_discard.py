"""Discard and show on moto: a letter is deleted only once its archive is durable, and is shown in full."""

from __future__ import annotations

import base64
import json
import os
from datetime import datetime, timedelta, timezone

import boto3
import pytest

from tests.replay.test_replay import NOW, Wrapper, iso, job
from tiered_jobs.contract.names import DeadLetter, Env
from tiered_jobs.handlers.replay import handler
from tiered_jobs.replay import (
    JsonLinesArchive,
    ReplayEventError,
    S3Archive,
    read_archive,
)
from tiered_jobs.runtime import aws as runtime_aws


def test_discard_archives_each_letter_whole_then_deletes_it(dlq, tmp_path):
    blob = {"blob": {"DataType": "Binary", "BinaryValue": b"\x00\xffraw"}}
    kept = dlq.dead_letter(job(key="keep"), error_type="TimeoutError")
    gone = dlq.dead_letter(
        job(key="drop"),
        error_type="AccountNotFound",
        error_message="account 'acc-9' not found",
        reason=DeadLetter.REASON_PERMANENT,
        attributes=blob,
    )
    archive = JsonLinesArchive(tmp_path / "discarded.jsonl")

    response = dlq.run({"action": "discard", "error_type": "AccountNotFound"}, archive=archive)

    assert (response["matched"], response["discarded"], response["failed"], response["left_in_dlq"]) == (1, 1, 0, 1)
    assert (response["archive"], response["archive_error"], response["stopped_because"]) == (
        str(tmp_path / "discarded.jsonl"),
        None,
        "dlq_empty",
    )
    [record] = read_archive(tmp_path / "discarded.jsonl")
    assert (record["message_id"], record["tier"], record["body"]) == (gone, "critical", job(key="drop"))
    assert record["error_message"] == "account 'acc-9' not found"  # the real message, not the masked pattern
    assert (record["reason"], record["error_type"], record["job_type"]) == (
        "permanent",
        "AccountNotFound",
        "testjobs.effect",
    )
    attributes = record["message_attributes"]
    assert attributes[DeadLetter.ERROR_MESSAGE] == {"DataType": "String", "StringValue": "account 'acc-9' not found"}
    assert set(DeadLetter.ALL) <= set(attributes)
    assert base64.b64decode(attributes["blob"]["BinaryValue"]) == b"\x00\xffraw"
    assert {"SentTimestamp", "ApproximateReceiveCount"} <= set(record["attributes"])
    assert record["recorded_at"] == iso(NOW)
    assert [m["MessageId"] for m in dlq.take_all(dlq.dlq_url)] == [kept]


def test_discard_by_message_id_takes_exactly_those_letters(dlq, tmp_path):
    ids = [dlq.dead_letter(job(key=f"k{i}")) for i in range(15)]
    archive = JsonLinesArchive(tmp_path / "a.jsonl")

    response = dlq.run({"action": "discard", "message_ids": [ids[3], ids[11]]}, archive=archive)

    assert (response["discarded"], response["stopped_because"]) == (2, "all_found")
    assert sorted(r["message_id"] for r in read_archive(tmp_path / "a.jsonl")) == sorted([ids[3], ids[11]])
    assert dlq.counts(dlq.dlq_url) == (13, 0)


def test_a_discard_dry_run_writes_and_deletes_nothing(dlq, tmp_path):
    dlq.dead_letter(job())

    response = dlq.run({"action": "discard", "dry_run": True}, archive=JsonLinesArchive(tmp_path / "a.jsonl"))

    assert (response["matched"], response["discarded"], response["archive"]) == (1, 0, None)
    assert not (tmp_path / "a.jsonl").exists()
    assert dlq.counts(dlq.dlq_url) == (1, 0)


class FailingArchive:
    location = "/mnt/full/discarded.jsonl"

    def __init__(self) -> None:
        self.calls = 0

    def write(self, records):
        self.calls += 1
        raise OSError(28, "No space left on device")


def test_an_archive_that_cannot_be_written_deletes_nothing(dlq):
    for i in range(25):
        dlq.dead_letter(job(key=f"k{i}"))
    deletes: list[int] = []
    sqs = Wrapper(dlq.sqs, delete_message_batch=lambda **kw: deletes.append(1))
    archive = FailingArchive()

    response = dlq.run({"action": "discard"}, sqs=sqs, archive=archive)

    assert (response["discarded"], response["failed"], response["stopped_because"]) == (0, 10, "archive_failed")
    assert response["archive_error"] == "OSError: [Errno 28] No space left on device"
    assert (archive.calls, deletes) == (1, [])  # stopped at the first failure; no delete was even asked
    assert dlq.counts(dlq.dlq_url) == (25, 0)  # every letter visible again


def test_the_file_archive_is_fsynced_before_the_letter_is_deleted(dlq, tmp_path, monkeypatch):
    """The order that makes "never delete what was not archived" hold through a crash."""
    events: list[str] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (events.append("fsync"), real_fsync(fd))[1])
    sqs = Wrapper(
        dlq.sqs, delete_message_batch=lambda **kw: (events.append("delete"), dlq.sqs.delete_message_batch(**kw))[1]
    )
    dlq.dead_letter(job())

    dlq.run({"action": "discard"}, sqs=sqs, archive=JsonLinesArchive(tmp_path / "a.jsonl"))

    assert events == ["fsync", "fsync", "delete"]  # the file, its new directory entry, then SQS


def test_a_file_archive_appends_and_never_glues_a_letter_to_a_cut_line(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text('{"message_id": "m0"}\n{"message_id": "m1", "bo', encoding="utf-8")  # a crash mid-line

    JsonLinesArchive(path).write([{"message_id": "m2", "body": "é ☕"}])

    assert read_archive(path) == [{"message_id": "m0"}, {"message_id": "m2", "body": "é ☕"}]


def test_discard_without_an_archive_is_refused_before_touching_the_dlq(dlq):
    dlq.dead_letter(job())

    with pytest.raises(ReplayEventError, match="'action': 'discard' needs an archive"):
        dlq.run({"action": "discard"})

    assert dlq.counts(dlq.dlq_url) == (1, 0)


# -- the replay function's discard: an S3 archive when the stack gives it a bucket ------------------


def a_minute_ago() -> datetime:
    """The function runs on the real clock (the tests' NOW is an hour ahead)."""
    return datetime.now(timezone.utc) - timedelta(minutes=1)


@pytest.fixture
def deployed(dlq, monkeypatch):
    runtime_aws.reset()
    monkeypatch.setenv(Env.STAGE, "test")
    monkeypatch.setenv(
        Env.REPLAY_TIERS,
        json.dumps(
            {"critical": {"queue_url": dlq.queue_url, "dlq_url": dlq.dlq_url, "idempotency_ttl_seconds": 18 * 86400}}
        ),
    )
    yield dlq
    runtime_aws.reset()


def test_the_function_discards_into_its_archive_bucket(deployed, monkeypatch, lambda_context):
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket="archive")
    monkeypatch.setenv(Env.DISCARD_ARCHIVE_BUCKET, "archive")
    letter = deployed.dead_letter(job(key="drop"), failed_at=a_minute_ago())

    response = handler({"tier": "critical", "action": "discard"}, lambda_context())

    assert (response["discarded"], response["archive"]) == (1, "s3://archive/discarded/test/critical/")
    [stored] = s3.list_objects_v2(Bucket="archive")["Contents"]
    lines = s3.get_object(Bucket="archive", Key=stored["Key"])["Body"].read().decode().splitlines()
    assert [json.loads(line)["message_id"] for line in lines] == [letter]
    assert deployed.counts(deployed.dlq_url) == (0, 0)


def test_the_function_without_an_archive_bucket_refuses_discard(deployed, lambda_context):
    deployed.dead_letter(job(), failed_at=a_minute_ago())

    with pytest.raises(ReplayEventError, match="discard with the CLI"):
        handler({"tier": "critical", "action": "discard"}, lambda_context())
    assert handler({"tier": "critical", "action": "discard", "dry_run": True}, lambda_context())["matched"] == 1
    assert deployed.counts(deployed.dlq_url) == (1, 0)


def test_an_s3_archive_that_fails_deletes_nothing(deployed):
    deployed.dead_letter(job())
    archive = S3Archive("no-such-bucket", "discarded/", boto3.client("s3", region_name="us-east-1"))

    response = deployed.run({"action": "discard"}, archive=archive)

    assert (response["discarded"], response["stopped_because"]) == (0, "archive_failed")
    assert "NoSuchBucket" in response["archive_error"]
    assert deployed.counts(deployed.dlq_url) == (1, 0)


# -- show ---------------------------------------------------------------------------------------


def test_show_returns_the_letter_in_full_and_leaves_it(dlq):
    dlq.dead_letter(job(key="other"))
    wanted = dlq.dead_letter(
        job(key="k1"), error_type="PayloadValidationError", error_message="payload field 'amount' must be positive"
    )

    response = dlq.run({"action": "show", "message_ids": [wanted, "not-there"]})

    [letter] = response["letters"]
    assert (letter["message_id"], letter["body"]) == (wanted, job(key="k1"))
    assert letter["error_message"] == "payload field 'amount' must be positive"
    assert response["groups"][0]["error_message"] == "payload field 'amount' must be positive"  # a name, not a value
    assert (response["stopped_because"], dlq.counts(dlq.dlq_url)) == ("dlq_empty", (2, 0))
