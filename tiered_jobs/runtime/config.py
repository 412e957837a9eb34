"""The consumer's settings, read once from the environment the stack sets."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tiered_jobs.contract.names import Env
from tiered_jobs.contract.retention import (
    DEFAULT_IDEMPOTENCY_TTL_SECONDS,
    DEFAULT_RETENTION_DAYS,
    max_backoff_seconds,
)

from .backoff import RetryPolicy

if TYPE_CHECKING:
    from tiered_jobs.contract.large_payloads import Offload
    from tiered_jobs.contract.rate_limits import RateLimits

#: A job from a newer producer waits for a newer consumer in SQS's longest delay (900 s)...
TOO_NEW_HOLD_SECONDS = 900
#: ...for a day at most: a rollback is undone or rolled forward within it, and past it the job is
#: dead-lettered with its reason instead of being held (and billed) for ever.
TOO_NEW_MAX_AGE_SECONDS = 86_400

#: Without the stack's value (tests, a hand-made environment): stop starting records 2 s before the end.
DEFAULT_TIME_BUDGET_MARGIN_MS = 2_000
#: Without the stack's values, the longest a tier may ask of Lambda and of its event source mapping:
#: the backoff cap they give (``max_backoff_seconds``) is then never one SQS would reject.
FALLBACK_TIMEOUT_SECONDS = 900
FALLBACK_BATCHING_WINDOW_SECONDS = 300


class ConfigurationError(RuntimeError):
    """The function's environment is missing or malformed (a deployment problem, not a job's)."""


@dataclass(frozen=True)
class TierConfig:
    """A tier's consumer settings, read once per container from the function's environment (:meth:`from_env`)."""

    stage: str
    tier: str
    queue_url: str
    dlq_url: str
    idempotency_table: str
    retry: RetryPolicy
    #: The stack always sets it; without it, the settings' own default (the contract's), never a shorter one.
    idempotency_ttl_seconds: int = DEFAULT_IDEMPOTENCY_TTL_SECONDS
    #: The resources of ``cdk.json`` this tier's jobs use: ``{name: table name or queue URL}``, one
    #: ``Env.resource_var(name)`` each. Jobs read them with ``ctx.resource(name)``.
    resources: Mapping[str, str] = field(default_factory=dict)
    #: No record starts when less than this (ms) remains of the invocation; the tier derives it
    #: from its timeout (``TierSettings.time_budget_margin``).
    time_budget_margin_ms: int = DEFAULT_TIME_BUDGET_MARGIN_MS
    #: The tier's rate limits and the table of their buckets (``None``: the tier is not limited).
    rate_limits: RateLimits | None = None
    rate_limit_table: str | None = None
    #: The stage's unique-jobs table: a finished job whose envelope carries ``unique_lock`` releases its
    #: lock there (``None``: a stack before unique jobs; such a lock ends with its window).
    unique_table: str | None = None
    #: The stage's batches table: a finished job whose envelope carries ``batch`` is counted there
    #: (``None``: a stack before batches; such a job runs, uncounted, and the consumer says so).
    batch_table: str | None = None
    #: A job whose envelope is newer than this consumer is held this long between receives, and at
    #: most until it is this old, then dead-lettered (:mod:`~tiered_jobs.runtime.too_new`).
    too_new_hold_seconds: int = TOO_NEW_HOLD_SECONDS
    too_new_max_age_seconds: int = TOO_NEW_MAX_AGE_SECONDS
    #: The tier's large-payload setting: the one bucket its pointers may name (``None``: the tier
    #: opted out, and a pointer body is dead-lettered as permanent; docs/publishing.md).
    large_payloads: Offload | None = None
    #: The main queue's retention, the function's timeout and the batching window (seconds): a job's
    #: own retry schedule must end within the retention (``JobPolicy.on_tier``). The stack sets all three;
    #: without them, the library's default retention and the longest timeout and window.
    retention_seconds: int = DEFAULT_RETENTION_DAYS * 86_400
    timeout_seconds: int = FALLBACK_TIMEOUT_SECONDS
    batching_window_seconds: int = FALLBACK_BATCHING_WINDOW_SECONDS

    @property
    def receive_limit(self) -> int:
        """The main queue's redrive ``maxReceiveCount``: the stack makes it the tier's ``max_attempts``. On
        that receive a record the consumer returned would be moved to the DLQ by SQS without reasons, so the
        consumer never returns one then."""
        return self.retry.max_attempts

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> TierConfig:
        env = os.environ if environ is None else environ
        missing = [
            name
            for name in (Env.STAGE, Env.TIER, Env.QUEUE_URL, Env.DLQ_URL, Env.IDEMPOTENCY_TABLE)
            if not env.get(name)
        ]
        if missing:
            raise ConfigurationError(f"missing environment variable(s): {', '.join(missing)}")
        try:
            retention = int(env.get(Env.RETENTION_SECONDS) or DEFAULT_RETENTION_DAYS * 86_400)
            timeout = int(env.get(Env.TIMEOUT_SECONDS) or FALLBACK_TIMEOUT_SECONDS)
            window = int(env.get(Env.BATCHING_WINDOW_SECONDS) or FALLBACK_BATCHING_WINDOW_SECONDS)
            if retention < 1 or timeout < 1 or window < 0:
                raise ValueError(
                    f"{Env.RETENTION_SECONDS} {retention} and {Env.TIMEOUT_SECONDS} {timeout} must be >= 1, "
                    f"{Env.BATCHING_WINDOW_SECONDS} {window} >= 0"
                )
            retry = RetryPolicy(
                max_attempts=int(env.get(Env.MAX_ATTEMPTS, "5")),
                schedule=RetryPolicy.parse_schedule(env.get(Env.RETRY_SCHEDULE, "5,30,120,600")),
                jitter=float(env.get(Env.RETRY_JITTER, "0.2")),
                max_delay_seconds=max_backoff_seconds(timeout, window),
            )
            ttl = int(env.get(Env.IDEMPOTENCY_TTL_SECONDS, str(DEFAULT_IDEMPOTENCY_TTL_SECONDS)))
            margin = int(env.get(Env.TIME_BUDGET_MARGIN_MS, str(DEFAULT_TIME_BUDGET_MARGIN_MS)))
            if margin < 0:
                raise ValueError(f"{Env.TIME_BUDGET_MARGIN_MS} must be >= 0, got {margin}")
            rate_limits = None
            if env.get(Env.RATE_LIMITS):
                # Parsed only for a limited tier: the others' cold start does not load the rules.
                from tiered_jobs.contract.rate_limits import RateLimits

                rate_limits = RateLimits.from_json(env[Env.RATE_LIMITS])
            large_payloads = None
            if env.get(Env.LARGE_PAYLOADS):
                # Parsed only for a tier that stores bodies in S3, as the rate limits above.
                from tiered_jobs.contract.large_payloads import Offload

                large_payloads = Offload.from_json(env[Env.LARGE_PAYLOADS], Env.LARGE_PAYLOADS)
        except (ValueError, TypeError, KeyError) as exc:
            raise ConfigurationError(f"malformed retry/idempotency/time budget/rate-limit settings: {exc}") from exc
        return cls(
            stage=env[Env.STAGE],
            tier=env[Env.TIER],
            queue_url=env[Env.QUEUE_URL],
            dlq_url=env[Env.DLQ_URL],
            idempotency_table=env[Env.IDEMPOTENCY_TABLE],
            retry=retry,
            idempotency_ttl_seconds=ttl,
            resources=Env.resources_in(env),
            time_budget_margin_ms=margin,
            rate_limits=rate_limits,
            rate_limit_table=env.get(Env.RATE_LIMIT_TABLE) or None,
            unique_table=env.get(Env.UNIQUE_TABLE) or None,
            batch_table=env.get(Env.BATCH_TABLE) or None,
            large_payloads=large_payloads,
            retention_seconds=retention,
            timeout_seconds=timeout,
            batching_window_seconds=window,
        )
