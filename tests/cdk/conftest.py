"""The stacks the construct library's tests read (this app's from ``cdk.json``, and one more), once per session each."""

from __future__ import annotations

import pytest

from infra.app import load_cdk_context
from tests.cdk.infra_support import Synth, synthesize_once


@pytest.fixture(scope="session")
def default_synth(tmp_path_factory) -> Synth:
    """Exactly what ``cdk.json`` says."""
    return synthesize_once(tmp_path_factory, "default")


@pytest.fixture(scope="session")
def custom_synth(tmp_path_factory) -> Synth:
    """A disposable stage with an added tier (logging at DEBUG, untraced, deployed by canary), a moved route,
    subscriptions, x86, console events, a periodic job, two triggers (AWS events as jobs: S3 on the default
    bus, a partner's bus) and a 30-day discard archive."""
    context = load_cdk_context()["tiered_jobs"]
    return synthesize_once(
        tmp_path_factory,
        "custom",
        stage="qa",
        disposable=True,
        architecture="x86_64",
        powertools_version="latest",
        alarm_email="oncall@example.com",
        alarm_https_url="https://events.pagerduty.com/integration/abc/enqueue",
        console_test_events=True,
        discard_archive_days=30,
        tiers={
            **context["tiers"],
            "reports": {
                "max_concurrency": 2,
                "timeout_seconds": 120,
                "log_level": "DEBUG",
                "tracing": False,
                "deployment": "canary_10_percent_5_minutes",
            },
        },
        routes={**context["routes"], "reports.*": "reports", "payments.update_balance": "transactional"},
        schedules={
            "weekly-report": {
                "expression": "cron(0 6 ? * MON *)",
                "timezone": "Europe/Paris",
                "job_type": "reports.weekly",
                "payload": {},
            }
        },
        triggers=CUSTOM_TRIGGERS,
    )


#: The custom stage's triggers: an S3 upload (default bus, routed) and a partner's event (its own bus, key and retries).
CUSTOM_TRIGGERS = {
    "uploads": {
        "pattern": {
            "source": ["aws.s3"],
            "detail-type": ["Object Created"],
            "detail": {"bucket": {"name": [{"prefix": "qa-"}]}},
        },
        "job_type": "reports.weekly",
        "payload_path": "$.detail.object",
    },
    "stripe": {
        "pattern": {"detail-type": ["charge.succeeded"]},
        "bus": "aws.partner/stripe.com/ed_123/acct",
        "job_type": "payments.update_balance",
        "key_path": "$.detail.id",
        "retry_attempts": 10,
        "max_event_age_seconds": 3600,
    },
}
