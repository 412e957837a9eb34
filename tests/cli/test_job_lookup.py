"""``tiered-jobs job TYPE KEY``: the idempotency record's state, the job's dead letters, its pending one-time run."""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta, timezone

import boto3
import pytest

from tests.cli.conftest import create_fired_one_time_schedule
from tests.cli.test_cli import _dead_letter
from tiered_jobs.contract.idempotency import RecordAttributes, RecordStatus, record_id
from tiered_jobs.contract.names import DeadLetter, Ssm, stack_name
from tiered_jobs.contract.schedules import one_time_schedule_name
from tiered_jobs.operations import lookup
from tiered_jobs.runtime.idempotency import IdempotentRunner
from tiered_jobs.stage import scheduling as scheduling_module
from tiered_jobs.stage.target import Target


def _completed(deployment, job_type: str, key: str, result) -> None:
    runner = IdempotentRunner(deployment.idempotency_table, ttl_seconds=3600, dynamodb_client=boto3.client("dynamodb"))
    runner.run({"type": job_type, "idempotency_key": key, "payload": {}}, lambda: result)


def _target(deployment) -> Target:
    return Target(deployment.stage, stack_name(deployment.stage), "us-east-1", None)


def test_completed_job_shows_its_result_and_time(cli, deployment):
    boto3.client("ssm").put_parameter(
        Name=Ssm.tier("test", "critical", Ssm.TIER_IDEMPOTENCY_TTL), Value="3600", Type="String", Overwrite=True
    )
    before = time.time()
    _completed(deployment, "payments.update_balance", "pay_1", {"balance": 500})

    result = cli("job", "payments.update_balance", "pay_1", "--json")

    assert result.exit_code == 0, result.output
    found = json.loads(result.stdout)
    assert found["record"]["state"] == "completed"
    assert found["record"]["result"] == {"balance": 500}
    assert found["record"]["record_id"] == record_id("payments.update_balance", "pay_1")
    completed = lookup._iso(before)
    assert found["record"]["completed_at"][:15] == completed[:15]  # expiry - window = completion time
    assert found["dead_letters"] == []
    assert found["scheduled_runs"] == []  # the stage's schedules were read: none for this job
    text = cli("job", "payments.update_balance", "pay_1")
    assert "state: completed" in text.stdout and '"balance": 500' in text.stdout
    assert "scheduled runs: none\n" in text.stdout


def test_unknown_job_is_never_pending(cli, deployment):
    result = cli("job", "payments.update_balance", "never-seen")

    assert result.exit_code == 0, result.output
    assert "state: unknown" in result.stdout
    assert "pending" not in result.stdout.lower()


def test_in_progress_and_expired_records(deployment):
    dynamodb = boto3.client("dynamodb")
    now = time.time()
    for key, status, expiry, until_ms in (
        ("running", RecordStatus.IN_PROGRESS, now + 3600, (now + 20) * 1000),
        ("stale", RecordStatus.IN_PROGRESS, now + 3600, (now - 20) * 1000),
        ("old", RecordStatus.COMPLETED, now - 5, None),
    ):
        item = {
            RecordAttributes.KEY: {"S": record_id("demo.hello", key)},
            RecordAttributes.STATUS: {"S": status},
            RecordAttributes.EXPIRATION: {"N": str(int(expiry))},
        }
        if until_ms is not None:
            item[RecordAttributes.IN_PROGRESS_EXPIRATION] = {"N": str(int(until_ms))}
        dynamodb.put_item(TableName=deployment.idempotency_table, Item=item)
    target = _target(deployment)

    running = lookup.read_record(target, "demo.hello", "running")
    stale = lookup.read_record(target, "demo.hello", "stale")
    old = lookup.read_record(target, "demo.hello", "old")

    assert running.state == "in_progress" and running.in_progress_until == pytest.approx(now + 20, abs=1)
    assert stale.state == "in_progress" and "ran out of time" in stale.detail
    assert old.state == "unknown" and "expired" in old.detail


def test_dead_letter_with_the_key_is_found_with_its_reasons(cli, deployment):
    _dead_letter(deployment, "critical", "pay_9")
    _dead_letter(deployment, "critical", "pay_other")

    found = lookup.lookup_job(_target(deployment), "payments.update_balance", "pay_9")

    [letter] = found.letters
    assert letter.tier == "critical"
    assert letter.reasons[DeadLetter.REASON] == DeadLetter.REASON_RETRIES_EXHAUSTED
    assert letter.reasons[DeadLetter.ERROR_TYPE] == "TimeoutError"
    assert json.loads(letter.body)["idempotency_key"] == "pay_9"
    assert found.letters_read == {"critical": 2, "transactional": 0, "bulk": 0}
    depth = boto3.client("sqs").get_queue_attributes(
        QueueUrl=deployment.dlq_urls["critical"], AttributeNames=["ApproximateNumberOfMessages"]
    )
    assert depth["Attributes"]["ApproximateNumberOfMessages"] == "2"  # read, never removed
    text = cli("job", "payments.update_balance", "pay_9")
    assert "dead letter in the critical DLQ" in text.stdout and "ErrorType=TimeoutError" in text.stdout


def test_a_pending_at_job_of_that_key_is_shown(cli, scheduling):
    """Published for later, the job waits in the stage's schedule group: the lookup shows its run, for
    that type and key only, until it is cancelled (or fires)."""
    at = (datetime.now(timezone.utc) + timedelta(hours=2)).replace(second=0, microsecond=0)
    for key in ("cap-7", "cap-8"):
        assert cli("publish", "payments.capture", "--key", key, "--at", at.isoformat()).exit_code == 0
    name = one_time_schedule_name("payments.capture", "cap-7")

    found = json.loads(cli("job", "payments.capture", "cap-7", "--json").stdout)
    text = cli("job", "payments.capture", "cap-7").stdout

    assert found["scheduled_runs"] == [
        {"at": lookup._iso(at.timestamp()), "schedule": name, "detail": "one-time, to the critical queue"}
    ]
    assert f"scheduled runs: {at.isoformat()} (one-time, to the critical queue; schedule {name})" in text
    assert cli("cancel", "payments.capture", "cap-7").exit_code == 0
    assert "scheduled runs: none\n" in cli("job", "payments.capture", "cap-7").stdout
    assert json.loads(cli("job", "payments.capture", "cap-8", "--json").stdout)["scheduled_runs"][0][
        "schedule"
    ] == one_time_schedule_name("payments.capture", "cap-8")


def test_a_one_time_schedule_that_fired_is_no_pending_run(cli, scheduling):
    """Scheduler deletes a fired one-time schedule only some time after: until then it is there, but done."""
    due = (datetime.now(timezone.utc) - timedelta(minutes=2)).replace(microsecond=0)
    create_fired_one_time_schedule(scheduling, one_time_schedule_name("payments.capture", "cap-due"), due)

    assert json.loads(cli("job", "payments.capture", "cap-due", "--json").stdout)["scheduled_runs"] == []


def test_schedules_that_cannot_be_read_are_unknown_never_none(cli, deployment, monkeypatch):
    from botocore.exceptions import ClientError

    def denied(*_, **__):
        raise ClientError({"Error": {"Code": "AccessDeniedException", "Message": "no"}}, "GetSchedule")

    monkeypatch.setattr(scheduling_module, "one_time_job", denied)

    result = cli("job", "payments.capture", "cap-1")

    assert result.exit_code == 0, result.output
    assert "scheduled runs: unknown" in result.stdout and "scheduled runs: none" not in result.stdout
    assert "note: the scheduled runs could not be read (AccessDeniedException: no)" in result.stderr
