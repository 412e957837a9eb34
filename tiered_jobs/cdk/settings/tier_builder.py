"""Building one tier from ``cdk.json``: generic defaults, then the preset of its name, then the
user's values, each checked against its service limit, then the tier's rate limits and guardrails."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from tiered_jobs.contract.names import SQS_MAX_VISIBILITY_SECONDS, TIER_NAME_PATTERN
from tiered_jobs.contract.sqs_limits import MAX_JOB_MESSAGE_BYTES

from .rate_limits import parse as parse_rate_limits
from .tiers import DEPLOYMENTS, LOG_LEVELS, TIER_PRESETS, TierSettings, check_guardrails
from .values import SettingsError, read_bool, read_choice, read_int, read_number, reject_unknown

# Service limits used by the checks below.
_LAMBDA_MAX_TIMEOUT = 900
_LAMBDA_MEMORY = (128, 10_240)
_ESM_MAX_WINDOW = 300
_ESM_MAX_BATCH = 10_000
_ESM_CONCURRENCY = (2, 1000)
_SQS_RETENTION_DAYS = (1, 14)

_TIER_FIELDS = tuple(f.name for f in dataclasses.fields(TierSettings) if f.name != "name")
_OPTIONAL_TIER_FIELDS = {"reserved_concurrency", "visibility_timeout_seconds"}


def build_tier(name: Any, raw: Any) -> TierSettings:
    """Generic defaults, then the preset of that name, then the user's values; validated."""
    if not isinstance(name, str) or not TIER_NAME_PATTERN.match(name):
        raise SettingsError(
            f"tier {name!r}: invalid name; use lower-case letters, digits and '-', starting with a letter, "
            f"at most 30 characters (it becomes part of resource names)"
        )
    where = f"tier {name!r}"
    if not isinstance(raw, Mapping):
        raise SettingsError(f"{where}: settings must be an object (use {{}} for all defaults), got {raw!r}")
    if "redrive_max_receive_count" in raw:
        raise SettingsError(
            f"{where}: redrive_max_receive_count is no longer a setting: the queue's redrive count is always "
            f"max_attempts, the one value that neither retries a crashing job past the consumer's attempts nor "
            f"dead-letters it without reasons before its last one; remove it (set max_attempts instead)"
        )
    reject_unknown(raw, _TIER_FIELDS, where)
    merged = {**TIER_PRESETS.get(name, {}), **raw}
    base = TierSettings(name=name)
    v: dict[str, Any] = {}

    def num(key: str, minimum: int, maximum: int | None = None, unit: str = "") -> int:
        return read_int(merged, key, getattr(base, key), where, minimum=minimum, maximum=maximum, unit=unit)

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
    jitter = read_number(merged, "retry_jitter", base.retry_jitter, where)
    if not 0 <= jitter < 1:
        raise SettingsError(f"{where}: retry_jitter {jitter} must be in [0, 1) (0.2 means ±20 %)")
    v["retry_jitter"] = jitter
    v["timeout_seconds"] = num("timeout_seconds", 1, _LAMBDA_MAX_TIMEOUT, " s (Lambda's limit)")
    v["memory_mb"] = num("memory_mb", _LAMBDA_MEMORY[0], _LAMBDA_MEMORY[1], " MB (Lambda's limits)")
    if merged.get("time_budget_margin_ms") is not None:  # below the timeout, or no record would ever start
        v["time_budget_margin_ms"] = num(
            "time_budget_margin_ms",
            1,
            v["timeout_seconds"] * 1000 - 1,
            f" ms (less than timeout_seconds {v['timeout_seconds']} s)",
        )
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
    v["idempotency_ttl_seconds"] = (
        None if merged.get("idempotency_ttl_seconds") is None else num("idempotency_ttl_seconds", 1)
    )
    v["allow_short_idempotency_window"] = read_bool(
        merged, "allow_short_idempotency_window", base.allow_short_idempotency_window, where
    )
    v["dlq_alarm_threshold"] = num("dlq_alarm_threshold", 0)
    v["oldest_message_age_alarm_seconds"] = num("oldest_message_age_alarm_seconds", 1)
    v["failure_rate_alarm_percent"] = _percent(merged, "failure_rate_alarm_percent", base, where)
    v["failure_rate_min_jobs"] = num("failure_rate_min_jobs", 1)
    v["duration_alarm_percent_of_timeout"] = _percent(merged, "duration_alarm_percent_of_timeout", base, where)
    if merged.get("circuit_breaker_percent") is not None:
        v["circuit_breaker_percent"] = _percent(merged, "circuit_breaker_percent", base, where)
    v["circuit_breaker_min_jobs"] = num("circuit_breaker_min_jobs", 1)
    # CloudWatch alarms on standard-resolution metrics (the consumer's EMF) take whole minutes.
    v["circuit_breaker_minutes"] = num("circuit_breaker_minutes", 1, 60, " minutes (one alarm period)")
    v["log_level"] = read_choice(merged, "log_level", base.log_level, LOG_LEVELS, where)
    v["tracing"] = read_bool(merged, "tracing", base.tracing, where)
    v["large_payloads"] = read_bool(merged, "large_payloads", base.large_payloads, where)
    if merged.get("large_payload_threshold_bytes") is not None:
        if not v["large_payloads"]:
            raise SettingsError(
                f"{where}: large_payload_threshold_bytes is set but large_payloads is not: set large_payloads: "
                "true to store bodies over the threshold in S3, or remove large_payload_threshold_bytes"
            )
        v["large_payload_threshold_bytes"] = num(
            "large_payload_threshold_bytes",
            0,
            MAX_JOB_MESSAGE_BYTES,
            f" bytes (at most {MAX_JOB_MESSAGE_BYTES}: SQS's 1 MiB less the runtime's own attributes)",
        )
    v["deployment"] = read_choice(merged, "deployment", base.deployment, DEPLOYMENTS, where)
    try:
        v.update(parse_rate_limits(merged, v))
    except ValueError as exc:
        raise SettingsError(f"{where}: {exc}") from None
    tier = TierSettings(name=name, **v)
    check_guardrails(tier, where)
    return tier


def _percent(raw: Mapping[str, Any], key: str, base: TierSettings, where: str) -> float:
    value = read_number(raw, key, getattr(base, key), where)
    if not 0 < value <= 100:
        raise SettingsError(f"{where}: {key} {value} must be a percentage in (0, 100]")
    return value
