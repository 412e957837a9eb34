"""The replay event: defaults, every refusal with its message, and the console events.

The example app's copies of the console events (``functions/events/replay``) are tested in
``tests/functions/test_replay_events.py``.
"""

from __future__ import annotations

import json

import pytest

from tiered_jobs.contract.names import DEFAULT_TIERS, Env
from tiered_jobs.contract.replay_events import EVENT_FIELDS, PAUSE_ACTIONS, console_events, routed_glob
from tiered_jobs.replay import (
    MAX_MESSAGES_CAP,
    ReplayEventError,
    ReplayRequest,
    parse_event,
    tiers_from_env,
)
from tiered_jobs.replay.tiers import TierQueues

TIERS = ("critical", "transactional", "bulk")


def refusal(event, tiers=TIERS) -> str:
    with pytest.raises(ReplayEventError) as caught:
        parse_event(event, tiers=tiers)
    return str(caught.value)


def test_defaults_come_from_event_fields():
    request = parse_event({"tier": "critical"}, tiers=TIERS)
    assert request == ReplayRequest(tier="critical")
    assert {name: getattr(request, name) for name in EVENT_FIELDS if name != "tier"} == {
        name: default for name, default in EVENT_FIELDS.items() if name != "tier"
    }
    assert not request.has_filters


def test_a_full_event_is_read_as_given():
    request = parse_event(
        {
            "action": "replay",
            "tier": "bulk",
            "mode": "batch",
            "dry_run": True,
            "max_messages": MAX_MESSAGES_CAP,
            "job_type": "testjobs.*",
            "error_type": "unknown",
            "older_than_seconds": 60,
            "max_per_second": 2.5,
        },
        tiers=TIERS,
    )
    assert request == ReplayRequest(
        tier="bulk",
        dry_run=True,
        max_messages=MAX_MESSAGES_CAP,
        job_type="testjobs.*",
        error_type="unknown",
        older_than_seconds=60,
        max_per_second=2.5,
    )
    assert request.has_filters


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        ([], "the event must be a JSON object, got an array"),
        ("critical", "the event must be a JSON object, got the string 'critical'"),
        ({"tier": "critical", "job_typ": "testjobs.*"}, "unknown field(s) 'job_typ'"),
        (
            {"tier": "critical", "action": "delete"},
            "'action' must be one of 'replay', 'inspect', 'discard', 'show', got 'delete'",
        ),
        ({}, "'tier' is required (one of 'bulk', 'critical', 'transactional')"),
        ({"tier": "gold"}, "unknown tier 'gold' (this stage has 'bulk', 'critical', 'transactional')"),
        ({"tier": 1}, "'tier' must be a string, got the number 1"),
        ({"tier": "critical", "mode": "fast"}, "'mode' must be one of 'batch', 'native', got 'fast'"),
        ({"tier": "critical", "dry_run": "yes"}, "'dry_run' must be true or false, got the string 'yes'"),
        ({"tier": "critical", "dry_run": 1}, "'dry_run' must be true or false, got the number 1"),
        ({"tier": "critical", "max_messages": 0}, "'max_messages' must be a whole number from 1 to 10000, got 0"),
        ({"tier": "critical", "max_messages": -5}, "'max_messages' must be a whole number from 1 to 10000, got -5"),
        ({"tier": "critical", "max_messages": True}, "'max_messages' must be a whole number from 1 to 10000, got True"),
        ({"tier": "critical", "max_messages": 2.5}, "'max_messages' must be a whole number from 1 to 10000, got 2.5"),
        ({"tier": "critical", "max_messages": "10"}, "'max_messages' must be a whole number from 1 to 10000, got '10'"),
        (
            {"tier": "critical", "max_messages": 10_001},
            "'max_messages' must be a whole number from 1 to 10000, got 10001",
        ),
        (
            {"tier": "critical", "older_than_seconds": -1},
            "'older_than_seconds' must be a whole number from 0 to 1209600, got -1",
        ),
        (
            {"tier": "critical", "older_than_seconds": False},
            "'older_than_seconds' must be a whole number from 0 to 1209600, got False",
        ),
        ({"tier": "critical", "job_type": ""}, "'job_type' must be a non-empty string"),
        ({"tier": "critical", "error_type": ["TimeoutError"]}, "'error_type' must be a non-empty string"),
        (
            {"tier": "critical", "max_per_second": 0},
            "'max_per_second' must be a number above 0 or null (no limit), got 0",
        ),
        ({"tier": "critical", "max_per_second": -3}, "'max_per_second' must be a number above 0"),
        ({"tier": "critical", "max_per_second": True}, "'max_per_second' must be a number above 0"),
        ({"tier": "critical", "max_per_second": "50"}, "'max_per_second' must be a number above 0"),
        (
            {"tier": "critical", "mode": "native", "job_type": "testjobs.*", "error_type": "X"},
            "'mode': 'native' moves every letter and cannot filter: remove 'job_type', 'error_type'",
        ),
        (
            {"tier": "critical", "mode": "native", "older_than_seconds": 60},
            "cannot filter: remove 'older_than_seconds'",
        ),
        (
            {"tier": "critical", "mode": "native", "max_messages": 100},
            "'mode': 'native' moves every letter: remove 'max_messages'",
        ),
        (
            {"tier": "critical", "mode": "native", "action": "inspect"},
            "'mode': 'native' applies to 'action': 'replay' only",
        ),
        (
            {"tier": "critical", "mode": "native", "max_per_second": 501},
            "'max_per_second' can be at most 500 in 'mode': 'native', got 501",
        ),
        (
            {"tier": "critical", "mode": "native", "max_per_second": 2.5},
            "'max_per_second' must be a whole number in 'mode': 'native', got 2.5",
        ),
    ],
)
def test_every_bad_event_gets_a_clear_error(event, expected):
    message = refusal(event)
    assert message.startswith("invalid replay event: ")
    assert expected in message


