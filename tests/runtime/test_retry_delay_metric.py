"""``JobRetryDelay``: each retried record reports the backoff it waits (the console's mean retry delay)."""

from __future__ import annotations

from tests.runtime.test_consumer import emf_documents
from tiered_jobs.contract.names import Metrics


def test_a_retry_reports_its_backoff_seconds(tier, capsys):
    tier.publish("testjobs.transient", {"fail_times": 1}, "d-1")
    tier.publish("testjobs.effect", {"counter": "a", "amount": 1}, "d-2")
    tier.run_batch(tier.consumer())

    docs = {d[Metrics.DIM_JOB_TYPE]: d for d in emf_documents(capsys)}
    first_delay = tier.config().retry.schedule[0]
    assert first_delay * 0.79 <= docs["testjobs.transient"][Metrics.RETRY_DELAY] <= first_delay * 1.21
    assert Metrics.RETRY_DELAY not in docs["testjobs.effect"]  # no retry, no value
