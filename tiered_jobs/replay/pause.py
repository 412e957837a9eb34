"""Pause and resume a tier: disable or enable its event source mapping, and record who did it and when.

A paused tier keeps accepting jobs (its queue is untouched); only Lambda's poller stops receiving,
so a held job spends no receive and no attempt, and SQS's retention keeps counting. The mapping's
own ``State`` is the truth; the record of who paused it and since when lives on the mapping too,
as two tags, so pausing needs no store of our own and a resume that removes them leaves nothing behind.

It lives here, in the room the replay function, the CLI and the console share, so the three
pause a tier the same way (the replay function's ``{"action": "pause", "tier": ...}`` event).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import Any

from tiered_jobs.contract.errors import USAGE, TieredJobsError
from tiered_jobs.contract.replay_events import PAUSE_ACTIONS, PAUSE_EVENT_FIELDS
from tiered_jobs.contract.times import iso_text

from .mapping_changes import (
    DISABLE_WAIT_SECONDS,
    Progress,
    Sleep,
    tag_mapping,
    untag_mapping,
    update_mapping,
    wait_for_state,
)
from .tag_values import tag_value

__all__ = [
    "BREAKER_BY",
    "PAUSE_ACTIONS",
    "PAUSE_EVENT_FIELDS",
    "TAG_PAUSED_AT",
    "TAG_PAUSED_BY",
    "MappingState",
    "PauseError",
    "TakeOverError",
    "handle_event",
    "mappings_from_env",
    "pause",
    "read_mapping",
    "resume",
]

#: Tags on the mapping: who paused it, and when (ISO 8601, UTC).
TAG_PAUSED_BY = "tiered-jobs:paused-by"
TAG_PAUSED_AT = "tiered-jobs:paused-at"
#: Who paused a tier its circuit breaker opened (``tiered_jobs.replay.breaker``): the one pause an
#: operator's pause takes over, so that the breaker's probe never resumes a tier an operator paused.
BREAKER_BY = "circuit breaker"


class PauseError(TieredJobsError, ValueError):
    """A pause or resume the caller asked wrongly (unknown tier, unknown field)."""

    code = USAGE


class TakeOverError(TieredJobsError):
    """An operator's pause of a tier the circuit breaker opened, which could not be taken from the breaker."""


#: What a pause says once the mapping is ``Disabled``: what Lambda received before that still runs.
DISABLED_NOTE = "Lambda receives no more jobs from the queue; a batch it received before still runs to its end"


def still_disabling(state: str, waited: float) -> str:
    """What a pause says when the mapping is not ``Disabled`` yet after its wait."""
    return (
        f"the mapping is still {state} after {waited:g} s: polls already in flight may still receive jobs, and "
        f"those run; run `status` to see when it is Disabled"
    )


@dataclass(frozen=True)
class MappingState:
    """A tier's mapping, read now. ``paused`` is the mapping's state, whoever disabled it."""

    tier: str
    uuid: str
    #: Lambda's ``State``: ``Enabled``, ``Disabled``, or a transition (``Enabling``, ``Disabling``, ``Updating``).
    state: str
    paused_by: str | None = None
    paused_at: str | None = None
    #: What the action did (``paused``, ``resumed``, ``already paused``, ``already running``); empty on a read.
    outcome: str = ""
    #: Set when the tier was paused but its record could not be written (e.g. no ``lambda:TagResource``).
    note: str | None = None
    #: After a pause: what may still run (a batch received before ``Disabled``, or polls in flight if not yet).
    may_still_finish: str | None = None

    @property
    def paused(self) -> bool:
        return self.state in ("Disabled", "Disabling")

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "paused": self.paused}


def read_mapping(lambda_client: Any, tier: str, uuid: str) -> MappingState:
    """One ``GetEventSourceMapping``, and one ``ListTags`` when the tier is paused (the record is read only then)."""
    mapping = lambda_client.get_event_source_mapping(UUID=uuid)
    paused = mapping.get("State") in ("Disabled", "Disabling")
    tags = lambda_client.list_tags(Resource=mapping["EventSourceMappingArn"]).get("Tags", {}) if paused else {}
    return MappingState(
        tier=tier,
        uuid=uuid,
        state=str(mapping.get("State", "")),
        paused_by=tags.get(TAG_PAUSED_BY) if paused else None,
        paused_at=tags.get(TAG_PAUSED_AT) if paused else None,
    )


