"""The rate limit on the embedded AWS, at a small size: completions per second within ±20 % of the
limit, none failed or dead-lettered (``make bench`` runs 200 jobs at 5/s on 20 consumers)."""

from __future__ import annotations

import pytest

from bench.ratelimit import measure, summarize

pytestmark = pytest.mark.e2e


def test_forty_jobs_at_ten_per_second_hold_the_rate_and_none_fail():
    result = measure(jobs=40, per_second=10.0, burst=1, concurrency=4, window_seconds=1)
    assert result["completed"] == 40
    assert result["failures"] == 0 and result["dead_letters"] == 0
    # What the limiter decided: its granted starts never run ahead of the rate (+20 % for the window's
    # edges). How far behind they fall depends on the machine's load (a job too late for its token gives it
    # up and claims again; a loaded suite read 7.5/s), so their lower bound is a benchmark figure (make
    # bench: bench/ratelimit.py), not a test.
    assert 0 < result["granted_per_second"] <= 12.0, result
    assert result["mean_per_second"] <= 12.0 and result["windows_per_second"], result
    # by any moment, no more jobs completed than the bucket allowed (burst + rate x elapsed)
    assert result["most_jobs_ahead_of_the_limit"] <= 1e-6, result
    # and what a provider counts: no second held more starts than burst + rate
    assert 0 < result["worst_window_starts"] <= result["worst_window_bound"], result
    # one conditional write per record that claims as it starts (a copy with its turn makes none), one per
    # batch for the rest it holds, a second only after a lost condition, and one for each job whose latest
    # start passed before it could start (it claims again); a read only on each container's first claim
    writes = result["limiter_writes_per_1000"] * result["jobs"] / 1000
    conflicts = result["limiter_conflicts_per_1000"] * result["jobs"] / 1000
    claims = result["records_received"] - result["turns_used"] + result["batches"]
    assert writes <= claims + conflicts + result["late_starts"], result
    assert result["limiter_reads_per_1000"] * result["jobs"] / 1000 <= result["consumers"], result
    # each job claims as it starts, so a consumer holds one token ahead at most: four of them keep the bucket
    # 0.4 s ahead, inside the 1 s wait bound (a job is sent back only when its claim lost its condition
    # twice; held turns are the unit tests' and the invariant run's); none waits longer than that bound
    assert result["wait_seconds_per_job"] <= 1.0, result


def _figures(done: list[float], slots: list[float], starts: list[float] | None = None) -> dict:
    stats = {"item_failures": 0, "invocation_errors": 0, "batches": 4, "records": len(done)}
    return summarize(
        done,
        jobs=len(done),
        per_second=10.0,
        burst=1,
        concurrency=4,
        published=0.0,
        dead_letters=0,
        stats=stats,
        limiter_calls={},
        resend_calls=0,
        window_seconds=1,
        slots=slots,
        starts=starts,
    )


def test_the_rate_is_read_from_the_first_slot_so_a_late_first_job_is_no_false_excess():
    slots = [100 + i / 10 for i in range(40)]  # the limiter's grants: exactly 10/s
    late_start = [slots[0] + 0.8] + [t + 0.05 for t in slots[1:]]  # the first job finished late, under load
    figures = _figures(sorted(late_start), slots)
    assert 8.0 <= figures["mean_per_second"] <= 12.0 and figures["most_jobs_ahead_of_the_limit"] <= 1e-6, figures
    assert figures["granted_per_second"] == 10.0, figures


def test_a_run_faster_than_its_limit_is_caught():
    slots = [100 + i / 20 for i in range(40)]  # a limiter granting 20/s against a 10/s limit
    figures = _figures([t + 0.05 for t in slots], slots)
    assert figures["mean_per_second"] > 12.0 and figures["most_jobs_ahead_of_the_limit"] > 1, figures
    assert figures["granted_per_second"] == 20.0, figures


def test_the_worst_window_counts_the_starts_a_provider_sees_against_burst_plus_rate():
    slots = [100 + i / 10 for i in range(40)]  # the limiter's grants: exactly 10/s
    bunched = sorted(slots[:20] + [slots[20] + 0.001 * i for i in range(20)])  # late starts, run together
    figures = _figures([t + 0.05 for t in bunched], slots, starts=bunched)
    assert figures["worst_window_bound"] == 11.0
    assert figures["worst_window_starts"] == 29  # the 20 late starts within 19 ms, and the 9 grants before them
    assert _figures([t + 0.05 for t in slots], slots, starts=slots)["worst_window_starts"] == 11  # burst 1 + 10/s
