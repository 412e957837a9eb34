"""A tier's settings (``TierSettings``), the built-in presets of the default tiers, and the
cross-setting guardrails every tier must pass (see docs/configuration.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tiered_jobs.contract.names import SQS_MAX_VISIBILITY_SECONDS
from tiered_jobs.contract.rate_limits import RateLimit, RateLimits
from tiered_jobs.contract.retention import (
    DEFAULT_DLQ_RETENTION_DAYS,
    DEFAULT_RETENTION_DAYS,
    longest_stay_seconds,
    max_backoff_seconds,
    replay_window_seconds,
)
from tiered_jobs.contract.sqs_limits import MAX_JOB_MESSAGE_BYTES

from .values import SettingsError

#: The levels a tier's ``log_level`` may take (Python's names, as Powertools reads them).
LOG_LEVELS: tuple[str, ...] = ("DEBUG", "INFO", "WARNING", "ERROR")
#: How a consumer's new code reaches its tier (``deployment``): ``all_at_once`` updates the function in
#: place (no alias, no CodeDeploy); the others are CodeDeploy's Lambda configurations, by their CDK
#: constant's name in lower case (``aws_codedeploy.LambdaDeploymentConfig.CANARY_10_PERCENT_5_MINUTES``).
ALL_AT_ONCE = "all_at_once"
DEPLOYMENTS: tuple[str, ...] = (
    ALL_AT_ONCE,
    "canary_10_percent_5_minutes",
    "canary_10_percent_10_minutes",
    "canary_10_percent_15_minutes",
    "canary_10_percent_30_minutes",
    "linear_10_percent_every_1_minute",
    "linear_10_percent_every_2_minutes",
    "linear_10_percent_every_3_minutes",
    "linear_10_percent_every_10_minutes",
)


@dataclass(frozen=True)
class TierSettings:
    """One tier: its queue, DLQ, consumer, event source mapping and alarms.

    ``None`` in ``visibility_timeout_seconds`` means "derived": read the ``visibility_timeout``
    property. The queue's redrive count is ``max_attempts`` (the ``max_receive_count`` property), not a
    setting: any other value either retries a crashing job past the consumer's attempts or lets SQS
    dead-letter it without reasons before its last one.
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
    retention_days: int = DEFAULT_RETENTION_DAYS
    dlq_retention_days: int = DEFAULT_DLQ_RETENTION_DAYS
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
    #: The circuit breaker (``None``: off): stop taking the tier's work while more than this share (%)
    #: of its attempts failed transiently (``JobsRetried`` / ``JobsProcessed``) over the window.
    circuit_breaker_percent: float | None = None
    #: ...and only once at least this many attempts ran in the window (below it the share is 0).
    circuit_breaker_min_jobs: int = 10
    #: The window (one alarm period): also how long the breaker stays open before its probe.
    circuit_breaker_minutes: int = 1
    #: Tier-wide rate limit: jobs per second across every consumer of the tier (``None``: no limit).
    rate_limit_per_second: float | None = None
    #: Jobs the tier-wide bucket saves up while idle (``None`` in cdk.json: one second's worth).
    rate_limit_burst: int | None = None
    #: Per job-type glob, its own bucket: ``{"notifications.*": RateLimit(14, 14)}``.
    rate_limits: Mapping[str, RateLimit] = field(default_factory=dict)
    #: Longest wait for tokens inside one invocation (``None`` in cdk.json: min(10, timeout / 2)).
    rate_limit_max_wait_seconds: float | None = None
    #: The consumer's log level (one of :data:`LOG_LEVELS`): INFO logs a line per finished job,
    #: WARNING only retries and failures, DEBUG everything Powertools says.
    log_level: str = "INFO"
    #: X-Ray: the consumer's Active tracing and a subsegment per job run, linked to the trace that published
    #: the job (docs/consumer.md, "Traces"); off, the function is not traced and Powertools' tracer stays off.
    tracing: bool = True
    #: Store a job body over ``large_payload_threshold_bytes`` in the stage's bucket and send the pointer
    #: AWS's SQS extended clients send (docs/publishing.md, "Bodies past SQS's limit"); off by default.
    large_payloads: bool = False
    #: Message size (bytes, body and attributes) above which a body is stored (``None``: only what SQS
    #: could not take, :data:`~tiered_jobs.contract.sqs_limits.MAX_JOB_MESSAGE_BYTES`).
    large_payload_threshold_bytes: int | None = None
    #: One of :data:`DEPLOYMENTS`: anything but ``all_at_once`` publishes the consumer behind an alias that
    #: CodeDeploy shifts, rolling back on the tier's failure-rate, errors and DLQ alarms (``cdk/deployment.py``).
    deployment: str = ALL_AT_ONCE

    def __post_init__(self) -> None:
        if self.idempotency_ttl_seconds is None:
            object.__setattr__(self, "idempotency_ttl_seconds", self.replay_window_seconds)

    @property
    def replay_window_seconds(self) -> int:
        """The longest a job's message lives: main-queue retention, then DLQ retention (a replay's reach)."""
        return replay_window_seconds(self.retention_days, self.dlq_retention_days)

    @property
    def large_payload_threshold(self) -> int:
        """The bytes above which the publisher stores this tier's bodies in S3 (with ``large_payloads``)."""
        if self.large_payload_threshold_bytes is not None:
            return self.large_payload_threshold_bytes
        return MAX_JOB_MESSAGE_BYTES

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
        """The queue's redrive ``maxReceiveCount``: ``max_attempts``, so SQS's redrive (the crash and
        timeout safety net) never cuts the consumer's retries short nor lets them run past it."""
        return self.max_attempts

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
        "batch_size": 5,
        "batching_window_seconds": 0,
        "max_concurrency": 20,
        "memory_mb": 512,
        "dlq_alarm_threshold": 0,
        "oldest_message_age_alarm_seconds": 60,
    },
    # User-facing side effects (e-mails, notifications): default batches, five minutes of backlog.
    "transactional": {
        "batch_size": 10,
        "batching_window_seconds": 0,
        "max_concurrency": 10,
        "dlq_alarm_threshold": 10,
        "oldest_message_age_alarm_seconds": 300,
    },
    # Throughput over latency: wait up to 5 s to fill batches, few consumers, an hour of backlog is fine.
    "bulk": {
        "batch_size": 10,
        "batching_window_seconds": 5,
        "max_concurrency": 5,
        "timeout_seconds": 60,
        "dlq_alarm_threshold": 10,
        "oldest_message_age_alarm_seconds": 3600,
    },
}


