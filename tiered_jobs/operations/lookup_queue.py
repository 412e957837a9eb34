"""What a job's tier queue can say about a job the tables know nothing of: how many messages it holds, and
whether the tier is paused.

SQS cannot be searched by key, and receiving a message to look at it would spend one of its receives
(the receive ledger: ``docs/consumer.md``), so the lookup never claims a job is in its queue from the
queue alone. It reports what it checked: the counts SQS keeps (approximate: they settle within about a
minute) and the tier's event source mapping (``tiered_jobs.replay.pause``: a paused tier's mapping is
disabled). A job that something else says was published and has not run (its unique lock) and whose
tier is paused reads ``paused``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..stage.target import Target
from .pausing import read_pauses

#: SQS's three counts of a queue, in the order they are reported.
COUNTS = (
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesDelayed",
)


@dataclass(frozen=True)
class QueueCheck:
    """The job's tier queue, read now: its counts and whether its consumer is paused."""

    tier: str
    waiting: int
    in_flight: int
    delayed: int
    #: ``None``: not known (the stage names no mapping, or it could not be read; ``note`` says which).
    paused: bool | None
    note: str = ""

    def describe(self) -> str:
        """``the bulk queue holds 3 messages (2 waiting, 1 in flight, 0 delayed); paused: no``."""
        held = self.waiting + self.in_flight + self.delayed
        counts = f"{self.waiting} waiting, {self.in_flight} in flight, {self.delayed} delayed"
        noun = "message" if held == 1 else "messages"
        paused = {True: "yes", False: "no", None: f"unknown ({self.note})"}[self.paused]
        return f"the {self.tier} queue holds {held} {noun} ({counts}); paused: {paused}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "tier": self.tier,
            "waiting": self.waiting,
            "in_flight": self.in_flight,
            "delayed": self.delayed,
            "paused": self.paused,
        }


def check_queue(target: Target, tier: str) -> QueueCheck:
    """One ``GetQueueAttributes``, then the tier's mapping: one ``GetParameters``, one ``GetEventSourceMapping``
    (and its ``ListTags`` when paused)."""
    from botocore.exceptions import ClientError

    deployment = target.deployment()
    attributes = (
        target.client("sqs")
        .get_queue_attributes(QueueUrl=deployment.tier(tier).queue_url, AttributeNames=list(COUNTS))
        .get("Attributes", {})
    )
    waiting, in_flight, delayed = (int(attributes.get(name, 0)) for name in COUNTS)
    try:
        state = read_pauses(target.stage, [tier], target.client).get(tier)
    except ClientError as exc:
        error = exc.response.get("Error", {})
        note = f"its mapping could not be read: {error.get('Code', 'Error')}"
        return QueueCheck(tier, waiting, in_flight, delayed, None, note)
    if state is None:  # a stage deployed before pause names no mapping
        return QueueCheck(tier, waiting, in_flight, delayed, None, "the stage names no event source mapping")
    return QueueCheck(tier, waiting, in_flight, delayed, state.paused)
