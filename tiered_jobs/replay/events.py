"""The replay event: parse and validate what an operator sends, naming every problem at once.

An operator types these events in the Lambda console or in ``aws lambda invoke``; a typo must
never silently widen a replay (``"job_typ": "payments.*"`` would otherwise replay *everything*),
so unknown fields are an error, and every error message says what is allowed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tiered_jobs.contract.errors import USAGE, TieredJobsError
from tiered_jobs.contract.names import TIER_NAME_PATTERN
from tiered_jobs.contract.replay_events import ACTIONS, EVENT_FIELDS, MODES

#: Hard cap on ``max_messages``: one invocation handles at most this many letters. At the
#: typical 100-300 letters per second of the batch mode this fits well inside Lambda's
#: 15 minutes, and it bounds the letters one run holds invisible while it scans.
MAX_MESSAGES_CAP = 10_000
#: SQS keeps a message at most 14 days: no letter can be older than this.
MAX_OLDER_THAN_SECONDS = 1_209_600
#: ``StartMessageMoveTask`` accepts at most 500 messages per second.
NATIVE_MAX_PER_SECOND = 500
#: Filters the native mode cannot apply (SQS moves every message).
FILTER_FIELDS = ("job_type", "error_type", "older_than_seconds", "message_ids")
#: Most message ids one event may name.
MAX_MESSAGE_IDS = 100


#: What each field accepts, as the error message shows it (a test keeps it in step with EVENT_FIELDS).
_FIELD_HELP = {
    "action": " | ".join(repr(a) for a in ACTIONS) + f" (default {EVENT_FIELDS['action']!r})",
    "tier": "the tier's name (required)",
    "mode": " | ".join(repr(m) for m in MODES) + f" (default {EVENT_FIELDS['mode']!r})",
    "dry_run": "true | false (default false)",
    "max_messages": f"1-{MAX_MESSAGES_CAP} (default {EVENT_FIELDS['max_messages']})",
    "job_type": "glob such as 'payments.*' (default: any)",
    "error_type": "glob such as 'TimeoutError', 'unknown' for letters without reason (default: any)",
    "older_than_seconds": f"0-{MAX_OLDER_THAN_SECONDS} (default 0)",
    "max_per_second": "number above 0 (default: no limit)",
    "message_ids": f"list of 1-{MAX_MESSAGE_IDS} SQS message ids: only these letters "
    "(required by 'show'; default: any)",
    "allow_outside_idempotency_window": "true | false (default false): 'replay' also moves letters older than "
    "the tier's idempotency window",
    "include_expired": "true | false (default false): 'replay' also moves letters whose job's deadline "
    "(expires_at) has passed (the consumer archives them unrun)",
}


class ReplayEventError(TieredJobsError, ValueError):
    """An event the replay refuses; ``problems`` lists every rule broken, one sentence each."""

    code = USAGE

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        super().__init__("invalid replay event: " + "; ".join(self.problems) + f". Allowed fields: {_allowed_fields()}")


@dataclass(frozen=True)
class ReplayRequest:
    """A validated replay event, defaults filled in (see ``EVENT_FIELDS``)."""

    tier: str
    action: str = EVENT_FIELDS["action"]
    mode: str = EVENT_FIELDS["mode"]
    dry_run: bool = EVENT_FIELDS["dry_run"]
    max_messages: int = EVENT_FIELDS["max_messages"]
    job_type: str | None = EVENT_FIELDS["job_type"]
    error_type: str | None = EVENT_FIELDS["error_type"]
    older_than_seconds: int = EVENT_FIELDS["older_than_seconds"]
    max_per_second: float | None = EVENT_FIELDS["max_per_second"]
    message_ids: tuple[str, ...] | None = EVENT_FIELDS["message_ids"]
    allow_outside_idempotency_window: bool = EVENT_FIELDS["allow_outside_idempotency_window"]
    include_expired: bool = EVENT_FIELDS["include_expired"]

    @property
    def has_filters(self) -> bool:
        return bool(self.job_type or self.error_type or self.older_than_seconds or self.message_ids)


def parse_event(event: Any, *, tiers: Iterable[str] | None = None) -> ReplayRequest:
    """Validate ``event`` and return the request, or raise :class:`ReplayEventError`.

    ``tiers``, when given, are the tiers this stage has: any other tier is refused here, with
    the list, so the operator sees every problem of the event in one error.
    """
    if not isinstance(event, Mapping):
        raise ReplayEventError([f"the event must be a JSON object, got {_kind(event)}"])
    problems: list[str] = []
    unknown = sorted(str(name) for name in event if name not in EVENT_FIELDS)
    if unknown:
        problems.append(f"unknown field(s) {', '.join(repr(u) for u in unknown)}")
    values = {name: event.get(name, default) for name, default in EVENT_FIELDS.items()}

    action = values["action"]
    if action not in ACTIONS:
        problems.append(f"'action' must be one of {_one_of(ACTIONS)}, got {action!r}")
    mode = values["mode"]
    if mode not in MODES:
        problems.append(f"'mode' must be one of {_one_of(MODES)}, got {mode!r}")
    problems += tier_problems(values["tier"], tiers)
    if not isinstance(values["dry_run"], bool):
        problems.append(f"'dry_run' must be true or false, got {_kind(values['dry_run'])}")
    problems += _whole_number_problems("max_messages", values["max_messages"], 1, MAX_MESSAGES_CAP)
    problems += _whole_number_problems("older_than_seconds", values["older_than_seconds"], 0, MAX_OLDER_THAN_SECONDS)
    for name in ("job_type", "error_type"):
        value = values[name]
        if value is not None and (not isinstance(value, str) or not value.strip()):
            problems.append(
                f"'{name}' must be a non-empty string (a glob such as 'payments.*') or null, got {_kind(value)}"
            )
    rate = values["max_per_second"]
    if rate is not None and (isinstance(rate, bool) or not isinstance(rate, (int, float)) or not rate > 0):
        problems.append(f"'max_per_second' must be a number above 0 or null (no limit), got {rate!r}")
    problems += _message_ids_problems(values["message_ids"], action)
    allow = values["allow_outside_idempotency_window"]
    if not isinstance(allow, bool):
        problems.append(f"'allow_outside_idempotency_window' must be true or false, got {_kind(allow)}")
    elif allow and action != "replay":
        problems.append("'allow_outside_idempotency_window' applies to 'action': 'replay' only")
    include_expired = values["include_expired"]
    if not isinstance(include_expired, bool):
        problems.append(f"'include_expired' must be true or false, got {_kind(include_expired)}")
    elif include_expired and action != "replay":
        problems.append("'include_expired' applies to 'action': 'replay' only")

    if mode == "native":
        problems += _native_problems(event, values)

    if problems:
        raise ReplayEventError(problems)
    if values["message_ids"] is not None:
        values["message_ids"] = tuple(values["message_ids"])
    return ReplayRequest(**values)


def response(request: ReplayRequest, **fields: Any) -> dict[str, Any]:
    """A response with every key of ``RESPONSE_FIELDS``; the request's own values echoed."""
    base: dict[str, Any] = {
        "action": request.action,
        "tier": request.tier,
        "mode": request.mode,
        "dry_run": request.dry_run,
        "matched": 0,
        "moved": 0,
        "failed": 0,
        "left_in_dlq": None,
        "groups": [],
        "stopped_because": None,
        "task_handle": None,
        "idempotency_ttl_seconds": None,
        "outside_window": 0,
        "refused_outside_window": 0,
        "left_expired": 0,
        "discarded": 0,
        "archive": None,
        "archive_error": None,
        "letters": [],
        "outcomes": None,
    }
    base.update(fields)
    return base


