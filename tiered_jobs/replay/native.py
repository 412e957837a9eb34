"""The native mode: hand an unfiltered bulk move to SQS's own ``StartMessageMoveTask``.

SQS moves every letter of the DLQ to the tier's main queue by itself, as is: bodies and *all*
attributes, ``DeadLetter.*`` included, no ``Replay.*`` added (the consumer treats a letter it
receives again like any job). It is the fastest way to drain a big DLQ after a fix, and runs
beyond the Lambda's 15 minutes. Only one move task may run per queue at a time; SQS refuses a
second one with an error the operator sees as is.

**Offloaded letters** (a tier's ``large_payloads``). A moved letter is a new message: its
retention starts again, so it (and its own letter, if it fails again) may point at its stored
body for the queue's and the DLQ's retention once more, while the bucket's lifecycle deletes
the body a fixed number of days after it was stored. For a tier that offloads (the stack says
so in :data:`~tiered_jobs.contract.large_payloads.NATIVE_REPLAY_BOUNDS_ENV`), the move is
started only once every offloaded letter of the DLQ is known to be younger than
:func:`~tiered_jobs.contract.large_payloads.native_replay_days`: the letters are read (held,
then made visible again before the move) and each body's ``LastModified`` asked of S3
(``HeadObject``, which ``s3:GetObject`` allows). An older body, one already gone, one S3 would
not describe, or a DLQ too deep to read through, refuses the move: the batch mode replays what
is still inside the idempotency window (always within the bound), ``discard`` archives the rest.

moto does not implement ``StartMessageMoveTask``: the tests drive this module with botocore's
``Stubber``, or a client that answers that one call.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from typing import Any

from tiered_jobs.contract.large_payloads import NATIVE_REPLAY_BOUNDS_ENV, PointerError, is_offloaded, read_pointer
from tiered_jobs.contract.names import SQS_MAX_BATCH_ENTRIES

from . import offloaded
from .events import ReplayEventError, ReplayRequest, response
from .tiers import TierQueues

#: Letters the offloaded check reads at most before it gives up and refuses the move: 200 receives and
#: at most as many ``HeadObject`` calls, well inside the replay function's 5 minutes.
CHECK_MAX_LETTERS = 2_000
#: How long the check holds what it read: the replay function's 5 minutes and a margin, so a slow check
#: never reads a letter twice. It makes them all visible again before the move starts (or fails).
CHECK_HOLD_SECONDS = 330
#: A long poll asks every SQS server: an empty answer means nothing is left (a test on moto may set 0).
RECEIVE_WAIT_SECONDS = 1


def start_move_task(
    request: ReplayRequest,
    *,
    sqs: Any,
    queues: TierQueues,
    s3: Callable[[], Any] | None = None,
    bounds: Mapping[str, int] | None = None,
    now: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
) -> dict[str, Any]:
    """Start the move (or, for a dry run, only count what it would move).

    ``bounds``: each offloading tier's :func:`native_replay_days` in seconds (by default from the
    environment the stack sets); ``s3`` makes the client the offloaded check asks; ``now`` ages the bodies.
    """
    dlq = sqs.get_queue_attributes(QueueUrl=queues.dlq_url, AttributeNames=["QueueArn", "ApproximateNumberOfMessages"])
    depth = int(dlq["Attributes"]["ApproximateNumberOfMessages"])
    bound = (bounds_from_env() if bounds is None else bounds).get(request.tier)
    if bound is not None:
        problems = _offloaded_problems(sqs, str(queues.dlq_url), bound, s3 or offloaded.lazy_client(), now())
        if problems:
            raise ReplayEventError(problems)
    if request.dry_run:
        return response(request, matched=depth, left_in_dlq=depth, stopped_because="dry_run")
    main = sqs.get_queue_attributes(QueueUrl=queues.queue_url, AttributeNames=["QueueArn"])
    arguments: dict[str, Any] = {
        "SourceArn": dlq["Attributes"]["QueueArn"],
        "DestinationArn": main["Attributes"]["QueueArn"],
    }
    if request.max_per_second is not None:
        arguments["MaxNumberOfMessagesPerSecond"] = int(request.max_per_second)
    task = sqs.start_message_move_task(**arguments)
    return response(
        request, matched=depth, left_in_dlq=depth, stopped_because="move_task_started", task_handle=task["TaskHandle"]
    )


def bounds_from_env(environ: Mapping[str, str] = os.environ) -> dict[str, int]:
    """``{tier: seconds}`` from :data:`NATIVE_REPLAY_BOUNDS_ENV`; empty when no tier offloads (or the CLI runs)."""
    raw = environ.get(NATIVE_REPLAY_BOUNDS_ENV)
    if not raw:
        return {}
    try:
        return {str(tier): int(seconds) for tier, seconds in json.loads(raw).items()}
    except (ValueError, TypeError, AttributeError) as exc:
        raise RuntimeError(
            f'{NATIVE_REPLAY_BOUNDS_ENV} must be {{"<tier>": <seconds>}}, got {raw[:200]!r} ({exc})'
        ) from None


def _offloaded_problems(sqs: Any, dlq_url: str, bound_seconds: int, s3: Callable[[], Any], now: datetime) -> list[str]:
    """Why the move must not start (empty: every offloaded letter's body outlives its moved copy)."""
    held: dict[str, str] = {}
    too_old: list[str] = []
    unknown: list[str] = []
    complete = False
    try:
        while len(held) < CHECK_MAX_LETTERS:
            messages = sqs.receive_message(
                QueueUrl=dlq_url,
                MaxNumberOfMessages=SQS_MAX_BATCH_ENTRIES,
                VisibilityTimeout=CHECK_HOLD_SECONDS,
                WaitTimeSeconds=RECEIVE_WAIT_SECONDS,
                MessageAttributeNames=["All"],
            ).get("Messages", [])
            fresh = [m for m in messages if m["MessageId"] not in held]
            if not fresh:
                complete = True
                break
            for message in fresh:
                held[message["MessageId"]] = message["ReceiptHandle"]
                if is_offloaded(message.get("MessageAttributes")):
                    verdict = _body_verdict(str(message.get("Body", "")), bound_seconds, s3, now)
                    if verdict is not None:
                        (too_old if verdict.startswith("stored") else unknown).append(
                            f"{message['MessageId']} ({verdict})"
                        )
    finally:
        _release(sqs, dlq_url, held)
    days = bound_seconds / 86_400
    problems = []
    if too_old:
        problems.append(
            f"'mode': 'native' would move {len(too_old)} offloaded letter(s) whose body was stored more than "
            f"{days:g} days ago (or is gone), which a moved copy could outlive (the bucket's lifecycle, less the "
            f"queue's and the DLQ's retention): {', '.join(too_old[:5])}; replay with 'mode': 'batch' (it leaves "
            "letters outside the idempotency window, always within that bound) or discard them"
        )
    if unknown:
        problems.append(
            f"'mode': 'native' cannot tell the age of {len(unknown)} offloaded letter(s)' bodies: "
            f"{', '.join(unknown[:5])}; replay with 'mode': 'batch' or discard them"
        )
    if not complete:
        problems.append(
            f"'mode': 'native' checks every offloaded letter's age first and read {len(held)} letters without "
            "reaching the end of the DLQ: replay with 'mode': 'batch'"
        )
    return problems


def _body_verdict(body: str, bound_seconds: int, s3: Callable[[], Any], now: datetime) -> str | None:
    """``None`` when the letter's body outlives a moved copy; else why not (``stored ...`` when too old or gone)."""
    try:
        pointer = read_pointer(body)
    except PointerError:
        return None  # no body to outlive: the consumer refuses it again whenever it comes
    try:
        stored = s3().head_object(Bucket=pointer.bucket, Key=pointer.key)["LastModified"]
    except Exception as exc:  # noqa: BLE001 -- any failure keeps the move from starting, with its reason
        code = getattr(exc, "response", {}).get("Error", {}).get("Code") if hasattr(exc, "response") else None
        if code in ("NoSuchKey", "404"):
            return f"stored at {pointer.url}, now gone"
        return f"{pointer.url}: {offloaded.read_error(exc)}"
    age = (now - stored).total_seconds()
    return f"stored {age / 86_400:.1f} days ago at {pointer.url}" if age > bound_seconds else None


def _release(sqs: Any, dlq_url: str, held: dict[str, str]) -> None:
    """Make every letter the check read visible again (SQS does it anyway after ``CHECK_HOLD_SECONDS``)."""
    handles = list(held.values())
    for start in range(0, len(handles), SQS_MAX_BATCH_ENTRIES):
        entries = [
            {"Id": str(i), "ReceiptHandle": handle, "VisibilityTimeout": 0}
            for i, handle in enumerate(handles[start : start + SQS_MAX_BATCH_ENTRIES])
        ]
        sqs.change_message_visibility_batch(QueueUrl=dlq_url, Entries=entries)
