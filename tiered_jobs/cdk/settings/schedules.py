"""Periodic jobs: ``schedules`` in ``cdk.json``, one EventBridge Scheduler schedule each."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from tiered_jobs.contract import cron
from tiered_jobs.contract.names import Schedules
from tiered_jobs.contract.routing import Routes, UnknownRouteError
from tiered_jobs.contract.schedules import (
    ONE_TIME_PREFIX,
    PERIODIC_NAME,
    periodic_problems,
)

from .values import SettingsError, read_int, reject_unknown

#: Scheduler's flexible time window (minutes) and expression length limits.
_FLEXIBLE_WINDOW_MINUTES = (1, 1440)
_MAX_EXPRESSION_CHARS = 256


@dataclass(frozen=True)
class ScheduleSettings:
    """One periodic job: an EventBridge Scheduler schedule that sends an envelope v1 to a tier queue."""

    name: str
    #: ``cron(minutes hours day-of-month month day-of-week year)`` or ``rate(value unit)``.
    expression: str
    job_type: str
    #: The tier whose queue receives the job: ``tier`` if set in ``cdk.json``, else the routes' choice.
    tier: str
    payload: Mapping[str, Any] = field(default_factory=dict)
    #: IANA time zone the expression is evaluated in (daylight saving time included).
    timezone: str = "UTC"
    #: ``None``: fire at the scheduled minute; else anywhere within this many minutes after it.
    flexible_window_minutes: int | None = None


_SCHEDULE_KEYS = ("expression", "timezone", "job_type", "payload", "flexible_window_minutes", "tier")


def build_schedules(raw: Any, routes: Routes, tier_names: list[str], where: str) -> tuple[ScheduleSettings, ...]:
    if not isinstance(raw, Mapping):
        raise SettingsError(
            f"{where}: {Schedules.SETTINGS_KEY} must be an object {{name: {{schedule}}}}, e.g. "
            '{"nightly-report": {"expression": "cron(0 3 * * ? *)", "timezone": "Europe/Paris", '
            '"job_type": "reports.nightly", "payload": {"day": "yesterday"}}}'
        )
    return tuple(_build_schedule(name, value, routes, tier_names) for name, value in raw.items())


def _build_schedule(name: Any, raw: Any, routes: Routes, tier_names: list[str]) -> ScheduleSettings:
    if not isinstance(name, str) or not PERIODIC_NAME.match(name) or name.startswith(ONE_TIME_PREFIX):
        raise SettingsError(
            f"schedule {name!r}: invalid name; use 1-64 lower-case letters, digits, '-', '_' or '.', starting with "
            f"a letter or digit and not with {ONE_TIME_PREFIX!r} (reserved for one-time jobs)"
        )
    where = f"schedule {name!r}"
    if not isinstance(raw, Mapping):
        raise SettingsError(f"{where}: must be an object with keys {', '.join(_SCHEDULE_KEYS)}, got {raw!r}")
    reject_unknown(raw, _SCHEDULE_KEYS, where)
    for key in ("expression", "job_type"):
        if key not in raw:
            raise SettingsError(f"{where}: {key} is required")
    expression = raw["expression"]
    try:
        if isinstance(expression, str) and len(expression) > _MAX_EXPRESSION_CHARS:
            raise cron.ScheduleExpressionError(f"longer than Scheduler's {_MAX_EXPRESSION_CHARS} characters")
        parsed = cron.parse(expression)
        if isinstance(parsed, cron.At):
            raise cron.ScheduleExpressionError(
                "at() is a one-time schedule; declare periodic jobs with cron() or rate(), "
                "and publish one-time jobs with publish(..., at=...)"
            )
        timezone_name = raw.get("timezone", "UTC")
        zone = cron.zone(timezone_name)
    except cron.ScheduleExpressionError as error:
        raise SettingsError(f"{where}: {error}") from None
    if isinstance(parsed, cron.Cron):
        if parsed.next_after(datetime.now(timezone.utc), zone) is None:
            raise SettingsError(f"{where}: {expression} never fires again (check the day, month and year fields)")
    job_type = raw["job_type"]
    payload = raw.get("payload", {})
    problems = periodic_problems(name, job_type, payload)
    if problems:
        raise SettingsError(f"{where}: its jobs would be invalid envelopes: {'; '.join(problems)}")
    tier = raw.get("tier")
    if tier is not None and tier not in tier_names:
        raise SettingsError(f"{where}: tier {tier!r} is unknown; use one of {', '.join(tier_names)} or remove 'tier'")
    if tier is None and isinstance(job_type, str):
        try:
            tier = routes.tier_for(job_type)
        except UnknownRouteError as error:
            raise SettingsError(
                f"{where}: job type {job_type!r} is unroutable ({error}); add a route for it "
                f"or set this schedule's 'tier'"
            ) from None
    assert tier is not None  # periodic_problems refused a job type that is not a string
    window = raw.get("flexible_window_minutes")
    if window is not None:
        window = read_int(
            raw,
            "flexible_window_minutes",
            15,
            where,
            minimum=_FLEXIBLE_WINDOW_MINUTES[0],
            maximum=_FLEXIBLE_WINDOW_MINUTES[1],
            unit=" minutes (Scheduler's limits)",
        )
    return ScheduleSettings(
        name=name,
        expression=expression,
        job_type=job_type,
        tier=tier,
        payload=dict(payload),
        timezone=timezone_name,
        flexible_window_minutes=window,
    )