def test_every_problem_is_listed_at_once_with_what_is_allowed():
    error = pytest.raises(
        ReplayEventError,
        parse_event,
        {"tier": "gold", "action": "move", "max_messages": 0, "jobtype": "x"},
        tiers=TIERS,
    ).value
    assert len(error.problems) == 4
    message = str(error)
    for field in EVENT_FIELDS:
        assert f"{field}: " in message.split("Allowed fields: ")[1]
    assert "'replay' | 'inspect' | 'discard' | 'show' (default 'replay')" in message
    assert f"max_messages: 1-{MAX_MESSAGES_CAP} (default 100)" in message


def test_without_known_tiers_the_tier_must_still_be_a_tier_name():
    assert parse_event({"tier": "gold"}).tier == "gold"
    assert "'tier' must match" in refusal({"tier": "Gold Tier"}, tiers=None)


def test_native_mode_accepts_a_whole_rate_and_a_dry_run():
    request = parse_event({"tier": "critical", "mode": "native", "max_per_second": 100, "dry_run": True}, tiers=TIERS)
    assert (request.mode, request.max_per_second, request.dry_run) == ("native", 100, True)


def test_console_events_parse_for_every_tier_and_are_named_after_it():
    """The construct's console test events (the example app keeps them as files: tests/functions)."""
    for tier in DEFAULT_TIERS:
        events = console_events(tier, job_type_glob="testjobs.*")
        assert len(events) == 7
        for name, event in events.items():
            if event["action"] in PAUSE_ACTIONS:  # its mapping's: tiered_jobs.replay.pause reads these
                assert event == {"action": event["action"], "tier": tier} and name == f"{tier}-{event['action']}"
                continue
            request = parse_event(event, tiers=DEFAULT_TIERS)
            assert name.startswith(tier + "-") and request.tier == tier
        assert parse_event(events[f"{tier}-replay-job-type"], tiers=DEFAULT_TIERS).job_type == "testjobs.*"