def _native_problems(event: Mapping[str, Any], values: dict[str, Any]) -> list[str]:
    """The native mode hands the move to SQS, which moves *every* letter and cannot filter."""
    problems = []
    if values["action"] != "replay":
        problems.append("'mode': 'native' applies to 'action': 'replay' only")
    filters = [name for name in FILTER_FIELDS if values[name]]
    if filters:
        problems.append(
            f"'mode': 'native' moves every letter and cannot filter: remove {', '.join(repr(f) for f in filters)} "
            "or use 'mode': 'batch'"
        )
    if "max_messages" in event:
        problems.append("'mode': 'native' moves every letter: remove 'max_messages' or use 'mode': 'batch'")
    if values["allow_outside_idempotency_window"] is not True and not values["dry_run"]:
        problems.append(
            "'mode': 'native' moves every letter however old, so it cannot keep out letters older than the tier's "
            "idempotency window (their jobs may run again): use 'mode': 'batch', or add "
            "'allow_outside_idempotency_window': true"
        )
    rate = values["max_per_second"]
    if isinstance(rate, (int, float)) and not isinstance(rate, bool) and rate > NATIVE_MAX_PER_SECOND:
        problems.append(f"'max_per_second' can be at most {NATIVE_MAX_PER_SECOND} in 'mode': 'native', got {rate!r}")
    if isinstance(rate, float) and not rate.is_integer():
        problems.append(f"'max_per_second' must be a whole number in 'mode': 'native', got {rate!r}")
    return problems


def _message_ids_problems(ids: Any, action: Any) -> list[str]:
    if ids is None:
        return ["'action': 'show' needs 'message_ids': the letters to show"] if action == "show" else []
    if (
        not isinstance(ids, (list, tuple))
        or not 1 <= len(ids) <= MAX_MESSAGE_IDS
        or not all(isinstance(i, str) and i.strip() for i in ids)
    ):
        return [
            f"'message_ids' must be a list of 1-{MAX_MESSAGE_IDS} message ids (non-empty strings) or null, "
            f"got {_kind(ids)}"
        ]
    return []


def tier_problems(tier: Any, tiers: Iterable[str] | None) -> list[str]:
    """What is wrong with ``tier`` (empty when fine); ``tiers``: the stage's tiers, if known."""
    if tier is None:
        known = f" (one of {_one_of(sorted(tiers))})" if tiers is not None else ""
        return [f"'tier' is required{known}"]
    if not isinstance(tier, str):
        return [f"'tier' must be a string, got {_kind(tier)}"]
    if tiers is not None:
        names = sorted(tiers)
        if tier not in names:
            return [f"unknown tier {tier!r} (this stage has {_one_of(names)})"]
    elif not TIER_NAME_PATTERN.match(tier):
        return [f"'tier' must match {TIER_NAME_PATTERN.pattern}, got {tier!r}"]
    return []


def _whole_number_problems(name: str, value: Any, low: int, high: int) -> list[str]:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        return [f"'{name}' must be a whole number from {low} to {high}, got {value!r}"]
    return []


def _allowed_fields() -> str:
    return ", ".join(f"{name}: {_FIELD_HELP[name]}" for name in EVENT_FIELDS)


def _one_of(options: Iterable[str]) -> str:
    return ", ".join(repr(o) for o in options) or "(none)"


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__
