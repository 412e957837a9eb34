"""``discard`` through the deployed replay function, on moto's server: the stack's archive bucket
deploys (versioned, private; its policy without the TLS-only Deny moto cannot evaluate), and a
letter is archived whole in S3 under ``discarded/<stage>/<tier>/`` and gone from the DLQ; the
letters not named stay."""

from __future__ import annotations

import json

import pytest
from botocore.exceptions import ClientError

from emulator import moto_patches as moto_gaps
from emulator.session import LocalSession
from tiered_jobs.contract.envelope import build
from tiered_jobs.contract.names import DeadLetter, Env, Outputs, discard_archive_prefix

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def session():
    local = LocalSession(alarm_interval_seconds=0.5).start()
    local.runtime.stop()  # only the DLQ matters here: no consumer needs to run
    yield local
    local.stop()


def _dead_letter(session, key: str) -> str:
    """A letter as the consumer dead-letters it (envelope + ``DeadLetter.*``); returns its message id."""
    tier = session.deployment.tiers["critical"]
    reasons = {
        DeadLetter.REASON: DeadLetter.REASON_PERMANENT,
        DeadLetter.ERROR_TYPE: "ValueError",
        DeadLetter.ERROR_MESSAGE: f"account acc_{key} was closed",
        DeadLetter.ATTEMPTS: "1",
        DeadLetter.JOB_TYPE: "payments.update_balance",
        DeadLetter.SOURCE_QUEUE: tier.queue_url,
    }
    body = build("payments.update_balance", {"account_id": f"acc_{key}", "amount": 1}, key).to_json()
    return session.clients("sqs").send_message(
        QueueUrl=tier.dlq_url,
        MessageBody=body,
        MessageAttributes={n: {"DataType": "String", "StringValue": v} for n, v in reasons.items()},
    )["MessageId"]


def _invoke(session, event: dict) -> dict:
    answer = session.clients("lambda").invoke(
        FunctionName=session.deployment.replay.name, Payload=json.dumps(event).encode()
    )
    body = json.loads(answer["Payload"].read())
    assert "FunctionError" not in answer, body
    return body


def _in_dlq(session, *message_ids: str) -> set[str]:
    result = _invoke(session, {"action": "show", "tier": "critical", "message_ids": list(message_ids)})
    return {letter["message_id"] for letter in result["letters"]}


def test_the_archive_bucket_deploys_versioned_and_private(session):
    s3 = session.clients("s3")
    bucket = session.deployment.outputs[Outputs.DISCARD_ARCHIVE_BUCKET]
    assert session.deployment.replay.environment[Env.DISCARD_ARCHIVE_BUCKET] == bucket
    assert s3.get_bucket_versioning(Bucket=bucket)["Status"] == "Enabled"
    assert all(s3.get_public_access_block(Bucket=bucket)["PublicAccessBlockConfiguration"].values())
    # Its policy is only the TLS-only Deny, which moto would apply to every request (it ignores conditions).
    resources = session.deployment.assembly.template["Resources"]
    (archive,) = [
        k for k, r in resources.items() if r["Type"] == "AWS::S3::Bucket" and "LoggingConfiguration" in r["Properties"]
    ]
    (policy,) = [
        r
        for r in resources.values()
        if r["Type"] == "AWS::S3::BucketPolicy" and r["Properties"]["Bucket"] == {"Ref": archive}
    ]
    assert [s["Condition"] for s in policy["Properties"]["PolicyDocument"]["Statement"]] == [
        moto_gaps.TLS_ONLY_DENY_CONDITION
    ]
    with pytest.raises(ClientError, match="NoSuchBucketPolicy"):
        s3.get_bucket_policy(Bucket=bucket)


def test_discard_through_the_function_archives_the_letter_in_s3_then_deletes_it(session):
    s3, bucket = session.clients("s3"), session.deployment.outputs[Outputs.DISCARD_ARCHIVE_BUCKET]
    doomed, kept = _dead_letter(session, "closed-1"), _dead_letter(session, "kept-1")
    prefix = discard_archive_prefix(session.deployment.stage, "critical")

    dry = _invoke(session, {"action": "discard", "tier": "critical", "message_ids": [doomed], "dry_run": True})
    assert (dry["matched"], dry["discarded"]) == (1, 0)
    assert s3.list_objects_v2(Bucket=bucket, Prefix=prefix).get("KeyCount", 0) == 0

    result = _invoke(session, {"action": "discard", "tier": "critical", "message_ids": [doomed]})
    assert (result["discarded"], result["failed"], result["archive_error"]) == (1, 0, None)
    assert result["archive"] == f"s3://{bucket}/{prefix}"
    (obj,) = s3.list_objects_v2(Bucket=bucket, Prefix=prefix)["Contents"]
    (line,) = s3.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read().decode().splitlines()
    record = json.loads(line)
    assert (record["message_id"], record["tier"], record["reason"]) == (doomed, "critical", DeadLetter.REASON_PERMANENT)
    assert record["error_message"] == "account acc_closed-1 was closed"  # real, not masked
    assert json.loads(record["body"])["idempotency_key"] == "closed-1"
    assert record["message_attributes"][DeadLetter.ERROR_TYPE]["StringValue"] == "ValueError"
    assert _in_dlq(session, doomed, kept) == {kept}


def test_the_cli_discards_through_the_function_into_the_bucket(session, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from tiered_jobs.cli import app

    monkeypatch.chdir(tmp_path)  # where the CLI's own archive file would go
    doomed = _dead_letter(session, "closed-2")
    result = CliRunner(env={"COLUMNS": "250"}).invoke(
        app,
        [
            "--stage",
            "local",
            "--endpoint-url",
            session.endpoint.url,
            "dlq",
            "discard",
            "critical",
            "--message-id",
            doomed,
            "--via",
            "lambda",
        ],
    )
    assert result.exit_code == 0, result.output
    bucket = session.deployment.outputs[Outputs.DISCARD_ARCHIVE_BUCKET]
    assert f"archived to s3://{bucket}/{discard_archive_prefix('local', 'critical')}" in result.output
    assert list(tmp_path.iterdir()) == []  # archived by the function, not here
    assert _in_dlq(session, doomed) == set()
