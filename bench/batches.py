"""What a batch costs (``publisher.batch``, docs/workflows.md), counted on moto per 1 000 members.

One batch of ``members`` jobs with an ``on_complete`` and an ``on_success`` callback: the publisher's
calls (the head's ``PutItem``, the members' ``SendMessageBatch``, the seal's ``UpdateItem``) and what
the consumer adds for the members (per member one ``TransactWriteItems`` of two items and one
consistent ``GetItem`` of the head; the callbacks' ``SendMessage`` and the ``UpdateItem`` marking them
fired, once per batch), beside a plain run of the same jobs. DynamoDB's units: a transactional write
costs two write units per item (4 per member), a consistent read of the small head one read unit.

``python -m bench.batches`` prints it; ``make bench`` files it under ``batches``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from tests.support.tier import create_tier

from .calls import CallCounter
from .cost import PRICES

#: Write units of one call on items under 1 KB (a transaction's items cost two each).
WRITE_UNITS = {"PutItem": 1, "UpdateItem": 1, "TransactWriteItems": 4}
READ_UNITS = {"GetItem": 1}


def measure(members: int = 1000) -> dict[str, Any]:
    import os

    from moto import mock_aws

    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")  # a line per member is not what is measured
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    with mock_aws():
        return _measure(members)


def _measure(members: int) -> dict[str, Any]:
    import boto3

    from tests.support.batches import create_batch_table
    from tiered_jobs.contract.routing import Routes
    from tiered_jobs.publisher import Job, Publisher
    from tiered_jobs.runtime.config import TierConfig
    from tiered_jobs.runtime.consumer import Consumer
    from tiered_jobs.runtime.job_modules import load_job_modules
    from tiered_jobs.runtime.registry import registry

    load_job_modules(["example.jobs"])  # registers the example's jobs, its schemas first, as its consumer does
    tier = create_tier("batches")
    table = create_batch_table(tier.dynamodb, "batches")
    routes = Routes({"*": "critical"})
    plain, batched = CallCounter(), CallCounter()

    def clients(counter: CallCounter) -> dict[str, Any]:
        return {name: counter.attach(boto3.client(name, region_name="us-east-1")) for name in ("sqs", "dynamodb")}

    def consume(counter: CallCounter, config: TierConfig) -> None:
        made = clients(counter)
        consumer = Consumer(config, registry, client=made.__getitem__, rand=lambda: 0.5)
        while messages := tier.receive_for_batch():
            tier.run_messages(consumer, messages)

    jobs = [
        Job("analytics.record_event", {"event": "member", "properties": {"n": n}}, f"m-{n}") for n in range(members)
    ]
    # The same jobs outside any batch: the base path.
    publisher = Publisher({"critical": tier.queue_url}, routes, batch_table=table, **_publisher_clients(plain))
    publisher.publish_batch([Job(j.job_type, j.payload, f"plain-{j.idempotency_key}") for j in jobs])
    consume(plain, tier.config())
    # One batch of them, with both callbacks.
    publisher = Publisher({"critical": tier.queue_url}, routes, batch_table=table, **_publisher_clients(batched))
    with publisher.batch(
        on_complete=("notifications.send_email", {"to": "ops@example.com", "subject": "done"}),
        on_success=("analytics.record_event", {"event": "all_done"}),
    ) as batch:
        batch.publish_batch(jobs)
    from dataclasses import replace

    consume(batched, replace(tier.config(), batch_table=table))
    head = json.loads(json.dumps(tier.dynamodb.get_item(TableName=table, Key=_head(batch.batch_id))["Item"]))
    assert head["done"]["N"] == str(members) and set(head["fired"]["SS"]) == {"on_complete", "on_success"}, head
    per_1000 = 1000 / members
    extra = {
        f"{service}:{op}": round((n - plain.counts.get((service, op), 0)) * per_1000, 1)
        for (service, op), n in sorted(batched.counts.items())
        if n != plain.counts.get((service, op), 0)
    }
    # The callbacks' own runs are jobs like any other: counted out of the figure (2 per batch).
    writes = sum(extra.get(f"dynamodb:{op}", 0) * units for op, units in WRITE_UNITS.items())
    reads = sum(extra.get(f"dynamodb:{op}", 0) * units for op, units in READ_UNITS.items())
    sqs = sum(n for key, n in extra.items() if key.startswith("sqs:"))
    dollars = (
        writes * PRICES["dynamodb_per_million_write_units"]
        + reads * PRICES["dynamodb_per_million_read_units"]
        + sqs * PRICES["sqs_per_million_requests"]
    ) / 1e6
    return {
        "members": members,
        "extra_calls_per_1000_members": extra,
        "dynamodb_write_units_per_1000_members": round(writes, 1),
        "dynamodb_read_units_per_1000_members": round(reads, 1),
        "sqs_requests_per_1000_members": round(sqs, 1),
        "dollars_per_1000_members": round(dollars, 6),
        "note": "the extra over the same jobs published and consumed outside any batch; the two callbacks' "
        "own runs (each one job) are in it, as their sends are",
    }


def _publisher_clients(counter: CallCounter) -> dict[str, Any]:
    import boto3

    return {name: counter.attach(boto3.client(name, region_name="us-east-1")) for name in ("sqs", "dynamodb")}


def _head(batch_id: str) -> dict[str, Any]:
    from tiered_jobs.contract import batches

    return batches.head_key(batch_id)


if __name__ == "__main__":
    print(json.dumps(measure(int(sys.argv[1]) if len(sys.argv) > 1 else 1000), indent=2))
