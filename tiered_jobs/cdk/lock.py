"""The lock file: what a stage's retained queues, DLQs and tables are, so a replacement cannot slip through.

CloudFormation *replaces* a resource whose logical id changes (a renamed tier) or whose replacement
property changes (a queue's ``QueueName`` or ``FifoQueue``, a table's ``TableName``, ``KeySchema`` or
local indexes). A retained queue or table is then not deleted but left out of the stack, with every
job, letter or idempotency record it held, where nothing reads it any more; the new one starts
empty. ``cdk diff`` shows it, in one line among many.

Synthesis has no access to the deployed stack, and a previous synthesis (``cdk.out``) says nothing
about what is deployed. So what was deployed is *recorded*: ``tiered-jobs.lock.json``, next to
``cdk.json`` and committed with the app, holds for each stage's stack the logical id and the
replacement properties of each retained queue and table, keyed by what it is (``bulk/dlq``,
``idempotency/table``). It is written only on request (context ``tiered_jobs:lock_update``), never
as a side effect of a synthesis, and only once the comparison passes: recording allows no
replacement that ``tiered_jobs:allow_replacement`` did not name; a synthesis that finds it
compares (``replacement_guard.py``).

This module is the file and the comparison, on plain values (standard library only): records in,
problems out, each naming the resource, what it holds and the way out.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Context keys (``-c`` on the CDK CLI, or ``cdk.json``'s ``context``).
#: The lock file's path, relative to the directory the CDK CLI runs the app in (``cdk.json``'s).
LOCK_CONTEXT_KEY = "tiered_jobs:lock"
#: ``true``: write this synthesis's records into the lock file instead of comparing (after a deploy).
UPDATE_CONTEXT_KEY = "tiered_jobs:lock_update"
#: The keys whose replacement this synthesis may make: a list, or one string of comma-separated keys.
ALLOW_CONTEXT_KEY = "tiered_jobs:allow_replacement"
#: The lock file's usual name, next to ``cdk.json``.
LOCK_FILE = "tiered-jobs.lock.json"
FORMAT_VERSION = 1

#: The properties whose change makes CloudFormation replace a resource of each guarded type.
REPLACEMENT_PROPERTIES: dict[str, tuple[str, ...]] = {
    "AWS::SQS::Queue": ("QueueName", "FifoQueue"),
    "AWS::DynamoDB::Table": ("TableName", "KeySchema", "LocalSecondaryIndexes"),
}


class LockError(ValueError):
    """The lock file cannot be read: the message names it and the fix."""


@dataclass(frozen=True)
class Retained:
    """One retained queue or table of a stack: what it is, its logical id and its replacement properties."""

    #: What it is, stable across synths: ``<tier>/queue``, ``<tier>/dlq``, ``idempotency/table``...
    key: str
    type: str
    logical_id: str
    #: The replacement properties' values, as the template holds them (absent ones left out).
    properties: Mapping[str, Any]
    #: What is lost with it, for the message ("the tier's letters").
    holds: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "logical_id": self.logical_id,
            "properties": dict(self.properties),
            "holds": self.holds,
        }

    @classmethod
    def from_dict(cls, key: str, raw: Mapping[str, Any]) -> Retained:
        return cls(key, str(raw["type"]), str(raw["logical_id"]), dict(raw.get("properties", {})), str(raw["holds"]))


def read(path: Path) -> dict[str, dict[str, Retained]]:
    """``{stack name: {key: record}}`` of the lock file (empty when it does not exist)."""
    if not path.exists():
        return {}
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        return {
            stack: {key: Retained.from_dict(key, record) for key, record in records.items()}
            for stack, records in raw["stacks"].items()
        }
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise LockError(
            f"{path}: not a Tiered Jobs lock file ({error}); restore it from version control, or delete it and "
            f"write it again from the deployed settings with -c {UPDATE_CONTEXT_KEY}=true"
        ) from None


def write(path: Path, stack: str, records: Collection[Retained]) -> None:
    """Record ``stack``'s retained resources in the lock file, keeping the other stacks' (stages') records."""
    stacks = {name: {k: r.to_dict() for k, r in found.items()} for name, found in read(path).items()}
    stacks[stack] = {record.key: record.to_dict() for record in sorted(records, key=lambda r: r.key)}
    body = {
        "about": (
            "Tiered Jobs: the retained queues and tables of each deployed stage. Synthesis refuses a change that "
            "would replace one (docs/upgrading.md). Update after a deploy with: "
            f"npx cdk synth -c stage=<stage> -c {UPDATE_CONTEXT_KEY}=true"
        ),
        "version": FORMAT_VERSION,
        "stacks": dict(sorted(stacks.items())),
    }
    path.write_text(json.dumps(body, indent=2, sort_keys=False) + "\n", encoding="utf-8")


def allowed_keys(raw: Any) -> frozenset[str]:
    """The ``tiered_jobs:allow_replacement`` context value as keys (``-c`` gives a string, ``cdk.json`` a list)."""
    if raw is None:
        return frozenset()
    if isinstance(raw, str):
        return frozenset(part.strip() for part in raw.split(",") if part.strip())
    if isinstance(raw, list) and all(isinstance(item, str) for item in raw):
        return frozenset(raw)
    raise LockError(
        f"context {ALLOW_CONTEXT_KEY!r} must be a list of keys or a comma-separated string, e.g. "
        f'["bulk/queue", "bulk/dlq"] or bulk/queue,bulk/dlq; got {raw!r}'
    )


def replacements(
    recorded: Mapping[str, Retained], current: Mapping[str, Retained], allowed: Collection[str] = (), stage: str = "dev"
) -> list[str]:
    """One message per recorded resource this synthesis would replace or leave out of the stack, unless
    its key is ``allowed``. A resource the lock does not hold yet (a new tier) is never a problem.
    ``stage`` is the stack's, for the commands the messages give."""
    problems = []
    for key, before in sorted(recorded.items()):
        if key in allowed:
            continue
        after = current.get(key)
        if after is None:
            change = "would leave the stack (its tier or table was renamed or removed)"
        elif after.logical_id != before.logical_id:
            change = f"would be replaced: its logical id changes from {before.logical_id} to {after.logical_id}"
        else:
            changed = [
                f"{name} {before.properties.get(name)!r} -> {after.properties.get(name)!r}"
                for name in REPLACEMENT_PROPERTIES.get(before.type, ())
                if before.properties.get(name) != after.properties.get(name)
            ]
            if not changed:
                continue
            change = f"would be replaced: {'; '.join(changed)}"
        problems.append(_message(before, change, stage))
    return problems


def _message(before: Retained, change: str, stage: str) -> str:
    name = before.properties.get("QueueName") or before.properties.get("TableName") or before.logical_id
    return (
        f"{_what(before.key)} ({name}) {change}. It holds {before.holds}: CloudFormation keeps the old one, "
        f"retained, out of the stack, where nothing reads it, and starts an empty one. {_drain(before.key, stage)} "
        f"Or allow it for this deploy with -c {ALLOW_CONTEXT_KEY}={before.key}, and after the deploy record the new "
        f"state with -c {UPDATE_CONTEXT_KEY}=true -c {ALLOW_CONTEXT_KEY}={before.key} "
        f"(docs/upgrading.md, 'Renaming or removing a tier')"
    )


def _what(key: str) -> str:
    owner, _, part = key.partition("/")
    if part == "dlq":
        return f"The DLQ of tier {owner!r}"
    if part == "queue":
        return f"The queue of tier {owner!r}"
    return f"The {owner} {part}"


def _drain(key: str, stage: str) -> str:
    owner, _, part = key.partition("/")
    cli = f"tiered-jobs --stage {stage}"
    if part == "dlq":
        return (
            f"Drain it first: `{cli} dlq inspect {owner}`, then `{cli} dlq replay {owner}` (or discard) while its "
            f"consumer still exists."
        )
    if part == "queue":
        return (
            f"Drain it first: route its job types to another tier, deploy, and wait until `{cli} status` shows it "
            f"empty."
        )
    return "Copy what it holds first (a DynamoDB export or backup)."
