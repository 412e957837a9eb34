"""A clock a test sets by hand: the ``now=`` callable the publisher and the consumer take."""

from __future__ import annotations

from datetime import datetime


class ManualClock:
    """Answers ``now`` until the test moves it (``clock.now += timedelta(...)``)."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now
