"""``tiered-jobs job TYPE KEY`` with no record of a run: what its tier queue says (counts, paused or not, never
``queued`` from the queue alone), ``paused`` for a unique job on a paused tier, and a debounced key's runs."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import boto3

from tests.cli.test_job_lookup import _completed
from tests.cli.test_job_lookup_unique import _unique_publisher
from tests.support.mappings import moto_mapping
from tiered_jobs.contract.names import Ssm
from tiered_jobs.contract.routing import Routes
from tiered_jobs.contract.schedules import debounced_run_key
from tiered_jobs.publisher import Publisher

REGION = "us-east-1"


def _paused(deployment, tier: str) -> None:
    """``tier``'s consumer and mapping in moto, named as the stack names it, then disabled as ``pause`` does;
    moto's own poller detached from the queue (it would run the function in Docker)."""
    from moto.sqs.models import sqs_backends

    lam, uuid = moto_mapping(tier, queue_url=deployment.queue_urls[tier])
    for queue in sqs_backends["123456789012"][REGION].queues.values():
        queue.lambda_event_source_mappings.clear()
    boto3.client("ssm").put_parameter(
        Name=Ssm.tier(deployment.stage, tier, Ssm.TIER_MAPPING_UUID), Type="String", Value=uuid
    )
    lam.update_event_source_mapping(UUID=uuid, Enabled=False)


def test_a_job_with_no_record_says_what_its_queue_holds_without_claiming_it_is_queued(cli, deployment):
    publisher = Publisher(deployment.queue_urls, Routes(deployment.routes))
    publisher.publish("payments.capture", {}, "cap-1")
    publisher.publish("payments.capture", {}, "cap-2", delay=60)

    found = json.loads(cli("job", "payments.capture", "cap-1", "--json").stdout)
    text = cli("job", "payments.capture", "cap-1").stdout

    assert found["state"] == "unknown"  # SQS cannot be searched by key: a message there may be another job's
    assert found["queue"] == {"tier": "critical", "waiting": 1, "in_flight": 0, "delayed": 1, "paused": None}
    assert (
        "queue: the critical queue holds 2 messages (1 waiting, 0 in flight, 1 delayed); "
        "paused: unknown (the stage names no event source mapping)"
    ) in text


def test_a_unique_job_on_a_paused_tier_reads_paused(cli, deployment):
    _paused(deployment, "critical")
    _unique_publisher(deployment).publish("payments.capture", {}, "cap-9", unique_for=600)

    found = json.loads(cli("job", "payments.capture", "cap-9", "--json").stdout)
    text = cli("job", "payments.capture", "cap-9").stdout
    other = json.loads(cli("job", "payments.capture", "never-published", "--json").stdout)

    assert found["state"] == "paused" and found["queue"]["paused"] is True
    assert "state: paused (unique until " in text and "runs once the tier is resumed" in text
    assert "paused: yes" in text
    assert other["state"] == "unknown" and other["queue"]["paused"] is True  # no publish recorded: not "paused"


def test_a_debounced_key_shows_its_runs_by_their_minute_keys(cli, deployment):
    minute = datetime.now(timezone.utc).replace(second=0, microsecond=0) - timedelta(minutes=90)
    run_key = debounced_run_key("doc-4", minute)
    _completed(deployment, "analytics.reindex", run_key, {"pages": 3})
    _completed(deployment, "analytics.reindex", debounced_run_key("doc-5", minute), {"pages": 1})  # another key's

    found = json.loads(cli("job", "analytics.reindex", "doc-4", "--json").stdout)
    text = cli("job", "analytics.reindex", "doc-4").stdout
    short = json.loads(cli("job", "analytics.reindex", "doc-4", "--debounce-hours", "1", "--json").stdout)

    assert found["state"] == "unknown"  # the key itself never has a record: each run has its own
    (run,) = found["debounced_runs"]["runs"]
    assert run["key"] == run_key and run["state"] == "completed"
    assert f"debounced run {run_key}: completed — completed" in text
    assert (
        short["debounced_runs"]["runs"] == []
        and "debounced runs" in cli("job", "analytics.reindex", "doc-4", "--debounce-hours", "1").stdout
    )


def test_a_job_with_a_record_reads_neither_its_queue_nor_runs(cli, deployment):
    _completed(deployment, "payments.capture", "cap-3", {"ok": True})

    found = json.loads(cli("job", "payments.capture", "cap-3", "--json").stdout)

    assert found["state"] == "completed" and found["queue"] is None and found["debounced_runs"] is None
