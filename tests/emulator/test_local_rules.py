"""EventBridge scheduled rules in local mode: the circuit breakers' reconcile rule, deployed with the stack,
fires the replay function through the local emulation (emulator/rules.py).

The session's rule runner fires by a clock the test moves, so the five minutes of ``rate(5 minutes)``
pass at once; everything else (the deployment, the asynchronous invoke, the replay function's run)
is local mode's own.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from emulator.session import LocalSession
from tests.emulator.local_support import wait_until
from tests.support.clock import ManualClock

pytestmark = pytest.mark.e2e

#: A bound for each wait, far above an honest run on a loaded machine.
PATIENCE_SECONDS = 300
BREAKER = {"circuit_breaker_percent": 50, "circuit_breaker_min_jobs": 10, "circuit_breaker_minutes": 1}


@pytest.fixture(scope="module")
def clock():
    return ManualClock(datetime.now(timezone.utc))


@pytest.fixture(scope="module")
def session(clock):
    tiers = {"critical": {}, "transactional": BREAKER, "bulk": {}}
    local = LocalSession(settings={"tiers": tiers}, rules_clock=clock).start()
    yield local
    local.stop()


def reconciles(session) -> list[dict]:
    """The replay function's log records of a reconcile: what it did with each tier."""
    lines = list(session.logs.get(session.deployment.replay.name, ()))
    records = [json.loads(line) for line in lines if line.startswith("{") and "circuit breaker" in line]
    return [r for r in records if r.get("event", {}).get("action") == "reconcile"]


def test_the_reconcile_rule_fires_the_replay_function_five_minutes_after_it_is_seen(session, clock):
    upcoming = wait_until(session.rules.next_fires, PATIENCE_SECONDS, "the runner to see the stack's scheduled rule")
    ((name, due),) = upcoming.items()
    assert "Reconcile" in name
    assert due == clock.now + timedelta(minutes=5)  # rate(5 minutes), counted from when the runner saw it
    (target,) = session.clients("events").list_targets_by_rule(Rule=name)["Targets"]
    assert target["Arn"] == session.deployment.replay.arn
    assert reconciles(session) == []  # nothing before its time

    clock.now = due
    (fire,) = wait_until(lambda: list(session.rules.fires), PATIENCE_SECONDS, "the rule's fire")
    assert (fire.rule_name, fire.error) == (name, None)
    assert json.loads(fire.payload) == {"action": "reconcile", "tiers": ["transactional"]}

    (record,) = wait_until(
        lambda: reconciles(session),
        PATIENCE_SECONDS,
        "the replay function's reconcile",
        seen=lambda: list(session.logs.get(session.deployment.replay.name, ())),
    )
    # The breaker never opened: the reconciler found nothing to move on.
    assert record["result"]["tiers"]["transactional"]["outcome"] == "nothing to do"
    assert len(session.rules.fires) == 1  # one time, one fire
