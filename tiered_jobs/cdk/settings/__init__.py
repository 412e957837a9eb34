"""The settings model: everything a user sets in ``cdk.json`` context, with defaults and validation.

All settings live under the context key ``tiered_jobs`` (``CONTEXT_KEY``). ``AppSettings.from_context``
turns that raw dictionary into frozen dataclasses and fails early, before any construct is built,
with a ``SettingsError`` that names the tier, the key and the fix. Unknown keys are errors too (a
typo must not silently fall back to a default).

Per tier, the values come from (last wins): the generic ``TierSettings`` defaults, the built-in
preset of that tier name (``TIER_PRESETS``), then the tier's object in ``cdk.json``.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from tiered_jobs.contract import cron
from tiered_jobs.contract.names import (
    CONTEXT_KEY,
    DEFAULT_TIERS,
    LOCAL_OVERRIDES_CONTEXT_KEY,
    RESOURCE_NAME_MAX_CHARS,
    RESOURCE_NAME_PATTERN,
    SQS_MAX_VISIBILITY_SECONDS,
    STAGE_NAME_PATTERN,
    TIER_NAME_PATTERN,
    Schedules,
)
from tiered_jobs.contract.rate_limits import RateLimit, RateLimits
from tiered_jobs.contract.routing import Routes, UnknownRouteError
from tiered_jobs.contract.schedules import (
    ONE_TIME_PREFIX,
    PERIODIC_NAME,
    periodic_problems,
)

from .rate_limits import parse as parse_rate_limits

if TYPE_CHECKING:
    from aws_cdk import RemovalPolicy

#: Retention periods CloudWatch Logs accepts (days).
LOG_RETENTION_DAYS: tuple[int, ...] = (
    1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653,
)
#: Lambda runtimes the AWS-managed Powertools layer is published for (and the consumer supports).
RUNTIMES: tuple[str, ...] = ("python3.10", "python3.11", "python3.12", "python3.13", "python3.14")
ARCHITECTURES: tuple[str, ...] = ("arm64", "x86_64")
#: ``false`` / ``true`` / this string: also create the account-wide schema registry.
CREATE_REGISTRY = "create_registry"

_VERSION = re.compile(r"^(latest|\d+\.\d+\.\d+)$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")

# Service limits used by the checks below.
_LAMBDA_MAX_TIMEOUT = 900
_LAMBDA_MEMORY = (128, 10_240)
_ESM_MAX_WINDOW = 300
_ESM_MAX_BATCH = 10_000
_ESM_CONCURRENCY = (2, 1000)
_SQS_RETENTION_DAYS = (1, 14)


class SettingsError(ValueError):
    """Malformed or unsafe ``cdk.json`` context; the message says where and how to fix it."""


@dataclass(frozen=True)
class TierSettings:
    """One tier: its queue, DLQ, consumer, event source mapping and alarms.

    ``None`` in ``visibility_timeout_seconds`` / ``redrive_max_receive_count`` means "derived":
    read the ``visibility_timeout`` / ``max_receive_count`` properties.
    """

    name: str
    #: Attempts (receives) of one job before the consumer dead-letters it with reason ``retries_exhausted``.
    max_attempts: int = 5
    #: Delay before retry 1, 2, ... (seconds); the last one repeats. The consumer applies it as visibility.
    retry_schedule_seconds: tuple[int, ...] = (5, 30, 120, 600)
    #: Each delay is drawn from ``delay * (1 ± jitter)`` so failed jobs do not retry in lock-step.
    retry_jitter: float = 0.2
    timeout_seconds: int = 30
    #: The consumer starts no record when less than this remains of its invocation (ms); the
    #: records not started return at once. ``None``: derived, see ``time_budget_margin``.
    time_budget_margin_ms: int | None = None
    memory_mb: int = 256
    batch_size: int = 10
    batching_window_seconds: int = 0
    #: The event source mapping's maximum concurrency: how many consumers one tier may run at once.
    max_concurrency: int = 10
    #: Reserved concurrency of the consumer (``None``: share the account pool).
    reserved_concurrency: int | None = None
    #: ``None``: 6 x timeout + batching window, the AWS recommendation for SQS event sources.
    visibility_timeout_seconds: int | None = None
    #: ``None``: ``max_attempts``, so SQS redrive (crash / timeout safety net) never cuts retries short.
    redrive_max_receive_count: int | None = None
    retention_days: int = 4
    dlq_retention_days: int = 14
    #: How long a finished job's idempotency record is kept (a duplicate after that runs again).
    #: ``None``: (``retention_days`` + ``dlq_retention_days``) x 86400, the longest a message can
    #: live in the queue and then the DLQ, so a replayed letter never runs a finished job again.
    #: Filled in at construction: read it as a plain ``int``.
    idempotency_ttl_seconds: int | None = None
    #: ``True`` accepts an ``idempotency_ttl_seconds`` below that window (an explicit opt-out: a
    #: letter replayed after its record expired runs its job's side effect again).
    allow_short_idempotency_window: bool = False
    #: Alarm when the DLQ holds more than this many visible messages (0: any message pages).
    dlq_alarm_threshold: int = 10
    oldest_message_age_alarm_seconds: int = 300
    #: Alarm when 100 x JobsFailed / (JobsSucceeded + JobsFailed) over 5 minutes exceeds this
    #: percentage (JobsFailed: jobs failed for good, never a retried attempt).
    failure_rate_alarm_percent: float = 1.0
    #: ...and only once at least this many jobs finished in those 5 minutes (below it the rate is 0).
    failure_rate_min_jobs: int = 20
    #: Alarm when the consumer's p99 duration exceeds this share of its timeout.
    duration_alarm_percent_of_timeout: float = 80.0
    #: Tier-wide rate limit: jobs per second across every consumer of the tier (``None``: no limit).
    rate_limit_per_second: float | None = None
    #: Jobs the tier-wide bucket saves up while idle (``None`` in cdk.json: one second's worth).
    rate_limit_burst: int | None = None
    #: Per job-type glob, its own bucket: ``{"notifications.*": RateLimit(14, 14)}``.
    rate_limits: Mapping[str, RateLimit] = field(default_factory=dict)
    #: Longest wait for tokens inside one invocation (``None`` in cdk.json: min(10, timeout / 2)).
    rate_limit_max_wait_seconds: float | None = None

    def __post_init__(self) -> None:
        if self.idempotency_ttl_seconds is None:
            object.__setattr__(self, "idempotency_ttl_seconds", self.replay_window_seconds)

    @property
    def replay_window_seconds(self) -> int:
        """The longest a job's message lives: main-queue retention, then DLQ retention (a replay's reach)."""
        return (self.retention_days + self.dlq_retention_days) * 86_400

    @property
    def visibility_timeout(self) -> int:
        if self.visibility_timeout_seconds is not None:
            return self.visibility_timeout_seconds
        return 6 * self.timeout_seconds + self.batching_window_seconds

    @property
    def time_budget_margin(self) -> int:
        """Milliseconds kept free at the end of an invocation: ``time_budget_margin_ms``, or
        10 % of the timeout but at least 2 s, and never more than half the timeout."""
        if self.time_budget_margin_ms is not None:
            return self.time_budget_margin_ms
        timeout_ms = self.timeout_seconds * 1000
        return min(max(2_000, timeout_ms // 10), timeout_ms // 2)

    @property
    def max_receive_count(self) -> int:
        return self.redrive_max_receive_count if self.redrive_max_receive_count is not None else self.max_attempts

    @property
    def limits(self) -> RateLimits | None:
        """The tier's rate limits as the consumer reads them, or ``None`` when it has none."""
        tier_limit = None
        if self.rate_limit_per_second is not None:
            tier_limit = RateLimit(self.rate_limit_per_second, self.rate_limit_burst or 1)
        limits = RateLimits(tier_limit, dict(self.rate_limits), self.rate_limit_max_wait_seconds or 0.0)
        return limits if limits.enabled else None

    @property
    def duration_alarm_threshold_ms(self) -> float:
        return self.timeout_seconds * 1000 * self.duration_alarm_percent_of_timeout / 100


