"""The configured rate limits of a stage's tiers, for ``tiered-jobs status``.

The SSM parameter ``/tiered-jobs/<stage>/tiers/<tier>/rate-limits`` the stack writes for every
rate-limited tier (a tier without it is not limited), read as discovery reads every parameter of a
stage. What the limit does is in the tier's live counts (:mod:`tiered_jobs.operations.counts`): jobs
completed and held over the last 1, 5 and 60 minutes, read in the status's ``GetMetricData`` call.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..contract.names import Ssm
from ..contract.rate_limits import RateLimits
from ..stage.discovery import tier_parameters


def configured(ssm: Any, stage: str, tiers: Iterable[str]) -> dict[str, RateLimits]:
    """``{tier: RateLimits}`` for the rate-limited tiers (``GetParameters``, one call for up to 10 tiers)."""
    written = tier_parameters(stage, tiers, Ssm.TIER_RATE_LIMITS, ssm=ssm)
    return {tier: RateLimits.from_json(value) for tier, value in written.items()}
