"""The circuit breaker: a tier's CloudWatch alarms drive its event source mapping, nothing polls.

A tier with ``circuit_breaker_percent`` has two alarms whose actions invoke the replay function
(CloudWatch's Lambda alarm action):

* ``circuit-breaker`` (over ``JobsRetried`` / ``JobsProcessed``, with a minimum volume) goes to
  ALARM: the breaker **opens**. The mapping is disabled exactly as a pause does, recorded as
  paused by :data:`BREAKER_BY`: Lambda stops receiving, so queued jobs keep their attempts (a held
  job is never received, so never an attempt).
* With the mapping disabled no datapoint arrives, so after one window the same alarm returns to OK
  (missing data is not breaching): the breaker goes **half-open**. The mapping is enabled with
  ``MaximumConcurrency`` :data:`PROBE_CONCURRENCY` (the least Lambda allows) and the probe alarm is
  set to OK, so that its next minute with a succeeded job is a change of state.
* ``circuit-probe`` (``JobsSucceeded`` > 0 over a minute) goes to ALARM while half-open: the probe's
  jobs succeed, the breaker **closes**: the maximum concurrency the mapping had when it opened is
  restored, and one page goes to the stage's alarm topic (:func:`closed_page`). If the downstream
  still fails, ``circuit-breaker`` opens again instead.

It pages twice per outage: the opening alarm's own ALARM notification, and the closing page this
module sends. Not at half-open: the window that returns the opening alarm to OK proves only that
nothing ran, so its OK is no news for the on-call (the template gives that change no SNS action).

The breaker's state lives on the mapping (its ``State`` and tags), like a pause. An operator's
pause is never undone: the breaker only resumes a mapping it disabled itself (paused by
:data:`BREAKER_BY`), and never opens one already disabled by someone else; an operator who pauses a
tier the breaker opened takes the pause over (``pause.pause``), so its probe leaves it paused.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from typing import Any

from tiered_jobs.contract.names import Alarms
from tiered_jobs.contract.times import iso_text

from .pause import BREAKER_BY, TAG_PAUSED_AT, TAG_PAUSED_BY, PauseError

__all__ = [
    "BREAKER_BY",
    "PAGE_SOURCE",
    "PROBE_CONCURRENCY",
    "TAG_CIRCUIT",
    "TAG_RESTORE",
    "Pager",
    "closed_page",
    "handle_alarm",
    "is_alarm_event",
]

#: The probe's maximum concurrency: the event source mapping's minimum, the smallest trickle Lambda allows.
PROBE_CONCURRENCY = 2
#: The breaker's state on the mapping while it is not closed: ``open`` or ``half-open``.
TAG_CIRCUIT = "tiered-jobs:circuit"
#: The maximum concurrency to restore when it closes ("" when the mapping had none).
TAG_RESTORE = "tiered-jobs:circuit-restore"
#: SNS's limit on a message's subject.
MAX_SUBJECT = 100
#: The closing page's ``Source``, which tells it from CloudWatch's notifications on the same topic.
PAGE_SOURCE = "tiered-jobs circuit breaker"

#: Sends one page: ``(subject, message)`` -> published to the stage's alarm topic.
Pager = Callable[[str, str], object]


def closed_page(stage: str, tier: str, restored: str, at: str) -> tuple[str, str]:
    """The closing page's subject and message: the tier, what happened, and the first command to run.

    A JSON object like CloudWatch's own notifications on the same topic, so that whatever reads the
    topic (an e-mail, an HTTPS endpoint) gets one shape; ``Source`` tells it from an alarm's."""
    concurrency = f"its maximum concurrency of {restored}" if restored else "Lambda's own concurrency (no maximum)"
    message = {
        "Source": PAGE_SOURCE,
        "Stage": stage,
        "Tier": tier,
        "Event": "closed",
        "Summary": (
            f"The circuit breaker of the {stage} stage's {tier} tier closed at {at}: the probe's jobs succeeded, "
            f"so the downstream is back, and the tier runs at {concurrency} again. The jobs that waited in its "
            f"queue during the outage kept their attempts and run now."
        ),
        "FirstCommand": f"tiered-jobs --stage {stage} status",
        "ClosedAt": at,
    }
    subject = f"CLOSED: circuit breaker of the {tier} tier ({stage})"[:MAX_SUBJECT]
    return subject, json.dumps(message)


def is_alarm_event(event: Any) -> bool:
    """CloudWatch's Lambda alarm action: ``{"source": "aws.cloudwatch", "alarmArn": ..., "alarmData": ...}``.

    Any other value (a list, a string: what an operator may type in the console's test event) is
    not, and goes on to the replay event's own checks, which name what is wrong."""
    return (
        isinstance(event, Mapping)
        and event.get("source") == "aws.cloudwatch"
        and isinstance(event.get("alarmData"), Mapping)
    )


