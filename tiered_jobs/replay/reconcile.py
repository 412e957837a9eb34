"""The circuit breakers' reconciler: every five minutes, each breaker's alarms read, and a stranded breaker moved on.

An alarm's actions fire only when its state changes, and each change reaches the replay function
as an asynchronous invocation that Lambda tries three times. When all three fail (the mapping
``Updating`` past the update's retries, a throttled call) or the opening event is delivered late,
the mapping stays disabled while the opening alarm sits in OK without data, and no further change
ever comes: the jobs would wait until SQS's retention deletes them. An EventBridge rule sends
``{"action": "reconcile", "tiers": [...]}`` every five minutes, and the reconciler does what the
lost event would have done, from the alarms' *current* states:

* the opening alarm is OK and the mapping is disabled by the breaker: **half-open** (the probe starts);
* the breaker is half-open, its mapping enabled, and the probe alarm is in ALARM: **close**.

It never opens a breaker (an operator who resumed one meant it) and never touches an operator's
pause. A state younger than :data:`GRACE` is left to its own event, whose retries take about three
minutes; the decisions are those of :mod:`tiered_jobs.replay.breaker`, idempotent on the mapping's
state and tags, so a reconcile that races an event does the same thing twice, not two things.

Its AWS calls: one ``DescribeAlarms`` (up to 50 tiers), then per tier one ``GetEventSourceMapping``
and one ``ListTags``; a move adds the breaker's own calls.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from typing import Any

from tiered_jobs.contract.names import Alarms
from tiered_jobs.contract.replay_events import BREAKER_ACTIONS, RECONCILE_EVENT_FIELDS

from .breaker import Breaker, Pager, close, half_open
from .mapping_changes import Sleep
from .pause import PauseError

__all__ = ["BREAKER_ACTIONS", "GRACE", "MAX_TIERS", "is_reconcile_event", "reconcile"]

#: An alarm state younger than this is left to the event its change sent (Lambda's retries: about 3 minutes).
GRACE = timedelta(minutes=5)
#: ``DescribeAlarms`` takes at most 100 names: two per tier.
MAX_TIERS = 50


def is_reconcile_event(event: Any) -> bool:
    return isinstance(event, Mapping) and event.get("action") in BREAKER_ACTIONS


def _tiers(event: Mapping[str, Any], mappings: Mapping[str, str]) -> list[str]:
    problems = [f"unknown field {key!r}" for key in event if key not in RECONCILE_EVENT_FIELDS]
    tiers = event.get("tiers")
    if not isinstance(tiers, list) or not tiers or not all(isinstance(t, str) for t in tiers):
        problems.append(f"'tiers' must be a non-empty list of tier names, got {tiers!r}")
    elif unknown := [t for t in tiers if t not in mappings]:
        problems.append(f"'tiers' must name tiers of {', '.join(sorted(mappings)) or '(none)'}, got {unknown}")
    elif len(tiers) > MAX_TIERS:
        problems.append(f"'tiers' names {len(tiers)} tiers, more than {MAX_TIERS} (DescribeAlarms' 100 names)")
    if problems:
        allowed = ", ".join(RECONCILE_EVENT_FIELDS)
        raise PauseError("invalid reconcile event: " + "; ".join(problems) + f". Allowed fields: {allowed}")
    assert isinstance(tiers, list)
    return [str(t) for t in tiers]


def _aware(moment: Any) -> datetime | None:
    if not isinstance(moment, datetime):
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def reconcile(
    event: Mapping[str, Any],
    *,
    stage: str,
    mappings: Mapping[str, str],
    lambda_client: Any,
    cloudwatch: Any,
    page: Pager | None = None,
    now: datetime | None = None,
    sleep: Sleep = time.sleep,
) -> dict[str, Any]:
    """``{"tiers": {tier: {"outcome": ..., "alarm": ..., "since": ...}}}``: what each breaker needed, and got."""
    tiers = _tiers(event, mappings)
    at = now or datetime.now(timezone.utc)
    names = [
        Alarms.name(stage, tier, kind) for tier in tiers for kind in (Alarms.CIRCUIT_BREAKER, Alarms.CIRCUIT_PROBE)
    ]
    alarms = {a["AlarmName"]: a for a in cloudwatch.describe_alarms(AlarmNames=names).get("MetricAlarms", [])}
    done: dict[str, dict[str, Any]] = {}
    for tier in tiers:
        opening = alarms.get(Alarms.name(stage, tier, Alarms.CIRCUIT_BREAKER))
        probe = alarms.get(Alarms.name(stage, tier, Alarms.CIRCUIT_PROBE))
        if opening is None or probe is None:
            done[tier] = {"outcome": "no circuit breaker alarms"}
            continue
        breaker = Breaker.read(lambda_client, stage, tier, mappings[tier])
        opening_since, probe_since = (
            _aware(opening.get("StateUpdatedTimestamp")),
            _aware(probe.get("StateUpdatedTimestamp")),
        )
        outcome = "nothing to do"
        if opening["StateValue"] == "OK" and breaker.opened_by_breaker:
            outcome = (
                half_open(breaker, lambda_client, cloudwatch, since=opening_since, sleep=sleep)
                if _settled(opening_since, at)
                else "left to its alarm's event"
            )
        elif probe["StateValue"] == "ALARM" and breaker.enabled and breaker.circuit == "half-open":
            outcome = (
                close(breaker, lambda_client, page=page, at=at, since=probe_since, sleep=sleep)
                if _settled(probe_since, at)
                else "left to its alarm's event"
            )
        done[tier] = {"outcome": outcome, "breaker": opening["StateValue"], "probe": probe["StateValue"]}
    return {"action": "reconcile", "tiers": done}


def _settled(since: datetime | None, at: datetime) -> bool:
    """The alarm has been in its state long enough for its own event to have acted (unknown: act)."""
    return since is None or at - since >= GRACE
