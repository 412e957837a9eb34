"""The replacement guard: synthesis fails when it would replace a retained queue, DLQ or table.

A validation of the ``TieredJobs`` construct, so it runs in every synthesis of any app, after the
whole tree is built (logical ids and properties are final then). It acts only when the context
names a lock file (``tiered_jobs:lock``, see ``lock.py`` for why a recorded file and not the
deployed stack or the previous ``cdk.out``):

- the file holds this stack: each recorded retained queue and table must keep its logical id and
  its replacement properties, unless its key is in ``tiered_jobs:allow_replacement``; each one
  that would not is an error naming it and what it holds, and synthesis fails;
- the file does not hold this stack (a new stage) or does not exist: nothing to compare;
- ``tiered_jobs:lock_update`` is true: compared as above, then, if nothing is refused, this
  synthesis's records are written for this stack, the one time the file is written (the lock is the
  user's, committed with the app; a synthesis never changes it on its own). Recording allows no
  replacement by itself: after a deploy that replaced a resource, the update names the same keys in
  ``tiered_jobs:allow_replacement`` as the deploy did.

A disposable stage retains nothing, so it records nothing: its replacements lose data it was
declared free to lose.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsii
from aws_cdk import CfnDeletionPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_sqs as sqs
from constructs import Construct, IConstruct, IValidation

from . import lock
from .lock import Retained

#: Tier constructs are ``Tier-<name>`` children of ``TieredJobs`` (``construct.py``).
TIER_PREFIX = "Tier-"
#: What a retained resource holds, by the first part of its key (tier queues by their second).
HOLDS = {
    "queue": "the tier's jobs waiting to run",
    "dlq": "the tier's letters (its dead-lettered jobs, to inspect and replay)",
    "idempotency": "every finished job's idempotency record: a letter replayed after the replacement would run "
    "its finished job again",
    "unique": "the unique jobs' locks: a duplicate published after the replacement would run",
    "ratelimits": "the rate limits' token buckets",
    "resources": "your jobs' data",
    "schedules": "the schedules' undeliverable fires",
}


@jsii.implements(IValidation)
class ReplacementGuard:
    """Validation of a ``TieredJobs`` construct; see the module's docstring."""

    def __init__(self, jobs: Construct, stage: str) -> None:
        self._jobs = jobs
        self._stage = stage

    def validate(self) -> list[str]:
        node = self._jobs.node
        path = node.try_get_context(lock.LOCK_CONTEXT_KEY)
        if not path:
            return []
        stack = Stack.of(self._jobs).stack_name
        current = {record.key: record for record in retained(self._jobs)}
        try:
            recorded = lock.read(Path(str(path))).get(stack, {})
            allowed = lock.allowed_keys(node.try_get_context(lock.ALLOW_CONTEXT_KEY))
            # Recording is a comparison first: an update that wrote whatever this synthesis holds would pass a
            # renamed tier that no one allowed, and the next synthesis would find nothing to refuse.
            problems = lock.replacements(recorded, current, allowed, self._stage)
            if not problems and node.try_get_context(lock.UPDATE_CONTEXT_KEY) in (True, "true"):
                lock.write(Path(str(path)), stack, list(current.values()))
        except lock.LockError as error:
            return [str(error)]
        return problems


def retained(jobs: Construct) -> list[Retained]:
    """The retained queues and tables under ``jobs``, each with its key, logical id and replacement properties."""
    stack = Stack.of(jobs)
    found = []
    for child in jobs.node.find_all():
        if not isinstance(child, (sqs.CfnQueue, dynamodb.CfnTable)):
            continue
        if child.cfn_options.deletion_policy != CfnDeletionPolicy.RETAIN:
            continue
        key, holds = _describe(jobs, child)
        resolved = {name: _template_form(stack.resolve(value)) for name, value in _properties(child).items()}
        found.append(
            Retained(
                key=key,
                type=child.cfn_resource_type,
                logical_id=str(stack.resolve(child.logical_id)),
                properties={name: value for name, value in resolved.items() if value is not None},
                holds=holds,
            )
        )
    return found


def _describe(jobs: Construct, child: IConstruct) -> tuple[str, str]:
    """Its key and what it holds: ``<tier>/queue`` and ``<tier>/dlq`` for a tier's, else its construct path
    below ``jobs`` in lower case (``idempotency/table``; a part repeated in a row once)."""
    parts = child.node.path.removeprefix(jobs.node.path + "/").split("/")
    if parts[-1] == "Resource":
        parts = parts[:-1]
    if parts[0].startswith(TIER_PREFIX) and len(parts) == 2 and parts[1].lower() in ("queue", "dlq"):
        return f"{parts[0].removeprefix(TIER_PREFIX)}/{parts[1].lower()}", HOLDS[parts[1].lower()]
    lowered = [part.lower() for part in parts]
    key = "/".join(part for i, part in enumerate(lowered) if i == 0 or part != lowered[i - 1])
    return key, HOLDS.get(lowered[0], "its messages" if isinstance(child, sqs.CfnQueue) else "its items")


def _properties(child: sqs.CfnQueue | dynamodb.CfnTable) -> dict[str, Any]:
    if isinstance(child, sqs.CfnQueue):
        return {"QueueName": child.queue_name, "FifoQueue": child.fifo_queue}
    return {
        "TableName": child.table_name,
        "KeySchema": child.key_schema,
        "LocalSecondaryIndexes": child.local_secondary_indexes,
    }


def _template_form(value: Any) -> Any:
    """A resolved L1 struct as the template writes it (``attributeName`` -> ``AttributeName``)."""
    if isinstance(value, dict):
        return {key[:1].upper() + key[1:]: _template_form(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_template_form(item) for item in value]
    return value