#: Built-in per-tier defaults on top of the generic ``TierSettings`` defaults.
TIER_PRESETS: dict[str, dict[str, Any]] = {
    # Money moves here: small batches (one slow job delays few others), no batching window,
    # more concurrency and memory, page on the first dead letter and on a one-minute backlog.
    "critical": {
        "batch_size": 5, "batching_window_seconds": 0, "max_concurrency": 20, "memory_mb": 512,
        "dlq_alarm_threshold": 0, "oldest_message_age_alarm_seconds": 60,
    },
    # User-facing side effects (e-mails, notifications): default batches, five minutes of backlog.
    "transactional": {
        "batch_size": 10, "batching_window_seconds": 0, "max_concurrency": 10,
        "dlq_alarm_threshold": 10, "oldest_message_age_alarm_seconds": 300,
    },
    # Throughput over latency: wait up to 5 s to fill batches, few consumers, an hour of backlog is fine.
    "bulk": {
        "batch_size": 10, "batching_window_seconds": 5, "max_concurrency": 5, "timeout_seconds": 60,
        "dlq_alarm_threshold": 10, "oldest_message_age_alarm_seconds": 3600,
    },
}

#: The default routing table (job-type glob -> tier); see ``tiered_jobs.contract.routing``.
DEFAULT_ROUTES: dict[str, str] = {
    "payments.*": "critical",
    "notifications.*": "transactional",
    "analytics.*": "bulk",
    "demo.*": "transactional",
}

