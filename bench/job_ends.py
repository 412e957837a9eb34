"""What expiring and cancelled jobs cost when used, against the base path, counted on moto.

Per 1 000 jobs, the calls each side makes (the consumer's clients and the publisher's, counted by
botocore's hooks), for:

- **base**: jobs published and run with neither feature (the idempotency record's conditional
  ``PutItem`` and its completing ``UpdateItem``);
- **with a deadline, run in time**: the same calls (the deadline is ~50 bytes of the body);
- **expired**: the consumer writes the job's ``expired`` record (``PutItem``) and its archive line
  (``PutObject``), and runs nothing;
- **cancelled**: the cancel is one ``PutItem`` (its marker); the consumer's usual conditional
  ``PutItem`` finds it (and fails, so no ``UpdateItem``) and writes the archive line (``PutObject``).

A job that uses neither makes no call more (``tests/runtime/test_job_ends.py`` proves it for the
consumer; the publisher's calls are the base path's).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from tests.support.tier import create_tier

from .calls import CallCounter
from .cost import PRICES
from .quiet import quiet_logger

#: S3 Standard list price for PUT requests (us-east-1), per 1 000 requests.
S3_PUT_PER_THOUSAND = 0.005
BUCKET = "bench-discard-archive"


def measure(jobs: int = 200) -> dict[str, Any]:
    from moto import mock_aws

    with mock_aws():
        return _measure(jobs)


def _measure(jobs: int) -> dict[str, Any]:
    import boto3

    from tiered_jobs.contract.envelope import build
    from tiered_jobs.contract.times import iso_text
    from tiered_jobs.replay.archive import S3Archive
    from tiered_jobs.runtime.consumer import Consumer
    from tiered_jobs.runtime.registry import JobRegistry
    from tiered_jobs.stage.cancelling import MarkTarget, mark_cancelled

    tier = create_tier("ends")
    counter = CallCounter()
    s3 = counter.attach(boto3.client("s3", region_name="us-east-1"))
    s3.create_bucket(Bucket=BUCKET)
    counter.reset()
    registry = JobRegistry()
    registry.job("bench.noop")(lambda payload, ctx: {"ok": True})
    now = datetime.now(timezone.utc)
    clients = {"sqs": tier.sqs, "dynamodb": counter.attach(tier.dynamodb)}

    def consume(bodies: list[str]) -> dict[str, float]:
        """Run ``bodies`` through a fresh consumer (no local cache); its DynamoDB and S3 calls per 1 000 jobs."""
        archive = S3Archive(BUCKET, "discarded/bench/critical/", s3)
        consumer = Consumer(
            tier.config(),
            registry,
            client=clients.__getitem__,
            archive=lambda: archive,
            logger=quiet_logger(),
        )
        for body in bodies:
            tier.send_raw(body)
        counter.reset()
        while messages := tier.receive_for_batch():
            tier.run_messages(consumer, messages)
        calls = {f"dynamodb:{op}": n for op, n in counter.by_operation("dynamodb").items()}
        calls.update({f"s3:{op}": n for op, n in counter.by_operation("s3").items()})
        return {op: n * 1000 / len(bodies) for op, n in sorted(calls.items())}

    deadline = iso_text(now + timedelta(hours=1))
    passed = iso_text(now - timedelta(minutes=1))
    base = consume([build("bench.noop", {}, f"base-{n}").to_json() for n in range(jobs)])
    in_time = consume([build("bench.noop", {}, f"due-{n}", expires_at=deadline).to_json() for n in range(jobs)])
    expired = consume([build("bench.noop", {}, f"late-{n}", expires_at=passed).to_json() for n in range(jobs)])
    marks = MarkTarget(tier.idempotency_table, {"critical": 3600})
    counter.reset()
    for n in range(jobs):
        mark_cancelled(tier.dynamodb, marks, "critical", "bench.noop", f"gone-{n}")
    cancels = {f"dynamodb:{op}": n * 1000 / jobs for op, n in counter.by_operation("dynamodb").items()}
    cancelled = consume([build("bench.noop", {}, f"gone-{n}").to_json() for n in range(jobs)])

    def usd(per_1000: dict[str, float]) -> float:
        writes = sum(n for op, n in per_1000.items() if op in ("dynamodb:PutItem", "dynamodb:UpdateItem"))
        puts = per_1000.get("s3:PutObject", 0)
        return round(
            (writes * PRICES["dynamodb_per_million_write_units"] + puts * S3_PUT_PER_THOUSAND * 1000) / 1000, 3
        )

    return {
        "jobs": jobs,
        "consumer_calls_per_1000": {
            "base": base,
            "with_a_deadline_run_in_time": in_time,
            "expired": expired,
            "cancelled": cancelled,
        },
        "cancel_calls_per_1000": cancels,
        "usd_per_million_jobs": {
            "base_idempotency": usd(base),
            "expired": usd(expired),
            "cancelled_consumer": usd(cancelled),
            "cancel_itself": usd(cancels),
        },
    }


if __name__ == "__main__":
    import json
    import os

    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    print(json.dumps(measure(), indent=2))
