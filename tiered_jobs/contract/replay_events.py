"""The replay function's event contract and the ready-made console test events.

The replay handler validates events against ``EVENT_FIELDS``; the stack deploys
``console_events(tier, routed_glob(tier, routes))`` as shareable console test events (this
repository's app keeps the same events as files for its tiers, ``functions/events/replay/*.json``;
a test keeps them equal).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: ``replay`` moves letters back to the tier's queue; ``inspect`` only reads and groups them;
#: ``discard`` archives letters, then deletes them; ``show`` returns chosen letters in full.
ACTIONS = ("replay", "inspect", "discard", "show")
#: The actions on a tier's event source mapping rather than its letters (``tiered_jobs.replay.pause``):
#: ``pause`` disables it, ``resume`` enables it.
PAUSE_ACTIONS = ("pause", "resume")
#: Every field a pause or resume event may carry: ``by`` names the operator when the caller knows better
#: than the function (which sees no caller identity; CloudTrail does).
PAUSE_EVENT_FIELDS = ("action", "tier", "by")
#: The circuit breakers' reconciler (``tiered_jobs.replay.reconcile``), which an EventBridge rule sends every
#: five minutes: it moves on a breaker whose alarm events were lost or came late.
BREAKER_ACTIONS = ("reconcile",)
#: Every field a reconcile event may carry: ``tiers`` names the tiers with a breaker (the rule's input lists them).
RECONCILE_EVENT_FIELDS = ("action", "tiers")
#: ``batch``: the function moves letters itself (filters, ``Replay.*`` attributes, rate limit);
#: ``native``: it starts SQS's own ``StartMessageMoveTask`` (every letter, unfiltered, as is).
MODES = ("batch", "native")

#: Every field a replay event may carry, with its default (``None``: no filter / required).
EVENT_FIELDS: dict[str, Any] = {
    "action": "replay",
    "tier": None,  # required
    "mode": "batch",
    "dry_run": False,
    "max_messages": 100,
    "job_type": None,
    "error_type": None,
    "older_than_seconds": 0,
    "max_per_second": None,
    "message_ids": None,
    "allow_outside_idempotency_window": False,
    "include_expired": False,
}

#: Keys of the replay response (``task_handle``: the native mode's SQS move task, else null).
RESPONSE_FIELDS = (
    "action",
    "tier",
    "mode",
    "dry_run",
    "matched",
    "moved",
    "failed",
    "left_in_dlq",
    "groups",
    "stopped_because",
    "task_handle",
    "idempotency_ttl_seconds",
    "outside_window",
    "refused_outside_window",
    "left_expired",
    "discarded",
    "archive",
    "archive_error",
    "letters",
    "outcomes",
)

#: ``outcomes`` (only when the event names ``message_ids``): what became of each named letter.
OUTCOMES = (
    "moved",  # replay: SQS accepted the copy into the tier's queue (then it was deleted from the DLQ)
    "would_move",  # replay, dry run
    "refused_outside_window",  # replay (and its dry run): older than the idempotency window, left in the DLQ
    "left_expired",  # replay (and its dry run): its job's deadline (expires_at) has passed, left in the DLQ
    "discarded",  # discard: archived, then deleted
    "would_discard",  # discard, dry run
    "failed",  # replay or discard: matched, but its send, archive or delete failed; still in the DLQ
    "found",  # inspect, show: read (nothing removed)
    "not_matched",  # in the DLQ, but another filter (or max_messages) left it out
    "not_found",  # not seen in the DLQ by this run (see stopped_because)
)


def console_events(tier: str, job_type_glob: str | None = None) -> dict[str, dict[str, Any]]:
    """Named test events an operator picks in the console, for one tier.

    ``job_type_glob``: a pattern the tier's own routes send to it (``routed_glob``), for the
    ``replay-job-type`` event; without one that event is left out (the library names no job type).
    """
    events: dict[str, dict[str, Any]] = {
        f"{tier}-inspect": {"action": "inspect", "tier": tier, "max_messages": 1000},
        f"{tier}-dry-run": {"action": "replay", "tier": tier, "dry_run": True, "max_messages": 100},
        f"{tier}-replay-all": {"action": "replay", "tier": tier, "dry_run": False, "max_messages": 100},
    }
    if job_type_glob is not None:
        events[f"{tier}-replay-job-type"] = {
            "action": "replay",
            "tier": tier,
            "dry_run": False,
            "max_messages": 100,
            "job_type": job_type_glob,
        }
    events[f"{tier}-discard-dry-run"] = {"action": "discard", "tier": tier, "dry_run": True, "max_messages": 100}
    events[f"{tier}-pause"] = {"action": "pause", "tier": tier}
    events[f"{tier}-resume"] = {"action": "resume", "tier": tier}
    return events


def routed_glob(tier: str, routes: Mapping[str, str]) -> str | None:
    """The first (sorted) route pattern that sends job types to ``tier``; None when none does."""
    return next((pattern for pattern, target in sorted(routes.items()) if target == tier), None)
