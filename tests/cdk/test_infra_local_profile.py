"""Local mode's tier profile replaces defaults only: what a user wrote is kept, and what it changed is listed."""

from __future__ import annotations

from emulator.deploy import LOCAL_TIER_SETTINGS, local_overrides
from tiered_jobs.cdk.settings import AppSettings, TierSettings, with_local_overrides
from tiered_jobs.cdk.settings.local import local_profile_changes

#: A cdk.json that sets some of what the profile would change, on one tier only.
RAW = {
    "tiers": {"critical": {"max_attempts": 2, "timeout_seconds": 60, "retry_schedule_seconds": [10]}, "bulk": {}},
    "routes": {"*": "bulk"},
}


def _local(raw):
    return AppSettings.from_context(with_local_overrides(raw, local_overrides()))


def test_the_profile_keeps_every_value_the_user_wrote():
    critical = _local(RAW).tier("critical")

    assert (critical.max_attempts, critical.timeout_seconds, critical.retry_schedule_seconds) == (2, 60, (10,))
    assert critical.max_receive_count == 2  # the redrive follows the user's attempts, not a local count
    assert critical.max_concurrency == LOCAL_TIER_SETTINGS["max_concurrency"]  # left to its preset: scaled


def test_the_profile_scales_the_defaults_and_presets_and_never_the_number_of_attempts():
    bulk = _local(RAW).tier("bulk")

    assert bulk.timeout_seconds == LOCAL_TIER_SETTINGS["timeout_seconds"]  # the bulk preset's 60 s
    assert list(bulk.retry_schedule_seconds) == LOCAL_TIER_SETTINGS["retry_schedule_seconds"]
    # A job's own max_attempts is at most its tier's: what is valid on AWS stays valid locally.
    assert bulk.max_attempts == TierSettings(name="bulk").max_attempts
    assert "max_attempts" not in LOCAL_TIER_SETTINGS


def test_the_changes_are_listed_from_the_default_to_the_local_value():
    changes = {(c.tier, c.setting): (c.before, c.after) for c in local_profile_changes(RAW, local_overrides())}

    assert changes == {
        ("critical", "max_concurrency"): (20, 2),
        ("bulk", "retry_schedule_seconds"): ((5, 30, 120, 600), (1, 2, 3)),
        ("bulk", "timeout_seconds"): (60, 5),
        ("bulk", "max_concurrency"): (5, 2),
    }
    [change] = [c for c in local_profile_changes(RAW, local_overrides()) if c.setting == "retry_schedule_seconds"]
    assert change.to_dict() == {
        "tier": "bulk",
        "setting": "retry_schedule_seconds",
        "from": [5, 30, 120, 600],
        "to": [1, 2, 3],
    }


def test_a_profile_value_the_users_own_values_rule_out_is_left_out():
    """A 10 s time budget margin needs more than the profile's 5 s timeout: the tier keeps its 30 s."""
    raw = {"tiers": {"transactional": {"time_budget_margin_ms": 10_000}}, "routes": {"*": "transactional"}}

    tier = _local(raw).tier("transactional")

    assert (tier.timeout_seconds, tier.time_budget_margin) == (30, 10_000)
    assert tier.max_concurrency == LOCAL_TIER_SETTINGS["max_concurrency"]
    listed = {c.setting for c in local_profile_changes(raw, local_overrides())}
    assert "timeout_seconds" not in listed and "max_concurrency" in listed


def test_no_change_is_claimed_for_tiers_built_from_other_settings():
    """An app that passes settings it built otherwise: the raw context is not what was built."""
    other = AppSettings.from_context({"tiers": {"bulk": {"timeout_seconds": 7}}, "routes": {"*": "bulk"}})

    assert local_profile_changes(RAW, local_overrides(), other.tiers) == ()
    assert local_profile_changes(RAW, local_overrides(), _local(RAW).tiers) != ()
    assert local_profile_changes(RAW, None) == ()
