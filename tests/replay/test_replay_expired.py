"""A replay leaves the letters whose job's deadline (the envelope's ``expires_at``) has passed, and says so: their
jobs would not run (the consumer would archive them unrun). ``include_expired`` moves them anyway."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.replay.test_replay import NOW, iso
from tiered_jobs.contract.envelope import build
from tiered_jobs.replay import ReplayEventError, parse_event


def letter(key: str, deadline) -> str:
    body = build("testjobs.effect", {"counter": "c", "amount": 1}, key, expires_at=iso(deadline) if deadline else None)
    return body.to_json()


@pytest.mark.parametrize("dry_run", [True, False])
def test_a_replay_leaves_expired_letters_and_reports_them(dlq, dry_run):
    late = dlq.dead_letter(letter("late", NOW - timedelta(seconds=1)))
    soon = dlq.dead_letter(letter("soon", NOW + timedelta(minutes=5)))
    plain = dlq.dead_letter(letter("plain", None))
    answer = dlq.run({"action": "replay", "dry_run": dry_run, "message_ids": [late, soon, plain]})
    assert answer["left_expired"] == 1 and answer["matched"] == 2
    assert answer["outcomes"][late] == "left_expired"
    assert answer["outcomes"][soon] == answer["outcomes"][plain] == ("would_move" if dry_run else "moved")
    assert dlq.counts(dlq.dlq_url) == ((3, 0) if dry_run else (1, 0))


def test_include_expired_moves_them_and_applies_to_replay_only(dlq):
    late = dlq.dead_letter(letter("late", NOW - timedelta(hours=1)))
    answer = dlq.run({"action": "replay", "include_expired": True})
    assert (answer["moved"], answer["left_expired"], answer["outcomes"]) == (1, 0, None)
    assert dlq.counts(dlq.dlq_url) == (0, 0) and late
    with pytest.raises(ReplayEventError, match="'include_expired' applies to 'action': 'replay' only"):
        parse_event({"tier": "critical", "action": "discard", "include_expired": True})
    with pytest.raises(ReplayEventError, match="'include_expired' must be true or false"):
        parse_event({"tier": "critical", "action": "replay", "include_expired": "yes"})
