"""``bulk_cancel`` (``tiered-jobs cancel TYPE_GLOB``) on the miniature stack in moto: it follows an offloaded
job's S3 pointer to match it (or reports it skipped), and copies a message the sweep brought to its last
receive at once, within the message's hold, never after a sweep longer than the hold."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from tests.cli.test_cli_cancel import marker
from tiered_jobs.contract import job_ends
from tiered_jobs.contract.envelope import build
from tiered_jobs.contract.large_payloads import Pointer, size_attribute
from tiered_jobs.contract.names import stack_name
from tiered_jobs.operations import bulk_cancel as sweep
from tiered_jobs.stage.target import Target

BUCKET = "test-large-payloads"
#: Longer than the sweep's hold: one receive of the injected clock outlasts every hold before it.
RECEIVE_SECONDS = sweep.HOLD_SECONDS + 80


@pytest.fixture
def target(deployment, monkeypatch) -> Target:
    monkeypatch.setattr(sweep, "RECEIVE_WAIT_SECONDS", 0)  # moto answers a short poll completely
    return Target(deployment.stage, stack_name(deployment.stage), "us-east-1", None)


class Clock:
    """The sweep's clock, moved forward only by the calls a test chooses (never by real time)."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now

    def advance_on(self, client: Any, operation: str, seconds: float) -> None:
        service = client.meta.service_model.service_id.hyphenize()

        def advance(**kwargs: Any) -> None:
            self.now += seconds

        client.meta.events.register(f"before-call.{service}.{operation}", advance)


def send(deployment, job_type: str, key: str, **attributes: Any) -> None:
    body = build(job_type, {}, key).to_json()
    boto3.client("sqs").send_message(
        QueueUrl=deployment.queue_urls["critical"], MessageBody=body, MessageAttributes=attributes
    )


def send_offloaded(deployment, job_type: str, key: str, *, object_key: str, stored: bool = True) -> str:
    """What the publisher (or an extended client) sends for a body past the threshold: the pointer."""
    body = build(job_type, {"blob": "x" * 300_000}, key).to_json()
    s3 = boto3.client("s3", region_name="us-east-1")
    if stored:
        s3.put_object(Bucket=BUCKET, Key=object_key, Body=body.encode("utf-8"))
    pointer = Pointer(BUCKET, object_key)
    boto3.client("sqs").send_message(
        QueueUrl=deployment.queue_urls["critical"],
        MessageBody=pointer.body(),
        MessageAttributes=size_attribute(len(body)),
    )
    return pointer.url


def redrive_after(deployment, receives: int) -> str:
    sqs = boto3.client("sqs")
    url = deployment.queue_urls["critical"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=deployment.dlq_urls["critical"], AttributeNames=["QueueArn"])
    policy = {"deadLetterTargetArn": dlq_arn["Attributes"]["QueueArn"], "maxReceiveCount": receives}
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"RedrivePolicy": json.dumps(policy)})
    return url


def tried_once(deployment, job_type: str, key: str) -> str:
    """A job a consumer received once (its attempt 1 failed): the message id of the original."""
    sqs = boto3.client("sqs")
    url = deployment.queue_urls["critical"]
    send(deployment, job_type, key)
    (first,) = sqs.receive_message(QueueUrl=url).get("Messages", [])
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=first["ReceiptHandle"], VisibilityTimeout=0)
    return str(first["MessageId"])


def everything(url: str) -> list[dict]:
    sqs, found = boto3.client("sqs"), []
    while messages := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
        found += messages
    return found


@pytest.mark.parametrize("dry_run", [True, False])
def test_an_offloaded_job_is_matched_by_its_stored_body_and_one_whose_object_is_gone_is_reported(
    deployment, target, dry_run
):
    boto3.client("s3", region_name="us-east-1").create_bucket(Bucket=BUCKET)
    send_offloaded(deployment, "payments.capture", "big", object_key="critical/0a1b")
    send_offloaded(deployment, "payments.refund", "other", object_key="critical/0a1c")  # read, not a match
    gone = send_offloaded(deployment, "payments.capture", "lost", object_key="critical/0a1d", stored=False)
    send(deployment, "payments.capture", "small")
    answer = sweep.bulk_cancel(target, "payments.capture", dry_run=dry_run).to_dict()
    assert sorted(job["key"] for job in answer["jobs"]) == ["big", "small"] and answer["messages_read"]["critical"] == 4
    (skipped,) = answer["skipped"]
    assert skipped["tier"] == "critical" and skipped["offloaded"] == gone and "NoSuchKey" in skipped["reason"]
    assert marker(deployment, "payments.capture", "big") == (None if dry_run else job_ends.CANCELLED)
    assert marker(deployment, "payments.refund", "other") is None
    assert len(everything(deployment.queue_urls["critical"])) == 4  # every message back, none deleted


def test_a_last_receive_copy_waits_out_the_hold_so_a_short_sweep_never_reads_it(deployment, target):
    """The copy carries the job's one attempt and is delayed as long as its original would have been held:
    the sweep does not read it (so spends none of its receives), and nothing reaches the DLQ."""
    url = redrive_after(deployment, 2)
    tried_once(deployment, "payments.refund", "tried-once")
    sent: list[dict[str, Any]] = []
    target.client("sqs").meta.events.register(
        "provide-client-params.sqs.SendMessage", lambda params, **kwargs: sent.append(dict(params))
    )
    answer = sweep.bulk_cancel(target, "payments.capture")
    assert answer.recopied == 1 and answer.read == {"critical": 1}
    (copy,) = sent
    assert copy["DelaySeconds"] == sweep.HOLD_SECONDS
    assert copy["MessageAttributes"]["TieredJobs.PriorAttempts"]["StringValue"] == "1"
    depth = boto3.client("sqs").get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert (depth["ApproximateNumberOfMessages"], depth["ApproximateNumberOfMessagesDelayed"]) == ("0", "1")
    assert everything(deployment.dlq_urls["critical"]) == []


