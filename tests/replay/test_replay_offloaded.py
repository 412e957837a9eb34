"""Letters whose body is an S3 pointer (``large_payloads``): a replay sends the pointer back unchanged, ``show``
reads the stored body back and says so, and ``discard`` archives the stored body (readable after the object
expires) and never deletes the object."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import boto3
import pytest

from tests.replay.test_replay import Dlq, job
from tests.support.aws_faults import error_response, refuse
from tiered_jobs.contract.large_payloads import NATIVE_REPLAY_BOUNDS_ENV, Pointer, size_attribute
from tiered_jobs.replay import JsonLinesArchive, ReplayEventError, offloaded, parse_event, read_archive, run
from tiered_jobs.replay import native as native_mode
from tiered_jobs.replay.native import start_move_task

BUCKET = "stage-large-payloads"
KEY = "critical/5b1f"


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


# -- native mode: the move restarts a letter's retention, never past its body's lifecycle -----------------

#: The critical tier's bound in the default stage: a 40-day lifecycle less 4 days' retention and 14 the DLQ's.
BOUND_DAYS = 22


class Mover:
    """moto's SQS client, answering ``StartMessageMoveTask`` (moto lacks it) and keeping each call."""

    def __init__(self, real):
        self.real, self.tasks = real, []

    def __getattr__(self, name: str):
        return getattr(self.real, name)

    def start_message_move_task(self, **arguments):
        self.tasks.append(arguments)
        return {"TaskHandle": f"task-{len(self.tasks)}"}


def native(dlq: Dlq, s3, *, days_later: float, dry_run: bool = False) -> tuple[dict, Mover]:
    mover = Mover(dlq.sqs)
    request = parse_event(
        {"tier": "critical", "mode": "native", "allow_outside_idempotency_window": True, "dry_run": dry_run},
        tiers=dlq.tiers,
    )
    answer = start_move_task(
        request,
        sqs=mover,
        queues=dlq.tiers["critical"],
        s3=lambda: s3,
        bounds={"critical": BOUND_DAYS * 86_400},
        now=lambda: datetime.now(timezone.utc) + timedelta(days=days_later),
    )
    return answer, mover


@pytest.fixture
def short_polls(monkeypatch):
    monkeypatch.setattr(native_mode, "RECEIVE_WAIT_SECONDS", 0)  # moto answers a short poll completely


@pytest.mark.parametrize("dry_run", [False, True])
def test_a_native_replay_refuses_an_offloaded_letter_whose_body_could_expire_before_its_moved_copy(
    dlq, s3, short_polls, dry_run
):
    offloaded_letter(dlq, s3)
    dlq.dead_letter(job(key="plain"))  # no body in S3: not the check's concern
    with pytest.raises(ReplayEventError, match=f"whose body was stored more than {BOUND_DAYS} days ago") as refused:
        native(dlq, s3, days_later=BOUND_DAYS + 1, dry_run=dry_run)
    assert f"s3://{BUCKET}/{KEY}" in str(refused.value) and "'mode': 'batch'" in str(refused.value)
    assert len(dlq.take_all(dlq.dlq_url)) == 2  # every letter visible again, none moved


def test_a_native_replay_of_offloaded_letters_inside_the_bound_starts_the_move(dlq, s3, short_polls):
    offloaded_letter(dlq, s3)
    dlq.dead_letter(job(key="plain"))
    answer, mover = native(dlq, s3, days_later=BOUND_DAYS - 1)
    assert (answer["stopped_because"], answer["task_handle"], len(mover.tasks)) == ("move_task_started", "task-1", 1)
    assert len(dlq.take_all(dlq.dlq_url)) == 2  # the check made them visible again for SQS's move


def test_the_replay_function_refuses_a_native_replay_of_a_letter_whose_body_is_gone(dlq, s3, short_polls, monkeypatch):
    """Through ``run``, as the function runs it: the stack's bounds come from its environment."""
    monkeypatch.setenv(NATIVE_REPLAY_BOUNDS_ENV, json.dumps({"critical": BOUND_DAYS * 86_400}))
    offloaded_letter(dlq, s3, stored=False)
    mover = Mover(dlq.sqs)
    event = {"tier": "critical", "mode": "native", "allow_outside_idempotency_window": True}
    with pytest.raises(ReplayEventError, match="now gone"):
        run(parse_event(event, tiers=dlq.tiers), sqs=mover, tiers=dlq.tiers)
    assert mover.tasks == [] and len(dlq.take_all(dlq.dlq_url)) == 1


def test_a_stage_without_offloading_tiers_moves_natively_without_reading_the_dlq(dlq, s3, monkeypatch):
    monkeypatch.delenv(NATIVE_REPLAY_BOUNDS_ENV, raising=False)
    offloaded_letter(dlq, s3)
    mover = Mover(dlq.sqs)
    event = {"tier": "critical", "mode": "native", "allow_outside_idempotency_window": True}
    assert run(parse_event(event, tiers=dlq.tiers), sqs=mover, tiers=dlq.tiers)["task_handle"] == "task-1"
    assert (
        dlq.sqs.get_queue_attributes(QueueUrl=dlq.dlq_url, AttributeNames=["All"])["Attributes"][
            "ApproximateNumberOfMessagesNotVisible"
        ]
        == "0"
    )


def test_a_refused_read_says_the_object_may_be_gone(dlq, s3, short_polls):
    """The replay function may not ``s3:ListBucket``: S3 answers it ``AccessDenied`` (``403`` to a
    ``HeadObject``) for a missing object. ``show`` and the native check say so, never only "refused"."""
    _, pointer, body = offloaded_letter(dlq, s3)
    record = {"body": pointer, "message_attributes": size_attribute(len(body))}  # as Letter.to_record has it
    with refuse(s3, "GetObject", lambda params: error_response("AccessDenied", status=403)):
        shown = offloaded.resolve(record, lambda: s3)
    assert shown["body"] == pointer and "may be gone" in shown["offloaded"]["error"]
    with refuse(s3, "HeadObject", lambda params: error_response("403", "Forbidden", status=403)):
        with pytest.raises(ReplayEventError, match="cannot tell the age .* may be gone"):
            native(dlq, s3, days_later=1)