def handle_alarm(
    event: Mapping[str, Any],
    *,
    stage: str,
    mappings: Mapping[str, str],
    lambda_client: Any,
    cloudwatch: Any,
    page: Pager | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """One alarm's change of state -> what the breaker did to the tier's mapping (``outcome``).

    ``page`` sends the closing page (``None``: a stack without the alarm topic's ARN, no page)."""
    data = event["alarmData"]
    name, state = data.get("alarmName"), (data.get("state") or {}).get("value")
    found = [
        (tier, kind)
        for tier in mappings
        for kind in (Alarms.CIRCUIT_BREAKER, Alarms.CIRCUIT_PROBE)
        if Alarms.name(stage, tier, kind) == name
    ]
    if not found:
        raise PauseError(f"alarm {name!r} is not a circuit breaker alarm of the {stage} stage's tiers")
    tier, kind = found[0]
    uuid = mappings[tier]
    mapping = lambda_client.get_event_source_mapping(UUID=uuid)
    arn = mapping["EventSourceMappingArn"]
    tags = lambda_client.list_tags(Resource=arn).get("Tags", {})
    enabled = mapping.get("State") in ("Enabled", "Enabling", "Updating")
    circuit = tags.get(TAG_CIRCUIT, "")
    result = {"tier": tier, "alarm": name, "state": state}
    if kind == Alarms.CIRCUIT_BREAKER and state == "ALARM":
        if not enabled:
            # Disabled already: by the breaker (nothing to do) or by an operator (never taken over).
            opened = tags.get(TAG_PAUSED_BY) == BREAKER_BY
            return {**result, "outcome": "already open" if opened else "paused by an operator: left alone"}
        # The concurrency from before the first opening: kept while the breaker is not closed (a probe
        # runs at 2; an invocation that died before disabling left it open on an enabled mapping).
        restore = (
            tags.get(TAG_RESTORE, "")
            if circuit in ("open", "half-open") and TAG_RESTORE in tags
            else str((mapping.get("ScalingConfig") or {}).get("MaximumConcurrency", ""))
        )
        at = iso_text(now or datetime.now(timezone.utc))
        # Recorded before it is disabled. An invocation that dies in between leaves an enabled mapping whose
        # record nobody reads (a pause record counts on a disabled mapping only), and Lambda's retry opens it;
        # the other order would leave a disabled mapping without the breaker's record: an operator's pause
        # as far as the breaker can tell, which it would never resume.
        lambda_client.tag_resource(
            Resource=arn,
            Tags={TAG_PAUSED_BY: BREAKER_BY, TAG_PAUSED_AT: at, TAG_CIRCUIT: "open", TAG_RESTORE: restore},
        )
        lambda_client.update_event_source_mapping(UUID=uuid, Enabled=False)
        return {**result, "outcome": "opened"}
    if kind == Alarms.CIRCUIT_BREAKER and state == "OK":
        if enabled or tags.get(TAG_PAUSED_BY) != BREAKER_BY:
            return {**result, "outcome": "not open"}
        # Half-open is recorded first, while the mapping is still disabled and paused by the breaker: an
        # invocation that dies before enabling it is retried from here; once enabled, the probe alarm
        # (which only acts on a half-open breaker) closes it.
        lambda_client.tag_resource(Resource=arn, Tags={TAG_CIRCUIT: "half-open"})
        # Before the probe starts: its first succeeded minute must be a change of state.
        cloudwatch.set_alarm_state(
            AlarmName=Alarms.name(stage, tier, Alarms.CIRCUIT_PROBE),
            StateValue="OK",
            StateReason="The circuit breaker is half-open: waiting for the probe's jobs to succeed.",
        )
        lambda_client.update_event_source_mapping(
            UUID=uuid, Enabled=True, ScalingConfig={"MaximumConcurrency": PROBE_CONCURRENCY}
        )
        lambda_client.untag_resource(Resource=arn, TagKeys=[TAG_PAUSED_BY, TAG_PAUSED_AT])
        return {**result, "outcome": "half-open"}
    if kind == Alarms.CIRCUIT_PROBE and state == "ALARM" and enabled and circuit == "half-open":
        restore = tags.get(TAG_RESTORE, "")
        # A mapping that had no maximum concurrency gets Lambda's own ceiling back (an empty ScalingConfig).
        lambda_client.update_event_source_mapping(
            UUID=uuid, ScalingConfig={"MaximumConcurrency": int(restore)} if restore else {}
        )
        # Paged before the half-open record goes: a page that fails fails the invocation, and Lambda's
        # retry of the alarm's asynchronous invoke closes it again (restoring is idempotent) and pages.
        if page is not None:
            page(*closed_page(stage, tier, restore, iso_text(now or datetime.now(timezone.utc))))
        # With the pause record, should a half-open invocation have died before removing it (it is read
        # on a disabled mapping only, but an enabled one should carry none).
        lambda_client.untag_resource(Resource=arn, TagKeys=[TAG_CIRCUIT, TAG_RESTORE, TAG_PAUSED_BY, TAG_PAUSED_AT])
        return {**result, "outcome": "closed", "paged": page is not None}
    return {**result, "outcome": "nothing to do"}
