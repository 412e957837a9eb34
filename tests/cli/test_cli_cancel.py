"""``tiered-jobs publish --expires-in``, ``cancel TYPE KEY``, ``cancel TYPE_GLOB`` (by filter, with a dry run)
and ``job TYPE KEY`` showing ``cancelled`` / ``expired``, against the miniature stack in moto."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import boto3
import pytest

from tiered_jobs.contract import job_ends
from tiered_jobs.contract.envelope import build
from tiered_jobs.contract.idempotency import RecordAttributes, RecordStatus, record_id
from tiered_jobs.contract.large_payloads import Pointer, size_attribute
from tiered_jobs.contract.times import iso_text


def queued(deployment, tier: str = "critical") -> list[dict]:
    """Every message of the tier's queue, read and made visible again (the queue keeps them)."""
    sqs = boto3.client("sqs")
    url = deployment.queue_urls[tier]
    messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, MessageSystemAttributeNames=["All"]).get(
        "Messages", []
    )
    for message in messages:
        sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0)
    return messages


def marker(deployment, job_type: str, key: str):
    item = (
        boto3.client("dynamodb")
        .get_item(TableName=deployment.idempotency_table, Key={RecordAttributes.KEY: {"S": record_id(job_type, key)}})
        .get("Item")
    )
    return job_ends.marker_kind(json.loads(item[RecordAttributes.DATA]["S"])) if item else None


def send(deployment, job_type: str, key: str, *, tenant: str | None = None, published_at: str | None = None) -> None:
    body = build(job_type, {}, key, tenant=tenant, published_at=published_at).to_json()
    boto3.client("sqs").send_message(QueueUrl=deployment.queue_urls["critical"], MessageBody=body)


def test_publish_with_a_deadline_and_a_refused_one(cli, deployment):
    ok = cli("publish", "payments.capture", "--key", "k1", "--expires-in", "300")
    assert ok.exit_code == 0, ok.output
    (message,) = queued(deployment)
    deadline = datetime.fromisoformat(json.loads(message["Body"])["expires_at"].replace("Z", "+00:00"))
    assert timedelta(seconds=290) < deadline - datetime.now(timezone.utc) <= timedelta(seconds=300)
    past = iso_text(datetime.now(timezone.utc) - timedelta(minutes=1))
    for args, says in (
        (("--expires-at", past), "has passed"),
        (("--expires-in", "-5"), "expires_in must be more than 0 seconds, got -5"),
    ):
        refused = cli("publish", "payments.capture", "--key", "k2", *args)
        assert refused.exit_code == 2 and says in refused.output, refused.output
    assert len(queued(deployment)) == 1  # nothing more was sent


def test_cancel_a_queued_job_then_its_lookup_says_cancelled(cli, deployment):
    assert cli("publish", "payments.capture", "--key", "q1").exit_code == 0
    result = cli("cancel", "payments.capture", "q1")
    assert result.exit_code == 0 and "Cancelled payments.capture (key 'q1'): no run of it has started" in result.output
    assert marker(deployment, "payments.capture", "q1") == job_ends.CANCELLED
    shown = cli("job", "payments.capture", "q1")
    assert shown.exit_code == 0 and "state: cancelled" in shown.output
    assert json.loads(cli("job", "payments.capture", "q1", "--json").stdout)["record"]["state"] == "cancelled"


def test_cancel_of_a_job_that_ran_is_a_clear_no_and_an_expired_job_shows_expired(cli, deployment):
    dynamodb = boto3.client("dynamodb")
    until = str(int(datetime.now(timezone.utc).timestamp()) + 600)
    dynamodb.put_item(
        TableName=deployment.idempotency_table,
        Item={
            RecordAttributes.KEY: {"S": record_id("payments.capture", "done")},
            RecordAttributes.STATUS: {"S": RecordStatus.COMPLETED},
            RecordAttributes.EXPIRATION: {"N": until},
            RecordAttributes.DATA: {"S": "{}"},
        },
    )
    result = cli("cancel", "payments.capture", "done")
    assert result.exit_code == 1 and "Not cancelled: payments.capture (key 'done') already ran" in result.output
    item = job_ends.marker_item(
        "payments.capture", "late", job_ends.EXPIRED, at="2030-05-01T12:00:00.000Z", now=float(until) - 600,
        ttl_seconds=600, detail="not started by its deadline 2030-05-01T11:59:00.000Z",
    )  # fmt: skip
    dynamodb.put_item(TableName=deployment.idempotency_table, Item=item)
    shown = cli("job", "payments.capture", "late")
    assert "state: expired" in shown.output and "2030-05-01T11:59:00.000Z" in shown.output
    assert cli("cancel", "payments.capture", "late").exit_code == 1


