"""Stage profiles (``profile``): what a stage observes and keeps. ``full`` (the default) is a stage to run
on; ``dev`` is a lighter one per developer. The data path is the same in every profile: each job still runs
through idempotency and a job failed for good still lands in its DLQ with its reasons."""

from __future__ import annotations

from dataclasses import dataclass

from tiered_jobs.contract.names import Alarms

FULL = "full"
DEV = "dev"


@dataclass(frozen=True)
class Profile:
    """What a stage of this profile observes (alarms, dashboard) and keeps (parameters, removal policies)."""

    name: str
    #: The tier alarm kinds (``Alarms``) made; ``None``: every kind. A tier's canary deployment keeps the
    #: alarms it rolls back on whatever the profile (``tier.py``); the circuit breakers' alarms act, so they stay.
    tier_alarms: frozenset[str] | None
    dashboard: bool
    #: The SSM parameters no publisher and no CLI command reads (each tier's DLQ ARN, the publisher policy's
    #: ARN, the discard archive's bucket): their values stay stack outputs either way.
    unread_parameters: bool
    #: ``True``: the stage is disposable (its stateful parts are destroyed with the stack) whatever
    #: ``disposable`` would default to, and ``"disposable": false`` is refused.
    disposable: bool


PROFILES: dict[str, Profile] = {
    FULL: Profile(FULL, tier_alarms=None, dashboard=True, unread_parameters=True, disposable=False),
    # Kept: what protects data, the DLQ depth of each tier (the schedules DLQ's alarm too, made elsewhere).
    # Dropped, not folded into a composite alarm: a composite is charged on top of the alarms it watches,
    # so it would add to the cost; a developer reads failures in the DLQ (every job failed for good lands
    # there) and the consumer's log.
    DEV: Profile(
        DEV, tier_alarms=frozenset({Alarms.DLQ_DEPTH}), dashboard=False, unread_parameters=False, disposable=True
    ),
}
