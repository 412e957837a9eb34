"""A tier's rate limits: what ``cdk.json`` configures, the stack passes on and the consumer enforces.

One shape, three places: the tier settings (validated at synthesis), the consumer's environment
variable ``TIERED_JOBS_RATE_LIMITS`` and the SSM parameter ``.../tiers/<tier>/rate-limits`` that
``tiered-jobs status`` reads. All three are :meth:`RateLimits.to_json`.

Every job type of a tier takes its tokens from exactly ONE bucket: the bucket of the most specific
``rate_limits`` pattern that matches it (exact type first, then the longest glob, as routes do),
else the tier-wide bucket (``rate_limit_per_second``), else none (not limited). Standard library
only: this module runs in the consumer's cold start.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .routing import Routes, UnknownRouteError

#: A held job waits at most SQS's longest message delay before it is offered again, so a rate
#: below one job per 900 s would bring held jobs back before any token exists.
MIN_PER_SECOND = 1 / 900
#: One DynamoDB item accepts about 1 000 writes per second; the limiter writes once per batch and
#: bucket, so a bucket never needs more than this many tokens per second at batches of one job.
MAX_PER_SECOND = 1000.0
MAX_BURST = 10_000
#: Default bound on the wait inside one invocation (also capped at half the consumer's timeout).
#: A job whose turn is further away is held in SQS with its token, where waiting is not billed.
DEFAULT_MAX_WAIT_SECONDS = 1.0
#: The bucket table's partition key (the stack creates the table, the consumer writes its items).
BUCKET_KEY_ATTRIBUTE = "bucket"
TIER_BUCKET = "tier"
JOB_TYPE_BUCKET_PREFIX = "type:"
_GLOB_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_.*?[]!")


@dataclass(frozen=True)
class RateLimit:
    """``per_second`` tokens are earned per second, up to ``burst`` saved while the bucket is idle."""

    per_second: float
    burst: int

    def __post_init__(self) -> None:
        rate = self.per_second
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not math.isfinite(rate):
            raise ValueError(f"per_second must be a number, got {rate!r}")
        if not MIN_PER_SECOND <= rate <= MAX_PER_SECOND:
            raise ValueError(
                f"per_second {rate:g} is out of range; use {MIN_PER_SECOND:.6f} (one job per 900 s, SQS's longest "
                f"delay for a held job) to {MAX_PER_SECOND:g} (what one DynamoDB item takes in writes per second)"
            )
        if isinstance(self.burst, bool) or not isinstance(self.burst, int) or not 1 <= self.burst <= MAX_BURST:
            raise ValueError(
                f"burst must be a whole number of jobs from 1 to {MAX_BURST}, got {self.burst!r} "
                f"(1: no saving up; {math.ceil(rate)}: one second's worth)"
            )

    def admitted_within(self, seconds: float) -> int:
        """Jobs a full bucket admits within ``seconds``: the burst plus what the rate earns meanwhile."""
        return self.burst + math.floor(seconds * self.per_second + 1e-9)

    def to_dict(self) -> dict[str, Any]:
        return {"per_second": self.per_second, "burst": self.burst}

    def describe(self) -> str:
        return f"{self.per_second:g}/s (burst {self.burst})"

    @classmethod
    def parse(cls, raw: Any, where: str) -> RateLimit:
        """From ``{"per_second": 14, "burst": 14}`` (``burst`` defaults to one second's worth)."""
        if not isinstance(raw, Mapping):
            raise ValueError(f'{where} must be an object like {{"per_second": 14, "burst": 14}}, got {raw!r}')
        unknown = sorted(set(raw) - {"per_second", "burst"})
        if unknown:
            raise ValueError(
                f"{where}: unknown key(s) {', '.join(map(repr, unknown))}; allowed keys: burst, per_second"
            )
        if "per_second" not in raw:
            raise ValueError(f'{where}: per_second is required, e.g. {{"per_second": 14}}')
        try:
            return cls(raw["per_second"], raw.get("burst", default_burst(raw["per_second"])))
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None


def default_burst(per_second: Any) -> Any:
    """One second's worth of tokens (at least one)."""
    if isinstance(per_second, (int, float)) and not isinstance(per_second, bool) and math.isfinite(per_second):
        return max(1, math.ceil(per_second))
    return 1


@dataclass(frozen=True)
class Bucket:
    """One token bucket: its item key in the bucket table and its limit."""

    key: str
    name: str
    limit: RateLimit


@dataclass(frozen=True)
class RateLimits:
    """A tier's limits; ``bucket_for(job_type)`` names the one bucket a job takes tokens from."""

    tier: RateLimit | None = None
    job_types: Mapping[str, RateLimit] = field(default_factory=dict)
    #: Longest wait for tokens inside one invocation before a held job is re-sent with a delay.
    max_wait_seconds: float = DEFAULT_MAX_WAIT_SECONDS

    def __post_init__(self) -> None:
        for pattern in self.job_types:
            if not isinstance(pattern, str) or not pattern or not set(pattern) <= _GLOB_CHARS:
                raise ValueError(
                    f"rate_limits key {pattern!r} is not a job type or glob; use lower-case letters, digits, "
                    f"'_', '.' and glob characters, e.g. 'invoices.send' or 'invoices.*'"
                )
        object.__setattr__(self, "_routes", Routes({p: p for p in self.job_types}) if self.job_types else None)

    @property
    def enabled(self) -> bool:
        return self.tier is not None or bool(self.job_types)

    def buckets(self) -> dict[str, RateLimit]:
        """``{bucket name: limit}``: ``tier`` for the tier-wide one, ``type:<pattern>`` for the others."""
        found = {JOB_TYPE_BUCKET_PREFIX + p: limit for p, limit in self.job_types.items()}
        return {TIER_BUCKET: self.tier, **found} if self.tier is not None else found

    def bucket_for(self, tier_name: str, job_type: str) -> Bucket | None:
        routes = getattr(self, "_routes")  # noqa: B009 - set in __post_init__, not a dataclass field
        if routes is not None:
            try:
                pattern = routes.tier_for(job_type)
                return Bucket(
                    bucket_key(tier_name, JOB_TYPE_BUCKET_PREFIX + pattern),
                    JOB_TYPE_BUCKET_PREFIX + pattern,
                    self.job_types[pattern],
                )
            except UnknownRouteError:
                pass
        if self.tier is not None:
            return Bucket(bucket_key(tier_name, TIER_BUCKET), TIER_BUCKET, self.tier)
        return None

    def to_dict(self) -> dict[str, Any]:
        return {
            "tier": self.tier.to_dict() if self.tier else None,
            "job_types": {p: limit.to_dict() for p, limit in sorted(self.job_types.items())},
            "max_wait_seconds": self.max_wait_seconds,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> RateLimits:
        raw = json.loads(text)
        return cls(
            tier=RateLimit(**raw["tier"]) if raw.get("tier") else None,
            job_types={p: RateLimit(**limit) for p, limit in (raw.get("job_types") or {}).items()},
            max_wait_seconds=float(raw.get("max_wait_seconds", DEFAULT_MAX_WAIT_SECONDS)),
        )

    def describe(self) -> str:
        """E.g. ``5/s (burst 5); notifications.*: 2/s (burst 2)`` (``none`` when not limited)."""
        parts = [self.tier.describe()] if self.tier else []
        parts += [f"{p}: {limit.describe()}" for p, limit in sorted(self.job_types.items())]
        return "; ".join(parts) or "none"


def bucket_key(tier_name: str, bucket_name: str) -> str:
    """The bucket item's partition key: ``<tier>#<bucket>`` (IAM scopes each consumer to ``<tier>#*``)."""
    return f"{tier_name}#{bucket_name}"


def tier_key_prefix(tier_name: str) -> str:
    return f"{tier_name}#"
