"""A tier's rate-limit settings, validated against the rest of the tier (see docs/configuration.md).

``rate_limit_per_second`` / ``rate_limit_burst`` set the tier-wide bucket, ``rate_limits`` one
bucket per job-type glob, ``rate_limit_max_wait_seconds`` how long a consumer may wait for
tokens. Each problem raises ``ValueError`` with a message naming the key and the fix; the
settings model adds the tier.
"""

from __future__ import annotations

import math
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
    for name, limit in limits.buckets().items():
        _check_full_batch(name, limit, tier["batch_size"], max_wait, longest)
    return {
        "rate_limit_per_second": per_second,
        "rate_limit_burst": tier_limit.burst if tier_limit else None,
        "rate_limits": job_types,
        "rate_limit_max_wait_seconds": max_wait if limits.enabled else None,
    }


def _check_full_batch(name: str, limit: RateLimit, batch_size: int, wait: float, longest: float) -> None:
    """A full batch must fit a full bucket within the wait bound; otherwise every batch is partly
    re-sent even when nothing else runs, and those re-sends cost SQS calls for nothing."""
    admitted = limit.admitted_within(wait)
    if admitted >= batch_size:
        return
    where = "rate_limit_per_second / rate_limit_burst" if name == "tier" else f"rate_limits[{name[5:]!r}]"
    needed_wait = (batch_size - limit.burst) / limit.per_second
    fixes = [
        f"raise the burst to {batch_size - math.floor(wait * limit.per_second + 1e-9)}",
        f"lower batch_size to {admitted}",
    ]
    if needed_wait <= longest:
        fixes.append(f"raise rate_limit_max_wait_seconds to {math.ceil(needed_wait)}")
    raise ValueError(
        f"{where}: {limit.describe()} admits at most {admitted} job(s) within rate_limit_max_wait_seconds "
        f"{wait:g}, fewer than a batch of {batch_size}, so every batch would be partly re-sent; " + ", or ".join(fixes)
    )
