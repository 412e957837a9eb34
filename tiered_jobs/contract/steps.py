"""A job longer than one invocation: its steps, as its messages and its idempotency record hold them.

A job that cannot finish within its function's timeout returns ``ctx.checkpoint(state)``: the
consumer sends the job again as its **next step** (a new message under the same key, carrying
:data:`STEP_ATTRIBUTE`), and the job's idempotency record keeps the step and the state
(:data:`RECORD_STEP`, :data:`RECORD_STATE`) until that step claims it. So:

* the record says which step is due; a delivery whose step is behind it (a duplicate of an earlier
  step's message: SQS's at-least-once delivery, a crashed batch coming back) is answered as a
  duplicate and runs nothing; the delivery of the due step claims the record (one conditional
  ``UpdateItem``) and runs with the state;
* a step is not an attempt: the attempts the job spent are carried as a held copy carries them,
  and its backoff is its own;
* the message carries only the step number (a few bytes: the publisher's 8 KiB of headroom is for
  the runtime's attributes and a letter's reasons), copies and letters keep it, so a held,
  deferred or replayed step is still that step; the state stays in the record, bounded by
  :data:`STATE_MAX_BYTES` of JSON.

A step's record is written with the same attributes Powertools writes (``status``, ``expiration``,
``data``, ``validation``), so every reader (Powertools on a duplicate, ``tiered-jobs job``,
``Publisher.get_status``) reads it as it reads any record; while a step runs the record carries no
``in_progress_expiration``, so Powertools never takes it over for a duplicate of an earlier step: a
step's own lease (:data:`RECORD_LEASE`) says when a crashed step may be claimed again.

Standard library only: this module ships in the Lambda asset and in the installable package.
"""

from __future__ import annotations

import json
from typing import Any

#: Message attribute (Number) of a job's step: absent on the published message (step 0).
STEP_ATTRIBUTE = "TieredJobs.Step"
#: The stored result of a step that checkpointed (``{"tiered_jobs_step": n}``: step n is due). A job's
#: own result never uses the name: it is the project's, not a plain word.
MARKER_KEY = "tiered_jobs_step"

#: The idempotency record's attributes of a stepped job (beside Powertools' own).
RECORD_STEP = "step"  # Number: the step due (checkpointed, not yet run) or running
RECORD_STATE = "step_state"  # String: the last checkpoint's state, JSON
RECORD_OWNER = "step_owner"  # String: the token of the invocation running the step
RECORD_LEASE = "step_lease"  # Number, epoch ms: after it, a crashed step may be claimed again

#: Steps a job may take unless it says otherwise (``@job(max_steps=...)``): a job that checkpoints
#: for ever (a cursor that never advances) ends in the DLQ with reason ``too_many_steps``.
DEFAULT_MAX_STEPS = 100
#: The most a job may ask for (at one step per timeout, 15 minutes each, over ten days of work).
MAX_STEPS_LIMIT = 1000
#: The largest state a checkpoint keeps (bytes of its JSON): a cursor, not the work. Every step
#: writes it to the record (1 write unit per KB), and the record also holds the result (64 KB).
STATE_MAX_BYTES = 16_384
#: A continuation is sent before its record says the step is due: this delay lets that write land
#: first, so the next step finds its record ready instead of in progress.
CONTINUATION_DELAY_SECONDS = 1
#: The reason a job that asked for more steps than it may take is dead-lettered with.
REASON_TOO_MANY_STEPS = "too_many_steps"


def encode_state(state: Any) -> str:
    """The checkpoint's state as stored, or a :class:`TypeError` / :class:`ValueError` naming the fix."""
    try:
        text = json.dumps(state, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"ctx.checkpoint: the state must be JSON (dicts, lists, strings, numbers, booleans, None): {exc}"
        ) from None
    size = len(text.encode("utf-8"))
    if size > STATE_MAX_BYTES:
        raise ValueError(
            f"ctx.checkpoint: the state is {size} bytes of JSON, over the {STATE_MAX_BYTES}-byte limit: "
            "keep a cursor (an offset, the last id done) and store the work itself elsewhere"
        )
    return text


def decode_state(text: str | None) -> Any:
    return json.loads(text) if text else None


def marker(step: int) -> dict[str, int]:
    """The stored result of a step that checkpointed: ``step`` is due next."""
    return {MARKER_KEY: step}


def marker_step(result: Any) -> int | None:
    """The step a stored result says is due (``None``: not a step marker, the job's own result)."""
    if isinstance(result, dict) and len(result) == 1:
        step = result.get(MARKER_KEY)
        if isinstance(step, int) and not isinstance(step, bool):
            return step
    return None


def step_of(attributes: Any) -> int:
    """The step a message carries (Lambda's ``messageAttributes`` or the API's shape); 0 without one."""
    value = (attributes or {}).get(STEP_ATTRIBUTE) or {}
    text = value.get("stringValue", value.get("StringValue"))
    try:
        return max(0, int(text)) if text is not None else 0
    except (TypeError, ValueError):
        return 0
