"""bench/large_payloads.py: each large job costs one PutObject and one GetObject, and its dollars follow from the
counted calls, the body's size, the bucket's lifecycle and the list prices (no figure typed in)."""

from __future__ import annotations

import pytest

from bench import large_payloads
from bench.__main__ import _large_payloads_row
from bench.cost import PRICES
from tiered_jobs.contract.large_payloads import lifecycle_days


@pytest.fixture(scope="module")
def measured():
    return large_payloads.measure(10)


def test_each_large_job_is_one_put_one_get_and_a_small_pointer_message(measured):
    calls = measured["calls_per_job"]
    assert calls["s3:PutObject"] == 1 and calls["s3:GetObject"] == 1
    assert calls["sqs:SendMessageBatch"] == pytest.approx(0.1)  # ten pointers a batch: 1.5 MiB bodies never could
    assert measured["lifecycle_days"] == lifecycle_days(4, 14, 18 * 86_400) == 40


def test_its_dollars_follow_from_the_calls_the_size_and_the_lifecycle(measured):
    usd = measured["usd_per_million_jobs"]
    stored_gb = measured["body_bytes"] * 1_000_000 / 2**30
    assert usd["s3_storage"] == pytest.approx(stored_gb * 0.023 * measured["lifecycle_days"] / 30, abs=0.01)
    assert usd["s3_put"] == pytest.approx(5.0) and usd["s3_get"] == pytest.approx(0.4)
    sqs = sum(n for op, n in measured["calls_per_job"].items() if op.startswith("sqs:"))
    assert usd["sqs"] == pytest.approx(sqs * PRICES["sqs_per_million_requests"], abs=0.01)
    assert usd["total"] == pytest.approx(sum(v for k, v in usd.items() if k != "total"), abs=0.01)
    figure, ours, _, _, met = _large_payloads_row(measured)
    assert figure.startswith("large_payloads: USD / 1 M jobs of 1.5 MiB") and f"${usd['total']:.2f}" in ours and met
