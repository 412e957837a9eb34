"""The EventBridge schedule-expression evaluator: next fire times for cron, rate and at, with time zones."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from tiered_jobs.contract import cron

UTC = timezone.utc


def fires(expression: str, after: datetime, count: int = 3, zone: str = "UTC") -> list[str]:
    parsed, tz, found = cron.parse(expression), cron.zone(zone), []
    for _ in range(count):
        after = cron.next_fire(parsed, tz, after)
        found.append(after.isoformat())
    return found


def test_every_fifteen_minutes_starting_at_a_given_minute():
    assert fires("cron(5/15 * * * ? *)", datetime(2030, 1, 1, 10, 50, tzinfo=UTC)) == [
        "2030-01-01T11:05:00+00:00",
        "2030-01-01T11:20:00+00:00",
        "2030-01-01T11:35:00+00:00",
    ]


def test_weekdays_by_name_and_strictly_after():
    # 2030-01-04 is a Friday; a fire exactly at `after` is not "next".
    assert fires("cron(0 9 ? * MON-FRI *)", datetime(2030, 1, 4, 9, 0, tzinfo=UTC), 2) == [
        "2030-01-07T09:00:00+00:00",
        "2030-01-08T09:00:00+00:00",
    ]


def test_last_day_of_month_and_l_in_day_of_week_is_saturday():
    assert fires("cron(0 0 L * ? *)", datetime(2032, 1, 31, 1, tzinfo=UTC), 2) == [
        "2032-02-29T00:00:00+00:00",
        "2032-03-31T00:00:00+00:00",
    ]  # leap year
    assert fires("cron(0 0 ? * L *)", datetime(2030, 1, 1, tzinfo=UTC), 1) == ["2030-01-05T00:00:00+00:00"]


def test_nearest_weekday_never_leaves_the_month():
    # 2030-06-01 is a Saturday: 1W is Monday the 3rd (not Friday May 31st).
    assert fires("cron(0 0 1W * ? 2030)", datetime(2030, 5, 15, tzinfo=UTC), 1) == ["2030-06-03T00:00:00+00:00"]
    # 2030-03-31 is a Sunday: 31W is Friday the 29th (not Monday April 1st).
    assert fires("cron(0 0 31W 3 ? 2030)", datetime(2030, 1, 1, tzinfo=UTC), 1) == ["2030-03-29T00:00:00+00:00"]
    # 2030-09-15 is a Sunday: 15W is Monday the 16th.
    assert fires("cron(0 0 15W 9 ? 2030)", datetime(2030, 1, 1, tzinfo=UTC), 1) == ["2030-09-16T00:00:00+00:00"]


def test_nth_weekday_of_the_month():
    # 3#2 = the second Tuesday (1 = Sunday).
    assert fires("cron(0 12 ? * 3#2 *)", datetime(2030, 1, 1, tzinfo=UTC), 2) == [
        "2030-01-08T12:00:00+00:00",
        "2030-02-12T12:00:00+00:00",
    ]


def test_year_list_and_a_time_zone():
    assert fires("cron(30 9 1 JAN ? 2031,2033)", datetime(2030, 6, 1, tzinfo=UTC), 2, "Asia/Kolkata") == [
        "2031-01-01T09:30:00+05:30",
        "2033-01-01T09:30:00+05:30",
    ]
    assert (
        cron.next_fire(cron.parse("cron(0 0 1 1 ? 2031)"), cron.zone("UTC"), datetime(2031, 1, 1, tzinfo=UTC)) is None
    )


def test_a_time_skipped_by_spring_forward_does_not_fire():
    # Paris moves 02:00 -> 03:00 on 2030-03-31: the 02:30 fire that day is skipped.
    assert fires("cron(30 2 * * ? *)", datetime(2030, 3, 30, 3, 0, tzinfo=UTC), 2, "Europe/Paris") == [
        "2030-04-01T02:30:00+02:00",
        "2030-04-02T02:30:00+02:00",
    ]


def test_a_time_repeated_by_fall_back_fires_once():
    # Paris repeats 02:00-03:00 on 2030-10-27: 02:30 fires at its first occurrence only.
    first = cron.next_fire(
        cron.parse("cron(30 2 * * ? *)"), cron.zone("Europe/Paris"), datetime(2030, 10, 26, 23, 0, tzinfo=UTC)
    )
    assert first.astimezone(UTC).isoformat() == "2030-10-27T00:30:00+00:00"  # 02:30 CEST
    second = cron.next_fire(cron.parse("cron(30 2 * * ? *)"), cron.zone("Europe/Paris"), first)
    assert second.astimezone(UTC).isoformat() == "2030-10-28T01:30:00+00:00"  # next day, 02:30 CET


def test_rate_fires_at_its_start_then_every_interval():
    rate, start = cron.parse("rate(5 minutes)"), datetime(2030, 1, 1, 10, 0, 7, tzinfo=UTC)
    assert cron.next_fire(rate, cron.zone("UTC"), start - timedelta(seconds=1), start=start) == start
    assert cron.next_fire(rate, cron.zone("UTC"), start, start=start) == start + timedelta(minutes=5)
    assert cron.next_fire(rate, cron.zone("UTC"), start + timedelta(minutes=12), start=start) == start + timedelta(
        minutes=15
    )
    assert cron.parse("rate(1 day)").interval == timedelta(hours=24)


def test_at_is_a_wall_clock_time_in_its_zone_and_fires_once():
    at = cron.parse("at(2030-07-01T09:00:00)")
    assert (
        cron.next_fire(at, ZoneInfo("America/New_York"), datetime(2030, 1, 1, tzinfo=UTC)).isoformat()
        == "2030-07-01T09:00:00-04:00"
    )
    assert cron.next_fire(at, cron.zone("UTC"), datetime(2030, 7, 1, 9, tzinfo=UTC)) is None
    assert cron.At.of(datetime(2030, 7, 1, 11, 0, 30, tzinfo=ZoneInfo("Europe/Paris"))) == "at(2030-07-01T09:00:30)"


@pytest.mark.parametrize(
    "text",
    [
        "cron(0 9 ? * 3#6 *)",
        "cron(0 9 32W * ? *)",
        "cron(0/0 * * * ? *)",
        "cron(0 9 ? * 5L *)",
        "cron(0 9 LW * ? *)",
        "at(2030-02-30T00:00:00)",
        "at(2030-01-01 00:00:00)",
        "rate(-1 minutes)",
        "cron(0 9 , * ? *)",
    ],
)
def test_unsupported_or_invalid_expressions_are_refused(text):
    with pytest.raises(cron.ScheduleExpressionError):
        cron.parse(text)
