"""AWS events as jobs: ``triggers`` in ``cdk.json``, one EventBridge rule each (``TriggerSettings``)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tiered_jobs.contract.envelope import JOB_TYPE_PATTERN, MAX_JOB_TYPE_CHARS
from tiered_jobs.contract.routing import Routes, UnknownRouteError
from tiered_jobs.contract.triggers import DEFAULT_KEY_PATH, DEFAULT_PAYLOAD_PATH, path_problem

from .values import SettingsError, read_int, reject_unknown

SETTINGS_KEY = "triggers"
DEFAULT_BUS = "default"
#: A trigger's name: it names the rule's construct and target, so the characters a rule's target id takes.
_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")
#: ``EventBusNameOrArn`` in botocore's ``events`` model (a partner bus's name holds '/').
_BUS = re.compile(r"^(arn:aws[\w-]*:events:[a-z]+-[a-z]+-[\w-]+:[0-9]{12}:event-bus/)?[/.\-_A-Za-z0-9]+$")
_MAX_BUS_CHARS = 1600
#: ``EventPattern`` in botocore's ``events`` model: at most 4096 characters.
_MAX_PATTERN_CHARS = 4096
#: The comparison operators of EventBridge's event patterns ("Content filtering in event patterns").
PATTERN_OPERATORS = frozenset(
    {"prefix", "suffix", "anything-but", "numeric", "exists", "cidr", "equals-ignore-case", "wildcard"}
)
#: A target's ``RetryPolicy`` bounds (``MaximumRetryAttempts``, ``MaximumEventAgeInSeconds`` in botocore's
#: model); the defaults are EventBridge's own: 185 attempts over 24 hours.
_RETRY_ATTEMPTS = (0, 185)
_EVENT_AGE_SECONDS = (60, 86_400)


@dataclass(frozen=True)
class TriggerSettings:
    """One trigger: an EventBridge rule on a bus whose matching events become jobs of one type in a tier queue."""

    name: str
    #: The rule's event pattern, as EventBridge takes it (``{"source": ["aws.s3"], ...}``).
    pattern: Mapping[str, Any]
    job_type: str
    #: The tier whose queue receives the jobs: ``tier`` if set in ``cdk.json``, else the routes' choice.
    tier: str
    #: ``default``, a custom bus's name, or a partner bus's (``aws.partner/stripe.com/...``), or its ARN.
    bus: str = DEFAULT_BUS
    #: The path of the event the idempotency key comes from (the event's id: a redelivered event runs once).
    key_path: str = DEFAULT_KEY_PATH
    #: The path of the event the payload comes from.
    payload_path: str = DEFAULT_PAYLOAD_PATH
    #: EventBridge's retries of an undeliverable event before it goes to the triggers' DLQ.
    retry_attempts: int = _RETRY_ATTEMPTS[1]
    max_event_age_seconds: int = _EVENT_AGE_SECONDS[1]


_TRIGGER_KEYS = (
    "pattern",
    "job_type",
    "tier",
    "bus",
    "key_path",
    "payload_path",
    "retry_attempts",
    "max_event_age_seconds",
)
_EXAMPLE = (
    '{"uploads": {"pattern": {"source": ["aws.s3"], "detail-type": ["Object Created"]}, '
    '"job_type": "files.scan", "payload_path": "$.detail.object"}}'
)


def build_triggers(raw: Any, routes: Routes, tier_names: list[str], where: str) -> tuple[TriggerSettings, ...]:
    if not isinstance(raw, Mapping):
        raise SettingsError(f"{where}: {SETTINGS_KEY} must be an object {{name: {{trigger}}}}, e.g. {_EXAMPLE}")
    return tuple(_build_trigger(name, value, routes, tier_names) for name, value in raw.items())


def _build_trigger(name: Any, raw: Any, routes: Routes, tier_names: list[str]) -> TriggerSettings:
    if not isinstance(name, str) or not _NAME.match(name):
        raise SettingsError(
            f"trigger {name!r}: invalid name; use 1-64 lower-case letters, digits, '-', '_' or '.', "
            "starting with a letter or digit"
        )
    where = f"trigger {name!r}"
    if not isinstance(raw, Mapping):
        raise SettingsError(f"{where}: must be an object with keys {', '.join(_TRIGGER_KEYS)}, got {raw!r}")
    reject_unknown(raw, _TRIGGER_KEYS, where)
    for key in ("pattern", "job_type"):
        if key not in raw:
            raise SettingsError(f"{where}: {key} is required, e.g. {_EXAMPLE}")
    job_type = raw["job_type"]
    if not isinstance(job_type, str) or len(job_type) > MAX_JOB_TYPE_CHARS or not JOB_TYPE_PATTERN.match(job_type):
        raise SettingsError(
            f"{where}: job_type {job_type!r} is not a job type; use dotted lower-case names like 'files.scan' "
            f"(at most {MAX_JOB_TYPE_CHARS} characters)"
        )
    tier = raw.get("tier")
    if tier is not None and tier not in tier_names:
        raise SettingsError(f"{where}: tier {tier!r} is unknown; use one of {', '.join(tier_names)} or remove 'tier'")
    if tier is None:
        try:
            tier = routes.tier_for(job_type)
        except UnknownRouteError as error:
            raise SettingsError(
                f"{where}: job type {job_type!r} is unroutable ({error}); "
                "add a route for it or set this trigger's 'tier'"
            ) from None
    pattern = raw["pattern"]
    problem = pattern_problem(pattern)
    if problem is not None:
        raise SettingsError(f"{where}: pattern {problem}")
    bus = raw.get("bus", DEFAULT_BUS)
    if not isinstance(bus, str) or len(bus) > _MAX_BUS_CHARS or not _BUS.match(bus):
        raise SettingsError(
            f"{where}: bus {bus!r} is not an event bus name or ARN; use 'default', a custom bus's name, "
            "a partner bus's (e.g. 'aws.partner/stripe.com/ed_123/acct'), or its ARN"
        )
    paths = {}
    for key, default in (("key_path", DEFAULT_KEY_PATH), ("payload_path", DEFAULT_PAYLOAD_PATH)):
        paths[key] = raw.get(key, default)
        problem = path_problem(paths[key])
        if problem is not None:
            raise SettingsError(f"{where}: {key} {problem}")
    return TriggerSettings(
        name=name,
        pattern=dict(pattern),
        job_type=job_type,
        tier=tier,
        bus=bus,
        key_path=paths["key_path"],
        payload_path=paths["payload_path"],
        retry_attempts=read_int(
            raw,
            "retry_attempts",
            _RETRY_ATTEMPTS[1],
            where,
            minimum=_RETRY_ATTEMPTS[0],
            maximum=_RETRY_ATTEMPTS[1],
            unit=" (EventBridge's limits)",
        ),
        max_event_age_seconds=read_int(
            raw,
            "max_event_age_seconds",
            _EVENT_AGE_SECONDS[1],
            where,
            minimum=_EVENT_AGE_SECONDS[0],
            maximum=_EVENT_AGE_SECONDS[1],
            unit=" seconds (EventBridge's limits)",
        ),
    )


def pattern_problem(pattern: Any) -> str | None:
    """Why EventBridge would refuse ``pattern`` as a rule's event pattern, or ``None`` (its structure: values
    are objects or non-empty arrays of values and operators; its length)."""
    if not isinstance(pattern, Mapping) or not pattern:
        return f"must be a non-empty object like {{'source': ['aws.s3']}}, got {pattern!r}"
    if len(json.dumps(pattern, separators=(",", ":"))) > _MAX_PATTERN_CHARS:
        return f"is longer than EventBridge's {_MAX_PATTERN_CHARS} characters"
    return _node_problem(pattern, "")


def _node_problem(node: Mapping[str, Any], at: str) -> str | None:
    for field, value in node.items():
        here = f"{at}.{field}" if at else str(field)
        if field == "$or":
            if not isinstance(value, list) or len(value) < 2 or not all(isinstance(v, Mapping) for v in value):
                return f"at {here!r}: '$or' takes a list of at least two pattern objects"
            problem = next((p for v in value if (p := _node_problem(v, at)) is not None), None)
        elif isinstance(value, Mapping):
            problem = _node_problem(value, here) if value else f"at {here!r}: an empty object matches nothing"
        elif isinstance(value, list) and value:
            problem = next((p for v in value if (p := _value_problem(v, here)) is not None), None)
        else:
            problem = (
                f"at {here!r}: {value!r} must be an array of values to match, e.g. [{json.dumps(value)}] "
                "(EventBridge matches a field against an array)"
            )
        if problem is not None:
            return problem
    return None


def _value_problem(value: Any, here: str) -> str | None:
    if value is None or isinstance(value, (str, int, float, bool)):
        return None
    if isinstance(value, Mapping) and len(value) == 1 and next(iter(value)) in PATTERN_OPERATORS:
        return None
    return f"at {here!r}: {value!r} is neither a value nor one operator object ({', '.join(sorted(PATTERN_OPERATORS))})"
