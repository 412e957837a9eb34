"""``triggers`` in ``cdk.json``: AWS events as jobs, read and refused before anything is built."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.cdk.infra_support import EXAMPLE_ROUTES
from tiered_jobs.cdk.settings import AppSettings, SettingsError
from tiered_jobs.contract import envelope
from tiered_jobs.contract.triggers import MAX_PATHS, MAX_TEMPLATE_CHARS, input_paths, input_template

UPLOADS = {"pattern": {"source": ["aws.s3"], "detail-type": ["Object Created"]}, "job_type": "analytics.record_event"}


def _triggers(**trigger: Any) -> AppSettings:
    return AppSettings.from_context({"routes": EXAMPLE_ROUTES, "triggers": {"uploads": {**UPLOADS, **trigger}}})


def test_a_trigger_routes_as_the_publisher_and_takes_the_documented_defaults():
    (trigger,) = _triggers().triggers
    assert (trigger.name, trigger.job_type, trigger.tier, trigger.bus) == (
        "uploads",
        "analytics.record_event",
        "bulk",
        "default",
    )
    assert (trigger.key_path, trigger.payload_path) == ("$.id", "$.detail")
    # EventBridge's own defaults: 185 attempts over 24 hours.
    assert (trigger.retry_attempts, trigger.max_event_age_seconds) == (185, 86_400)
    (partner,) = _triggers(bus="aws.partner/stripe.com/ed_123/acct", tier="critical", key_path="$.detail.id").triggers
    assert (partner.bus, partner.tier, partner.key_path) == (
        "aws.partner/stripe.com/ed_123/acct",
        "critical",
        "$.detail.id",
    )
    assert AppSettings.from_context({"routes": EXAMPLE_ROUTES}).triggers == ()


@pytest.mark.parametrize(
    ("trigger", "message"),
    [
        ({"job_type": "nobody.routes_this"}, "job type 'nobody.routes_this' is unroutable"),
        ({"job_type": "Files Scan"}, "job_type 'Files Scan' is not a job type"),
        ({"tier": "gold"}, "tier 'gold' is unknown; use one of critical, transactional, bulk"),
        ({"pattern": {}}, "pattern must be a non-empty object"),
        ({"pattern": {"source": "aws.s3"}}, "at 'source': 'aws.s3' must be an array of values to match"),
        ({"pattern": {"detail": {"size": [{"bigger": 3}]}}}, "at 'detail.size': {'bigger': 3} is neither a value"),
        ({"pattern": {"source": ["x" * 4096]}}, "longer than EventBridge's 4096 characters"),
        ({"key_path": "$.detail['id']"}, "is not a path EventBridge's input transformer takes"),
        ({"payload_path": "detail"}, "payload_path 'detail' is not a path"),
        ({"key_path": "$.detail.*"}, "no wildcards"),
        ({"key_path": 7}, "key_path must be a JSON path string"),
        ({"bus": "my bus"}, "bus 'my bus' is not an event bus name or ARN"),
        ({"retry_attempts": 186}, "retry_attempts 186 is out of range; use a value between 0 and 185"),
        ({"max_event_age_seconds": 59}, "max_event_age_seconds 59 is out of range"),
        ({"enqueued_at": "$.time"}, "unknown key(s) 'enqueued_at'"),
    ],
)
def test_a_bad_trigger_is_refused_with_its_name_and_the_fix(trigger, message):
    with pytest.raises(SettingsError) as raised:
        _triggers(**trigger)
    assert str(raised.value).startswith("trigger 'uploads': ") and message in str(raised.value)


def test_a_bad_name_or_shape_is_refused():
    with pytest.raises(SettingsError, match="trigger 'Uploads!': invalid name"):
        AppSettings.from_context({"routes": EXAMPLE_ROUTES, "triggers": {"Uploads!": UPLOADS}})
    with pytest.raises(SettingsError, match="triggers must be an object"):
        AppSettings.from_context({"routes": EXAMPLE_ROUTES, "triggers": [UPLOADS]})
    with pytest.raises(SettingsError, match="pattern is required"):
        AppSettings.from_context({"routes": EXAMPLE_ROUTES, "triggers": {"uploads": {"job_type": "analytics.x"}}})


def test_the_transformer_is_an_envelope_within_eventbridges_limits():
    """Filled as EventBridge fills it (strings inside quotes, the payload object as JSON), the template is
    a valid envelope; it stays within the model's limits (100 paths, 8192 characters)."""
    paths, template = input_paths(), input_template("analytics.record_event")
    assert paths == {"key": "$.id", "payload": "$.detail", "time": "$.time"}
    assert len(paths) <= MAX_PATHS and len(template) <= MAX_TEMPLATE_CHARS
    filled = (
        template.replace("<key>", "7bf73129-1428-4cd3-a780-95db273d1602")
        .replace("<payload>", json.dumps({"event": "upload"}))
        .replace("<time>", "2026-12-07T10:00:00Z")
    )
    job = json.loads(filled)
    assert envelope.validate(job) == []
    assert job["published_at"] == "2026-12-07T10:00:00Z" and job["type"] == "analytics.record_event"
