"""A record the consumer keeps in the queue: its batch item failure, and when it is visible again.

Every path that keeps a record (a transient failure with attempts left, a letter the DLQ refused,
a held or deferred copy SQS refused, a batch member whose count was not written) *returns* a
:class:`Kept` up to the consumer's record handler, the one place where it becomes the exception
Powertools' batch processor reads as a failure (:class:`KeptInQueue`), and its visibility joins the
batch's one ``ChangeMessageVisibilityBatch``.
"""

from __future__ import annotations

__all__ = ["Kept", "KeptInQueue"]


class Kept:
    """The record stays in the queue (a receive spent); ``seconds``: its visibility from now (``None``:
    left as the receive set it, the queue's visibility timeout). A plain class: one per kept record."""

    __slots__ = ("seconds", "why")

    def __init__(self, seconds: int | None, why: str):
        self.seconds = seconds
        self.why = why

    def __repr__(self) -> str:
        return f"Kept({self.seconds!r}, {self.why!r})"


class KeptInQueue(Exception):
    """Raised for Powertools' batch processor only: the record is a batch item failure (see :class:`Kept`)."""
