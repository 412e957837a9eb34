"""Fixtures of the replay tests: one dead-letter queue on the embedded AWS, as the replay service reads it."""

from __future__ import annotations

import pytest

from tests.replay.test_replay import Dlq, make_dlq


@pytest.fixture
def dlq(aws) -> Dlq:
    """Tier ``critical``'s queue and DLQ, empty, with the default idempotency window (``make_dlq``)."""
    return make_dlq()