def pause(
    lambda_client: Any,
    tier: str,
    uuid: str,
    *,
    by: str,
    now: datetime | None = None,
    wait_seconds: float = DISABLE_WAIT_SECONDS,
    sleep: Sleep = time.sleep,
    monotonic: Callable[[], float] = time.monotonic,
    progress: Progress | None = None,
) -> MappingState:
    """Disable the mapping, record who and when, then wait (``wait_seconds`` at most) until it is ``Disabled``.

    Pausing a paused tier keeps its first record: "paused since" means since it stopped taking work.
    ``Disabling`` is not paused yet: the polls Lambda has in flight still deliver, so the pause returns
    at ``Disabled`` or says what may still run (``may_still_finish``)."""
    current = read_mapping(lambda_client, tier, uuid)
    if current.paused and current.paused_by != BREAKER_BY:
        return _with(current, outcome="already paused")
    taking_over = current.paused  # opened by the circuit breaker: the operator's record replaces its own
    if taking_over:
        mapping = lambda_client.get_event_source_mapping(UUID=uuid)
    else:
        mapping = update_mapping(lambda_client, uuid, sleep=sleep, Enabled=False)
    at = iso_text(now or datetime.now(timezone.utc))
    who = tag_value(by) or "unknown"
    note = None
    try:
        tag_mapping(
            lambda_client, mapping["EventSourceMappingArn"], {TAG_PAUSED_BY: who, TAG_PAUSED_AT: at}, sleep=sleep
        )
    except Exception as exc:  # noqa: BLE001 - the tier is paused either way: say what is missing, never undo it
        note = f"paused, but who and when were not recorded: {exc}"
        who, at = "", ""
        if taking_over:
            note += "; " + _take_from_breaker(lambda_client, mapping["EventSourceMappingArn"], tier, exc, sleep)
    waited = wait_for_state(
        lambda_client,
        uuid,
        "Disabled",
        timeout_seconds=wait_seconds,
        sleep=sleep,
        monotonic=monotonic,
        progress=progress,
    )
    state = str(waited.get("State", "Disabling"))
    return MappingState(
        tier=tier,
        uuid=uuid,
        state=state,
        paused_by=who or None,
        paused_at=at or None,
        outcome="paused",
        note=note,
        may_still_finish=DISABLED_NOTE if state == "Disabled" else still_disabling(state, wait_seconds),
    )


def _take_from_breaker(lambda_client: Any, arn: str, tier: str, cause: Exception, sleep: Sleep) -> str:
    """The breaker's claim removed when the operator's could not be written: the breaker resumes only a
    mapping paused by :data:`BREAKER_BY`, so without it the tier stays paused until an operator resumes it.
    If even that fails the breaker would resume the tier: the pause fails, and says so."""
    try:
        untag_mapping(lambda_client, arn, [TAG_PAUSED_BY, TAG_PAUSED_AT], sleep=sleep)
    except Exception as exc:
        raise TakeOverError(
            f"tier {tier} is paused by the circuit breaker, which will resume it when its alarm returns to OK: "
            f"the operator's pause could not be recorded ({cause}) nor the breaker's claim removed ({exc}). "
            f"Grant lambda:TagResource and lambda:UntagResource on the mapping and pause again"
        ) from exc
    return "the circuit breaker's claim was removed, so it leaves the tier paused"


def resume(lambda_client: Any, tier: str, uuid: str, *, sleep: Sleep = time.sleep) -> MappingState:
    """Enable the mapping and remove the pause record (a mapping disabled some other way is resumed too)."""
    current = read_mapping(lambda_client, tier, uuid)
    if current.state in ("Enabled", "Enabling"):
        return _with(current, outcome="already running")
    mapping = update_mapping(lambda_client, uuid, sleep=sleep, Enabled=True)
    note = None
    try:
        untag_mapping(lambda_client, mapping["EventSourceMappingArn"], [TAG_PAUSED_BY, TAG_PAUSED_AT], sleep=sleep)
    except Exception as exc:  # noqa: BLE001 - running again is what matters; a stale record is only shown while paused
        note = f"resumed, but the pause record was not removed: {exc}"
    return MappingState(tier=tier, uuid=uuid, state=str(mapping.get("State", "Enabling")), outcome="resumed", note=note)


def handle_event(event: Mapping[str, Any], mappings: Mapping[str, str], lambda_client: Any) -> dict[str, Any]:
    """The replay function's ``pause`` / ``resume`` event -> the mapping's state after it."""
    problems = [f"unknown field {key!r}" for key in event if key not in PAUSE_EVENT_FIELDS]
    tier = event.get("tier")
    if not isinstance(tier, str) or tier not in mappings:
        problems.append(f"'tier' must be one of {', '.join(sorted(mappings)) or '(none)'}, got {tier!r}")
    by = event.get("by", "the replay function")
    if not isinstance(by, str):
        problems.append(f"'by' must be a string, got {by!r}")
    if problems:
        allowed = ", ".join(PAUSE_EVENT_FIELDS)
        raise PauseError(
            f"invalid {event.get('action')} event: " + "; ".join(problems) + f". Allowed fields: {allowed}"
        )
    assert isinstance(tier, str) and isinstance(by, str)
    if event["action"] == "pause":
        return pause(lambda_client, tier, mappings[tier], by=by).to_dict()
    return resume(lambda_client, tier, mappings[tier]).to_dict()


def mappings_from_env(raw: str | None) -> dict[str, str]:
    """``{tier: mapping UUID}`` from ``Env.REPLAY_MAPPINGS`` (unset: a stack without pause)."""
    import json

    if not raw:
        return {}
    table = json.loads(raw)
    if not isinstance(table, dict) or not all(isinstance(v, str) for v in table.values()):
        raise RuntimeError(f"replay mappings must be a JSON object {{tier: mapping UUID}}, got {raw[:200]!r}")
    return table


def _with(state: MappingState, *, outcome: str) -> MappingState:
    return MappingState(**{**asdict(state), "outcome": outcome})