def test_a_last_receive_copy_carries_what_the_consumers_copies_carry_its_step_included(deployment, target):
    """The sweep writes the carry protocol the consumer writes (``contract/carry.py``): a stepped job's
    copy keeps its step (without it, step 2 would read as a duplicate of step 0 and run nothing), its
    attempts and enqueue time, and the publisher's own attributes; never a letter's or a replay's."""
    redrive_after(deployment, 2)
    sqs = boto3.client("sqs")
    url = deployment.queue_urls["critical"]
    text = {"DataType": "String", "StringValue": "x"}
    step = {"DataType": "Number", "StringValue": "2"}
    enqueued = {"DataType": "String", "StringValue": "2026-12-07T10:00:00.000Z"}
    send(
        deployment,
        "payments.refund",
        "stepped",
        **{"team": text, "TieredJobs.Step": step, "TieredJobs.EnqueuedAt": enqueued, "Replay.Count": step},
    )
    (first,) = sqs.receive_message(QueueUrl=url).get("Messages", [])
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=first["ReceiptHandle"], VisibilityTimeout=0)
    sent: list[dict[str, Any]] = []
    target.client("sqs").meta.events.register(
        "provide-client-params.sqs.SendMessage", lambda params, **kwargs: sent.append(dict(params))
    )
    assert sweep.bulk_cancel(target, "payments.capture").recopied == 1
    (copy,) = sent
    carried = {name: value["StringValue"] for name, value in copy["MessageAttributes"].items()}
    assert carried == {
        "team": "x",
        "TieredJobs.Step": "2",
        "TieredJobs.PriorAttempts": "1",
        "TieredJobs.EnqueuedAt": "2026-12-07T10:00:00.000Z",
        "TieredJobs.FirstFailedAt": carried["TieredJobs.FirstFailedAt"],  # its first receive's time
    }


def test_a_last_receive_copy_is_sent_within_the_hold_of_a_sweep_longer_than_the_hold(deployment, target, monkeypatch):
    """Each receive of the sweep lasts longer than the hold (an injected clock): a copy sent at the sweep's
    end would come after SQS had made the original visible again, for the redrive to move it without
    reasons while the copy runs too. The copy is sent, and the original deleted, within the hold of
    the receive that read it. Its delay is over long before such a sweep ends (none here): the sweep
    reads its own copy but never as another job."""
    monkeypatch.setattr(sweep, "COPY_DELAY_SECONDS", 0)
    url = redrive_after(deployment, 2)
    original = tried_once(deployment, "payments.refund", "tried-once")
    for index in range(10):  # two receives of messages, then the empty one that ends the sweep
        send(deployment, "payments.refund", f"k{index}")
    clock = Clock()
    sqs = target.client("sqs")
    clock.advance_on(sqs, "ReceiveMessage", RECEIVE_SECONDS)
    received_at: dict[str, float] = {}
    deleted_at: dict[str, float] = {}

    def receiving(parsed: dict[str, Any], **kwargs: Any) -> None:
        for message in parsed.get("Messages", []):
            received_at.setdefault(message["MessageId"], clock())
            handles[message["ReceiptHandle"]] = message["MessageId"]

    def deleting(params: dict[str, Any], **kwargs: Any) -> None:
        deleted_at[handles[params["ReceiptHandle"]]] = clock()

    handles: dict[str, str] = {}
    sqs.meta.events.register("after-call.sqs.ReceiveMessage", receiving)
    sqs.meta.events.register("provide-client-params.sqs.DeleteMessage", deleting)
    answer = sweep.bulk_cancel(target, "payments.capture", clock=clock)
    assert answer.recopied == 1 and answer.read["critical"] == 11  # the copy is not read as a 12th job
    assert deleted_at[original] - received_at[original] < sweep.HOLD_SECONDS
    left = everything(url)
    assert len(left) == 11 and original not in {m["MessageId"] for m in left}
    assert everything(deployment.dlq_urls["critical"]) == []


def test_a_last_receive_message_whose_hold_ran_out_before_its_copy_is_left_not_copied(deployment, target):
    """Marking the match took longer than the hold: the original may already be visible (and redriven), so a
    copy could run beside it. The sweep leaves it, says so, and sends no copy."""
    url = redrive_after(deployment, 2)
    original = tried_once(deployment, "payments.capture", "slow")
    clock = Clock()
    clock.advance_on(target.client("dynamodb"), "PutItem", RECEIVE_SECONDS)
    answer = sweep.bulk_cancel(target, "payments.capture", clock=clock)
    assert answer.recopied == 0 and [m.key for m in answer.matches] == ["slow"]
    assert any("hold" in note and "not copied" in note for note in answer.notes), answer.notes
    # Left as it was, no copy beside it: its next receive is the redrive's, as SQS does once a hold is over.
    assert everything(url) == []
    assert [m["MessageId"] for m in everything(deployment.dlq_urls["critical"])] == [original]
