"""Pausing a tier's mapping (``tiered_jobs.replay.pause``) against a stand-in for Lambda's mapping API: the
first record is kept, a resume removes it, a record that cannot be written never undoes the pause, and a
bad event names every problem."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from tiered_jobs.replay.pause import (
    TAG_PAUSED_AT,
    TAG_PAUSED_BY,
    PauseError,
    handle_event,
    pause,
    read_mapping,
    resume,
)

UUID = "0f2d6a57-3d2e-4b59-9a53-2f6f7f1d2c10"
ARN = f"arn:aws:lambda:us-east-1:123456789012:event-source-mapping:{UUID}"


class FakeLambda:
    """A mapping's state and tags as Lambda keeps them; ``refuse_tags`` plays a role without ``TagResource``."""

    def __init__(self, refuse_tags: bool = False):
        self.state, self.tags, self.refuse_tags, self.updates = "Enabled", {}, refuse_tags, []

    def get_event_source_mapping(self, UUID):
        return {"UUID": UUID, "State": self.state, "EventSourceMappingArn": ARN}

    def update_event_source_mapping(self, UUID, Enabled):
        self.updates.append(Enabled)
        self.state = "Disabling" if not Enabled else "Enabling"
        return {"UUID": UUID, "State": self.state, "EventSourceMappingArn": ARN}

    def list_tags(self, Resource):
        assert Resource == ARN
        return {"Tags": dict(self.tags)}

    def tag_resource(self, Resource, Tags):
        if self.refuse_tags:
            raise PermissionError("AccessDenied: lambda:TagResource")
        self.tags.update(Tags)

    def untag_resource(self, Resource, TagKeys):
        for key in TagKeys:
            self.tags.pop(key, None)


def test_a_second_pause_keeps_the_first_record_and_a_resume_removes_it():
    fake = FakeLambda()
    first = pause(fake, "critical", UUID, by="ana", now=datetime(2026, 12, 2, 5, 50, tzinfo=timezone.utc))
    fake.state = "Disabled"
    again = pause(fake, "critical", UUID, by="bo")

    assert (first.outcome, first.paused_by, first.paused_at) == ("paused", "ana", "2026-12-02T05:50:00.000Z")
    assert (again.outcome, again.paused_by, again.paused_at) == ("already paused", "ana", first.paused_at)
    assert fake.updates == [False]  # the second pause changed nothing

    resumed = resume(fake, "critical", UUID)
    fake.state = "Enabled"
    assert resumed.outcome == "resumed" and fake.tags == {} and fake.updates == [False, True]
    assert resume(fake, "critical", UUID).outcome == "already running" and fake.updates == [False, True]
    assert read_mapping(fake, "critical", UUID).paused_by is None


def test_a_pause_whose_record_cannot_be_written_still_pauses_and_says_so():
    fake = FakeLambda(refuse_tags=True)
    state = pause(fake, "critical", UUID, by="ana")
    assert state.paused and fake.updates == [False]
    assert state.paused_by is None and "not recorded" in (state.note or "") and "TagResource" in state.note


def test_a_record_left_on_a_running_mapping_is_not_shown():
    fake = FakeLambda()
    fake.tags = {TAG_PAUSED_BY: "ana", TAG_PAUSED_AT: "2026-12-02T05:50:00.000Z"}
    assert read_mapping(fake, "critical", UUID).paused_by is None


def test_a_bad_event_names_every_problem_and_the_allowed_fields():
    with pytest.raises(PauseError) as refused:
        handle_event({"action": "pause", "tier": "nope", "by": 7, "dry_run": True}, {"critical": UUID}, FakeLambda())
    message = str(refused.value)
    assert "unknown field 'dry_run'" in message and "'tier' must be one of critical" in message
    assert "'by' must be a string" in message and "Allowed fields: action, tier, by" in message
