"""The settings model: defaults, overrides, and every guardrail with the message a user will read."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest

from infra.app import CDK_JSON, load_cdk_context
from tests.cdk.infra_support import EXAMPLE_ROUTES
from tiered_jobs.cdk.settings import AppSettings, SettingsError, TierSettings

# Synthesizes a CDK app (make quick leaves it out).
pytestmark = pytest.mark.synth

ROOT = Path(__file__).resolve().parents[2]


def _settings(**raw: Any) -> AppSettings:
    return AppSettings.from_context(raw)


def _tier(**values: Any) -> TierSettings:
    return _settings(tiers={"bulk": values}, routes={"*": "bulk"}).tier("bulk")


#: Routes of the kind an app declares (the library has none of its own).
ROUTES = EXAMPLE_ROUTES


def test_defaults_are_three_tiers_and_no_routes():
    settings = AppSettings.from_context(None)
    assert settings.stage == "dev" and settings.disposable is False
    assert (settings.runtime, settings.architecture, settings.powertools_version) == ("python3.13", "arm64", "3.37.0")
    assert settings.tier_names == ("critical", "transactional", "bulk")
    assert dict(settings.routes) == {}  # never an example's: every route is the app's own
    bulk = settings.tier("bulk")
    assert bulk.retry_schedule_seconds == (5, 30, 120, 600) and bulk.retry_jitter == 0.2
    assert bulk.max_attempts == bulk.max_receive_count == 5
    assert bulk.visibility_timeout == 6 * bulk.timeout_seconds + bulk.batching_window_seconds
    assert settings.resources == ()  # the example app declares its own in cdk.json


def test_cdk_json_is_valid_and_equals_the_code_defaults_plus_the_example_jobs_resources():
    context = load_cdk_context()
    settings = AppSettings.from_context(context["tiered_jobs"])
    assert dataclasses.replace(settings, resources=(), routes={}) == AppSettings.from_context(None)
    assert dict(settings.routes) == EXAMPLE_ROUTES
    (table,) = settings.resources
    assert (table.kind, table.partition_key, table.job_types, table.access) == (
        "table",
        "account_id",
        ("payments.update_balance",),
        "read_write",
    )


def test_an_empty_context_gives_the_dataclass_defaults():
    """``from_context`` reads its defaults from the dataclass fields: no second copy to drift."""
    assert AppSettings.from_context({}) == AppSettings()


def test_disposable_decides_the_removal_policy():
    from aws_cdk import RemovalPolicy

    assert _settings().removal_policy == RemovalPolicy.RETAIN
    assert _settings(disposable=True).removal_policy == RemovalPolicy.DESTROY


def test_powertools_version_matches_requirements():
    pinned = re.search(r"^aws-lambda-powertools==(\S+)$", (ROOT / "requirements.txt").read_text(), re.M).group(1)
    assert json.loads(CDK_JSON.read_text())["context"]["tiered_jobs"]["powertools_version"] == pinned


def test_stage_override_wins_over_the_context_value():
    assert AppSettings.from_context({"stage": "dev"}, stage="prod").stage == "prod"


def test_load_cdk_context_overrides_single_settings():
    context = load_cdk_context(stage="local", disposable=True)
    assert context["tiered_jobs"]["stage"] == "local" and context["tiered_jobs"]["disposable"] is True
    assert context["tiered_jobs"]["tiers"] == {"critical": {}, "transactional": {}, "bulk": {}}
    assert context["@aws-cdk/aws-lambda:recognizeLayerVersion"] is True


def test_a_new_tier_takes_the_generic_defaults_and_its_own_values():
    settings = _settings(
        tiers={"critical": {}, "reports": {"memory_mb": 1024}},
        routes={"payments.*": "critical", "reports.*": "reports"},
    )
    reports = settings.tier("reports")
    assert reports.memory_mb == 1024
    assert reports.batch_size == TierSettings(name="x").batch_size
    assert reports.dlq_alarm_threshold == 10


def test_user_values_override_presets():
    critical = _settings(tiers={"critical": {"dlq_alarm_threshold": 3}}, routes={"*": "critical"}).tier("critical")
    assert critical.dlq_alarm_threshold == 3 and critical.batch_size == 5


def test_the_routes_of_a_resources_job_types_decide_its_tiers():
    def tiers(job_types, routes):
        settings = _settings(
            routes=routes, resources={"t": {"kind": "table", "partition_key": "k", "job_types": job_types}}
        )
        return settings.tiers_using(settings.resources[0])

    assert tiers(["payments.update_balance"], ROUTES) == frozenset({"critical"})
    assert tiers(["payments.update_balance"], {**ROUTES, "payments.update_balance": "bulk"}) == {"bulk"}
    # A glob reaches its own tier and the tiers of the more specific routes inside it.
    assert tiers(["payments.*"], {**ROUTES, "payments.refund": "bulk"}) == {"critical", "bulk"}
    assert tiers(["*"], ROUTES) == {"critical", "transactional", "bulk"}
    assert tiers(["analytics.x", "demo.*"], ROUTES) == {"bulk", "transactional"}


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        # Guardrails between settings.
        (
            {"tiers": {"bulk": {"visibility_timeout_seconds": 300}}},
            "tier 'bulk': visibility_timeout_seconds 300 is below 6 x timeout_seconds (60) + "
            "batching_window_seconds (5) "
            "= 365: a message would reappear while its batch is still running; set visibility_timeout_seconds to at "
            "least 365 or remove it",
        ),
        (
            {"tiers": {"bulk": {"redrive_max_receive_count": 5}}},
            "tier 'bulk': redrive_max_receive_count is no longer a setting: the queue's redrive count is always "
            "max_attempts",
        ),
        (
            {"tiers": {"bulk": {"dlq_retention_days": 4}}},
            "tier 'bulk': dlq_retention_days 4 must be longer than retention_days 4",
        ),
        (
            {"tiers": {"bulk": {"retention_days": 14}}},
            "tier 'bulk': dlq_retention_days 14 must be longer than retention_days 14",
        ),
        (
            {"tiers": {"bulk": {"batch_size": 50, "batching_window_seconds": 0}}},
            "tier 'bulk': batch_size 50 needs a batching window",
        ),
        (
            {"tiers": {"bulk": {"reserved_concurrency": 3}}},
            "tier 'bulk': reserved_concurrency 3 is below max_concurrency 5",
        ),
        (
            {
                "tiers": {
                    "bulk": {
                        "timeout_seconds": 900,
                        "batching_window_seconds": 300,
                        "visibility_timeout_seconds": 43201,
                    }
                }
            },
            "tier 'bulk': visibility timeout 43201 s exceeds SQS's limit of 43200 s",
        ),
        (
            {"tiers": {"bulk": {"retry_schedule_seconds": [5, 43200]}}},
            "tier 'bulk': retry_schedule_seconds [43200] exceed 43135 s, the longest backoff SQS accepts here: its "
            "12 hours (43200 s) count from the receive, and the consumer sets a backoff up to batching_window_seconds "
            "(5) + timeout_seconds (60) after it; use at most 43135",
        ),
        (
            {"tiers": {"bulk": {"retention_days": 1, "retry_schedule_seconds": [30000]}}},
            "tier 'bulk': retry_schedule_seconds [30000] over max_attempts 5 keeps a job up to 144325 s in its queue "
            "(each backoff at +0.2 jitter, each attempt timeout_seconds + batching_window_seconds), past "
            "retention_days 1 (86400 s): SQS would delete it mid-backoff, with no letter",
        ),
        (
            {"routes": {"payments.*": "urgent"}},
            "route 'payments.*' -> tier 'urgent': unknown tier; route it to one of critical, transactional, bulk "
            "or add 'urgent' under 'tiers'",
        ),
        # Malformed values.
        ({"tiers": {"bulk": {"retry_schedule_seconds": []}}}, "tier 'bulk': retry_schedule_seconds [] is invalid"),
        ({"tiers": {"bulk": {"retry_schedule_seconds": [5, 50000]}}}, "between 0 and 43200"),
        ({"tiers": {"bulk": {"retry_schedule_seconds": "5,30"}}}, "retry_schedule_seconds '5,30' is invalid"),
        ({"tiers": {"bulk": {"retry_jitter": 1.0}}}, "tier 'bulk': retry_jitter 1.0 must be in [0, 1)"),
        ({"tiers": {"bulk": {"retry_jitter": -0.1}}}, "tier 'bulk': retry_jitter -0.1 must be in [0, 1)"),
        (
            {"tiers": {"bulk": {"max_attempts": 0}}},
            "tier 'bulk': max_attempts 0 is out of range; use a value between 1",
        ),
        (
            {"tiers": {"bulk": {"timeout_seconds": "30"}}},
            "tier 'bulk': timeout_seconds must be a whole number, got '30'",
        ),
        ({"tiers": {"bulk": {"memory_mb": True}}}, "tier 'bulk': memory_mb must be a whole number, got True"),
        ({"tiers": {"bulk": {"timeout_seconds": 901}}}, "between 1 and 900 s (Lambda's limit)"),
        (
            {"tiers": {"bulk": {"max_concurrency": 1}}},
            "tier 'bulk': max_concurrency 1 is out of range; use a value between 2 and 1000",
        ),
        ({"tiers": {"bulk": {"dlq_alarm_threshold": -1}}}, "tier 'bulk': dlq_alarm_threshold -1 is out of range"),
        ({"tiers": {"bulk": {"failure_rate_alarm_percent": 0}}}, "failure_rate_alarm_percent 0.0 must be a percentage"),
        (
            {"tiers": {"bulk": {"batchsize": 5}}},
            "tier 'bulk': unknown key(s) 'batchsize'; allowed keys: allow_short_idempotency_window, batch_size, "
            "batching_window_seconds",
        ),
        ({"tiers": {"bulk": {"failure_rate_min_jobs": 0}}}, "tier 'bulk': failure_rate_min_jobs 0 is out of range"),
        (
            {"tiers": {"bulk": {"allow_short_idempotency_window": "yes"}}},
            "tier 'bulk': allow_short_idempotency_window must be true or false, got 'yes'",
        ),
        ({"tiers": {"bulk": []}}, "tier 'bulk': settings must be an object"),
        ({"tiers": {"Bulk": {}}}, "tier 'Bulk': invalid name"),
        ({"tiers": {}}, "tiers must be a non-empty object"),
        ({"stage": "Prod"}, "stage 'Prod' is invalid"),
        ({"disposable": "yes"}, "disposable must be true or false, got 'yes'"),
        ({"architecture": "arm"}, "architecture 'arm' is not supported; use one of arm64, x86_64"),
        ({"runtime": "python3.8"}, "runtime 'python3.8' is not supported"),
        ({"powertools_version": "3.37"}, "powertools_version '3.37' is invalid"),
        ({"log_retention_days": 10}, "log_retention_days 10 is not a CloudWatch Logs retention"),
        (
            {"discard_archive_days": 0},
            "context 'tiered_jobs': discard_archive_days 0 is out of range; use a value at least 1",
        ),
        (
            {"discard_archive_days": "1y"},
            "context 'tiered_jobs': discard_archive_days must be a whole number, got '1y'; "
            "e.g. discard_archive_days: 365",
        ),
        ({"discard_archive_days": True}, "discard_archive_days must be a whole number, got True"),
        ({"alarm_email": "oncall"}, "alarm_email 'oncall' is invalid"),
        (
            {"alarm_https_url": "http://example.com"},
            "alarm_https_url 'http://example.com' is invalid; use an https:// URL",
        ),
        ({"console_test_events": "yes"}, "console_test_events 'yes' is invalid"),
        ({"console_test_events": 1}, "console_test_events 1 is invalid"),
        ({"routes": ["payments.*"]}, "routes: routes must be an object"),
        ({"tier": {}}, "context 'tiered_jobs': unknown key(s) 'tier'; allowed keys:"),
    ],
)
def test_invalid_settings_fail_with_a_message_that_names_the_fix(raw, message):
    with pytest.raises(SettingsError) as error:
        AppSettings.from_context(raw)
    assert message in str(error.value)


def test_context_must_be_an_object():
    with pytest.raises(SettingsError, match="context 'tiered_jobs' must be an object, got list"):
        AppSettings.from_context([])  # type: ignore[arg-type]


def test_explicit_visibility_that_respects_the_rules_is_kept_and_the_receive_count_is_the_attempts():
    tier = _tier(
        visibility_timeout_seconds=900,
        batch_size=100,
        batching_window_seconds=10,
        reserved_concurrency=5,
    )
    assert (tier.visibility_timeout, tier.max_receive_count, tier.batch_size) == (900, 5, 100)


def test_settings_errors_stop_the_app_before_any_construct(tmp_path):
    from infra.app import build_app

    with pytest.raises(SettingsError, match="tier 'critical': retry_jitter 2.0 must be in"):
        build_app(load_cdk_context(tiers={"critical": {"retry_jitter": 2.0}}), outdir=str(tmp_path))


def test_cli_stage_context_key_names_the_stack():
    """``npx cdk deploy -c stage=prod`` puts ``stage`` at the top level of the context."""
    import aws_cdk as cdk

    from infra.app import settings_of

    app = cdk.App(context={**load_cdk_context(), "stage": "prod"})
    assert settings_of(app).stage == "prod"
    assert settings_of(cdk.App(context=load_cdk_context())).stage == "dev"


def test_the_idempotency_window_covers_the_replay_window_by_default():
    """Queue retention + DLQ retention: a letter replayed on its last day still finds its job's record."""
    bulk = AppSettings.from_context(None).tier("bulk")
    assert (bulk.retention_days, bulk.dlq_retention_days) == (4, 14)
    assert bulk.idempotency_ttl_seconds == bulk.replay_window_seconds == 18 * 86_400
    assert TierSettings(name="x").idempotency_ttl_seconds == 18 * 86_400


