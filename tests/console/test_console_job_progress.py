"""The console's job view shows a job's progress (``ctx.progress``), and a job between two steps as in
progress with its step due, as ``tiered-jobs job`` does."""

from __future__ import annotations

import json
import time

import boto3
import requests

from tiered_jobs.contract import steps
from tiered_jobs.contract.idempotency import RecordAttributes, RecordStatus, record_id
from tiered_jobs.contract.progress import Progress


def test_the_job_view_shows_progress_and_the_step_due(deployment, serve):
    boto3.client("dynamodb").put_item(
        TableName=deployment.idempotency_table,
        Item={
            RecordAttributes.KEY: {"S": record_id("payments.capture", "cap-p1")},
            RecordAttributes.STATUS: {"S": RecordStatus.COMPLETED},
            RecordAttributes.EXPIRATION: {"N": str(int(time.time()) + 3600)},
            RecordAttributes.DATA: {"S": json.dumps(steps.marker(3))},
            steps.RECORD_STEP: {"N": "3"},
            "progress": {"S": Progress(30, 40, "page 3", "2026-12-02T10:00:00Z").encode()},
        },
    )
    console = serve()

    page = requests.get(console.url + "job", params={"type": "payments.capture", "key": "cap-p1"}, timeout=30)

    assert page.status_code == 200
    assert "<strong>in progress</strong>" in page.text and "step 3 is due" in page.text
    assert "Progress: 30/40 (75%): page 3, at 2026-12-02T10:00:00Z" in page.text