def test_a_tier_without_a_route_gets_no_job_type_replay_and_the_glob_is_the_apps_own():
    """The library names no job type: the job-type replay uses a pattern the app routes to the tier."""
    assert "bulk-replay-job-type" not in console_events("bulk")
    routes = {"invoices.*": "transactional", "audit.*": "bulk", "audit.exports": "bulk"}
    assert [routed_glob(tier, routes) for tier in ("critical", "transactional", "bulk")] == [
        None,
        "invoices.*",
        "audit.*",
    ]


def test_tiers_come_from_the_environment():
    table = {"critical": {"queue_url": "https://q/critical", "dlq_url": "https://q/critical-dlq"}}
    assert tiers_from_env({Env.REPLAY_TIERS: json.dumps(table)}) == {
        "critical": TierQueues("https://q/critical", "https://q/critical-dlq")
    }


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, f"{Env.REPLAY_TIERS} is not set"),
        ("not json", f"{Env.REPLAY_TIERS} must be a JSON object"),
        ('{"critical": {"queue_url": "u"}}', "'dlq_url'"),
        ('["critical"]', f"{Env.REPLAY_TIERS} must be a JSON object"),
    ],
)
def test_a_broken_tier_table_is_a_clear_deployment_error(value, expected):
    with pytest.raises(RuntimeError) as caught:
        tiers_from_env({} if value is None else {Env.REPLAY_TIERS: value})
    assert expected in str(caught.value)


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        ({"tier": "critical", "action": "show"}, "'action': 'show' needs 'message_ids'"),
        ({"tier": "critical", "message_ids": []}, "'message_ids' must be a list of 1-100 message ids"),
        ({"tier": "critical", "message_ids": "m1"}, "'message_ids' must be a list of 1-100 message ids"),
        ({"tier": "critical", "message_ids": ["m1", ""]}, "'message_ids' must be a list of 1-100 message ids"),
        ({"tier": "critical", "message_ids": [f"m{i}" for i in range(101)]}, "'message_ids' must be a list of 1-100"),
        (
            {"tier": "critical", "allow_outside_idempotency_window": "yes"},
            "'allow_outside_idempotency_window' must be true or false, got the string 'yes'",
        ),
        (
            {"tier": "critical", "action": "discard", "allow_outside_idempotency_window": True},
            "'allow_outside_idempotency_window' applies to 'action': 'replay' only",
        ),
        ({"tier": "critical", "mode": "native"}, "'mode': 'native' moves every letter however old"),
        (
            {"tier": "critical", "mode": "native", "message_ids": ["m1"], "allow_outside_idempotency_window": True},
            "cannot filter: remove 'message_ids'",
        ),
    ],
)
def test_discard_show_and_window_fields_are_validated(event, expected):
    assert expected in refusal(event)


def test_discard_and_show_events_are_read_as_given():
    discard = parse_event({"tier": "bulk", "action": "discard", "message_ids": ["m1", "m2"]}, tiers=TIERS)
    assert (discard.action, discard.message_ids, discard.has_filters) == ("discard", ("m1", "m2"), True)
    replay = parse_event({"tier": "bulk", "allow_outside_idempotency_window": True}, tiers=TIERS)
    assert replay.allow_outside_idempotency_window is True


def test_the_idempotency_window_comes_from_the_environment():
    table = {
        "critical": {"queue_url": "q", "dlq_url": "d", "idempotency_ttl_seconds": 1_555_200},
        "bulk": {"queue_url": "q2", "dlq_url": "d2"},
    }
    assert tiers_from_env({Env.REPLAY_TIERS: json.dumps(table)}) == {
        "critical": TierQueues("q", "d", 1_555_200),
        "bulk": TierQueues("q2", "d2", None),
    }
    table["bulk"]["idempotency_ttl_seconds"] = "1 day"
    with pytest.raises(RuntimeError, match="tier 'bulk' has 'idempotency_ttl_seconds' '1 day'"):
        tiers_from_env({Env.REPLAY_TIERS: json.dumps(table)})
