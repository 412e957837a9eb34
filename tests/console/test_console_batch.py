"""The console's batch page: a batch's counts, its callbacks and why a member failed, as ``tiered-jobs batch`` says."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone

import boto3
import requests

from tiered_jobs.contract import batches
from tiered_jobs.contract.envelope import build
from tiered_jobs.contract.routing import Routes
from tiered_jobs.publisher import Publisher
from tiered_jobs.runtime.batches import finished


def test_the_batch_page_shows_counts_callbacks_and_the_failed_member(deployment, serve):
    dynamodb, sqs = boto3.client("dynamodb"), boto3.client("sqs")
    table = deployment.batch_table
    publisher = Publisher(deployment.queue_urls, Routes(deployment.routes), dynamodb=dynamodb, batch_table=table)
    with publisher.batch(on_complete=("notifications.report", {"report": "r1"})) as batch:
        batch.publish("payments.capture", {"n": 1}, "p1")
        batch.publish("payments.capture", {"n": 2}, "p2")
    now = datetime(2030, 5, 1, tzinfo=timezone.utc)
    for key, outcome, detail in (("p1", batches.SUCCEEDED, ""), ("p2", batches.FAILED, "permanent: Declined: <no>")):
        member = replace(build("payments.capture", {"n": 1}, key), batch={"id": batch.batch_id})
        finished(dynamodb, sqs, table, member, outcome, detail=detail, now=now)
    console = serve()

    page = requests.get(console.url + "batch", params={"id": batch.batch_id}, timeout=30)
    unknown = requests.get(console.url + "batch", params={"id": "nosuchbatch"}, timeout=30)

    assert page.status_code == 200
    assert "<strong>failed</strong>" in page.text and "<th>succeeded</th><td>1</td>" in page.text
    assert "on_complete: notifications.report (sent)" in page.text
    assert "permanent: Declined: &lt;no&gt;" in page.text  # escaped, as every value the page shows
    assert "no batch or chain" in unknown.text