def check_guardrails(tier: TierSettings, where: str) -> None:
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
    max_backoff = max_backoff_seconds(tier.timeout_seconds, tier.batching_window_seconds)
    too_long = [delay for delay in tier.retry_schedule_seconds if delay > max_backoff]
    if too_long:
        raise SettingsError(
            f"{where}: retry_schedule_seconds {too_long} exceed {max_backoff} s, the longest backoff SQS accepts "
            f"here: its 12 hours ({SQS_MAX_VISIBILITY_SECONDS} s) count from the receive, and the consumer sets a "
            f"backoff up to batching_window_seconds ({tier.batching_window_seconds}) + timeout_seconds "
            f"({tier.timeout_seconds}) after it; use at most {max_backoff}"
        )
    stay = longest_stay_seconds(
        tier.retry_schedule_seconds,
        tier.retry_jitter,
        tier.max_attempts,
        timeout_seconds=tier.timeout_seconds,
        batching_window_seconds=tier.batching_window_seconds,
        max_backoff=max_backoff,
    )
    if stay >= tier.retention_days * 86_400:
        raise SettingsError(
            f"{where}: retry_schedule_seconds {list(tier.retry_schedule_seconds)} over max_attempts "
            f"{tier.max_attempts} keeps a job up to {stay} s in its queue (each backoff at +{tier.retry_jitter:g} "
            f"jitter, each attempt timeout_seconds + batching_window_seconds), past retention_days "
            f"{tier.retention_days} ({tier.retention_days * 86_400} s): SQS would delete it mid-backoff, with no "
            "letter; shorten retry_schedule_seconds, lower max_attempts, or raise retention_days (at most 14)"
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
