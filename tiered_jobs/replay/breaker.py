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

Every change of state an alarm action reports is delivered at least once, not exactly once: Lambda
retries a failed asynchronous invocation twice and may deliver one event twice, late. The breaker
records the alarm's own time of the change that moved it last (:data:`TAG_SINCE`, kept after it
closes) and ignores an event older than that: a late duplicate of the opening, delivered after the
probe started, opens nothing. An event whose three deliveries all fail (``ResourceInUseException``
while the mapping is ``Updating`` is retried first, ``mapping_changes``) leaves the breaker stranded,
since an alarm acts only on a change: ``tiered_jobs.replay.reconcile`` finds it from the alarms'
states every five minutes, and the function's failed asynchronous events go to the alarm topic.

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
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from tiered_jobs.contract.names import Alarms
from tiered_jobs.contract.times import iso_text, parse_iso

from .mapping_changes import Sleep, tag_mapping, untag_mapping, update_mapping
from .pause import BREAKER_BY, TAG_PAUSED_AT, TAG_PAUSED_BY, PauseError

__all__ = [
    "BREAKER_BY",
    "PAGE_SOURCE",
    "PROBE_CONCURRENCY",
    "TAG_CIRCUIT",
    "TAG_RESTORE",
    "TAG_SINCE",
    "Breaker",
    "Pager",
    "close",
    "open_circuit",
    "closed_page",
    "half_open",
    "handle_alarm",
    "is_alarm_event",
]

#: The probe's maximum concurrency: the event source mapping's minimum, the smallest trickle Lambda allows.
PROBE_CONCURRENCY = 2
#: The breaker's state on the mapping while it is not closed: ``open`` or ``half-open``.
TAG_CIRCUIT = "tiered-jobs:circuit"
#: The maximum concurrency to restore when it closes ("" when the mapping had none).
TAG_RESTORE = "tiered-jobs:circuit-restore"
#: When the alarm changed to the state that moved the breaker last (its own timestamp, ISO 8601 UTC):
#: an event of an older change is a late delivery, ignored. Kept when it closes, so a late opening
#: after the close opens nothing either.
TAG_SINCE = "tiered-jobs:circuit-since"
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


@dataclass(frozen=True)
class Breaker:
    """One tier's breaker as an alarm event or the reconciler finds it: its mapping, read now, and its tags."""

    stage: str
    tier: str
    uuid: str
    mapping: Mapping[str, Any]
    tags: Mapping[str, str]

    @property
    def arn(self) -> str:
        return str(self.mapping["EventSourceMappingArn"])

    @property
    def enabled(self) -> bool:
        return self.mapping.get("State") in ("Enabled", "Enabling", "Updating")

    @property
    def circuit(self) -> str:
        return self.tags.get(TAG_CIRCUIT, "")

    @property
    def concurrency(self) -> str:
        """The mapping's ``MaximumConcurrency`` now, as the restore tag keeps it ("" when it has none)."""
        return str((self.mapping.get("ScalingConfig") or {}).get("MaximumConcurrency", ""))

    @property
    def opened_by_breaker(self) -> bool:
        """Disabled by the breaker itself: the one pause it may end (an operator's it never does)."""
        return not self.enabled and self.tags.get(TAG_PAUSED_BY) == BREAKER_BY

    @classmethod
    def read(cls, lambda_client: Any, stage: str, tier: str, uuid: str) -> Breaker:
        mapping = lambda_client.get_event_source_mapping(UUID=uuid)
        tags = lambda_client.list_tags(Resource=mapping["EventSourceMappingArn"]).get("Tags", {})
        return cls(stage, tier, uuid, mapping, tags)


def _since(moment: datetime | None) -> dict[str, str]:
    return {TAG_SINCE: iso_text(moment)} if moment is not None else {}


def open_circuit(breaker: Breaker, lambda_client: Any, *, at: datetime, since: datetime | None, sleep: Sleep) -> str:
    """Disable the mapping, recorded as paused by the breaker (the alarm went to ALARM)."""
    if not breaker.enabled:
        # Disabled already: by the breaker (nothing to do) or by an operator (never taken over).
        return "already open" if breaker.opened_by_breaker else "paused by an operator: left alone"
    tags = breaker.tags
    # The concurrency from before the first opening: kept while the breaker is not closed (a probe
    # runs at 2; an invocation that died before disabling left it open on an enabled mapping).
    restore = (
        tags.get(TAG_RESTORE, "")
        if breaker.circuit in ("open", "half-open") and TAG_RESTORE in tags
        else breaker.concurrency
    )
    # Recorded before it is disabled. An invocation that dies in between leaves an enabled mapping whose
    # record nobody reads (a pause record counts on a disabled mapping only), and Lambda's retry opens it;
    # the other order would leave a disabled mapping without the breaker's record: an operator's pause
    # as far as the breaker can tell, which it would never resume.
    tag_mapping(
        lambda_client,
        breaker.arn,
        {
            TAG_PAUSED_BY: BREAKER_BY,
            TAG_PAUSED_AT: iso_text(at),
            TAG_CIRCUIT: "open",
            TAG_RESTORE: restore,
            **_since(since),
        },
        sleep=sleep,
    )
    update_mapping(lambda_client, breaker.uuid, sleep=sleep, Enabled=False)
    return "opened"


