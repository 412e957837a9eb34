"""Pausing a tier's mapping (``tiered_jobs.replay.pause``) against a stand-in for Lambda's mapping API: the
first record is kept, a resume removes it, a record that cannot be written never undoes the pause, every
value written is one Lambda's tag pattern accepts, a pause returns at ``Disabled`` (bounded), an update
refused during a transition is retried, and a bad event names every problem."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from tests.support.aws_faults import error_response, refuse
from tests.support.lambda_tags import check_tags, refusal
from tests.support.mappings import moto_mapping
from tiered_jobs.operations.pausing import pause_tier
from tiered_jobs.replay.breaker import BREAKER_BY, TAG_CIRCUIT
from tiered_jobs.replay.mapping_changes import UPDATE_ATTEMPTS
from tiered_jobs.replay.pause import (
    DISABLED_NOTE,
    TAG_PAUSED_AT,
    TAG_PAUSED_BY,
    PauseError,
    TakeOverError,
    handle_event,
    pause,
    read_mapping,
    resume,
)

UUID = "0f2d6a57-3d2e-4b59-9a53-2f6f7f1d2c10"
ARN = f"arn:aws:lambda:us-east-1:123456789012:event-source-mapping:{UUID}"


class FakeLambda:
    """A mapping's state and tags as Lambda keeps them: its tags checked against Lambda's pattern, a
    transition that lasts ``transition_reads`` reads; ``refuse_tags`` / ``refuse_untags`` play a role
    without ``TagResource`` / ``UntagResource``."""

    def __init__(self, refuse_tags: bool = False, *, transition_reads: int = 0, refuse_untags: bool = False):
        self.state, self.tags, self.refuse_tags, self.updates = "Enabled", {}, refuse_tags, []
        self.refuse_untags, self.transition_reads, self._left = refuse_untags, transition_reads, 0
        self.written: list[dict[str, str]] = []

    def get_event_source_mapping(self, UUID):
        if self.state in ("Disabling", "Enabling"):
            if self._left <= 0:
                self.state = self.state.replace("ing", "ed")
            self._left -= 1
        return {"UUID": UUID, "State": self.state, "EventSourceMappingArn": ARN}

    def update_event_source_mapping(self, UUID, Enabled):
        self.updates.append(Enabled)
        self.state, self._left = ("Disabling" if not Enabled else "Enabling"), self.transition_reads
        return {"UUID": UUID, "State": self.state, "EventSourceMappingArn": ARN}

    def list_tags(self, Resource):
        assert Resource == ARN
        return {"Tags": dict(self.tags)}

    def tag_resource(self, Resource, Tags):
        if self.refuse_tags:
            raise PermissionError("AccessDenied: lambda:TagResource")
        check_tags(Tags)  # as Lambda does (botocore and moto do not)
        self.written.append(dict(Tags))
        self.tags.update(Tags)

    def untag_resource(self, Resource, TagKeys):
        if self.refuse_untags:
            raise PermissionError("AccessDenied: lambda:UntagResource")
        for key in TagKeys:
            self.tags.pop(key, None)


class Clock:
    """``sleep`` and ``monotonic`` for a pause's wait: sleeping moves the clock, nothing really waits."""

    def __init__(self) -> None:
        self.now, self.slept = 0.0, []

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds

    def monotonic(self) -> float:
        return self.now


def test_a_second_pause_keeps_the_first_record_and_a_resume_removes_it():
    fake = FakeLambda()
    first = pause(fake, "critical", UUID, by="ana", now=datetime(2026, 12, 2, 5, 50, tzinfo=timezone.utc))
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


@pytest.mark.parametrize(
    "operator",
    [
        "arn:aws:iam::123456789012:user/ana (cli)",
        "arn:aws:sts::123456789012:assumed-role/Ops/ana,bo@example.com (console)",
        "arn:aws:iam::123456789012:user/" + "a" * 300,
    ],
)
def test_every_value_a_pause_writes_is_one_lambdas_tag_pattern_accepts(operator):
    fake = FakeLambda()
    state = pause(fake, "critical", UUID, by=operator, now=datetime(2026, 12, 2, 5, 50, tzinfo=timezone.utc))
    assert state.note is None and state.paused_by is not None  # recorded: Lambda took every value
    assert [refusal(k, v) for tags in fake.written for k, v in tags.items()] == [None, None]
    assert read_mapping(fake, "critical", UUID).paused_by == state.paused_by
    assert state.paused_by.startswith("arn:aws:")


