"""What a batch costs (``publisher.batch``, docs/workflows.md), counted on moto per 1 000 members.

A batch of jobs with an ``on_complete`` and an ``on_success`` callback: the publisher's
calls (the head's ``PutItem``, the members' ``SendMessageBatch``, the seal's ``UpdateItem``) and what
the consumer adds for the members (per member one ``TransactWriteItems`` of two items and one
consistent ``GetItem`` of the head; the callbacks' ``SendMessage`` and the ``UpdateItem`` marking them
fired, once per batch), beside a plain run of the same jobs. Two sizes are run (``members`` and twice
as many): their difference is the cost of a member, the rest the cost of a batch, so the figure per
1 000 members is exact without running 1 000 on moto. DynamoDB's units: a transactional write
costs two write units per item (4 per member), a consistent read of the small head one read unit.

``python -m bench.batches`` prints it; ``make bench`` files it under ``batches``.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from typing import Any

from tests.support.tier import create_tier

from .calls import CallCounter
from .cost import PRICES
from .quiet import quiet_logger

#: Write units of one call on items under 1 KB (a transaction's items cost two each).
WRITE_UNITS = {"PutItem": 1, "UpdateItem": 1, "TransactWriteItems": 4}
READ_UNITS = {"GetItem": 1}


def measure(members: int = 100) -> dict[str, Any]:
    import os

    from moto import mock_aws

    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")  # a line per member is not what is measured
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    with mock_aws():
        return _measure(members)


def _measure(members: int) -> dict[str, Any]:
    """Two batches, of ``members`` and of twice as many: the difference is what each member adds, the rest
    what a batch adds once (its head, its seal, its callbacks sent, marked and run)."""
    small, large = _extra(members, "s"), _extra(2 * members, "l")
    per_member = {op: (large.get(op, 0) - small.get(op, 0)) / members for op in set(small) | set(large)}
    per_batch = {op: small.get(op, 0) - n * members for op, n in per_member.items()}
    per_1000 = {op: round(per_member[op] * 1000 + per_batch[op], 1) for op in sorted(per_member)}
    writes = sum(per_1000.get(f"dynamodb:{op}", 0) * units for op, units in WRITE_UNITS.items())
    reads = sum(per_1000.get(f"dynamodb:{op}", 0) * units for op, units in READ_UNITS.items())
    sqs = sum(n for key, n in per_1000.items() if key.startswith("sqs:"))
    dollars = (
        writes * PRICES["dynamodb_per_million_write_units"]
        + reads * PRICES["dynamodb_per_million_read_units"]
        + sqs * PRICES["sqs_per_million_requests"]
    ) / 1e6
    return {
        "members_measured": [members, 2 * members],
        "extra_calls_per_member": {op: round(n, 3) for op, n in sorted(per_member.items()) if n},
        "extra_calls_per_batch": {op: round(n, 1) for op, n in sorted(per_batch.items()) if round(n, 1)},
        "extra_calls_per_1000_members": {op: n for op, n in per_1000.items() if n},
        "dynamodb_write_units_per_1000_members": round(writes, 1),
        "dynamodb_read_units_per_1000_members": round(reads, 1),
        "sqs_requests_per_1000_members": round(sqs, 1),
        "dollars_per_1000_members": round(dollars, 6),
        "note": "the extra over the same jobs published and consumed outside any batch, for one batch of 1 000 "
        "members with both callbacks; the callbacks' own runs (one job each) are in the per-batch part",
    }


def _extra(members: int, prefix: str) -> dict[str, int]:
    """The calls one batch of ``members`` (both callbacks) makes beyond the same jobs published plainly."""

    from tests.support.batches import create_batch_table
    from tiered_jobs.contract.routing import Routes
    from tiered_jobs.publisher import Job, Publisher
    from tiered_jobs.runtime.config import TierConfig
    from tiered_jobs.runtime.consumer import Consumer
    from tiered_jobs.runtime.job_modules import load_job_modules
    from tiered_jobs.runtime.registry import registry

    load_job_modules(["functions.jobs"])  # registers the example's jobs, its schemas first, as its consumer does
    tier = create_tier(f"batches-{prefix}")
    table = create_batch_table(tier.dynamodb, f"batches-{prefix}")
    routes = Routes({"*": "critical"})
    plain, batched = CallCounter(), CallCounter()

    def consume(counter: CallCounter, config: TierConfig) -> None:
        made = _publisher_clients(counter)
        consumer = Consumer(config, registry, client=made.__getitem__, rand=lambda: 0.5, logger=quiet_logger())
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
    consume(batched, replace(tier.config(), batch_table=table))
    head = tier.dynamodb.get_item(TableName=table, Key=_head(batch.batch_id))["Item"]
    assert head["done"]["N"] == str(members) and set(head["fired"]["SS"]) == {"on_complete", "on_success"}, head
    return {
        f"{service}:{op}": n - plain.counts.get((service, op), 0)
        for (service, op), n in batched.counts.items()
        if n != plain.counts.get((service, op), 0)
    }


def _publisher_clients(counter: CallCounter) -> dict[str, Any]:
    import boto3

    return {name: counter.attach(boto3.client(name, region_name="us-east-1")) for name in ("sqs", "dynamodb")}


def _head(batch_id: str) -> dict[str, Any]:
    from tiered_jobs.contract import batches

    return batches.head_key(batch_id)


if __name__ == "__main__":
    print(json.dumps(measure(int(sys.argv[1]) if len(sys.argv) > 1 else 100), indent=2))