def test_the_runtime_without_its_variable_keeps_records_as_long_as_the_settings_default():
    """One default, in the contract: a consumer whose environment lacks the window (a hand-made one, a test)
    remembers finished jobs for the 18 days the settings give a tier, not a shorter day."""
    from tiered_jobs.contract.names import Env
    from tiered_jobs.runtime.config import TierConfig

    environment = {Env.STAGE: "dev", Env.TIER: "bulk", Env.QUEUE_URL: "q", Env.DLQ_URL: "d", Env.IDEMPOTENCY_TABLE: "t"}
    assert Env.IDEMPOTENCY_TTL_SECONDS not in environment
    runtime = TierConfig.from_env(environment).idempotency_ttl_seconds
    assert runtime == TierSettings(name="x").idempotency_ttl_seconds == 18 * 86_400


def test_the_default_window_follows_the_tiers_own_retention():
    tier = _tier(retention_days=2, dlq_retention_days=7)
    assert tier.idempotency_ttl_seconds == 9 * 86_400
    assert _tier(idempotency_ttl_seconds=20 * 86_400).idempotency_ttl_seconds == 20 * 86_400


def test_a_shorter_idempotency_window_is_refused_with_the_minimum_and_the_fix():
    with pytest.raises(SettingsError) as error:
        _tier(idempotency_ttl_seconds=86_400)
    assert str(error.value) == (
        "tier 'bulk': idempotency_ttl_seconds 86400 is shorter than retention_days (4) + dlq_retention_days (14) = "
        "1555200 s: a letter replayed after its job's idempotency record expired would run a finished job again; "
        "set idempotency_ttl_seconds to at least 1555200, remove it to use that default, or set "
        "allow_short_idempotency_window: true to accept that risk"
    )
    with pytest.raises(SettingsError, match="at least 777600"):
        _tier(retention_days=1, dlq_retention_days=8, idempotency_ttl_seconds=777_599)


