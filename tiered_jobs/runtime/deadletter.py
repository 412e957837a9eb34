"""Dead-lettering a message ourselves, with the reason attached.

The original body goes to the DLQ byte-for-byte with its publisher's message attributes, plus
the ``DeadLetter.*`` String attributes of the contract. The runtime's own ``TieredJobs.*`` state
is folded into those reasons (attempts, first failure) and not kept, nor is ``Replay.At``: a letter
moved back starts a new run (``Replay.Count`` stays, so a replay counts on). Only when the DLQ has
accepted the copy does the caller report the record as processed (so SQS deletes the source): a
failed send leaves the message where it is.

SQS counts the body and every attribute's name, data type and value toward its 1 MiB limit.
The copy keeps the body and the original attributes whole (they fitted in the original message);
when the reasons would overflow, they are shortened: ``DeadLetter.Traceback`` is dropped first
(it is JSON: cut, it would not parse), then ``DeadLetter.ErrorMessage`` is shortened, then the
other reasons are dropped in :data:`_SHRINK_ORDER`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tiered_jobs.contract.names import (
    SQS_MAX_MESSAGE_ATTRIBUTES,
    SQS_MAX_MESSAGE_BYTES,
    Attributes,
    DeadLetter,
    Replay,
)
from tiered_jobs.contract.sqs_limits import message_size, sqs_safe_text
from tiered_jobs.contract.steps import STEP_ATTRIBUTE
from tiered_jobs.contract.times import iso_text
from tiered_jobs.contract.trace_header import system_attributes

#: When original attributes leave no room for every reason, these are kept first. The traceback
#: comes after the moments (the first failure bounds a replay's idempotency window) and before the
#: source queue (which the letter's own DLQ already names).
_PRIORITY = (
    DeadLetter.REASON,
    DeadLetter.ERROR_TYPE,
    DeadLetter.ERROR_MESSAGE,
    DeadLetter.ATTEMPTS,
    DeadLetter.JOB_TYPE,
    DeadLetter.LAST_FAILED_AT,
    DeadLetter.FIRST_FAILED_AT,
    DeadLetter.TRACEBACK,
    DeadLetter.SOURCE_QUEUE,
)


#: When the copy would exceed SQS's size limit, reasons give way in this order (the reason itself last).
_SHRINK_ORDER = (DeadLetter.TRACEBACK, DeadLetter.ERROR_MESSAGE) + tuple(
    n for n in reversed(_PRIORITY) if n not in (DeadLetter.TRACEBACK, DeadLetter.ERROR_MESSAGE)
)
#: A shortened ``ErrorMessage`` keeps at least this many bytes, or is dropped.
_MIN_SHORTENED_BYTES = 16
_ELLIPSIS = "…"
#: Longest ``DeadLetter.ErrorType`` (characters): an exception's class name, bounded like the message.
MAX_ERROR_TYPE_CHARS = 256
#: Attributes of the failed message a letter does not keep (its reasons replace them).
_NOT_KEPT = (DeadLetter.PREFIX, Attributes.PREFIX, Replay.AT)


@dataclass(frozen=True)
class DeadLetterReason:
    """Why a job was dead-lettered: the ``DeadLetter.*`` attributes its letter carries."""

    reason: str  # DeadLetter.REASON_PERMANENT | REASON_RETRIES_EXHAUSTED | REASON_REQUEUE_FAILED
    error_type: str
    error_message: str
    attempts: int
    first_failed_at: datetime
    last_failed_at: datetime
    source_queue: str
    job_type: str
    #: ``DeadLetter.Traceback``'s value (``LetterTraceback.encode()``), bounded by its builder;
    #: ``None``: nothing raised (``requeue_failed``).
    traceback: str | None = None

    def attributes(self) -> dict[str, str]:
        """The reasons as SQS will accept them: every value passes :func:`sqs_safe_text` (an exception's
        message or a payload's type may hold a NUL byte or a lone surrogate, and one such character
        would make SQS refuse the whole letter), escaped before it is cut, so a cap in characters
        stays a cap in bytes."""
        traceback = {DeadLetter.TRACEBACK: self.traceback} if self.traceback else {}
        reasons = {
            DeadLetter.REASON: self.reason,
            DeadLetter.ERROR_TYPE: truncate(sqs_safe_text(self.error_type), MAX_ERROR_TYPE_CHARS),
            DeadLetter.ERROR_MESSAGE: truncate(sqs_safe_text(self.error_message), DeadLetter.MAX_ERROR_MESSAGE_CHARS),
            DeadLetter.ATTEMPTS: str(self.attempts),
            DeadLetter.FIRST_FAILED_AT: iso_text(self.first_failed_at),
            DeadLetter.LAST_FAILED_AT: iso_text(self.last_failed_at),
            DeadLetter.SOURCE_QUEUE: self.source_queue,
            DeadLetter.JOB_TYPE: self.job_type,
            **traceback,
        }
        return {name: sqs_safe_text(value) for name, value in reasons.items()}


def truncate(text: str, limit: int) -> str:
    text = text or "(no message)"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def merge_attributes(
    original: Mapping[str, dict[str, Any]], dead_letter: Mapping[str, str]
) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The publisher's attributes (not stale reasons, the runtime's state or ``Replay.At``) plus the
    new reasons, within SQS's limit of 10. Returns the attributes and the reason names that did not fit."""
    # A stepped job's step stays (contract/steps.py): its replay continues from its checkpoint, not from the start.
    merged = {k: v for k, v in original.items() if not k.startswith(_NOT_KEPT) or k == STEP_ATTRIBUTE}
    dropped: list[str] = []
    for name in _PRIORITY:
        if name not in dead_letter:
            continue  # an optional reason this letter does not have (its traceback)
        if len(merged) < SQS_MAX_MESSAGE_ATTRIBUTES:
            merged[name] = {"DataType": "String", "StringValue": dead_letter[name]}
        else:
            dropped.append(name)
    return merged, dropped


