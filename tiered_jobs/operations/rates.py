"""Configured and current rates of a stage's tiers, for ``tiered-jobs status``.

* configured: the SSM parameter ``/tiered-jobs/<stage>/tiers/<tier>/rate-limits`` the stack writes
  for every rate-limited tier (a tier without it is not limited);
* current: completions per second over the last :data:`LOOKBACK_SECONDS`, from the consumer's own
  ``JobsSucceeded`` metric (the ``[service, Stage, Tier]`` dimension set the alarms use).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta, timezone
from typing import Any

from ..contract.names import Metrics, Ssm
from ..contract.rate_limits import RateLimits
from ..stage.discovery import tier_parameters

#: How far back the current rate looks (completions in that window / its seconds).
LOOKBACK_SECONDS = 300


def configured(ssm: Any, stage: str, tiers: Iterable[str]) -> dict[str, RateLimits]:
    """``{tier: RateLimits}`` for the rate-limited tiers (``GetParameters``, one call for up to 10 tiers)."""
    written = tier_parameters(stage, tiers, Ssm.TIER_RATE_LIMITS, ssm=ssm)
    return {tier: RateLimits.from_json(value) for tier, value in written.items()}


def current(cloudwatch: Any, stage: str, tiers: Iterable[str], *, now: datetime | None = None) -> dict[str, float]:
    """``{tier: completed jobs per second}`` over the last :data:`LOOKBACK_SECONDS`."""
    end = now or datetime.now(timezone.utc)
    rates: dict[str, float] = {}
    for tier in tiers:
        points = cloudwatch.get_metric_statistics(
            Namespace=Metrics.NAMESPACE, MetricName=Metrics.SUCCEEDED,
            Dimensions=[{"Name": Metrics.DIM_SERVICE, "Value": Metrics.SERVICE},
                        {"Name": Metrics.DIM_STAGE, "Value": stage}, {"Name": Metrics.DIM_TIER, "Value": tier}],
            StartTime=end - timedelta(seconds=LOOKBACK_SECONDS), EndTime=end, Period=60, Statistics=["Sum"],
        )["Datapoints"]
        rates[tier] = sum(point["Sum"] for point in points) / LOOKBACK_SECONDS
    return rates
