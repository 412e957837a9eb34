"""Triggers in local mode: the real stack with two triggers (the default bus, a partner's bus), an event put
on each runs its job, and an event EventBridge delivers twice runs once.

One session serves the module (free ports: the embedded AWS picks its own).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from emulator.session import LocalSession
from emulator.view import job_total
from tests.emulator.local_support import TEST_TIER_SETTINGS, wait_until
from tiered_jobs.contract.names import Metrics

pytestmark = pytest.mark.e2e

#: A bound for each wait, far above an honest run on a loaded machine.
PATIENCE_SECONDS = 300
PARTNER_BUS = "aws.partner/stripe.com/ed_123/acct"
TRIGGERS = {
    "orders": {"pattern": {"source": ["shop.orders"], "detail-type": ["Order Paid"]}, "job_type": "demo.flaky"},
    "stripe": {
        "pattern": {"detail-type": ["charge.succeeded"]},
        "bus": PARTNER_BUS,
        "job_type": "demo.flaky",
        "key_path": "$.detail.id",
        "payload_path": "$.detail.job",
    },
}
TIER = "transactional"  # demo.* in cdk.json's routes


@pytest.fixture(scope="module")
def session():
    local = LocalSession(
        alarm_interval_seconds=0.5, tier_settings=TEST_TIER_SETTINGS, settings={"triggers": TRIGGERS}
    ).start()
    yield local
    local.stop()


def _total(session, metric: str) -> int:
    return job_total(session, TIER, metric)


def _rule(target_id: str) -> Any:
    """moto's rule (the embedded AWS runs in this process) whose target is ``target_id``."""
    from moto.events.models import events_backends

    for backend in events_backends.values():
        for region in backend.values():
            for bus in region.event_buses.values():
                for rule in bus.rules.values():
                    if any(t["Id"] == target_id for t in rule.targets):
                        return rule
    raise AssertionError(f"no rule targets {target_id!r}")


def test_an_event_runs_its_job_once_and_its_redelivery_is_a_duplicate(session):
    events = session.clients("events")
    (entry,) = events.put_events(
        Entries=[{"Source": "shop.orders", "DetailType": "Order Paid", "Detail": json.dumps({"fail_times": 0})}]
    )["Entries"]
    wait_until(lambda: _total(session, Metrics.SUCCEEDED) >= 1, PATIENCE_SECONDS, "the event's job to succeed")
    # EventBridge delivers at least once: the same event (its id) through the rule again.
    rule = _rule("orders")
    rule.send_to_targets(
        {
            "version": "0",
            "id": entry["EventId"],
            "detail-type": "Order Paid",
            "source": "shop.orders",
            "account": rule.account_id,
            "time": 1_765_101_600.0,
            "region": rule.region_name,
            "resources": [],
            "detail": {"fail_times": 0},
        }
    )
    wait_until(lambda: _total(session, Metrics.DUPLICATE) >= 1, PATIENCE_SECONDS, "the redelivery to be seen")
    # Both deliveries are settled as succeeded; the second one as a duplicate, its job not run again.
    assert (_total(session, Metrics.SUCCEEDED), _total(session, Metrics.DUPLICATE)) == (2, 1)


def test_an_event_on_a_partners_bus_runs_its_job(session):
    assert session.deployment.gaps["event buses created for the rules"] == [PARTNER_BUS]
    before = _total(session, Metrics.SUCCEEDED)
    detail = {"id": "ch_1", "job": {"fail_times": 0}}
    entry = {"Source": "stripe", "DetailType": "charge.succeeded", "Detail": json.dumps(detail)}
    session.clients("events").put_events(Entries=[{**entry, "EventBusName": PARTNER_BUS}])
    wait_until(lambda: _total(session, Metrics.SUCCEEDED) > before, PATIENCE_SECONDS, "the partner event's job")