def half_open(breaker: Breaker, lambda_client: Any, cloudwatch: Any, *, since: datetime | None, sleep: Sleep) -> str:
    """Start the probe at :data:`PROBE_CONCURRENCY` (the opening alarm went back to OK)."""
    if not breaker.opened_by_breaker:
        return "not open"
    # Half-open is recorded first, while the mapping is still disabled and paused by the breaker: an
    # invocation that dies before enabling it is retried from here; once enabled, the probe alarm
    # (which only acts on a half-open breaker) closes it.
    # A concurrency that is neither the one recorded nor the probe's was set while the mapping was disabled:
    # a deploy (a new ``max_concurrency``) or an operator. The close restores that one, not the older record.
    changed = {TAG_RESTORE: breaker.concurrency} if _set_by_someone_else(breaker) else {}
    tag_mapping(lambda_client, breaker.arn, {TAG_CIRCUIT: "half-open", **changed, **_since(since)}, sleep=sleep)
    # Before the probe starts: its first succeeded minute must be a change of state.
    cloudwatch.set_alarm_state(
        AlarmName=Alarms.name(breaker.stage, breaker.tier, Alarms.CIRCUIT_PROBE),
        StateValue="OK",
        StateReason="The circuit breaker is half-open: waiting for the probe's jobs to succeed.",
    )
    update_mapping(
        lambda_client,
        breaker.uuid,
        sleep=sleep,
        Enabled=True,
        ScalingConfig={"MaximumConcurrency": PROBE_CONCURRENCY},
    )
    untag_mapping(lambda_client, breaker.arn, [TAG_PAUSED_BY, TAG_PAUSED_AT], sleep=sleep)
    return "half-open"


def close(
    breaker: Breaker, lambda_client: Any, *, page: Pager | None, at: datetime, since: datetime | None, sleep: Sleep
) -> str:
    """Restore the concurrency from before the opening and page (the probe's jobs succeeded)."""
    if not (breaker.enabled and breaker.circuit == "half-open"):
        return "nothing to do"
    # The probe runs at 2: any other concurrency was set during the probe (a deploy): it stays.
    restore = breaker.concurrency if _set_by_someone_else(breaker) else breaker.tags.get(TAG_RESTORE, "")
    # A mapping that had no maximum concurrency gets Lambda's own ceiling back (an empty ScalingConfig).
    update_mapping(
        lambda_client,
        breaker.uuid,
        sleep=sleep,
        ScalingConfig={"MaximumConcurrency": int(restore)} if restore else {},
    )
    # Paged before the half-open record goes: a page that fails fails the invocation, and Lambda's
    # retry of the alarm's asynchronous invoke closes it again (restoring is idempotent) and pages.
    if page is not None:
        page(*closed_page(breaker.stage, breaker.tier, restore, iso_text(at)))
    if since is not None:  # kept after the close: a late opening event is older, and ignored
        tag_mapping(lambda_client, breaker.arn, _since(since), sleep=sleep)
    # With the pause record, should a half-open invocation have died before removing it (it is read
    # on a disabled mapping only, but an enabled one should carry none).
    untag_mapping(lambda_client, breaker.arn, [TAG_CIRCUIT, TAG_RESTORE, TAG_PAUSED_BY, TAG_PAUSED_AT], sleep=sleep)
    return "closed"


def _set_by_someone_else(breaker: Breaker) -> bool:
    """The mapping's concurrency is neither the probe's nor the one recorded at the opening."""
    return breaker.concurrency not in (str(PROBE_CONCURRENCY), breaker.tags.get(TAG_RESTORE, breaker.concurrency))


def handle_alarm(
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
    breaker = Breaker.read(lambda_client, stage, tier, mappings[tier])
    result = {"tier": tier, "alarm": name, "state": state}
    # The alarm's own time of this change (CloudWatch's ``state.timestamp``); an event without one is acted on.
    changed = parse_iso((data.get("state") or {}).get("timestamp"))
    last = parse_iso(breaker.tags.get(TAG_SINCE))
    if changed is not None and last is not None and changed < last:
        # Older than the change that moved the breaker last: a late or duplicated delivery (equal is the same
        # event again, Lambda's retry of an invocation that failed midway, which must finish its work).
        return {**result, "outcome": "late event: ignored", "changed_at": iso_text(changed), "since": iso_text(last)}
    at = now or datetime.now(timezone.utc)
    if kind == Alarms.CIRCUIT_BREAKER and state == "ALARM":
        return {**result, "outcome": open_circuit(breaker, lambda_client, at=at, since=changed, sleep=sleep)}
    if kind == Alarms.CIRCUIT_BREAKER and state == "OK":
        return {**result, "outcome": half_open(breaker, lambda_client, cloudwatch, since=changed, sleep=sleep)}
    if kind == Alarms.CIRCUIT_PROBE and state == "ALARM":
        outcome = close(breaker, lambda_client, page=page, at=at, since=changed, sleep=sleep)
        return {**result, "outcome": outcome, **({"paged": page is not None} if outcome == "closed" else {})}
    return {**result, "outcome": "nothing to do"}
