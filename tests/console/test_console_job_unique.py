"""The console's job view of a unique job not yet run: ``queued (unique until ...)``, as ``tiered-jobs job`` says."""

from __future__ import annotations

import boto3
import requests

from tiered_jobs.contract.routing import Routes
from tiered_jobs.publisher import Publisher


def test_the_job_view_shows_a_unique_job_queued_until_its_lock_ends(deployment, serve):
    publisher = Publisher(
        deployment.queue_urls,
        Routes(deployment.routes),
        unique_table=deployment.unique_table,
        dynamodb=boto3.client("dynamodb"),
    )
    sent = publisher.publish("payments.capture", {}, "cap-u1", unique_for=600)
    console = serve()

    page = requests.get(console.url + "job", params={"type": "payments.capture", "key": "cap-u1"}, timeout=30)
    other = requests.get(console.url + "job", params={"type": "payments.capture", "key": "cap-u2"}, timeout=30)

    assert sent.message_id and page.status_code == 200
    assert "<strong>queued (unique until " in page.text and "refused as already queued" in page.text
    assert "<strong>unknown</strong>" in other.text and "unique until" not in other.text.lower()
