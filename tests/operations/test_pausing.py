"""The line ``status`` and the console show for a paused tier: who, since when, and the retention clock."""

from __future__ import annotations

from datetime import datetime, timezone

from tiered_jobs.operations.pausing import paused_line
from tiered_jobs.replay.pause import MappingState

NOW = datetime(2026, 12, 2, 6, 2, tzinfo=timezone.utc)
PAUSED = MappingState(
    "critical", "u", "Disabled", paused_by="arn:aws:iam::1:user/ana (cli)", paused_at="2026-12-02T05:50:00.000Z"
)


def test_the_line_names_who_since_when_and_the_oldest_job_against_the_retention():
    line = paused_line(PAUSED, oldest_age_seconds=660, retention=4 * 86400, now=NOW)
    assert line == (
        "critical: paused since 2026-12-02 05:50 UTC (12m), by arn:aws:iam::1:user/ana (cli); "
        "oldest job 11m old of 4d retention (SQS deletes it then)"
    )


def test_an_unknown_age_names_the_retention_alone_and_an_empty_queue_says_so():
    assert paused_line(PAUSED, oldest_age_seconds=None, retention=86400, now=NOW).endswith(
        "SQS deletes a job older than its 1d retention, paused or not"
    )
    assert paused_line(PAUSED, oldest_age_seconds=0, retention=86400, now=NOW).endswith("no job waiting (1d retention)")


def test_a_mapping_disabled_outside_tiered_jobs_says_so():
    other = MappingState("bulk", "u", "Disabled")
    assert paused_line(other, oldest_age_seconds=None, retention=None, now=NOW) == (
        "bulk: paused since an unknown time, by unknown (not paused by tiered-jobs)"
    )