_TIER_FIELDS = tuple(f.name for f in dataclasses.fields(TierSettings) if f.name != "name")
_OPTIONAL_TIER_FIELDS = {"reserved_concurrency", "visibility_timeout_seconds", "redrive_max_receive_count"}


@dataclass(frozen=True)
class AppSettings:
    """The whole application: stage, data safety, runtime, alarm delivery, tiers and routes."""

    #: Names the stack, SSM parameters, functions and alarms; ``-c stage=prod`` overrides it.
    stage: str = "dev"
    #: ``False``: queues, DLQs, tables and log groups are retained when the stack is deleted.
    disposable: bool = False
    runtime: str = "python3.13"
    #: Graviton (``arm64``) is about 20 % cheaper than ``x86_64`` for the same duration.
    architecture: str = "arm64"
    #: Version of the AWS-managed Powertools layer; match ``aws-lambda-powertools`` in requirements.txt.
    powertools_version: str = "3.37.0"
    log_retention_days: int = 30
    #: Days the replay function's discard archive keeps a letter (the S3 bucket's lifecycle expiry).
    discard_archive_days: int = 365
    alarm_email: str | None = None
    #: E.g. a PagerDuty CloudWatch integration endpoint.
    alarm_https_url: str | None = None
    #: ``False``, ``True`` (schemas in the existing console registry) or ``"create_registry"``.
    console_test_events: bool | str = False
    tiers: tuple[TierSettings, ...] = field(
        default_factory=lambda: tuple(_build_tier(name, {}) for name in DEFAULT_TIERS)
    )
    routes: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_ROUTES))
    #: Periodic jobs (EventBridge Scheduler), ``schedules`` in ``cdk.json``; see ``ScheduleSettings``.
    schedules: tuple[ScheduleSettings, ...] = ()
    #: AWS resources the jobs use, ``resources`` in ``cdk.json``; see ``ResourceSettings``.
    resources: tuple[ResourceSettings, ...] = ()

    @property
    def tier_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.tiers)

    def tier(self, name: str) -> TierSettings:
        for tier in self.tiers:
            if tier.name == name:
                return tier
        raise KeyError(name)

    @property
    def removal_policy(self) -> RemovalPolicy:
        """What deleting the stack does to the stateful parts (queues, tables, log groups, keys, the schedule
        group): ``DESTROY`` when ``disposable``, else ``RETAIN``."""
        from aws_cdk import (
            RemovalPolicy,  # here: the settings stay importable (and fast) without jsii
        )

        return RemovalPolicy.DESTROY if self.disposable else RemovalPolicy.RETAIN

    def tiers_using(self, resource: ResourceSettings) -> frozenset[str]:
        """The tiers whose consumers run jobs of ``resource.job_types``: only they get its variable and grant."""
        return _tiers_of(resource.job_types, Routes(self.routes))

    @classmethod
    def from_context(cls, raw: Mapping[str, Any] | None, *, stage: str | None = None,
                     source: str | None = None) -> AppSettings:
        """Validate the object under ``tiered_jobs`` in ``cdk.json``; ``stage`` (CLI ``-c stage=``) wins.

        ``source`` names where the settings come from in messages (default: ``context 'tiered_jobs'``;
        the construct says ``TieredJobs('Jobs')`` for settings given in code).
        """
        where = source or f"context {CONTEXT_KEY!r}"
        raw = {} if raw is None else raw
        if not isinstance(raw, Mapping):
            raise SettingsError(f"{where} must be an object, got {type(raw).__name__}")
        allowed = tuple(f.name for f in dataclasses.fields(cls))
        _reject_unknown(raw, allowed, where)
        values: dict[str, Any] = {}
        default = _field_defaults(cls)

        stage_value = stage if stage is not None else raw.get("stage", default["stage"])
        if not isinstance(stage_value, str) or not STAGE_NAME_PATTERN.match(stage_value):
            raise SettingsError(
                f"{where}: stage {stage_value!r} is invalid; use lower-case letters, digits and '-', "
                f"starting with a letter, at most 20 characters (e.g. 'dev', 'prod')"
            )
        values["stage"] = stage_value
        values["disposable"] = _bool(raw, "disposable", default["disposable"], where)
        values["runtime"] = _choice(raw, "runtime", default["runtime"], RUNTIMES, where)
        values["architecture"] = _choice(raw, "architecture", default["architecture"], ARCHITECTURES, where)
        version = raw.get("powertools_version", default["powertools_version"])
        if not isinstance(version, str) or not _VERSION.match(version):
            raise SettingsError(
                f"{where}: powertools_version {version!r} is invalid; use a released version like '3.37.0' "
                f"(the one pinned in requirements.txt) or 'latest'"
            )
        values["powertools_version"] = version
        retention = _int(raw, "log_retention_days", default["log_retention_days"], where, minimum=1)
        if retention not in LOG_RETENTION_DAYS:
            raise SettingsError(
                f"{where}: log_retention_days {retention} is not a CloudWatch Logs retention; "
                f"use one of {', '.join(map(str, LOG_RETENTION_DAYS))}"
            )
        values["log_retention_days"] = retention
        values["discard_archive_days"] = _int(
            raw, "discard_archive_days", default["discard_archive_days"], where, minimum=1
        )
        values["alarm_email"] = _optional_str(
            raw, "alarm_email", where, _EMAIL, "an e-mail address like oncall@example.com"
        )
        url = _optional_str(raw, "alarm_https_url", where, re.compile(r"^https://\S+$"), "an https:// URL")
        values["alarm_https_url"] = url
        events = raw.get("console_test_events", default["console_test_events"])
        if not (isinstance(events, bool) or events == CREATE_REGISTRY):
            raise SettingsError(
                f"{where}: console_test_events {events!r} is invalid; use false, true "
                f"(the 'lambda-testevent-schemas' registry exists) or {CREATE_REGISTRY!r} (create it too)"
            )
        values["console_test_events"] = events

        tiers_raw = raw.get("tiers")
        if tiers_raw is None:
            tiers_raw = {tier.name: {} for tier in default["tiers"]}
        if not isinstance(tiers_raw, Mapping) or not tiers_raw:
            raise SettingsError(
                f"{where}: tiers must be a non-empty object {{tier name: {{settings}}}}, e.g. "
                f'{{"critical": {{}}, "bulk": {{"max_concurrency": 2}}}}'
            )
        values["tiers"] = tuple(_build_tier(name, tier_raw) for name, tier_raw in tiers_raw.items())

        routes_raw = raw.get("routes", default["routes"])
        try:
            routes = Routes(routes_raw)
        except (TypeError, ValueError) as error:
            raise SettingsError(f"{where}: routes: {error}") from None
        tier_names = [t.name for t in values["tiers"]]
        unknown = routes.unknown_tiers(tier_names)
        if unknown:
            pattern, tier = sorted(unknown.items())[0]
            raise SettingsError(
                f"{where}: route {pattern!r} -> tier {tier!r}: unknown tier; "
                f"route it to one of {', '.join(tier_names)} or add {tier!r} under 'tiers'"
            )
        values["routes"] = routes.table
        values["schedules"] = _build_schedules(raw.get(Schedules.SETTINGS_KEY, {}), routes, tier_names, where)
        values["resources"] = _build_resources(raw.get("resources", {}), routes, where)
        return cls(**values)


