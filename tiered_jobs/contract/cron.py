"""EventBridge Scheduler's schedule expressions: parse ``cron(...)``, ``rate(...)``, ``at(...)`` and
compute the next fire time in a time zone.

Used by the settings validation (synthesis), the CLI's ``schedules`` listing and the local mode's
firing emulation, so all three read an expression the same way. Standard library only.

Supported, as AWS documents them (the EventBridge cron reference and "Schedule types on
EventBridge Scheduler"):

- ``cron(minutes hours day-of-month month day-of-week year)``, six fields:

  ========== ============ ===========================================
  field      values       wildcards
  ========== ============ ===========================================
  minutes    0-59         ``, - * /``
  hours      0-23         ``, - * /``
  day-of-mo  1-31         ``, - * ? /`` and ``L`` or ``nW`` (alone)
  month      1-12, JAN-DEC ``, - * /``
  day-of-wk  1-7, SUN-SAT ``, - * ?`` and ``L`` or ``n#k`` (alone)
  year       1970-2199    ``, - * /``
  ========== ============ ===========================================

  Exactly one of day-of-month and day-of-week is ``?``. ``L`` in day-of-week is Saturday (the
  last day of the week, 1 = Sunday). ``nW`` is the weekday (Mon-Fri) nearest to day ``n`` in the
  same month. ``n#k`` is the ``k``-th weekday ``n`` of the month (at most one such term).
  Ranges go upwards (``MON-FRI``; a wrapping ``FRI-MON`` is refused rather than guessed).
- ``rate(value unit)``: a positive whole value; ``minute`` / ``hour`` / ``day`` when the value
  is 1, ``minutes`` / ``hours`` / ``days`` otherwise. A rate schedule fires at its start
  (the schedule's ``StartDate``, else its creation) and every interval after it.
- ``at(yyyy-mm-ddThh:mm:ss)``: once, at that wall-clock time in the schedule's time zone.

Daylight saving time, as Scheduler documents it: a cron time that does not exist (spring
forward) is skipped; a cron time that happens twice (fall back) fires once, at its first
occurrence. Rates are fixed durations (a "day" is 24 hours).
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .errors import USAGE, TieredJobsError

YEARS = (1970, 2199)
_MONTHS = {
    name: i + 1
    for i, name in enumerate(("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"))
}
_DAYS = {name: i + 1 for i, name in enumerate(("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"))}
_RATE_UNITS = {"minute": 60, "hour": 3600, "day": 86_400}
_RATE = re.compile(r"^rate\((\d+) ([a-z]+)\)$")
_AT = re.compile(r"^at\((\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\)$")
_CRON = re.compile(r"^cron\((.*)\)$")


class ScheduleExpressionError(TieredJobsError, ValueError):
    """An expression Scheduler would refuse (or one we do not evaluate); the message says why."""

    code = USAGE


def zone(name: str) -> ZoneInfo:
    """The IANA time zone ``name`` (``UTC``, ``Europe/Paris``...), or :class:`ScheduleExpressionError`."""
    try:
        if not isinstance(name, str) or not name or name.startswith("/") or ".." in name:
            raise ValueError
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ScheduleExpressionError(
            f"unknown time zone {name!r}; use an IANA name such as 'UTC', 'Europe/Paris' or 'America/New_York'"
        ) from None


# -- cron -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Field:
    """One field of a cron expression: its name, its range and the names it accepts."""

    name: str
    low: int
    high: int
    names: dict[str, int]
    step: bool = True


_FIELDS = (
    _Field("minutes", 0, 59, {}),
    _Field("hours", 0, 23, {}),
    _Field("day-of-month", 1, 31, {}),
    _Field("month", 1, 12, _MONTHS),
    _Field("day-of-week", 1, 7, _DAYS, step=False),
    _Field("year", YEARS[0], YEARS[1], {}),
)


def _value(text: str, field: _Field) -> int:
    upper = text.upper()
    if upper in field.names:
        return field.names[upper]
    if not text.isdigit():
        names = f" or {next(iter(field.names))}-{list(field.names)[-1]}" if field.names else ""
        raise ScheduleExpressionError(f"{field.name}: {text!r} is not a number {field.low}-{field.high}{names}")
    value = int(text)
    if not field.low <= value <= field.high:
        raise ScheduleExpressionError(f"{field.name}: {value} is out of range {field.low}-{field.high}")
    return value


def _values(text: str, field: _Field) -> frozenset[int]:
    """A list of ``*``, ``a``, ``a-b``, optionally ``/step`` (where the field allows it)."""
    found: set[int] = set()
    for item in text.split(","):
        if not item:
            raise ScheduleExpressionError(f"{field.name}: empty item in {text!r}")
        base, slash, step_text = item.partition("/")
        if slash and not field.step:
            raise ScheduleExpressionError(f"{field.name}: '/' is not allowed in this field ({item!r})")
        step = 1
        if slash:
            if not step_text.isdigit() or int(step_text) < 1:
                raise ScheduleExpressionError(f"{field.name}: step in {item!r} must be a positive number")
            step = int(step_text)
        if base == "*":
            start, end = field.low, field.high
        elif "-" in base:
            first, _, last = base.partition("-")
            start, end = _value(first, field), _value(last, field)
            if start > end:
                raise ScheduleExpressionError(
                    f"{field.name}: range {base!r} goes backwards; write it upwards (e.g. MON-FRI) or as a list"
                )
        else:
            start = _value(base, field)
            end = field.high if slash else start
        found.update(range(start, end + 1, step))
    return frozenset(found)


@dataclass(frozen=True)
class Cron:
    """A parsed ``cron(...)``; :meth:`next_after` gives the next fire time."""

    text: str
    minutes: frozenset[int]
    hours: frozenset[int]
    months: frozenset[int]
    years: frozenset[int]
    #: Day-of-month: a set of days, ``"L"`` (last day) or ``("W", n)``; ``None`` when it is ``?``.
    days_of_month: frozenset[int] | str | tuple[str, int] | None
    #: Day-of-week (1 = Sunday): a set of days or ``("#", day, k)``; ``None`` when it is ``?``.
    days_of_week: frozenset[int] | tuple[str, int, int] | None

    @classmethod
    def parse(cls, text: str) -> Cron:
        match = _CRON.match(text)
        if not match:
            raise ScheduleExpressionError(f"{text!r} is not cron(...)")
        parts = match.group(1).split()
        if len(parts) != 6:
            raise ScheduleExpressionError(
                f"{text!r} has {len(parts)} field(s); EventBridge cron has 6: "
                "minutes hours day-of-month month day-of-week year, e.g. cron(0 9 ? * MON-FRI *)"
            )
        minutes_f, hours_f, dom_f, month_f, dow_f, year_f = _FIELDS
        minute, hour, dom, month, dow, year = parts
        if (dom == "?") == (dow == "?"):
            raise ScheduleExpressionError(
                f"{text!r}: exactly one of day-of-month and day-of-week must be '?' "
                "(e.g. cron(0 9 * * ? *) every day, cron(0 9 ? * MON *) every Monday)"
            )
        try:
            return cls(
                text=text,
                minutes=_values(minute, minutes_f),
                hours=_values(hour, hours_f),
                months=_values(month, month_f),
                years=_values(year, year_f),
                days_of_month=None if dom == "?" else _day_of_month(dom, dom_f),
                days_of_week=None if dow == "?" else _day_of_week(dow, dow_f),
            )
        except ScheduleExpressionError as exc:
            raise ScheduleExpressionError(f"{text!r}: {exc}") from None

    def matches_day(self, day: date) -> bool:
        dom, dow = self.days_of_month, self.days_of_week
        if dom is not None:
            last = calendar.monthrange(day.year, day.month)[1]
            if dom == "L":
                return day.day == last
            if isinstance(dom, tuple):
                return day.day == _nearest_weekday(day.year, day.month, dom[1])
            return day.day in dom
        weekday = day.isoweekday() % 7 + 1  # Sunday = 1 ... Saturday = 7
        if isinstance(dow, tuple):
            _, wanted, nth = dow
            return weekday == wanted and (day.day - 1) // 7 + 1 == nth
        return dow is not None and weekday in dow

    def next_after(self, after: datetime, tz: ZoneInfo) -> datetime | None:
        """The first fire strictly after ``after`` (aware), in ``tz``; ``None`` if it never fires again."""
        local = after.astimezone(tz).replace(tzinfo=None, second=0, microsecond=0)
        hours, minutes = sorted(self.hours), sorted(self.minutes)
        for year in sorted(y for y in self.years if y >= local.year):
            for month in sorted(self.months):
                if (year, month) < (local.year, local.month):
                    continue
                first = local.day if (year, month) == (local.year, local.month) else 1
                for day_number in range(first, calendar.monthrange(year, month)[1] + 1):
                    day = date(year, month, day_number)
                    if not self.matches_day(day):
                        continue
                    for hour in hours:
                        for minute in minutes:
                            wall = datetime(year, month, day_number, hour, minute)
                            if wall < local:
                                continue
                            fire = _localize(wall, tz)
                            if fire is not None and fire > after:
                                return fire
        return None


def _day_of_month(text: str, field: _Field) -> frozenset[int] | str | tuple[str, int]:
    if text == "L":
        return "L"
    if text.endswith("W"):
        day = text[:-1]
        if not day.isdigit() or not 1 <= int(day) <= 31:
            raise ScheduleExpressionError(f"day-of-month: {text!r}: W needs a day 1-31 before it, e.g. 15W")
        return ("W", int(day))
    if "L" in text or "W" in text:
        raise ScheduleExpressionError(f"day-of-month: {text!r}: L and nW must stand alone in the field")
    return _values(text, field)


def _day_of_week(text: str, field: _Field) -> frozenset[int] | tuple[str, int, int]:
    if text == "L":
        return frozenset({7})
    if "#" in text:
        day, _, nth = text.partition("#")
        if "," in text or not nth.isdigit() or not 1 <= int(nth) <= 5:
            raise ScheduleExpressionError(
                f"day-of-week: {text!r}: use one n#k term (day 1-7 or SUN-SAT, k 1-5), e.g. 3#2 (2nd Tuesday)"
            )
        return ("#", _value(day, field), int(nth))
    if "L" in text.upper():  # no day name contains an L
        raise ScheduleExpressionError(f"day-of-week: {text!r}: L must stand alone (it means Saturday)")
    return _values(text, field)


def _nearest_weekday(year: int, month: int, day: int) -> int:
    """The weekday (Mon-Fri) nearest to ``day``, never leaving the month (the ``W`` rule)."""
    last = calendar.monthrange(year, month)[1]
    day = min(day, last)
    weekday = date(year, month, day).weekday()  # Monday = 0
    if weekday == 5:  # Saturday -> Friday, unless that leaves the month
        return day - 1 if day > 1 else day + 2
    if weekday == 6:  # Sunday -> Monday, unless that leaves the month
        return day + 1 if day < last else day - 2
    return day


def _localize(wall: datetime, tz: ZoneInfo) -> datetime | None:
    """``wall`` in ``tz`` (first occurrence when it happens twice); ``None`` when it does not exist."""
    aware = wall.replace(tzinfo=tz, fold=0)
    if aware.astimezone(timezone.utc).astimezone(tz).replace(tzinfo=None) != wall:
        return None  # skipped by a spring-forward transition
    return aware


# -- rate and at ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rate:
    """A ``rate(...)`` schedule expression: a fixed interval."""

    text: str
    interval: timedelta

    @classmethod
    def parse(cls, text: str) -> Rate:
        match = _RATE.match(text)
        if not match:
            raise ScheduleExpressionError(
                f"{text!r} is not a rate expression; use rate(<positive whole number> <unit>), "
                "e.g. rate(1 hour) or rate(15 minutes)"
            )
        value, unit = int(match.group(1)), match.group(2)
        singular = unit.rstrip("s") if unit.endswith("s") else unit
        if singular not in _RATE_UNITS or value < 1:
            raise ScheduleExpressionError(
                f"{text!r}: the unit must be minute(s), hour(s) or day(s) and the value at least 1"
            )
        expected = singular if value == 1 else singular + "s"
        if unit != expected:
            raise ScheduleExpressionError(f"{text!r}: write rate({value} {expected}) (singular only for 1)")
        return cls(text, timedelta(seconds=value * _RATE_UNITS[singular]))

    def next_after(self, after: datetime, start: datetime) -> datetime:
        """The first fire strictly after ``after`` of a rate schedule that started at ``start``."""
        if after < start:
            return start
        periods = (after - start) // self.interval + 1
        return start + periods * self.interval


@dataclass(frozen=True)
class At:
    """An ``at(...)`` schedule expression: one wall-clock time."""

    text: str
    wall: datetime

    @classmethod
    def parse(cls, text: str) -> At:
        match = _AT.match(text)
        if not match:
            raise ScheduleExpressionError(f"{text!r} is not at(yyyy-mm-ddThh:mm:ss)")
        try:
            wall = datetime.fromisoformat(match.group(1))
        except ValueError as exc:
            raise ScheduleExpressionError(f"{text!r}: {exc}") from None
        return cls(text, wall)

    @staticmethod
    def of(when: datetime) -> str:
        """``at(...)`` for an aware datetime, written in UTC (create it with time zone ``UTC``)."""
        return f"at({when.astimezone(timezone.utc).strftime('%Y-%m-%dT%H:%M:%S')})"

    def fire_time(self, tz: ZoneInfo) -> datetime | None:
        return _localize(self.wall, tz)


Expression = Cron | Rate | At


def parse(text: str) -> Expression:
    """Any Scheduler expression; :class:`ScheduleExpressionError` says what is wrong."""
    if not isinstance(text, str):
        raise ScheduleExpressionError(f"a schedule expression must be a string, got {text!r}")
    if text.startswith("cron("):
        return Cron.parse(text)
    if text.startswith("rate("):
        return Rate.parse(text)
    if text.startswith("at("):
        return At.parse(text)
    raise ScheduleExpressionError(
        f"{text!r} is not a schedule expression; use cron(minutes hours day-of-month month day-of-week year) "
        "or rate(value unit)"
    )


def next_fire(
    expression: Expression, tz: ZoneInfo, after: datetime, *, start: datetime | None = None
) -> datetime | None:
    """The next fire strictly after ``after``; rates need their ``start``. ``None``: no more fires."""
    if isinstance(expression, Cron):
        return expression.next_after(after, tz)
    if isinstance(expression, Rate):
        return expression.next_after(after, start if start is not None else after)
    fire = expression.fire_time(tz)
    return fire if fire is not None and fire > after else None
