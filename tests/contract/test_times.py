"""The one text form of a moment (``tiered_jobs.contract.times``), written and read back."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from tiered_jobs.contract.times import iso_text, parse_iso


def test_a_moment_is_written_in_utc_with_milliseconds_and_z_and_read_back():
    moment = datetime(2026, 12, 2, 4, 5, 6, 789000, tzinfo=timezone(timedelta(hours=3)))
    assert iso_text(moment) == "2026-12-02T01:05:06.789Z"
    assert parse_iso(iso_text(moment)) == moment


@pytest.mark.parametrize("text", [None, "", "yesterday", "2026-13-01T00:00:00Z"])
def test_a_missing_or_garbled_time_is_absent_never_an_error(text):
    assert parse_iso(text) is None


def test_a_time_without_a_zone_is_utc():
    assert parse_iso("2026-12-02T01:05:06") == datetime(2026, 12, 2, 1, 5, 6, tzinfo=timezone.utc)