def test_a_shorter_idempotency_window_passes_only_with_the_explicit_opt_out():
    tier = _tier(idempotency_ttl_seconds=86_400, allow_short_idempotency_window=True)
    assert tier.idempotency_ttl_seconds == 86_400 and tier.allow_short_idempotency_window is True
    assert _tier().allow_short_idempotency_window is False


def test_the_failure_rate_needs_a_minimum_volume():
    assert _tier().failure_rate_min_jobs == 20
    assert _tier(failure_rate_min_jobs=100).failure_rate_min_jobs == 100


def test_local_overrides_replace_app_settings_and_merge_into_every_tier_then_validate():
    from tiered_jobs.cdk.settings import with_local_overrides

    raw = {"stage": "prod", "tiers": {"critical": {"memory_mb": 1024}, "bulk": {}}, "routes": {"*": "bulk"}}
    merged = with_local_overrides(
        raw, {"settings": {"stage": "local", "disposable": True}, "tier_settings": {"timeout_seconds": 5}}
    )
    settings = AppSettings.from_context(merged)
    assert (settings.stage, settings.disposable) == ("local", True)
    assert settings.tier("critical").memory_mb == 1024  # the tier keeps its own values
    assert {tier.name: tier.timeout_seconds for tier in settings.tiers} == {"critical": 5, "bulk": 5}
    assert raw["stage"] == "prod"  # the app's own settings are not changed
    # No tiers named: the default tiers get the overrides.
    defaults = AppSettings.from_context(with_local_overrides(None, {"tier_settings": {"timeout_seconds": 5}}))
    assert {tier.timeout_seconds for tier in defaults.tiers} == {5} and len(defaults.tiers) == 3
    with pytest.raises(SettingsError, match=r"'tiered_jobs:local'.*unknown key\(s\) 'tiers'"):
        with_local_overrides(raw, {"tiers": {}})


@pytest.mark.parametrize("tier", ["critical", "bulk"])
def test_the_consumer_gets_the_time_limits_a_jobs_own_retry_schedule_is_checked_against(default_synth, tier):
    from tests.cdk.infra_support import find_consumer
    from tiered_jobs.contract.retention import max_backoff_seconds
    from tiered_jobs.runtime.config import TierConfig

    _, consumer = find_consumer(default_synth, "dev", tier)
    env = consumer["Properties"]["Environment"]["Variables"]
    settings = AppSettings.from_context(None).tier(tier)
    resolved = {k: v if isinstance(v, str) else "resolved-at-deploy" for k, v in env.items()}
    config = TierConfig.from_env(resolved)
    assert config.retention_seconds == settings.retention_days * 86_400
    assert (config.timeout_seconds, config.batching_window_seconds) == (
        settings.timeout_seconds,
        settings.batching_window_seconds,
    )
    assert config.retry.max_delay_seconds == max_backoff_seconds(
        settings.timeout_seconds, settings.batching_window_seconds
    )
