"""Scheduled jobs on EventBridge Scheduler: the names and message shapes the construct, publisher, CLI and
local mode share.

- A **periodic** job (``schedules`` in ``cdk.json``) is a schedule whose target input is an
  ordinary envelope v1 with two Scheduler context attributes in it: the idempotency key is
  ``schedule:<name>:<aws.scheduler.scheduled-time>`` and ``published_at`` is the scheduled time.
  Scheduler replaces them at each fire, so a fire delivered twice carries the same key and runs once.
- A **one-time** job (``publish(..., at=...)``) is an ``at()`` schedule named
  :func:`one_time_schedule_name` (from the job type and idempotency key), so publishing it again
  is a no-op and ``cancel(job_type, key)`` can find it.
- A **debounced** job (``publish(..., debounce=...)``) is the same one-time schedule, moved by each
  publish of its type and key to that publish's time plus the delay, with its payload: the burst
  runs once. The run's idempotency key is the publish's key plus the run's minute
  (:func:`debounced_run_key`), so the next burst runs again.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from .envelope import ENVELOPE_VERSION, MAX_IDEMPOTENCY_KEY_CHARS, validate

#: Scheduler's context attributes (replaced in the target input at each invocation).
SCHEDULED_TIME = "<aws.scheduler.scheduled-time>"
SCHEDULE_ARN = "<aws.scheduler.schedule-arn>"
EXECUTION_ID = "<aws.scheduler.execution-id>"
ATTEMPT_NUMBER = "<aws.scheduler.attempt-number>"
CONTEXT_ATTRIBUTE_PREFIX = "<aws.scheduler."

#: A periodic schedule's name in ``cdk.json``: lower-case, it becomes part of idempotency keys.
PERIODIC_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")
#: One-time schedules are named ``once-<40 hex>``; periodic names may not start with it.
ONE_TIME_PREFIX = "once-"
#: What a periodic job's idempotency key starts with.
PERIODIC_KEY_PREFIX = "schedule:"
#: Retries of an undeliverable fire before its dead-letter event goes to the schedules DLQ
#: (Scheduler's own defaults and maxima: 24 hours, 185 attempts).
RETRY_MAX_EVENT_AGE_SECONDS = 86_400
RETRY_MAX_ATTEMPTS = 185
#: Largest target input a schedule takes: 256 KB, EventBridge Scheduler's quota on a schedule's payload
#: ("Quotas for Amazon EventBridge Scheduler", Scheduler User Guide; botocore's model gives only ``min`` 1).
#: SQS takes 1 MiB, so a job the publisher sends through a one-time schedule must fit this smaller limit.
MAX_TARGET_INPUT_BYTES = 262_144
#: The longest debounce: a run more than 30 days after the last publish is far more likely
#: seconds mistaken for milliseconds than intended.
MAX_DEBOUNCE_SECONDS = 30 * 86_400
#: What a debounced run's key adds to the publish's key: ``@`` and the run's minute, ``2030-01-01T00:05Z``.
DEBOUNCED_KEY_SUFFIX_CHARS = len("@2030-01-01T00:05Z")
#: A sample scheduled time, to validate a periodic envelope before any fire.
SAMPLE_SCHEDULED_TIME = "2030-01-01T00:00:00Z"


def periodic_idempotency_key(schedule_name: str, scheduled_time: str = SCHEDULED_TIME) -> str:
    return f"{PERIODIC_KEY_PREFIX}{schedule_name}:{scheduled_time}"


def periodic_envelope(schedule_name: str, job_type: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    """The target input of a periodic schedule, before Scheduler replaces its context attributes."""
    return {
        "type": job_type,
        "idempotency_key": periodic_idempotency_key(schedule_name),
        "payload": dict(payload),
        "version": ENVELOPE_VERSION,
        "published_at": SCHEDULED_TIME,
    }


def periodic_input(schedule_name: str, job_type: str, payload: Mapping[str, Any]) -> str:
    """:func:`periodic_envelope` as the compact JSON the schedule's ``Target.Input`` holds."""
    return json.dumps(periodic_envelope(schedule_name, job_type, payload), separators=(",", ":"), ensure_ascii=False)


def periodic_problems(schedule_name: str, job_type: Any, payload: Any) -> list[str]:
    """The envelope rules a fire of this schedule would break (checked with a sample scheduled time)."""
    if isinstance(payload, dict) and CONTEXT_ATTRIBUTE_PREFIX in json.dumps(payload):
        return [f"the payload contains '{CONTEXT_ATTRIBUTE_PREFIX}...>', which Scheduler would replace at each fire"]
    return validate(
        {
            "type": job_type,
            "idempotency_key": periodic_idempotency_key(schedule_name, SAMPLE_SCHEDULED_TIME),
            "payload": payload,
            "version": ENVELOPE_VERSION,
            "published_at": SAMPLE_SCHEDULED_TIME,
        }
    )


def one_time_problems(body: str) -> list[str]:
    """What EventBridge Scheduler would refuse or change in a one-time schedule whose target input is ``body``
    (the job's envelope, as sent): over its input size quota, or text it would substitute at the fire."""
    problems = []
    size = len(body.encode("utf-8"))
    if size > MAX_TARGET_INPUT_BYTES:
        problems.append(
            f"the message is {size} bytes, over EventBridge Scheduler's {MAX_TARGET_INPUT_BYTES}-byte (256 KB) "
            "limit on a one-time schedule's input; pass IDs, not objects"
        )
    if CONTEXT_ATTRIBUTE_PREFIX in body:
        problems.append(
            f"the job contains '{CONTEXT_ATTRIBUTE_PREFIX}...>', which EventBridge Scheduler would replace when "
            "the one-time schedule fires; remove it from the payload, key and tenant"
        )
    return problems


def substitute(
    text: str, *, scheduled_time: str, schedule_arn: str = "", execution_id: str = "", attempt_number: int = 1
) -> str:
    """What Scheduler does to a target input at invocation: replace the context attributes."""
    return (
        text.replace(SCHEDULED_TIME, scheduled_time)
        .replace(SCHEDULE_ARN, schedule_arn)
        .replace(EXECUTION_ID, execution_id)
        .replace(ATTEMPT_NUMBER, str(attempt_number))
    )


def debounced_run_key(idempotency_key: str, fire_at: datetime) -> str:
    """The idempotency key of a debounced burst's run: the publish's key and the run's minute (UTC)."""
    return f"{idempotency_key}@{fire_at.astimezone(timezone.utc):%Y-%m-%dT%H:%M}Z"


def debounced_run_key_problem(idempotency_key: str) -> str | None:
    """Why ``idempotency_key`` is too long for a debounced run's key (``None`` when it is not)."""
    longest = MAX_IDEMPOTENCY_KEY_CHARS - DEBOUNCED_KEY_SUFFIX_CHARS
    if len(idempotency_key) <= longest:
        return None
    return (
        f"with debounce the idempotency key must be at most {longest} characters (its run's key adds "
        f"'@<minute>', {DEBOUNCED_KEY_SUFFIX_CHARS} characters, within the envelope's {MAX_IDEMPOTENCY_KEY_CHARS}), "
        f"got {len(idempotency_key)}"
    )


def one_time_schedule_name(job_type: str, idempotency_key: str) -> str:
    """``once-`` + 40 hex characters of SHA-256 over type and key: deterministic, 45 characters."""
    digest = hashlib.sha256(f"{job_type}\n{idempotency_key}".encode()).hexdigest()
    return f"{ONE_TIME_PREFIX}{digest[:40]}"
