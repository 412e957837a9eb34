"""Idempotency-store calls per 1 000 new jobs and per 1 000 duplicates (moto, in-process)."""

from __future__ import annotations

import contextlib
import io
from typing import Any

from tests.support.context import lambda_context
from tests.support.events import sqs_event
from tests.support.tier import chunks, create_tier, payment_bodies

from .calls import CallCounter
from .quiet import quiet_logger


def measure(jobs: int = 1000, batch_size: int = 10) -> dict[str, Any]:
    from moto import mock_aws

    from tiered_jobs.runtime.backoff import RetryPolicy
    from tiered_jobs.runtime.config import TierConfig
    from tiered_jobs.runtime.consumer import Consumer
    from tiered_jobs.runtime.job_modules import load_job_modules
    from tiered_jobs.runtime.registry import registry

    load_job_modules(["functions.jobs"])  # registers the example's jobs, its schemas first, as its consumer does

    with mock_aws():
        tier = create_tier()
        counter = CallCounter()
        clients = {"sqs": counter.attach(tier.sqs), "dynamodb": counter.attach(tier.dynamodb)}
        config = TierConfig(
            stage="bench",
            tier="critical",
            queue_url=tier.queue_url,
            dlq_url=tier.dlq_url,
            idempotency_table=tier.idempotency_table,
            resources=tier.resources,
            retry=RetryPolicy(),
        )

        def container() -> Consumer:
            return Consumer(config, registry, client=clients.__getitem__, logger=quiet_logger())

        bodies = payment_bodies(jobs)
        results: dict[str, Any] = {}
        first = container()
        for label, consumer in (("new", first), ("duplicate", container()), ("in_container_duplicate", first)):
            counter.reset()
            with contextlib.redirect_stdout(io.StringIO()):  # EMF lines
                for batch in chunks(bodies, batch_size):
                    response = consumer.handle(sqs_event(batch, tier.queue_arn), lambda_context())
                    assert response == {"batchItemFailures": []}, response
            results[label] = {
                "idempotency_calls": counter.by_table(tier.idempotency_table),
                "job_own_calls": counter.by_table(tier.payments_table),
                "sqs_calls": counter.by_operation("sqs"),
            }
        balance_total = sum(int(item["balance"]["N"]) for item in _scan_balances(tier))
    expected = sum(1 + i % 7 for i in range(jobs))
    assert balance_total == expected, f"balances {balance_total} != {expected}: a duplicate was applied"
    per_1000 = 1000 / jobs
    return {
        "jobs": jobs,
        "new_per_1000": {op: n * per_1000 for op, n in results["new"]["idempotency_calls"].items()},
        "duplicate_per_1000": {op: n * per_1000 for op, n in results["duplicate"]["idempotency_calls"].items()},
        "in_container_duplicate_per_1000": sum(results["in_container_duplicate"]["idempotency_calls"].values())
        * per_1000,
        "job_own_writes_per_1000_new": {op: n * per_1000 for op, n in results["new"]["job_own_calls"].items()},
        "job_own_writes_per_1000_duplicate": {
            op: n * per_1000 for op, n in results["duplicate"]["job_own_calls"].items()
        },
        "sqs_calls_on_success": sum(sum(r["sqs_calls"].values()) for r in results.values()),
    }


def _scan_balances(tier) -> list[dict]:
    items = tier.dynamodb.scan(TableName=tier.payments_table)["Items"]
    return [item for item in items if not item["account_id"]["S"].startswith("applied#")]
