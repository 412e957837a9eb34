"""Change a tier's event source mapping through Lambda's transitions, and wait for the state it goes to.

``UpdateEventSourceMapping`` answers at once with a transition (``Disabling``, ``Enabling``,
``Updating``); while one lasts, another update is refused with ``ResourceInUseException`` (and a
tag or untag with ``ResourceConflictException``, "another operation is in progress"). That is no
failure of the request, only a moment too early, and botocore does not retry either code:
:func:`update_mapping`, :func:`tag_mapping` and :func:`untag_mapping` do, a bounded number of times
with exponential backoff and full jitter (two callers, say the breaker and an operator, do not retry
in step). ``sleep`` and ``random`` are injected, so tests never wait.

A disabled mapping still delivers what its polls in flight received: :func:`wait_for_state` reads
the mapping until it reaches the state asked for (``Disabled``), bounded, telling ``progress``
what it sees, so ``pause`` returns when nothing new is received, or says that it may still be.
"""

from __future__ import annotations

import random as _random
import time
from collections.abc import Callable
from typing import Any

__all__ = [
    "DISABLE_WAIT_SECONDS",
    "IN_TRANSITION",
    "POLL_SECONDS",
    "UPDATE_ATTEMPTS",
    "tag_mapping",
    "untag_mapping",
    "update_mapping",
    "wait_for_state",
]

#: Lambda's answers to a change of a mapping in a transition: an update's, a tag's or an untag's.
IN_TRANSITION = ("ResourceInUseException", "ResourceConflictException")
#: Updates tried before the refusal is raised: about 15 s of backoff at most (0.5 + 1 + 2 + 4 + 8).
UPDATE_ATTEMPTS = 6
FIRST_DELAY_SECONDS = 0.5
MAX_DELAY_SECONDS = 8.0
#: How long a pause waits for ``Disabled`` before it returns and says the mapping may still deliver.
DISABLE_WAIT_SECONDS = 60.0
#: Between two reads of a mapping in a transition.
POLL_SECONDS = 2.0

Sleep = Callable[[float], object]
Progress = Callable[[str], object]


def _code(error: Exception) -> str | None:
    response = getattr(error, "response", None)
    return (response.get("Error") or {}).get("Code") if isinstance(response, dict) else None


def _retried(call: Callable[[], Any], *, sleep: Sleep, random: Callable[[], float], attempts: int) -> Any:
    for attempt in range(1, attempts + 1):
        try:
            return call()
        except Exception as exc:
            if _code(exc) not in IN_TRANSITION or attempt == attempts:
                raise
            # Full jitter: anywhere up to the attempt's exponential ceiling.
            sleep(random() * min(MAX_DELAY_SECONDS, FIRST_DELAY_SECONDS * 2 ** (attempt - 1)))
    raise AssertionError("unreachable: the last attempt returns or raises")


def update_mapping(
    lambda_client: Any,
    uuid: str,
    *,
    sleep: Sleep = time.sleep,
    random: Callable[[], float] = _random.random,
    attempts: int = UPDATE_ATTEMPTS,
    **change: Any,
) -> dict[str, Any]:
    """``UpdateEventSourceMapping(UUID=uuid, **change)``, retried while Lambda answers ``ResourceInUseException``."""
    return dict(
        _retried(
            lambda: lambda_client.update_event_source_mapping(UUID=uuid, **change),
            sleep=sleep,
            random=random,
            attempts=attempts,
        )
    )


def tag_mapping(
    lambda_client: Any,
    arn: str,
    tags: dict[str, str],
    *,
    sleep: Sleep = time.sleep,
    random: Callable[[], float] = _random.random,
    attempts: int = UPDATE_ATTEMPTS,
) -> None:
    """``TagResource``, retried while Lambda answers ``ResourceConflictException``."""
    _retried(lambda: lambda_client.tag_resource(Resource=arn, Tags=tags), sleep=sleep, random=random, attempts=attempts)


def untag_mapping(
    lambda_client: Any,
    arn: str,
    keys: list[str],
    *,
    sleep: Sleep = time.sleep,
    random: Callable[[], float] = _random.random,
    attempts: int = UPDATE_ATTEMPTS,
) -> None:
    """``UntagResource``, retried while Lambda answers ``ResourceConflictException``."""
    _retried(
        lambda: lambda_client.untag_resource(Resource=arn, TagKeys=keys), sleep=sleep, random=random, attempts=attempts
    )


def wait_for_state(
    lambda_client: Any,
    uuid: str,
    wanted: str,
    *,
    timeout_seconds: float = DISABLE_WAIT_SECONDS,
    sleep: Sleep = time.sleep,
    monotonic: Callable[[], float] = time.monotonic,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """The mapping once its ``State`` is ``wanted``, or as it is when ``timeout_seconds`` have passed."""
    deadline = monotonic() + timeout_seconds
    while True:
        mapping = dict(lambda_client.get_event_source_mapping(UUID=uuid))
        state = mapping.get("State")
        left = deadline - monotonic()
        if state == wanted or left <= 0:
            return mapping
        if progress is not None:
            progress(f"the mapping is {state}, waiting for {wanted} ({left:.0f} s left)")
        sleep(min(POLL_SECONDS, left))
