"""A stage's configured rate limits as operators read them (``tiered_jobs/operations/rates.py``), without
the CLI (``tests/cli/test_cli_rates.py`` shows them through ``status``)."""

from __future__ import annotations

import boto3

from tiered_jobs.contract.names import Ssm
from tiered_jobs.contract.rate_limits import RateLimit, RateLimits
from tiered_jobs.operations import rates


def test_rate_limits_of_more_tiers_than_one_call_takes_are_all_read(aws):
    """GetParameters takes 10 names a call: the 12th tier's limit is read too, in a second call
    (discovery's chunking, which every reader of a stage's parameters shares)."""
    ssm = boto3.client("ssm")
    tiers = [f"t{n}" for n in range(12)]
    for tier in ("t0", "t11"):
        ssm.put_parameter(
            Name=Ssm.tier("test", tier, Ssm.TIER_RATE_LIMITS),
            Type="String",
            Value=RateLimits(RateLimit(3, 3)).to_json(),
        )
    calls: list[int] = []
    ssm.meta.events.register(
        "provide-client-params.ssm.GetParameters", lambda params, **_: calls.append(len(params["Names"]))
    )

    limits = rates.configured(ssm, "test", tiers)

    assert sorted(limits) == ["t0", "t11"] and limits["t11"].tier == RateLimit(3, 3)
    assert calls == [10, 2]
