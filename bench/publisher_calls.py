"""SQS requests per 1 000 published jobs: ``publish_batch`` next to a naive ``publish`` loop."""

from __future__ import annotations

from typing import Any

from tests.support.tier import create_tier

from .calls import CallCounter


def measure(jobs: int = 1000) -> dict[str, Any]:
    from moto import mock_aws

    from tiered_jobs.contract.routing import Routes
    from tiered_jobs.publisher import Job, Publisher

    with mock_aws():
        tier = create_tier("publish")
        counter = CallCounter()
        publisher = Publisher(
            {"critical": tier.queue_url}, Routes({"payments.*": "critical"}), sqs=counter.attach(tier.sqs)
        )
        batch = [
            Job("payments.update_balance", {"account_id": f"acc-{i % 50}", "amount": 1}, f"pub-{i}")
            for i in range(jobs)
        ]
        assert all(r.ok for r in publisher.publish_batch(batch))
        ours = counter.by_operation("sqs")
        counter.reset()
        for job in batch:
            publisher.publish(job.job_type, job.payload, f"naive-{job.idempotency_key}")
        naive = counter.by_operation("sqs")
    per_1000 = 1000 / jobs
    return {
        "jobs": jobs,
        "ours_per_1000": sum(ours.values()) * per_1000,
        "ours_by_operation": ours,
        "naive_per_1000": sum(naive.values()) * per_1000,
        "naive_by_operation": naive,
    }
