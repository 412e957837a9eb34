"""Retry timing: exponential schedule with jitter, expressed as SQS visibility timeouts."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from tiered_jobs.contract.names import SQS_MAX_VISIBILITY_SECONDS

#: 5 s, 30 s, 2 min, 10 min: a blip clears on the first retry, an outage of minutes on the last ones,
#: and the default five attempts end within about 13 minutes, well inside the queue's retention.
DEFAULT_SCHEDULE: tuple[int, ...] = (5, 30, 120, 600)
DEFAULT_JITTER = 0.2
DEFAULT_MAX_ATTEMPTS = 5


@dataclass(frozen=True)
class RetryPolicy:
    """``max_attempts`` runs in all; the delay after failed attempt *n* is ``schedule[n-1]``
    (the last entry repeats), spread by ``± jitter`` so that a burst of failures does not come
    back as a thundering herd."""

    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    schedule: tuple[int, ...] = DEFAULT_SCHEDULE
    jitter: float = DEFAULT_JITTER
    #: The longest delay the consumer may set: SQS's 12 hours count from the receive, so a tier
    #: leaves its timeout and batching window out of them (``contract.retention.max_backoff_seconds``).
    max_delay_seconds: int = SQS_MAX_VISIBILITY_SECONDS

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {self.max_attempts}")
        if not self.schedule or any(s < 0 or s > SQS_MAX_VISIBILITY_SECONDS for s in self.schedule):
            raise ValueError(
                f"retry schedule must be non-empty seconds in 0..{SQS_MAX_VISIBILITY_SECONDS}, got {self.schedule}"
            )
        if not 0 <= self.jitter < 1:
            raise ValueError(f"jitter must be in [0, 1), got {self.jitter}")
        if not 0 <= self.max_delay_seconds <= SQS_MAX_VISIBILITY_SECONDS:
            raise ValueError(
                f"max_delay_seconds must be in 0..{SQS_MAX_VISIBILITY_SECONDS}, got {self.max_delay_seconds}"
            )

    def is_last(self, attempt: int) -> bool:
        return attempt >= self.max_attempts

    def bounds(self, attempt: int) -> tuple[int, int]:
        """The smallest and largest delay (seconds) after failed attempt ``attempt``."""
        base = self.schedule[min(max(attempt, 1), len(self.schedule)) - 1]
        return self._cap(base * (1 - self.jitter)), self._cap(base * (1 + self.jitter))

    def delay(self, attempt: int, rand: Callable[[], float] = random.random) -> int:
        """Seconds to wait before the next attempt, jittered, capped at ``max_delay_seconds``."""
        low, high = self.bounds(attempt)
        return self._cap(low + (high - low) * rand())

    def _cap(self, seconds: float) -> int:
        return max(0, min(self.max_delay_seconds, round(seconds)))

    @classmethod
    def parse_schedule(cls, text: str) -> tuple[int, ...]:
        return tuple(int(part) for part in text.split(",") if part.strip())
