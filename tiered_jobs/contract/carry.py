"""The carry protocol: what a job hands from one of its messages to the next, read and written here only.

A copy of a job (held by the rate limit, deferred by the time budget, a step's continuation, or the
one a bulk cancel's sweep makes of a message whose last receive it spent) is a new message: a fresh
receive count and a fresh ``SentTimestamp``. What the job had travels as ``TieredJobs.*`` attributes
(:class:`~tiered_jobs.contract.names.Attributes`): the attempts it had spent, when this run of it
entered the queue, when it first failed, its step, and the rate limit's reserved turn.

The consumer reads them (``runtime/received.py``) and writes them (``runtime/requeue.py``), and the
bulk cancel writes them for its sweep's copies (``operations/bulk_cancel.py``): one reader and one
writer, so the three never drift.

A copy keeps the publisher's own attributes, never the ``DeadLetter.*``, ``Replay.*`` or old
``TieredJobs.*`` ones (a copy is the job, not its history as a letter). SQS allows 10 attributes a
message; with little room the carried ones go in order of what a job cannot do without: the
attempts (without them a job could retry for ever), its step (without it a later step would read as
a duplicate of the first), when it entered the queue, when it first failed, and last its turn
(without it the copy only claims a token again).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .names import SQS_MAX_MESSAGE_ATTRIBUTES, Attributes, DeadLetter, Replay
from .steps import STEP_ATTRIBUTE

#: Prefixes of the attributes a copy never takes from the message it copies (it sets its own ``TieredJobs.*``).
NOT_CARRIED = (DeadLetter.PREFIX, Attributes.PREFIX, Replay.PREFIX)


def kept(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """The attributes of a message (the API's shape) that its copy keeps as they are: the publisher's own."""
    return {name: value for name, value in attributes.items() if not name.startswith(NOT_CARRIED)}


def write(
    kept_attributes: Mapping[str, Any],
    *,
    prior_attempts: int,
    enqueued_at: str,
    first_failed_at: str | None = None,
    step: int = 0,
    turn: str | None = None,
) -> dict[str, dict[str, str]] | None:
    """A copy's message attributes (the API's shape): ``kept_attributes`` and the carried state, in the
    order above within SQS's 10. ``None`` when there is no room for the attempts (and the step, if any):
    no copy SQS would accept keeps the job's count."""
    state: dict[str, dict[str, str]] = {
        Attributes.PRIOR_ATTEMPTS: {"DataType": "Number", "StringValue": str(max(0, prior_attempts))}
    }
    if step:
        state[STEP_ATTRIBUTE] = {"DataType": "Number", "StringValue": str(step)}
    state[Attributes.ENQUEUED_AT] = {"DataType": "String", "StringValue": enqueued_at}
    if first_failed_at is not None:
        state[Attributes.FIRST_FAILED_AT] = {"DataType": "String", "StringValue": first_failed_at}
    if turn is not None:
        state[Attributes.TURN] = {"DataType": "String", "StringValue": turn}
    room = SQS_MAX_MESSAGE_ATTRIBUTES - len(kept_attributes)
    if room < (2 if step else 1):
        return None
    return {**kept_attributes, **dict(list(state.items())[:room])}


class Read:
    """The carried state of one message, as its ``TieredJobs.*`` attributes give it (text, unparsed)."""

    __slots__ = ("prior_attempts", "enqueued_at", "first_failed_at", "turn")

    def __init__(self, text: Mapping[str, str | None]):
        """``text``: each attribute's string value by name (Lambda's or the API's shape, already read)."""
        self.prior_attempts = _count(text.get(Attributes.PRIOR_ATTEMPTS))
        self.enqueued_at = text.get(Attributes.ENQUEUED_AT)
        self.first_failed_at = text.get(Attributes.FIRST_FAILED_AT)
        #: The turn the rate limit reserved when it held the job, as sent.
        self.turn = text.get(Attributes.TURN)


def _count(text: str | None) -> int:
    """A count an attribute carries; a malformed one counts as none (the job keeps its SQS receives)."""
    try:
        return max(0, int(text)) if text else 0
    except ValueError:
        return 0
