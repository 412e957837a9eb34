"""Replays as an operator drives them, shared by the ``tiered-jobs`` CLI and the web console.

* :func:`run_replay`: inspect / dry run / replay a tier's DLQ with the replay domain (the code the
  replay Lambda runs), here or by invoking the deployed function;
* :func:`read_letters`: the letters of a DLQ with their bodies and ``DeadLetter.*`` reasons, read
  by the same domain (held while read, then made visible again: nothing is removed).

Every failure an operator can act on is an :class:`OperatorError` (``code`` 2: a mistake in the
request, 1 otherwise); the CLI prints it as one line, the console as a banner.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from enum import Enum
from pathlib import Path
from typing import Any

from ..replay import JsonLinesArchive, ReplayEventError, TierQueues, approximate_depth, parse_event
from ..replay import run as run_replay_domain
from ..stage import discovery
from ..stage.target import Target
from .errors import OperatorError, client_error_text

#: A replay may run up to Lambda's 15 minutes: wait that long for the answer, and never resend it.
REPLAY_INVOKE_READ_TIMEOUT = 960

#: ``progress(description, total)`` gives the callback ``on_progress(matched)`` for the duration of a run.
Progress = Callable[[str, int], AbstractContextManager[Callable[[int], None]]]


class Via(str, Enum):
    """Where a DLQ command runs the replay code."""

    auto = "auto"
    direct = "direct"
    function = "lambda"


def default_archive_path(stage: str, tier: str) -> Path:
    """Where a discard run here archives its letters unless told: one JSON-lines file per stage and tier,
    in the current directory (the CLI's ``dlq discard`` and the console's Discard alike)."""
    return Path(f"tiered-jobs-discarded-{stage}-{tier}.jsonl")


@contextmanager
def no_progress(description: str, total: int) -> Iterator[Callable[[int], None]]:
    yield lambda matched: None


def run_replay(
    target: Target,
    event: dict[str, Any],
    via: Via = Via.auto,
    *,
    progress: Progress = no_progress,
    status: Callable[[str], AbstractContextManager[Any]] | None = None,
    archive_path: Path | None = None,
    note: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run the replay domain here (``auto`` / ``direct``), or invoke the deployed function (``lambda``).

    ``progress`` shows a direct run's progress; ``status`` wraps the wait for the function's answer.
    Here, each tier's idempotency window comes from the stage's SSM parameters (when they cannot
    be read, ``note`` is told and the windows count as unknown: a replay then moves nothing
    without ``allow_outside_idempotency_window``), and ``discard`` appends to the JSON-lines
    file ``archive_path``; the deployed function has its own archive.
    """
    deployment = target.deployment()
    deployment.tier(event["tier"])  # an unknown tier fails here, naming the known ones
    if via is Via.function:
        return invoke_replay(target, deployment, event, status)
    tiers = _tier_queues(target, deployment, note)
    try:
        request = parse_event(event, tiers=tiers)
        sqs = target.client("sqs")
        total = min(request.max_messages, approximate_depth(sqs, tiers[request.tier].dlq_url))
        archive = JsonLinesArchive(archive_path) if archive_path is not None else None
        with progress(f"{request.action} {request.tier} DLQ", total) as on_progress:
            return run_replay_domain(request, sqs=sqs, tiers=tiers, on_progress=on_progress, archive=archive)
    except ReplayEventError as exc:
        raise OperatorError(str(exc), 2) from None


def read_letters(
    target: Target, tier: str, *, max_messages: int, on_letters: Callable[[list[Any]], None]
) -> dict[str, Any]:
    """Inspect ``tier``'s DLQ (at most ``max_messages`` letters), handing every letter read to ``on_letters``.

    Letters are ``tiered_jobs.replay.letters.Letter`` (``message_id``, ``body``, ``attributes``,
    ``reason``, ``error_type``, ``error_message``, ``job_type``...). Returns the inspect response.
    Needs the replay code here: the deployed function returns groups, not letters.
    """
    deployment = target.deployment()
    tiers = _tier_queues(target, deployment)
    try:
        request = parse_event({"action": "inspect", "tier": tier, "max_messages": max_messages}, tiers=tiers)
    except ReplayEventError as exc:
        raise OperatorError(str(exc), 2) from None
    return run_replay_domain(request, sqs=target.client("sqs"), tiers=tiers, on_letters=on_letters)


def invoke_replay(
    target: Target,
    deployment: discovery.Deployment,
    event: dict[str, Any],
    status: Callable[[str], AbstractContextManager[Any]] | None = None,
) -> dict[str, Any]:
    """``lambda:InvokeFunction`` on the stage's replay function, once (never re-sent), and its answer."""
    name = deployment.replay_function_name
    if not name:
        raise OperatorError(f"{deployment.source} names no replay function to invoke")
    client = target.client("lambda", read_timeout=REPLAY_INVOKE_READ_TIMEOUT, retries={"total_max_attempts": 1})
    with (status or _quiet)(f"invoking {name}..."):
        answer = client.invoke(FunctionName=name, InvocationType="RequestResponse", Payload=json.dumps(event).encode())
    body = json.loads(answer["Payload"].read() or b"null")
    if answer.get("FunctionError"):
        message = body.get("errorMessage") if isinstance(body, dict) else body
        raise OperatorError(
            f"the replay function {name} refused or failed: {message}",
            2 if "invalid replay event" in str(message) else 1,
        )
    answered: dict[str, Any] = body  # the replay function answers an object
    return answered


@contextmanager
def _quiet(description: str) -> Iterator[None]:
    yield


def _tier_queues(
    target: Target, deployment: discovery.Deployment, note: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """The tiers with a DLQ, each with its idempotency window from SSM (``None``: unknown)."""
    from botocore.exceptions import ClientError

    names = [name for name, urls in deployment.tiers.items() if urls.dlq_url]
    try:
        ttls = discovery.idempotency_ttls(target.stage, names, ssm=target.client("ssm"))
    except ClientError as exc:
        if note is not None:
            note(f"the tiers' idempotency windows unavailable ({client_error_text(exc)})")
        ttls = {}
    return {
        name: TierQueues(deployment.tiers[name].queue_url, deployment.tiers[name].dlq_url, ttls.get(name))
        for name in names
    }
