"""What unique jobs (``unique_for=``) and debounced jobs (``debounce=``) cost when used, counted on moto.

Unique jobs, per 1 000 jobs:

- published one by one: one conditional ``PutItem`` each, beside the base path's ``SendMessageBatch``;
- published in one batch: ``TransactWriteItems`` of up to 100 locks (10 for 1 000 new jobs), plus one
  per group of 100 that holds a job already queued (the group is written again without it);
- consumed: one conditional ``DeleteItem`` per finished job (its lock released).

A job without ``unique_for`` makes none of these calls (``tests/publisher/test_unique.py`` and
``tests/runtime/test_unique_release.py`` prove it). Debounced jobs: bursts of publishes of one key;
the first publish of a burst is one ``CreateSchedule``, each later one a ``CreateSchedule`` refused
with a conflict and an ``UpdateSchedule``; the burst runs once, from Scheduler.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Any

from tests.support.tier import create_tier

from .calls import CallCounter
from .cost import LATENCY_MS, PRICES
from .quiet import quiet_logger

#: EventBridge Scheduler bills scheduled invocations (us-east-1 list price, free tier ignored).
SCHEDULER_PER_MILLION_INVOCATIONS = 1.00
#: Write units per lock: a transactional write consumes two per item, a single ``PutItem`` or ``DeleteItem`` one
#: (items under 1 KB). A group written again after a cancellation (a job already queued in it) writes its items again.
WRITE_UNITS = {"PutItem": 1, "DeleteItem": 1, "TransactWriteItems": 2}
#: Per-job paths (a lock published alone, a release) are counted on this many jobs: moto is slow.
SAMPLE = 100
#: Batches are counted on at most this many jobs, a whole number of transactions (100 locks each), so the
#: figure per 1 000 is exact: moto copies the whole table for each transaction, which a full run would wait on.
BATCH_SAMPLE = 300
#: Publishes per debounced burst in the measurement.
BURST = 10


def measure(jobs: int = 1000, *, memory_mb: int = 512) -> dict[str, Any]:
    from moto import mock_aws

    with mock_aws():
        return {
            **_unique(jobs, memory_mb),
            "debounce": _debounce(jobs),
        }


def _unique(jobs: int, memory_mb: int) -> dict[str, Any]:
    from tiered_jobs.contract import unique
    from tiered_jobs.contract.routing import Routes
    from tiered_jobs.publisher import Job, Publisher
    from tiered_jobs.runtime.consumer import Consumer
    from tiered_jobs.runtime.job_modules import load_job_modules
    from tiered_jobs.runtime.registry import registry

    load_job_modules(["functions.jobs"])  # registers the example's jobs, its schemas first, as its consumer does
    tier = create_tier("unique")
    counter = CallCounter()
    sqs, dynamodb = counter.attach(tier.sqs), counter.attach(tier.dynamodb)

    def publisher(scenario: str) -> Publisher:
        """A table of its own per scenario: moto copies a whole table for each transaction."""
        table = f"unique-{scenario}"
        dynamodb.create_table(
            TableName=table,
            BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": unique.KEY_ATTRIBUTE, "AttributeType": "S"}],
            KeySchema=[{"AttributeName": unique.KEY_ATTRIBUTE, "KeyType": "HASH"}],
        )
        return Publisher(
            {"bulk": tier.queue_url}, Routes({"analytics.*": "bulk"}), sqs=sqs, dynamodb=dynamodb, unique_table=table
        )

    def batch(count: int) -> list[Job]:
        payload = {"event": "view", "properties": {}}
        return [Job("analytics.record_event", payload, f"job-{n}", unique_for=600) for n in range(count)]

    # One by one: a lock per job whatever the count, measured on a sample.
    single_sample = min(jobs, SAMPLE)
    single = publisher("single")
    counter.reset()
    for job in batch(single_sample):
        single.publish(job.job_type, job.payload, job.idempotency_key, unique_for=600)
    single_calls = counter.by_operation("dynamodb")
    batched = min(jobs, BATCH_SAMPLE)
    new = publisher("new")
    counter.reset()
    assert all(r.message_id for r in new.publish_batch(batch(batched)))
    batched_new = counter.by_operation("dynamodb")
    # One job in ten already queued (published a moment before), in every group of 100.
    mixed = publisher("mixed")
    queued = [job for n, job in enumerate(batch(batched)) if n % 10 == 0]
    mixed.publish_batch(queued)
    counter.reset()
    results = mixed.publish_batch(batch(batched))
    assert sum(r.already_queued for r in results) == len(queued)
    batched_mixed = counter.by_operation("dynamodb")

    # The consumer's side, on a sample: a release per finished job.
    released_table = "unique-consumed"
    consumed = publisher("consumed")
    tier.sqs.purge_queue(QueueUrl=tier.queue_url)
    consumed.publish_batch(batch(min(jobs, SAMPLE)))
    consumer = Consumer(
        replace(tier.config(), unique_table=released_table),
        registry,
        client={"sqs": tier.sqs, "dynamodb": dynamodb}.__getitem__,
        logger=quiet_logger(),
    )
    counter.reset()
    finished = 0
    while messages := tier.receive_for_batch():
        tier.run_messages(consumer, messages)
        finished += len(messages)
    released = counter.by_table(released_table)

    per_1000 = 1000 / batched
    release_units = released.get("DeleteItem", 0) / finished
    dynamodb_price = PRICES["dynamodb_per_million_write_units"]
    lambda_seconds = LATENCY_MS["dynamodb"] / 1000 * release_units  # the consumer waits for each release
    return {
        "jobs": jobs,
        "batch_jobs_counted": batched,
        "unique_single_per_1000": {op: n * 1000 / single_sample for op, n in single_calls.items()},
        "unique_batch_new_per_1000": {op: n * per_1000 for op, n in batched_new.items()},
        "unique_batch_10pct_queued_per_1000": {op: n * per_1000 for op, n in batched_mixed.items()},
        "unique_release_per_1000_finished": {op: n * 1000 / finished for op, n in released.items()},
        "unique_usd_per_million_jobs": {
            "lock_one_by_one": round(WRITE_UNITS["PutItem"] * dynamodb_price, 3),
            "lock_in_batches": round(WRITE_UNITS["TransactWriteItems"] * dynamodb_price, 3),
            "release": round(release_units * dynamodb_price, 3),
            "release_lambda_time": round(
                lambda_seconds * memory_mb / 1024 * PRICES["lambda_arm64_per_gb_second"] * 1e6, 3
            ),
        },
    }


def _debounce(publishes: int) -> dict[str, Any]:
    import boto3

    from tiered_jobs.contract.names import Schedules
    from tiered_jobs.contract.routing import Routes
    from tiered_jobs.publisher import Publisher
    from tiered_jobs.stage.scheduling import SchedulingTarget

    group = Schedules.group_name("bench")
    scheduler = boto3.client("scheduler", region_name="us-east-1")
    scheduler.create_schedule_group(Name=group)
    counter = CallCounter()
    now = datetime(2030, 1, 1, tzinfo=timezone.utc)
    clock = [now]
    publisher = Publisher(
        {"bulk": "https://sqs.us-east-1.amazonaws.com/123456789012/bench-bulk"},
        Routes({"analytics.*": "bulk"}),
        scheduler=counter.attach(scheduler),
        scheduling=SchedulingTarget(
            group_name=group,
            role_arn="arn:aws:iam::123456789012:role/one-time",
            dlq_arn="arn:aws:sqs:us-east-1:123456789012:bench-schedules-dlq",
            queue_arns={"bulk": "arn:aws:sqs:us-east-1:123456789012:bench-bulk"},
        ),
        clock=lambda: clock[0],
    )
    keys = max(1, publishes // BURST)
    for step in range(BURST):
        clock[0] = now + timedelta(seconds=step)
        for key in range(keys):
            publisher.publish(
                "analytics.record_event", {"event": "edit", "properties": {"v": step}}, f"doc-{key}", debounce=60
            )
    calls = counter.by_operation("scheduler")
    pages = scheduler.get_paginator("list_schedules").paginate(GroupName=group)
    runs = sum(len(page["Schedules"]) for page in pages)
    total = keys * BURST
    return {
        "publishes": total,
        "burst": BURST,
        "scheduler_calls_per_1000_publishes": {op: n * 1000 / total for op, n in calls.items()},
        "runs_per_1000_publishes": runs * 1000 / total,
        "usd_per_million_publishes": round(runs / total * SCHEDULER_PER_MILLION_INVOCATIONS, 3),
    }
