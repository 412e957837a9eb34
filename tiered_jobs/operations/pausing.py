"""Pause and resume a tier from the CLI or the console, and the line ``status`` shows for a paused tier.

The change itself is :mod:`tiered_jobs.replay.pause` (the replay function runs it too); this module
finds the tier's mapping (its UUID, an SSM parameter the stack writes), names the operator (their
own credentials' ARN, from ``sts:GetCallerIdentity``, which needs no permission) and says how long
a paused tier's oldest job has before SQS's retention deletes it: a pause holds jobs, it does not
stop that clock.

Its AWS calls: one ``GetParameters`` per 10 tiers (the UUIDs), then per tier one
``GetEventSourceMapping``; a paused tier adds one ``ListTags`` and one ``GetQueueAttributes``
(its retention). A pause or resume adds one ``GetCallerIdentity``, one ``UpdateEventSourceMapping``
(more while Lambda answers ``ResourceInUseException``) and one ``TagResource`` / ``UntagResource``; a pause
then reads the mapping every 2 s until it is ``Disabled`` (60 s at most).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from typing import Any

from ..contract.names import Ssm
from ..contract.times import parse_iso
from ..replay.pause import MappingState, pause, read_mapping, resume
from ..stage.discovery import DiscoveryError, tier_parameters
from .display import format_duration

Clients = Callable[[str], Any]

__all__ = [
    "MappingState",
    "mapping_uuid",
    "mapping_uuids",
    "operator",
    "pause_tier",
    "paused_line",
    "read_pauses",
    "resume_tier",
    "retention_seconds",
]


def mapping_uuids(stage: str, tiers: Iterable[str], client: Clients) -> dict[str, str]:
    """``{tier: mapping UUID}`` of the tiers whose parameter exists (a stage deployed before pause has none)."""
    return tier_parameters(stage, tiers, Ssm.TIER_MAPPING_UUID, ssm=client("ssm"))


def mapping_uuid(stage: str, tier: str, client: Clients) -> str:
    found = mapping_uuids(stage, [tier], client).get(tier)
    if found is None:
        raise DiscoveryError(
            f"SSM parameter {Ssm.tier(stage, tier, Ssm.TIER_MAPPING_UUID)} not found: deploy the stage again "
            "(stacks deployed before pause and resume do not name their mappings)"
        )
    return found


def operator(client: Clients) -> str:
    """Who is acting: the caller's ARN (``GetCallerIdentity`` needs no IAM permission)."""
    try:
        return str(client("sts").get_caller_identity()["Arn"])
    except Exception:  # noqa: BLE001 - an unnamed operator still pauses; the record says so
        return "unknown"


def pause_tier(
    stage: str, tier: str, client: Clients, *, via: str, progress: Callable[[str], object] | None = None
) -> MappingState:
    """Disable ``tier``'s mapping and wait for ``Disabled`` (``progress`` hears each wait); ``via`` says which
    face acted (``cli``, ``console``), as ``<arn> via cli``: Lambda's tag values admit no parentheses."""
    uuid = mapping_uuid(stage, tier, client)
    return pause(client("lambda"), tier, uuid, by=f"{operator(client)} via {via}", progress=progress)


def resume_tier(stage: str, tier: str, client: Clients) -> MappingState:
    return resume(client("lambda"), tier, mapping_uuid(stage, tier, client))


def read_pauses(stage: str, tiers: Iterable[str], client: Clients) -> dict[str, MappingState]:
    """``{tier: its mapping's state}`` for the tiers whose mapping the stage names."""
    lambda_client = client("lambda")
    return {tier: read_mapping(lambda_client, tier, uuid) for tier, uuid in mapping_uuids(stage, tiers, client).items()}


def retention_seconds(client: Clients, queue_url: str) -> int | None:
    attributes = client("sqs").get_queue_attributes(QueueUrl=queue_url, AttributeNames=["MessageRetentionPeriod"])
    value = attributes.get("Attributes", {}).get("MessageRetentionPeriod")
    return int(value) if value is not None else None


def paused_line(
    state: MappingState,
    *,
    oldest_age_seconds: float | None,
    retention: int | None,
    now: datetime | None = None,
) -> str:
    """``critical: paused since 2026-12-02 05:50 UTC (12m), by arn:...; oldest job 11m old of 4d retention ...``;
    ``oldest_age_seconds`` ``None``: the age is unknown, so the line names the retention alone."""
    since = parse_iso(state.paused_at)
    when = "since an unknown time"
    if since is not None:
        ago = ((now or datetime.now(timezone.utc)) - since).total_seconds()
        when = f"since {since:%Y-%m-%d %H:%M} UTC ({format_duration(max(0.0, ago))})"
    line = f"{state.tier}: paused {when}, by {state.paused_by or 'unknown (not paused by tiered-jobs)'}"
    if retention is None:
        return line
    kept = format_duration(retention)
    if oldest_age_seconds is None:  # not read (the console's pause line) or no datapoint: the clock, not the age
        return f"{line}; SQS deletes a job older than its {kept} retention, paused or not"
    if not oldest_age_seconds:
        return f"{line}; no job waiting ({kept} retention)"
    return f"{line}; oldest job {format_duration(oldest_age_seconds)} old of {kept} retention (SQS deletes it then)"