def test_the_operators_name_from_the_cli_is_recorded_on_a_mapping():
    fake = FakeLambda()

    class Sts:
        def get_caller_identity(self):
            return {"Arn": "arn:aws:sts::123456789012:assumed-role/Ops/ana"}

    class Ssm:
        def get_parameters(self, Names):
            return {"Parameters": [{"Name": name, "Value": UUID} for name in Names], "InvalidParameters": []}

    clients = {"lambda": fake, "sts": Sts(), "ssm": Ssm()}
    state = pause_tier("dev", "critical", clients.__getitem__, via="cli")
    assert state.note is None and refusal(TAG_PAUSED_BY, fake.tags[TAG_PAUSED_BY]) is None
    assert fake.tags[TAG_PAUSED_BY] == "arn:aws:sts::123456789012:assumed-role/Ops/ana via cli"


def _opened_by_the_breaker(fake: FakeLambda) -> None:
    fake.state = "Disabled"
    fake.tags = {TAG_PAUSED_BY: BREAKER_BY, TAG_PAUSED_AT: "2026-12-02T05:50:00.000Z", TAG_CIRCUIT: "open"}


def test_a_take_over_that_cannot_be_recorded_removes_the_breakers_claim():
    fake = FakeLambda(refuse_tags=True)
    _opened_by_the_breaker(fake)
    state = pause(fake, "critical", UUID, by="ana")
    assert state.paused and "not recorded" in state.note and "claim was removed" in state.note
    assert TAG_PAUSED_BY not in fake.tags  # the breaker resumes only a mapping it paused itself
    assert read_mapping(fake, "critical", UUID).paused_by is None


def test_a_take_over_that_can_neither_be_recorded_nor_taken_from_the_breaker_fails_and_says_why():
    fake = FakeLambda(refuse_tags=True, refuse_untags=True)
    _opened_by_the_breaker(fake)
    with pytest.raises(TakeOverError, match="will resume it when its alarm returns to OK.*UntagResource"):
        pause(fake, "critical", UUID, by="ana")


def test_a_pause_returns_once_the_mapping_is_disabled_and_says_what_may_still_finish():
    fake, clock, seen = FakeLambda(transition_reads=3), Clock(), []
    state = pause(fake, "critical", UUID, by="ana", sleep=clock.sleep, monotonic=clock.monotonic, progress=seen.append)
    assert (state.state, state.may_still_finish) == ("Disabled", DISABLED_NOTE)
    assert len(seen) == len(clock.slept) == 3 and all("Disabling" in line for line in seen)
    assert state.to_dict()["may_still_finish"] == DISABLED_NOTE  # the replay function's answer says it too


def test_a_pause_waits_a_bounded_time_and_then_says_polls_in_flight_may_still_deliver():
    fake, clock = FakeLambda(transition_reads=10**6), Clock()
    state = pause(fake, "critical", UUID, by="ana", wait_seconds=30, sleep=clock.sleep, monotonic=clock.monotonic)
    assert state.state == "Disabling" and clock.now == 30
    assert "still Disabling after 30 s" in state.may_still_finish and "in flight" in state.may_still_finish


@pytest.fixture
def mapping(aws) -> tuple[object, str]:
    """A real (moto) mapping and the client that changes it."""
    return moto_mapping()


def _in_use(params):
    return error_response("ResourceInUseException", "The resource is in use (state: Updating)", status=400)


def test_an_update_refused_during_a_transition_is_retried_with_jittered_backoff(mapping):
    lam, uuid = mapping
    clock = Clock()
    with refuse(lam, "UpdateEventSourceMapping", _in_use, times=2) as refused:
        state = pause(lam, "critical", uuid, by="ana", sleep=clock.sleep, monotonic=clock.monotonic)
    assert refused.count == 2 and state.outcome == "paused" and state.state == "Disabled"
    assert len(clock.slept) == 2 and clock.slept[0] <= 0.5 and clock.slept[1] <= 1.0  # the ceilings, jittered
    with refuse(lam, "UpdateEventSourceMapping", _in_use, times=1):
        assert resume(lam, "critical", uuid, sleep=clock.sleep).outcome == "resumed"
    assert lam.get_event_source_mapping(UUID=uuid)["State"] == "Enabled"


def test_an_update_refused_longer_than_the_bound_fails_with_lambdas_answer(mapping):
    lam, uuid = mapping
    clock = Clock()
    with refuse(lam, "UpdateEventSourceMapping", _in_use, times=UPDATE_ATTEMPTS) as refused:
        with pytest.raises(lam.exceptions.ResourceInUseException):
            pause(lam, "critical", uuid, by="ana", sleep=clock.sleep, monotonic=clock.monotonic)
    assert refused.count == UPDATE_ATTEMPTS and len(clock.slept) == UPDATE_ATTEMPTS - 1
    assert lam.get_event_source_mapping(UUID=uuid)["State"] == "Enabled"
