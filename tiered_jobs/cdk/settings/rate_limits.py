"""A tier's rate-limit settings, validated against the rest of the tier (see docs/configuration.md).

``rate_limit_per_second`` / ``rate_limit_burst`` set the tier-wide bucket, ``rate_limits`` one
bucket per job-type glob, ``rate_limit_max_wait_seconds`` how long a consumer may wait for
tokens inside an invocation (beyond it, a job is held in SQS with its token). Each problem
raises ``ValueError`` with a message naming the key and the fix; the settings model adds the tier.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tiered_jobs.contract.rate_limits import (
    DEFAULT_MAX_WAIT_SECONDS,
    RateLimit,
    RateLimits,
    default_burst,
)


def parse(merged: Mapping[str, Any], tier: Mapping[str, Any]) -> dict[str, Any]:
    """The four settings from the tier's merged raw values; ``tier`` holds its validated
    ``batch_size`` and ``timeout_seconds``."""
    per_second, burst = merged.get("rate_limit_per_second"), merged.get("rate_limit_burst")
    if burst is not None and per_second is None:
        raise ValueError(
            "rate_limit_burst needs rate_limit_per_second; set rate_limit_per_second (jobs per second across "
            "every consumer of the tier) or remove rate_limit_burst"
        )
    tier_limit = None
    if per_second is not None:
        try:
            tier_limit = RateLimit(per_second, default_burst(per_second) if burst is None else burst)
        except ValueError as exc:
            raise ValueError(f"rate_limit_per_second / rate_limit_burst: {exc}") from None

    raw_types = merged.get("rate_limits")
    raw_types = {} if raw_types is None else raw_types
    if not isinstance(raw_types, Mapping):
        raise ValueError(
            f'rate_limits must be an object {{job type glob: {{"per_second": ..., "burst": ...}}}}, got {raw_types!r}'
        )
    job_types = {pattern: RateLimit.parse(value, f"rate_limits[{pattern!r}]") for pattern, value in raw_types.items()}

    longest = tier["timeout_seconds"] / 2
    wait = merged.get("rate_limit_max_wait_seconds")
    if wait is not None:
        if tier_limit is None and not job_types:
            raise ValueError(
                "rate_limit_max_wait_seconds has no effect without a rate limit; set rate_limit_per_second or "
                "rate_limits, or remove it"
            )
        if isinstance(wait, bool) or not isinstance(wait, (int, float)) or not 0 <= wait <= longest:
            raise ValueError(
                f"rate_limit_max_wait_seconds {wait!r} must be a number from 0 to timeout_seconds / 2 ({longest:g}): "
                f"waiting for tokens must leave the invocation time to run its jobs"
            )
    max_wait = float(min(DEFAULT_MAX_WAIT_SECONDS, longest) if wait is None else wait)
    try:
        limits = RateLimits(tier_limit, job_types, max_wait)
    except ValueError as exc:
        raise ValueError(str(exc)) from None
    # A batch larger than what the wait bound admits is no longer refused: the jobs beyond it are
    # held in SQS with their tokens (a copy each, far cheaper than billed waiting).
    return {
        "rate_limit_per_second": per_second,
        "rate_limit_burst": tier_limit.burst if tier_limit else None,
        "rate_limits": job_types,
        "rate_limit_max_wait_seconds": max_wait if limits.enabled else None,
    }