def _field_defaults(cls: type) -> dict[str, Any]:
    """Each field's default as the dataclass declares it (the one place a default is written)."""
    defaults = {}
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            defaults[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            defaults[f.name] = f.default_factory()
    return defaults


def _build_tier(name: Any, raw: Any) -> TierSettings:
    """Generic defaults, then the preset of that name, then the user's values; validated."""
    if not isinstance(name, str) or not TIER_NAME_PATTERN.match(name):
        raise SettingsError(
            f"tier {name!r}: invalid name; use lower-case letters, digits and '-', starting with a letter, "
            f"at most 30 characters (it becomes part of resource names)"
        )
    where = f"tier {name!r}"
    if not isinstance(raw, Mapping):
        raise SettingsError(f"{where}: settings must be an object (use {{}} for all defaults), got {raw!r}")
    _reject_unknown(raw, _TIER_FIELDS, where)
    merged = {**TIER_PRESETS.get(name, {}), **raw}
    base = TierSettings(name=name)
    v: dict[str, Any] = {}

    def num(key: str, minimum: int, maximum: int | None = None, unit: str = "") -> int:
        return _int(merged, key, getattr(base, key), where, minimum=minimum, maximum=maximum, unit=unit)

    v["max_attempts"] = num("max_attempts", 1, 100)
    schedule = merged.get("retry_schedule_seconds", base.retry_schedule_seconds)
    if (
        not isinstance(schedule, (list, tuple))
        or not schedule
        or any(
            isinstance(s, bool) or not isinstance(s, int) or s < 0 or s > SQS_MAX_VISIBILITY_SECONDS for s in schedule
        )
    ):
        raise SettingsError(
            f"{where}: retry_schedule_seconds {schedule!r} is invalid; use a non-empty list of whole seconds "
            f"between 0 and {SQS_MAX_VISIBILITY_SECONDS} (SQS's longest visibility timeout), e.g. [5, 30, 120, 600]"
        )
    v["retry_schedule_seconds"] = tuple(schedule)
    jitter = _number(merged, "retry_jitter", base.retry_jitter, where)
    if not 0 <= jitter < 1:
        raise SettingsError(f"{where}: retry_jitter {jitter} must be in [0, 1) (0.2 means ±20 %)")
    v["retry_jitter"] = jitter
    v["timeout_seconds"] = num("timeout_seconds", 1, _LAMBDA_MAX_TIMEOUT, " s (Lambda's limit)")
    v["memory_mb"] = num("memory_mb", _LAMBDA_MEMORY[0], _LAMBDA_MEMORY[1], " MB (Lambda's limits)")
    if merged.get("time_budget_margin_ms") is not None:  # below the timeout, or no record would ever start
        v["time_budget_margin_ms"] = num("time_budget_margin_ms", 1, v["timeout_seconds"] * 1000 - 1,
                                         f" ms (less than timeout_seconds {v['timeout_seconds']} s)")
    v["batch_size"] = num("batch_size", 1, _ESM_MAX_BATCH)
    v["batching_window_seconds"] = num("batching_window_seconds", 0, _ESM_MAX_WINDOW, " s")
    if v["batch_size"] > 10 and v["batching_window_seconds"] == 0:
        raise SettingsError(
            f"{where}: batch_size {v['batch_size']} needs a batching window (SQS event sources allow more "
            f"than 10 records only with one); set batching_window_seconds to at least 1 or batch_size to 10 or less"
        )
    v["max_concurrency"] = num("max_concurrency", *_ESM_CONCURRENCY, " (the event source mapping's limits)")
    for key in _OPTIONAL_TIER_FIELDS:
        v[key] = None if merged.get(key) is None else num(key, 1)
    if v["reserved_concurrency"] is not None and v["reserved_concurrency"] < v["max_concurrency"]:
        raise SettingsError(
            f"{where}: reserved_concurrency {v['reserved_concurrency']} is below max_concurrency "
            f"{v['max_concurrency']}: throttled batches go back to the queue and count as receives, so jobs "
            f"reach the DLQ early; raise reserved_concurrency or lower max_concurrency"
        )
    v["retention_days"] = num("retention_days", *_SQS_RETENTION_DAYS, " days (SQS's limits)")
    v["dlq_retention_days"] = num("dlq_retention_days", *_SQS_RETENTION_DAYS, " days (SQS's limits)")
    v["idempotency_ttl_seconds"] = None if merged.get("idempotency_ttl_seconds") is None else num(
        "idempotency_ttl_seconds", 1)
    v["allow_short_idempotency_window"] = _bool(merged, "allow_short_idempotency_window",
                                                base.allow_short_idempotency_window, where)
    v["dlq_alarm_threshold"] = num("dlq_alarm_threshold", 0)
    v["oldest_message_age_alarm_seconds"] = num("oldest_message_age_alarm_seconds", 1)
    v["failure_rate_alarm_percent"] = _percent(merged, "failure_rate_alarm_percent", base, where)
    v["failure_rate_min_jobs"] = num("failure_rate_min_jobs", 1)
    v["duration_alarm_percent_of_timeout"] = _percent(merged, "duration_alarm_percent_of_timeout", base, where)
    try:
        v.update(parse_rate_limits(merged, v))
    except ValueError as exc:
        raise SettingsError(f"{where}: {exc}") from None
    tier = TierSettings(name=name, **v)
    _check_guardrails(tier, where)
    return tier


def _check_guardrails(tier: TierSettings, where: str) -> None:
    """Cross-setting rules that protect delivery: each one would lose or duplicate work if broken."""
    minimum_visibility = 6 * tier.timeout_seconds + tier.batching_window_seconds
    if tier.visibility_timeout < minimum_visibility:
        raise SettingsError(
            f"{where}: visibility_timeout_seconds {tier.visibility_timeout} is below 6 x timeout_seconds "
            f"({tier.timeout_seconds}) + batching_window_seconds ({tier.batching_window_seconds}) = "
            f"{minimum_visibility}: a message would reappear while its batch is still running; "
            f"set visibility_timeout_seconds to at least {minimum_visibility} or remove it to use that default"
        )
    if tier.visibility_timeout > SQS_MAX_VISIBILITY_SECONDS:
        raise SettingsError(
            f"{where}: visibility timeout {tier.visibility_timeout} s exceeds SQS's limit of "
            f"{SQS_MAX_VISIBILITY_SECONDS} s; lower timeout_seconds / batching_window_seconds / "
            "visibility_timeout_seconds"
        )
    if tier.max_receive_count > tier.max_attempts:
        raise SettingsError(
            f"{where}: redrive_max_receive_count {tier.max_receive_count} is above max_attempts {tier.max_attempts}: "
            f"a job that crashes its consumer would be retried more often than the consumer allows; "
            f"set redrive_max_receive_count to {tier.max_attempts} or remove it to use max_attempts"
        )
    if tier.max_receive_count < tier.max_attempts:
        raise SettingsError(
            f"{where}: redrive_max_receive_count {tier.max_receive_count} is below max_attempts {tier.max_attempts}: "
            f"SQS would move jobs to the DLQ before the consumer's last attempts, without DeadLetter.* reasons; "
            f"set redrive_max_receive_count to {tier.max_attempts} or remove it to use max_attempts"
        )
    if tier.dlq_retention_days <= tier.retention_days:
        raise SettingsError(
            f"{where}: dlq_retention_days {tier.dlq_retention_days} must be longer than retention_days "
            f"{tier.retention_days}: SQS keeps a message's original enqueue time when it moves to the DLQ, so "
            f"dead letters would expire early; raise dlq_retention_days (at most 14) or lower retention_days"
        )
    assert tier.idempotency_ttl_seconds is not None  # __post_init__ sets the default
    if tier.idempotency_ttl_seconds < tier.replay_window_seconds and not tier.allow_short_idempotency_window:
        raise SettingsError(
            f"{where}: idempotency_ttl_seconds {tier.idempotency_ttl_seconds} is shorter than retention_days "
            f"({tier.retention_days}) + dlq_retention_days ({tier.dlq_retention_days}) = "
            f"{tier.replay_window_seconds} s: a letter replayed after its job's idempotency record expired would "
            f"run a finished job again; set idempotency_ttl_seconds to at least {tier.replay_window_seconds}, "
            f"remove it to use that default, or set allow_short_idempotency_window: true to accept that risk"
        )


def with_local_overrides(raw: Mapping[str, Any] | None, overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    """The raw settings with local mode's overrides (context ``LOCAL_OVERRIDES_CONTEXT_KEY``) applied.

    ``overrides["settings"]`` replace top-level keys (``stage``, ``disposable``, ``runtime``...);
    ``overrides["tier_settings"]`` are merged into every tier (the default tiers when none are
    named), each tier keeping its other values. The result is validated like any other settings.
    """
    merged = dict(raw or {})
    if not overrides:
        return merged
    where = f"context {LOCAL_OVERRIDES_CONTEXT_KEY!r}"
    if not isinstance(overrides, Mapping):
        raise SettingsError(f"{where} must be an object, got {type(overrides).__name__}")
    _reject_unknown(overrides, ("settings", "tier_settings"), where)
    merged.update(overrides.get("settings") or {})
    tier_settings = overrides.get("tier_settings") or {}
    if tier_settings:
        tiers = merged.get("tiers") or {name: {} for name in DEFAULT_TIERS}
        if isinstance(tiers, Mapping):
            merged["tiers"] = {name: {**(values or {}), **tier_settings} for name, values in tiers.items()}
    return merged


def _reject_unknown(raw: Mapping[str, Any], allowed: tuple[str, ...], where: str) -> None:
    unknown = sorted(set(raw) - set(allowed))
    if unknown:
        raise SettingsError(
            f"{where}: unknown key(s) {', '.join(map(repr, unknown))}; allowed keys: {', '.join(sorted(allowed))}"
        )


def _int(raw: Mapping[str, Any], key: str, default: int, where: str, *, minimum: int,
         maximum: int | None = None, unit: str = "") -> int:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise SettingsError(f"{where}: {key} must be a whole number, got {value!r}; e.g. {key}: {default}")
    if value < minimum or (maximum is not None and value > maximum):
        bounds = f"at least {minimum}" if maximum is None else f"between {minimum} and {maximum}{unit}"
        raise SettingsError(f"{where}: {key} {value} is out of range; use a value {bounds}")
    return value


def _number(raw: Mapping[str, Any], key: str, default: float, where: str) -> float:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise SettingsError(f"{where}: {key} must be a number, got {value!r}; e.g. {key}: {default}")
    return float(value)


def _percent(raw: Mapping[str, Any], key: str, base: TierSettings, where: str) -> float:
    value = _number(raw, key, getattr(base, key), where)
    if not 0 < value <= 100:
        raise SettingsError(f"{where}: {key} {value} must be a percentage in (0, 100]")
    return value


def _bool(raw: Mapping[str, Any], key: str, default: bool, where: str) -> bool:
    value = raw.get(key, default)
    if not isinstance(value, bool):
        raise SettingsError(f"{where}: {key} must be true or false, got {value!r}")
    return value


def _choice(raw: Mapping[str, Any], key: str, default: str, choices: tuple[str, ...], where: str) -> str:
    value: str = raw.get(key, default)
    if value not in choices:
        raise SettingsError(f"{where}: {key} {value!r} is not supported; use one of {', '.join(choices)}")
    return value


def _optional_str(raw: Mapping[str, Any], key: str, where: str, pattern: re.Pattern[str], example: str) -> str | None:
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not pattern.match(value):
        raise SettingsError(f"{where}: {key} {value!r} is invalid; use {example} or remove the key")
    return value


# -- periodic jobs ------------------------------------------------------------------------------

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


def _build_schedules(raw: Any, routes: Routes, tier_names: list[str], where: str) -> tuple[ScheduleSettings, ...]:
    if not isinstance(raw, Mapping):
        raise SettingsError(
            f"{where}: {Schedules.SETTINGS_KEY} must be an object {{name: {{schedule}}}}, e.g. "
            '{"nightly-report": {"expression": "cron(0 3 * * ? *)", "timezone": "Europe/Paris", '
            '"job_type": "analytics.record_event", "payload": {"event": "nightly"}}}'
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
    _reject_unknown(raw, _SCHEDULE_KEYS, where)
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
                "and publish one-time jobs with publish(..., at=...)")
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
            raise SettingsError(f"{where}: job type {job_type!r} is unroutable ({error}); add a route for it "
                                f"or set this schedule's 'tier'") from None
    assert tier is not None  # periodic_problems refused a job type that is not a string
    window = raw.get("flexible_window_minutes")
    if window is not None:
        window = _int(raw, "flexible_window_minutes", 15, where, minimum=_FLEXIBLE_WINDOW_MINUTES[0],
                      maximum=_FLEXIBLE_WINDOW_MINUTES[1], unit=" minutes (Scheduler's limits)")
    return ScheduleSettings(name=name, expression=expression, job_type=job_type, tier=tier, payload=dict(payload),
                            timezone=timezone_name, flexible_window_minutes=window)


# -- resources of the jobs ----------------------------------------------------------------------

#: ``kind`` of a resource, and what a tier's consumer may do with it (``access``; the first is the default).
TABLE, QUEUE = "table", "queue"
ACCESS: dict[str, tuple[str, ...]] = {TABLE: ("read_write", "read"), QUEUE: ("send",)}
#: ARNs of existing resources (any partition): a DynamoDB table, an SQS queue.
_ARN = {
    TABLE: re.compile(r"^arn:aws[a-z-]*:dynamodb:[a-z0-9-]+:\d{12}:table/[A-Za-z0-9_.-]{3,255}$"),
    QUEUE: re.compile(r"^arn:aws[a-z-]*:sqs:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,80}(\.fifo)?$"),
}
_ARN_EXAMPLE = {TABLE: "arn:aws:dynamodb:eu-west-1:123456789012:table/invoices",
                QUEUE: "arn:aws:sqs:eu-west-1:123456789012:audit"}
_ATTRIBUTE_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,255}$")
_RESOURCE_KEYS = ("kind", "job_types", "access", "partition_key", "sort_key", "arn")
_RESOURCE_EXAMPLE = (
    '{"invoices": {"kind": "table", "partition_key": "invoice_id", "job_types": ["invoices.*"]}, '
    '"audit": {"kind": "queue", "arn": "arn:aws:sqs:eu-west-1:123456789012:audit", "job_types": ["payments.*"]}}'
)


@dataclass(frozen=True)
class ResourceSettings:
    """One AWS resource the jobs use: a table this stack creates, or an existing table or queue by ARN.

    The consumers of the tiers whose routes carry ``job_types`` (globs) get its table name or queue
    URL in ``Env.resource_var(name)`` and a grant of ``access``; jobs read it with ``ctx.resource(name)``.
    """

    name: str
    #: ``"table"`` or ``"queue"``.
    kind: str
    #: Job-type globs whose jobs use the resource (``payments.update_balance``, ``invoices.*``).
    job_types: tuple[str, ...]
    #: Tables: ``"read_write"`` or ``"read"``; queues: ``"send"``.
    access: str
    #: A table this stack creates: its key attributes (strings). ``None`` for an existing resource.
    partition_key: str | None = None
    sort_key: str | None = None
    #: An existing table or queue (not created, not deleted by the stack).
    arn: str | None = None

    @property
    def created(self) -> bool:
        return self.arn is None


def _tiers_of(job_types: tuple[str, ...], routes: Routes) -> frozenset[str]:
    """Every tier a job matching one of ``job_types`` can be routed to.

    A glob reaches the tier it routes to itself and the tier of each more specific route inside it
    (``payments.*`` also reaches the tier of a ``payments.refund`` route).
    """
    tiers = set()
    for glob in job_types:
        for candidate in (glob, *(p for p in routes.table if fnmatch.fnmatchcase(p, glob))):
            try:
                tiers.add(routes.tier_for(candidate))
            except UnknownRouteError:
                continue
    return frozenset(tiers)


def _build_resources(raw: Any, routes: Routes, where: str) -> tuple[ResourceSettings, ...]:
    if not isinstance(raw, Mapping):
        raise SettingsError(f"{where}: resources must be an object {{name: {{resource}}}}, "
                            f"e.g. {_RESOURCE_EXAMPLE}")
    return tuple(_build_resource(name, value, routes) for name, value in raw.items())


def _build_resource(name: Any, raw: Any, routes: Routes) -> ResourceSettings:
    if not isinstance(name, str) or not RESOURCE_NAME_PATTERN.match(name) or len(name) > RESOURCE_NAME_MAX_CHARS:
        raise SettingsError(
            f"resource {name!r}: invalid name; use lower-case words joined by '_', each starting with a letter, "
            f"at most {RESOURCE_NAME_MAX_CHARS} characters (e.g. 'invoices', 'invoice_lines')"
        )
    where = f"resource {name!r}"
    if not isinstance(raw, Mapping):
        raise SettingsError(f"{where}: must be an object with keys {', '.join(_RESOURCE_KEYS)}, got {raw!r}")
    _reject_unknown(raw, _RESOURCE_KEYS, where)
    kind = raw.get("kind")
    if kind not in ACCESS:
        raise SettingsError(f"{where}: kind {kind!r} is not supported; use one of {', '.join(ACCESS)}")
    access = raw.get("access", ACCESS[kind][0])
    if access not in ACCESS[kind]:
        raise SettingsError(f"{where}: access {access!r} does not apply to a {kind}; use one of "
                            f"{', '.join(ACCESS[kind])} or remove 'access' for {ACCESS[kind][0]!r}")
    job_types = raw.get("job_types")
    if not isinstance(job_types, (list, tuple)) or not job_types or \
            any(not isinstance(glob, str) or not glob for glob in job_types):
        raise SettingsError(f"{where}: job_types must be a non-empty list of job-type globs, "
                            f"e.g. ['payments.update_balance'] or ['invoices.*']")
    arn = raw.get("arn")
    keys = {key: raw.get(key) for key in ("partition_key", "sort_key")}
    if arn is not None:
        if not isinstance(arn, str) or not _ARN[kind].match(arn):
            raise SettingsError(f"{where}: arn {arn!r} is not the ARN of an existing {kind}, e.g. {_ARN_EXAMPLE[kind]}")
        given = [key for key, value in keys.items() if value is not None]
        if given:
            raise SettingsError(f"{where}: {', '.join(given)} describe a table this stack creates; an existing "
                                f"one (arn) keeps its own keys: remove {', '.join(given)} or the arn")
    elif kind == QUEUE:
        raise SettingsError(f"{where}: a queue must be an existing one, named by its arn "
                            f"(the stack creates only tables for jobs)")
    else:
        if keys["partition_key"] is None:
            raise SettingsError(f"{where}: a table this stack creates needs a partition_key "
                                f"(e.g. 'partition_key': 'invoice_id'), or name an existing table by its arn")
        for key, value in keys.items():
            if value is not None and (not isinstance(value, str) or not _ATTRIBUTE_NAME.match(value)):
                raise SettingsError(f"{where}: {key} {value!r} is not a DynamoDB attribute name")
    job_types = tuple(job_types)
    if not _tiers_of(job_types, routes):
        raise SettingsError(
            f"{where}: no route carries job_types {', '.join(map(repr, job_types))}, so no tier would use it; "
            f"add a route for them or fix job_types"
        )
    return ResourceSettings(name=name, kind=kind, job_types=job_types, access=access, arn=arn, **keys)
