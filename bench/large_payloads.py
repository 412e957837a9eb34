"""What a job past SQS's limit costs with ``large_payloads``, counted on moto, priced at list prices.

Jobs of :data:`BODY_BYTES` are published with a tier's default threshold and run by a consumer; the
publisher's and the consumer's calls are counted per job by botocore's hooks (``PutObject`` once per
publish, ``GetObject`` once per receive, the SQS calls of a small pointer message). Per 1 M such jobs:

- S3 requests: PUT and GET at S3 Standard's list prices;
- S3 storage: every body is kept for the bucket's whole lifecycle (nothing deletes it earlier:
  docs/publishing.md), ``lifecycle_days`` of the default tier (40), at the GB-month price;
- SQS: the pointer messages' requests (publish, receive, delete), each one 64 KiB chunk.

Beside it, what the same SQS traffic would cost if SQS could carry the body inline: SQS bills every
64 KiB chunk of a request's payload as one request, so a 1 MiB body is 16 requests per call (for
information: a body over 1 MiB cannot go through SQS at all).
"""

from __future__ import annotations

import math
from typing import Any

from tests.support.tier import create_tier

from .calls import CallCounter
from .cost import PRICES
from .quiet import quiet_logger

#: S3 Standard, us-east-1 list prices: PUT/COPY/POST/LIST and GET/SELECT per 1 000 requests, storage per GB-month.
S3_PRICES = {"put_per_thousand": 0.005, "get_per_thousand": 0.0004, "storage_per_gb_month": 0.023}
#: A body past SQS's limit: 1.5 MiB (a generated document, a webhook body as received).
BODY_BYTES = 1_572_864
#: SQS bills each 64 KiB chunk of a request's payload as one request.
SQS_CHUNK_BYTES = 65_536
BUCKET = "bench-large-payloads"


def per_million_jobs(
    *,
    body_bytes: int,
    puts_per_job: float,
    gets_per_job: float,
    sqs_requests_per_job: float,
    lifecycle_days: int,
) -> dict[str, float]:
    """USD per 1 M offloaded jobs: S3 requests, S3 storage for the lifecycle, the pointers' SQS requests."""
    jobs = 1_000_000
    gigabytes = body_bytes * jobs / 2**30
    usd = {
        "s3_put": puts_per_job * jobs / 1000 * S3_PRICES["put_per_thousand"],
        "s3_get": gets_per_job * jobs / 1000 * S3_PRICES["get_per_thousand"],
        "s3_storage": gigabytes * S3_PRICES["storage_per_gb_month"] * lifecycle_days / 30,
        "sqs": sqs_requests_per_job * jobs / 1e6 * PRICES["sqs_per_million_requests"],
    }
    usd = {name: round(value, 2) for name, value in usd.items()}
    usd["total"] = round(sum(usd.values()), 2)
    return usd


def measure(jobs: int = 40) -> dict[str, Any]:
    from moto import mock_aws

    with mock_aws():
        return _measure(jobs)


def _measure(jobs: int) -> dict[str, Any]:
    import dataclasses

    import boto3

    from tiered_jobs.contract.large_payloads import Offload, lifecycle_days
    from tiered_jobs.contract.retention import DEFAULT_DLQ_RETENTION_DAYS, DEFAULT_RETENTION_DAYS
    from tiered_jobs.contract.retention import DEFAULT_IDEMPOTENCY_TTL_SECONDS as TTL
    from tiered_jobs.contract.routing import Routes
    from tiered_jobs.contract.sqs_limits import MAX_JOB_MESSAGE_BYTES
    from tiered_jobs.publisher import Job, Publisher
    from tiered_jobs.runtime.consumer import Consumer
    from tiered_jobs.runtime.registry import JobRegistry

    tier = create_tier("large")
    counter = CallCounter()
    s3 = counter.attach(boto3.client("s3", region_name="us-east-1"))
    s3.create_bucket(Bucket=BUCKET)
    sqs = counter.attach(tier.sqs)
    offload = Offload(BUCKET, MAX_JOB_MESSAGE_BYTES)
    routes = Routes({"bench.*": "critical"})
    publisher = Publisher({"critical": tier.queue_url}, routes, sqs=sqs, large_payloads={"critical": offload}, s3=s3)
    registry = JobRegistry()
    registry.job("bench.document")(lambda payload, ctx: {"pages": len(payload["document"])})
    config = dataclasses.replace(tier.config(), large_payloads=offload)
    clients = {"sqs": sqs, "dynamodb": tier.dynamodb, "s3": s3}
    consumer = Consumer(config, registry, client=clients.__getitem__, logger=quiet_logger())
    counter.counts.clear()
    document = "d" * (BODY_BYTES - 200)
    for start in range(0, jobs, 10):
        publisher.publish_batch(
            [Job("bench.document", {"document": document}, f"doc-{n}") for n in range(start, min(jobs, start + 10))]
        )
    published = dict(counter.counts)
    counter.counts.clear()
    while messages := tier.receive_for_batch():
        tier.run_messages(consumer, messages)
    consumed = dict(counter.counts)
    per_job = {
        f"{service}:{op}": round(n / jobs, 3)
        for calls in (published, consumed)
        for (service, op), n in sorted(calls.items())
    }
    # The test tier's receive and deletes stand in for the event source mapping's (it deletes one by one:
    # a mapping deletes in batches, so this errs high).
    sqs_requests = sum(n for key, n in per_job.items() if key.startswith("sqs:"))
    days = lifecycle_days(DEFAULT_RETENTION_DAYS, DEFAULT_DLQ_RETENTION_DAYS, TTL)
    offloaded = per_million_jobs(
        body_bytes=BODY_BYTES,
        puts_per_job=per_job.get("s3:PutObject", 0),
        gets_per_job=per_job.get("s3:GetObject", 0),
        sqs_requests_per_job=sqs_requests,
        lifecycle_days=days,
    )
    inline_sqs = round(sqs_requests * math.ceil(BODY_BYTES / SQS_CHUNK_BYTES) * PRICES["sqs_per_million_requests"], 2)
    return {
        "jobs": jobs,
        "body_bytes": BODY_BYTES,
        "threshold_bytes": offload.threshold_bytes,
        "lifecycle_days": days,
        "calls_per_job": per_job,
        "usd_per_million_jobs": offloaded,
        "sqs_inline_usd_per_million_jobs": inline_sqs,
    }


if __name__ == "__main__":
    import json
    import os

    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    print(json.dumps(measure(), indent=2))
