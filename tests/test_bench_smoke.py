"""The benchmark runs end to end at small sizes and reports every figure (its numbers are not
judged here: targets live in the bench's own table, not in timed tests)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_bench_quick_run_reports_every_figure(tmp_path):
    out = tmp_path / "bench.json"
    result = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(out.read_text())
    figures = {row["figure"] for row in report["figures"]}
    assert {
        "SQS requests / 1 000 published jobs",
        "SQS requests / 1 000 replayed messages",
        "consumer asset (zipped)",
        "AWS cost / 1 M jobs",
        "warm path: consumer CPU / job (median)",
        "publisher CPU / 1 000 jobs (median)",
    } <= figures
    measured = report["measured"]
    cold, warm = measured["cold_start"], measured["warm"]
    assert cold["ratio_min"] <= cold["ratio_total"] <= cold["ratio_max"]
    for side in ("consumer", "consumer_unsigned", "publisher"):  # both sides measured, each job accepted
        assert warm[side]["ours_us_per_job"] > 0 and warm[side]["baseline_us_per_job"] > 0
    assert measured["publisher"]["ours_per_1000"] < measured["publisher"]["naive_per_1000"]
    assert measured["idempotency"]["in_container_duplicate_per_1000"] == 0
    assert "Tiered Jobs benchmarks" in result.stdout
