"""The cost table's arithmetic (bench/scaling.py) and the limiter's cost model (bench/cost.py):
each figure moves as the declared model says, so a wrong formula fails here, not in a reader's bill."""

from __future__ import annotations

import pytest

from bench import cost, scaling
from bench.scaling import Counted, concurrency, cost_per_million, invocation_seconds

COUNTED = Counted()
GB_SECOND = COUNTED.memory_mb / 1024 * cost.PRICES["lambda_arm64_per_gb_second"]


def test_batches_of_one_make_ten_times_the_receives_deletes_and_invocations_of_batches_of_ten():
    one, ten = cost_per_million(1, 100, 0.0, COUNTED), cost_per_million(10, 100, 0.0, COUNTED)
    assert one["sqs_requests"]["receive"] == pytest.approx(10 * ten["sqs_requests"]["receive"], rel=1e-3)
    assert one["sqs_requests"]["delete"] == pytest.approx(10 * ten["sqs_requests"]["delete"], rel=1e-3)
    assert one["invocations"] == 10 * ten["invocations"] == 1_000_000
    assert one["sqs_requests"]["publish"] == ten["sqs_requests"]["publish"]  # publishing does not change
    assert one["parts"]["lambda_requests"] == pytest.approx(10 * ten["parts"]["lambda_requests"], rel=1e-3)
    assert one["usd_per_million_jobs"] > ten["usd_per_million_jobs"]


def test_doubling_the_job_duration_adds_its_billed_seconds_and_nothing_else():
    short, long = cost_per_million(10, 100, 0.0, COUNTED), cost_per_million(10, 200, 0.0, COUNTED)
    added = 1_000_000 * 0.1 * GB_SECOND  # a million jobs, 100 ms more each
    assert long["parts"]["lambda_compute"] - short["parts"]["lambda_compute"] == pytest.approx(added, abs=1e-3)
    for part in ("sqs", "dynamodb", "lambda_requests"):
        assert long["parts"][part] == short["parts"][part]
    assert invocation_seconds(10, 200, COUNTED) - invocation_seconds(10, 100, COUNTED) == pytest.approx(1.0)


def test_duplicates_cost_their_messages_and_one_write_each_but_never_the_job():
    none, half = cost_per_million(10, 1000, 0.0, COUNTED), cost_per_million(10, 1000, 0.5, COUNTED)
    assert half["sqs_requests"]["publish"] == pytest.approx(1.5 * none["sqs_requests"]["publish"])
    writes = 500_000 * sum(COUNTED.duplicate_calls.values())
    assert half["parts"]["dynamodb"] - none["parts"]["dynamodb"] == pytest.approx(
        writes / 1e6 * cost.PRICES["dynamodb_per_million_write_units"], abs=1e-4
    )
    # 0.5 M records and their write, plus 50 000 more invocations: not 0.5 M more seconds of the 1 s job
    added_seconds = half["billed_seconds"] - none["billed_seconds"]
    expected = (500_000 * (cost.PER_RECORD_MS + cost.LATENCY_MS["dynamodb"]) + 50_000 * cost.PER_INVOCATION_MS) / 1000
    assert added_seconds == pytest.approx(expected, abs=1)


def test_the_concurrency_that_ten_million_jobs_a_day_need_and_the_setting_that_caps_them():
    slow = concurrency(10, 1000, COUNTED, max_concurrency=10)
    per_consumer = 10 / invocation_seconds(10, 1000, COUNTED)
    assert slow["jobs_per_second_per_consumer"] == pytest.approx(per_consumer, abs=0.01)
    needed = slow["consumers_for_jobs_per_day"]
    average = scaling.JOBS_PER_DAY / 86_400
    assert needed * per_consumer >= average > (needed - 1) * per_consumer  # the fewest that keep up
    assert slow["caps_jobs_per_day"] == f"max_concurrency 10: raise it to {needed}"
    assert slow["jobs_per_day_at_max_concurrency"] < scaling.JOBS_PER_DAY
    # AWS adds up to 300 concurrent invocations a minute from 5
    assert slow["minutes_to_scale_to_them"] == pytest.approx((needed - 5) / 300, abs=0.01)
    fast = concurrency(10, 10, COUNTED, max_concurrency=10)
    assert fast["caps_jobs_per_day"].startswith("none") and fast["consumers_for_jobs_per_day"] >= 2
    assert fast["jobs_per_day_at_max_concurrency"] > scaling.JOBS_PER_DAY


def test_the_counts_come_from_the_bench_figures():
    measured = {
        "publisher": {"ours_per_1000": 100},
        "consume": {"clean": {"invocations": 100, "by_operation": {"ReceiveMessage": 120, "DeleteMessageBatch": 100}}},
        "idempotency": {"new_per_1000": {"PutItem": 1000, "UpdateItem": 1000}, "duplicate_per_1000": {"PutItem": 1000}},
    }
    counted = Counted.from_bench(measured, memory_mb=512)
    assert (counted.publish_requests_per_message, counted.receives_per_batch, counted.deletes_per_batch) == (
        0.1,
        1.2,
        1.0,
    )
    assert counted.new_job_calls == {"PutItem": 1.0, "UpdateItem": 1.0} and counted.memory_mb == 512
    rows = scaling.table(counted)
    assert len(rows) == len(scaling.BATCH_SIZES) * len(scaling.DURATIONS_MS)
    assert "| 10 | 1 s |" in scaling.markdown(rows)


def test_waiting_in_an_invocation_is_billed_and_a_held_copy_costs_a_fraction_of_it():
    def limiter(**values):
        base = {"reads_per_job": 0.0, "writes_per_job": 0.0, "resends_per_job": 0.0, "wait_seconds_per_job": 0.0}
        return cost.rate_limiter_per_million_jobs(**{**base, **values}, memory_mb=256)

    waiting = limiter(wait_seconds_per_job=1.0)
    assert waiting["parts"]["lambda_waiting"] == pytest.approx(1_000_000 * GB_SECOND, abs=1e-3)
    held = limiter(resends_per_job=1.0)
    assert held["parts"]["sqs_resends"] == pytest.approx(0.3 * cost.PRICES["sqs_per_million_requests"], abs=1e-4)
    assert held["parts"]["lambda_copies"] > 0  # the copy's return is an invocation's share and a record
    assert held["usd_per_million_jobs"] < limiter(wait_seconds_per_job=0.1)["usd_per_million_jobs"]