#: Bytes SQS counts for one message: the contract's rule, shared with the publisher and replay.
message_bytes = message_size


def fit_to_size(
    body: str, attributes: Mapping[str, dict[str, Any]], limit: int = SQS_MAX_MESSAGE_BYTES
) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Shorten the ``DeadLetter.*`` reasons until body + attributes fit in ``limit`` bytes. The
    body and the original attributes are never touched. Returns the attributes and the names of
    the reasons shortened or dropped."""
    fitted = dict(attributes)
    changed: list[str] = []
    for name in _SHRINK_ORDER:
        over = message_bytes(body, fitted) - limit
        if over <= 0:
            break
        if name not in fitted:
            continue
        changed.append(name)
        value = fitted[name]["StringValue"].encode("utf-8")
        keep = len(value) - over - len(_ELLIPSIS.encode("utf-8"))
        if name == DeadLetter.ERROR_MESSAGE and keep >= _MIN_SHORTENED_BYTES:
            shortened = value[:keep].decode("utf-8", "ignore") + _ELLIPSIS
            fitted[name] = {"DataType": "String", "StringValue": shortened}
        else:
            del fitted[name]
    return fitted, changed


def send_to_dlq(
    sqs: Any,
    dlq_url: str,
    body: str,
    attributes: Mapping[str, dict[str, Any]],
    group_id: str | None = None,
    trace_header: str | None = None,
) -> str:
    """Send the copy (with the job's tenant as its group, so a native replay keeps it, and its publisher's
    trace header, so a replay's run links to it too); returns the DLQ's message id. Raises whatever SQS raises."""
    extra: dict[str, Any] = {"MessageGroupId": group_id} if group_id else {}
    if trace_header:
        extra["MessageSystemAttributes"] = system_attributes(trace_header)
    response = sqs.send_message(QueueUrl=dlq_url, MessageBody=body, MessageAttributes=dict(attributes), **extra)
    message_id: str = response["MessageId"]
    return message_id
