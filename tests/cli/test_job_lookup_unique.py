"""``tiered-jobs job TYPE KEY`` for a job's life before it runs: ``queued (unique until ...)`` while a unique
job's lock is held, and a debounced job's pending run."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import boto3

from tests.cli.test_job_lookup import _completed
from tiered_jobs.contract.routing import Routes
from tiered_jobs.operations import lookup
from tiered_jobs.publisher import Publisher


def _unique_publisher(deployment, clock=lambda: datetime.now(timezone.utc)) -> Publisher:
    return Publisher(
        deployment.queue_urls,
        Routes(deployment.routes),
        unique_table=deployment.unique_table,
        dynamodb=boto3.client("dynamodb"),
        clock=clock,
    )


def test_a_unique_job_not_yet_run_is_queued_until_its_window_ends(cli, deployment):
    sent = _unique_publisher(deployment).publish("payments.capture", {}, "cap-1", unique_for=600)
    assert sent.unique_until is not None
    until = lookup._iso(float(int(sent.unique_until.timestamp()) + (sent.unique_until.microsecond > 0)))

    found = json.loads(cli("job", "payments.capture", "cap-1", "--json").stdout)
    text = cli("job", "payments.capture", "cap-1").stdout

    assert found["state"] == "queued" and found["unique_until"] == until
    assert found["record"]["state"] == "unknown"  # the idempotency record knows nothing before the job runs
    assert f"state: queued (unique until {until})" in text
    assert "refused as already queued" in text
    other = json.loads(cli("job", "payments.capture", "cap-2", "--json").stdout)
    assert other["state"] == "unknown" and other["unique_until"] is None


def test_a_lock_whose_window_has_ended_is_no_longer_queued(cli, deployment):
    past = datetime.now(timezone.utc) - timedelta(minutes=20)
    _unique_publisher(deployment, clock=lambda: past).publish("payments.capture", {}, "cap-old", unique_for=60)

    found = json.loads(cli("job", "payments.capture", "cap-old", "--json").stdout)

    assert found["state"] == "unknown" and found["unique_until"] is None  # TTL has not deleted it: still over


def test_a_running_job_that_holds_its_lock_shows_both(cli, deployment):
    _unique_publisher(deployment).publish("payments.capture", {}, "cap-3", unique_for=600)
    _completed(deployment, "payments.capture", "cap-3", {"ok": True})  # as if run (its release not yet made)

    text = cli("job", "payments.capture", "cap-3").stdout

    assert "state: completed" in text and "unique until " in text


def test_a_debounced_jobs_pending_run_is_shown_with_its_run_key(cli, scheduling, deployment):
    publisher = Publisher.from_stage("test", dynamodb=boto3.client("dynamodb"))
    for version in (1, 2):
        done = publisher.publish("analytics.reindex", {"version": version}, "doc-9", debounce=120)
    assert done.fire_at is not None

    found = json.loads(cli("job", "analytics.reindex", "doc-9", "--json").stdout)
    text = cli("job", "analytics.reindex", "doc-9").stdout

    (run,) = found["scheduled_runs"]
    run_key = f"doc-9@{done.fire_at.astimezone(timezone.utc):%Y-%m-%dT%H:%M}Z"
    assert run["schedule"] == done.schedule_name and run["at"] == lookup._iso(done.fire_at.timestamp())
    assert run["detail"] == (
        f"debounced: the burst's one run, with the last payload published (run key {run_key}), to the bulk queue"
    )
    assert "debounced: the burst's one run" in text