@pytest.mark.parametrize("dry_run", [True, False])
def test_cancel_by_filter_matches_type_tenant_and_publish_time_and_a_dry_run_writes_nothing(cli, deployment, dry_run):
    old, new = "2030-05-01T10:00:00.000Z", "2030-05-01T12:00:00.000Z"
    send(deployment, "payments.capture", "a", tenant="acme", published_at=old)
    send(deployment, "payments.capture", "b", tenant="acme", published_at=new)  # too recent
    send(deployment, "payments.capture", "c", tenant="other", published_at=old)  # another tenant
    send(deployment, "payments.refund", "d", tenant="acme", published_at=old)  # another type
    args = ["cancel", "payments.cap*", "--tenant", "acme", "--published-before", "2030-05-01T11:00:00Z", "--json"]
    result = cli(*args, *(["--dry-run"] if dry_run else []))
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert [job["key"] for job in answer["jobs"]] == ["a"] and answer["messages_read"]["critical"] == 4
    assert answer["cancelled"] == (0 if dry_run else 1)
    assert marker(deployment, "payments.capture", "a") == (None if dry_run else job_ends.CANCELLED)
    assert all(
        marker(deployment, job, key) is None for job, key in (("payments.capture", "b"), ("payments.refund", "d"))
    )
    assert len(queued(deployment)) == 4  # every message is back, visible: the consumer archives the cancelled one


def test_a_sweep_never_hands_the_redrive_a_job_on_its_last_receive(cli, deployment):
    """A queue whose redrive moves a message after 2 receives: a job received once by a consumer (its
    attempt 1 failed) is brought to its last receive by the sweep, so the sweep sends it again as a copy
    carrying its one attempt (delayed by the sweep's hold: tests/operations/test_bulk_cancel.py), and
    deletes the original."""
    sqs = boto3.client("sqs")
    url = deployment.queue_urls["critical"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=deployment.dlq_urls["critical"], AttributeNames=["QueueArn"])
    policy = {"deadLetterTargetArn": dlq_arn["Attributes"]["QueueArn"], "maxReceiveCount": 2}
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"RedrivePolicy": json.dumps(policy)})
    send(deployment, "payments.refund", "tried-once")
    (first,) = sqs.receive_message(QueueUrl=url).get("Messages", [])  # a consumer's attempt 1
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=first["ReceiptHandle"], VisibilityTimeout=0)
    result = cli("cancel", "payments.capture", "--json")
    assert json.loads(result.stdout)["recopied"] == 1
    depth = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    # The original is gone; its copy waits out the hold, unread by the sweep (none of its receives spent).
    assert (depth["ApproximateNumberOfMessages"], depth["ApproximateNumberOfMessagesDelayed"]) == ("0", "1")
    assert sqs.receive_message(QueueUrl=deployment.dlq_urls["critical"]).get("Messages", []) == []


def test_cancel_options_that_filter_need_a_glob_without_key_and_an_unroutable_type_is_refused(cli, deployment):
    result = cli("cancel", "payments.capture", "k", "--dry-run")
    assert result.exit_code == 2 and "give TYPE without KEY" in result.output
    unroutable = cli("cancel", "billing.invoice", "k")
    assert unroutable.exit_code == 2 and "no route for job type 'billing.invoice'" in unroutable.output
    assert marker(deployment, "billing.invoice", "k") is None


def test_the_sweeps_text_output_names_an_offloaded_job_it_could_not_read(cli, deployment):
    """A job stored in S3 (``large_payloads``) whose object is gone cannot be matched: the text output says so
    (as ``--json``'s ``skipped``), with its pointer and the reason, rather than leaving it unsaid."""
    boto3.client("s3", region_name="us-east-1").create_bucket(Bucket="stage-bodies")
    boto3.client("sqs").send_message(
        QueueUrl=deployment.queue_urls["critical"],
        MessageBody=Pointer("stage-bodies", "critical/gone").body(),
        MessageAttributes=size_attribute(2_000_000),
    )
    result = cli("cancel", "payments.capture", "--tier", "critical")
    assert result.exit_code == 0, result.output
    assert "1 offloaded job(s) could not be read to match" in result.output
    assert "s3://stage-bodies/critical/gone" in result.output and "NoSuchKey" in result.output
