"""``tiered-jobs job TYPE KEY`` shows a job's progress (``ctx.progress``) and, for a job longer than one
invocation, its step: between two steps it is in progress, never completed with a step marker."""

from __future__ import annotations

import json
import time

import boto3

from tiered_jobs.contract import steps
from tiered_jobs.contract.idempotency import RecordAttributes, RecordStatus, record_id
from tiered_jobs.contract.progress import Progress


def _record(deployment, key: str, status: str, **extra: dict) -> None:
    item = {
        RecordAttributes.KEY: {"S": record_id("payments.update_balance", key)},
        RecordAttributes.STATUS: {"S": status},
        RecordAttributes.EXPIRATION: {"N": str(int(time.time()) + 3600)},
        **extra,
    }
    boto3.client("dynamodb").put_item(TableName=deployment.idempotency_table, Item=item)


def test_a_stepped_job_between_steps_is_in_progress_with_its_step_and_progress(cli, deployment):
    progress = Progress(40, 100, "copying rows", "2026-12-02T10:00:00Z")
    _record(
        deployment,
        "exp_1",
        RecordStatus.COMPLETED,
        **{
            RecordAttributes.DATA: {"S": json.dumps(steps.marker(2))},
            steps.RECORD_STEP: {"N": "2"},
            steps.RECORD_STATE: {"S": '{"cursor": 40}'},
            "progress": {"S": progress.encode()},
        },
    )

    found = json.loads(cli("job", "payments.update_balance", "exp_1", "--json").stdout)
    assert found["state"] == "in_progress"
    assert found["record"]["step"] == 2 and found["record"]["result"] is None
    assert found["record"]["progress"] == {**progress.__dict__, "percent": 40.0}
    text = cli("job", "payments.update_balance", "exp_1").stdout
    assert "between steps: step 2 is due" in text
    assert "progress: 40/100 (40%): copying rows, at 2026-12-02T10:00:00Z" in text


def test_a_running_job_shows_its_last_progress(cli, deployment):
    _record(deployment, "run_1", RecordStatus.IN_PROGRESS, progress={"S": Progress(3, 4, "", "").encode()})
    text = cli("job", "payments.update_balance", "run_1").stdout
    assert "in progress" in text and "progress: 3/4 (75%)" in text
