"""A tier's ``log_level`` (default INFO, validated) reaches its consumer: Powertools' variable and
Lambda's application log level, which Powertools obeys over its own."""

from __future__ import annotations

import pytest

from tests.cdk.infra_support import find_consumer
from tiered_jobs.cdk.settings import AppSettings, SettingsError
from tiered_jobs.contract.names import DEFAULT_TIERS, Env

# Synthesizes a CDK app (make quick leaves it out).
pytestmark = pytest.mark.synth


def _levels(synth, tier: str) -> tuple[str, str | None]:
    _, consumer = find_consumer(synth, synth.stage, tier)
    props = consumer["Properties"]
    return props["Environment"]["Variables"][Env.POWERTOOLS_LOG_LEVEL], props["LoggingConfig"].get(
        "ApplicationLogLevel"
    )


@pytest.mark.parametrize("tier", DEFAULT_TIERS)
def test_every_tier_logs_at_info_by_default(default_synth, tier):
    assert _levels(default_synth, tier) == ("INFO", "INFO")


def test_a_tiers_log_level_reaches_its_consumer_and_no_other(custom_synth):
    assert _levels(custom_synth, "reports") == ("DEBUG", "DEBUG")
    assert _levels(custom_synth, "bulk") == ("INFO", "INFO")


@pytest.mark.parametrize("level, lambdas", [("WARNING", "WARN"), ("ERROR", "ERROR"), ("INFO", "INFO")])
def test_python_level_names_become_lambdas(level, lambdas):
    from tiered_jobs.cdk.function import _application_log_level

    assert _application_log_level(level).value == lambdas


@pytest.mark.parametrize("value", ["verbose", "debug", "WARN", 10, None])
def test_an_unknown_log_level_is_refused_naming_the_setting_and_the_choices(value):
    with pytest.raises(SettingsError) as error:
        AppSettings.from_context({"tiers": {"bulk": {"log_level": value}}, "routes": {"*": "bulk"}})
    assert f"tier 'bulk': log_level {value!r} is not supported; use one of DEBUG, INFO, WARNING, ERROR" in str(
        error.value
    )
