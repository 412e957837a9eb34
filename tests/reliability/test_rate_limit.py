"""The rate limit on the embedded AWS, at a small size: completions per second within ±20 % of the
limit, none failed or dead-lettered (``make bench`` runs 200 jobs at 5/s on 20 consumers)."""

from __future__ import annotations

import pytest

from bench.ratelimit import measure

pytestmark = pytest.mark.e2e


def test_forty_jobs_at_ten_per_second_hold_the_rate_and_none_fail():
    result = measure(jobs=40, per_second=10.0, burst=1, concurrency=4, window_seconds=1)
    assert result["completed"] == 40
    assert result["failures"] == 0 and result["dead_letters"] == 0
    assert 8.0 <= result["mean_per_second"] <= 12.0, result
    assert result["windows_per_second"] and result["within_band"], result
    # by any moment, no more jobs completed than the bucket allowed (burst + rate x elapsed)
    assert result["most_jobs_ahead_of_the_limit"] <= 1e-6, result
    # at most one conditional write per batch; a read only on each container's first claim
    assert result["limiter_writes_per_batch"] <= 1, result
    assert result["limiter_reads_per_1000"] * result["jobs"] / 1000 <= result["consumers"], result
