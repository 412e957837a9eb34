"""The time budget's safety margin: derived from the timeout, validated, and handed to the consumer."""

from __future__ import annotations

import pytest

from tests.cdk.infra_support import find_consumer
from tiered_jobs.cdk.settings import AppSettings, SettingsError
from tiered_jobs.contract.names import DEFAULT_TIERS, Env
from tiered_jobs.runtime.config import TierConfig

# Synthesizes a CDK app (make quick leaves it out).
pytestmark = pytest.mark.synth


def _tier(**values):
    return AppSettings.from_context({"tiers": {"bulk": values}, "routes": {"*": "bulk"}}).tier("bulk")


@pytest.mark.parametrize(
    "timeout, margin", [(1, 500), (3, 1_500), (10, 2_000), (30, 3_000), (60, 6_000), (900, 90_000)]
)
def test_default_margin_is_a_tenth_of_the_timeout_at_least_two_seconds_at_most_half(timeout, margin):
    tier = _tier(timeout_seconds=timeout)
    assert tier.time_budget_margin == margin
    assert 0 < tier.time_budget_margin < timeout * 1000


def test_an_explicit_margin_is_used_and_must_stay_below_the_timeout():
    assert _tier(time_budget_margin_ms=12_000).time_budget_margin == 12_000
    with pytest.raises(
        SettingsError,
        match=r"tier 'bulk': time_budget_margin_ms 60000 is out of range; use a value "
        r"between 1 and 59999 ms \(less than timeout_seconds 60 s\)",
    ):
        _tier(time_budget_margin_ms=60_000)
    with pytest.raises(SettingsError, match="time_budget_margin_ms must be a whole number"):
        _tier(time_budget_margin_ms=2.5)


@pytest.mark.parametrize("tier", DEFAULT_TIERS)
def test_the_consumer_reads_its_tiers_margin_from_the_template(default_synth, tier):
    _, consumer = find_consumer(default_synth, "dev", tier)
    env = consumer["Properties"]["Environment"]["Variables"]
    expected = AppSettings.from_context(None).tier(tier).time_budget_margin
    assert env[Env.TIME_BUDGET_MARGIN_MS] == str(expected)
    resolved = {k: v if isinstance(v, str) else "resolved-at-deploy" for k, v in env.items()}
    assert TierConfig.from_env(resolved).time_budget_margin_ms == expected
