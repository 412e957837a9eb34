"""The circuit breaker's decisions (``tiered_jobs.replay.breaker``) against a stand-in for Lambda's mapping
API: open disables the mapping like a pause, the window's OK starts a probe at concurrency 2, the probe's
first succeeded minute restores the concurrency the mapping had, a failing probe opens it again, and an
operator's pause is never undone or taken over."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tiered_jobs.replay import pause as pausing
from tiered_jobs.replay.breaker import (
    BREAKER_BY,
    PROBE_CONCURRENCY,
    TAG_CIRCUIT,
    TAG_RESTORE,
    handle_alarm,
    is_alarm_event,
)
from tiered_jobs.replay.pause import TAG_PAUSED_BY, PauseError, read_mapping

UUID = "0f2d6a57-3d2e-4b59-9a53-2f6f7f1d2c10"
ARN = f"arn:aws:lambda:us-east-1:123456789012:event-source-mapping:{UUID}"
STAGE = "dev"
MAPPINGS = {"bulk": UUID, "critical": "another-uuid"}


class FakeLambda:
    """A mapping's state, scaling and tags as Lambda keeps them."""

    def __init__(self, maximum_concurrency: int | None = 10):
        #: Calls that fail once, as an invocation that dies there would (``update_event_source_mapping``...).
        self.failing: set[str] = set()
        self.state: str = "Enabled"
        self.tags: dict[str, str] = {}
        self.scaling: dict[str, int] = (
            {} if maximum_concurrency is None else {"MaximumConcurrency": maximum_concurrency}
        )

    def get_event_source_mapping(self, UUID: str) -> dict[str, Any]:
        assert UUID == MAPPINGS["bulk"]
        return {"UUID": UUID, "State": self.state, "EventSourceMappingArn": ARN, "ScalingConfig": dict(self.scaling)}

    def _dies(self, call: str) -> None:
        if call in self.failing:
            self.failing.discard(call)
            raise RuntimeError(f"the invocation died in {call}")

    def update_event_source_mapping(self, UUID: str, **change: Any) -> dict[str, Any]:
        self._dies("update_event_source_mapping")
        if "Enabled" in change:
            self.state = "Enabled" if change["Enabled"] else "Disabled"
        if "ScalingConfig" in change:
            self.scaling = dict(change["ScalingConfig"])
        return self.get_event_source_mapping(UUID)

    def list_tags(self, Resource: str) -> dict[str, Any]:
        return {"Tags": dict(self.tags)}

    def tag_resource(self, Resource: str, Tags: dict[str, str]) -> None:
        self._dies("tag_resource")
        self.tags.update(Tags)

    def untag_resource(self, Resource: str, TagKeys: list[str]) -> None:
        self._dies("untag_resource")
        for key in TagKeys:
            self.tags.pop(key, None)


class FakeCloudWatch:
    def __init__(self) -> None:
        self.set: list[tuple[str, str]] = []

    def set_alarm_state(self, AlarmName: str, StateValue: str, StateReason: str) -> None:
        self.set.append((AlarmName, StateValue))


def alarm(kind: str, state: str, tier: str = "bulk") -> dict[str, Any]:
    name = f"tiered-jobs-{STAGE}-{tier}-{kind}"
    return {
        "source": "aws.cloudwatch",
        "alarmArn": f"arn:aws:cloudwatch:us-east-1:123456789012:alarm:{name}",
        "accountId": "123456789012",
        "region": "us-east-1",
        "alarmData": {"alarmName": name, "state": {"value": state}, "previousState": {"value": "OK"}},
    }


class Pages:
    """The alarm topic: the pages the breaker sent, ``(subject, message)``; ``fail`` refuses the next one."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.fail = False

    def __call__(self, subject: str, message: str) -> None:
        if self.fail:
            self.fail = False
            raise RuntimeError("SNS is throttling")
        self.sent.append((subject, json.loads(message)))


def run(
    event: dict[str, Any], fake: FakeLambda, cloudwatch: FakeCloudWatch | None = None, pages: Pages | None = None
) -> str:
    result = handle_alarm(
        event,
        stage=STAGE,
        mappings=MAPPINGS,
        lambda_client=fake,
        cloudwatch=cloudwatch or FakeCloudWatch(),
        page=pages,
    )
    return str(result["outcome"])


def test_open_half_open_closed_restores_the_concurrency_the_mapping_had():
    fake, cloudwatch = FakeLambda(maximum_concurrency=7), FakeCloudWatch()

    assert run(alarm("circuit-breaker", "ALARM"), fake) == "opened"
    assert fake.state == "Disabled"
    paused = read_mapping(fake, "bulk", UUID)  # status and the console show it as a pause
    assert (paused.paused, paused.paused_by) == (True, BREAKER_BY)

    assert run(alarm("circuit-breaker", "OK"), fake, cloudwatch) == "half-open"
    assert (fake.state, fake.scaling) == ("Enabled", {"MaximumConcurrency": PROBE_CONCURRENCY})
    assert TAG_PAUSED_BY not in fake.tags
    # The probe alarm is set to OK first, so the probe's first succeeded minute is a change of state.
    assert cloudwatch.set == [(f"tiered-jobs-{STAGE}-bulk-circuit-probe", "OK")]

    assert run(alarm("circuit-probe", "ALARM"), fake) == "closed"
    assert (fake.state, fake.scaling, fake.tags) == ("Enabled", {"MaximumConcurrency": 7}, {})


def test_a_failing_probe_opens_it_again_and_still_restores_the_first_concurrency():
    fake = FakeLambda(maximum_concurrency=20)
    run(alarm("circuit-breaker", "ALARM"), fake)
    run(alarm("circuit-breaker", "OK"), fake)
    assert run(alarm("circuit-breaker", "ALARM"), fake) == "opened"  # the probe's jobs failed too
    assert fake.state == "Disabled"
    run(alarm("circuit-breaker", "OK"), fake)
    assert fake.scaling == {"MaximumConcurrency": PROBE_CONCURRENCY}
    assert run(alarm("circuit-probe", "ALARM"), fake) == "closed"
    assert fake.scaling == {"MaximumConcurrency": 20}  # not the probe's 2


def test_a_mapping_without_maximum_concurrency_gets_none_back():
    fake = FakeLambda(maximum_concurrency=None)
    for kind, state in (("circuit-breaker", "ALARM"), ("circuit-breaker", "OK"), ("circuit-probe", "ALARM")):
        run(alarm(kind, state), fake)
    assert (fake.state, fake.scaling) == ("Enabled", {})


def test_an_operators_pause_is_never_undone_or_taken_over():
    fake = FakeLambda()
    pausing.pause(fake, "bulk", UUID, by="ana")

    assert run(alarm("circuit-breaker", "ALARM"), fake) == "paused by an operator: left alone"
    assert run(alarm("circuit-breaker", "OK"), fake) == "not open"
    assert run(alarm("circuit-probe", "ALARM"), fake) == "nothing to do"
    assert (fake.state, fake.tags[TAG_PAUSED_BY]) == ("Disabled", "ana")


def test_an_operator_who_resumes_an_open_breaker_is_not_paused_again_by_its_ok():
    fake = FakeLambda()
    run(alarm("circuit-breaker", "ALARM"), fake)
    pausing.resume(fake, "bulk", UUID)

    assert run(alarm("circuit-breaker", "OK"), fake) == "not open"
    assert (fake.state, fake.scaling) == ("Enabled", {"MaximumConcurrency": 10})


def test_the_probe_alarm_of_a_closed_breaker_changes_nothing():
    fake = FakeLambda()
    assert run(alarm("circuit-probe", "ALARM"), fake) == "nothing to do"
    assert run(alarm("circuit-probe", "OK"), fake) == "nothing to do"
    assert (fake.state, fake.scaling, TAG_CIRCUIT in fake.tags) == ("Enabled", {"MaximumConcurrency": 10}, False)


@pytest.mark.parametrize(
    "name", ["tiered-jobs-dev-bulk-failure-rate", "tiered-jobs-prod-bulk-circuit-breaker", "someone-elses-alarm"]
)
def test_an_alarm_that_is_not_a_breaker_of_this_stage_is_refused(name):
    event = alarm("circuit-breaker", "ALARM")
    event["alarmData"]["alarmName"] = name
    with pytest.raises(PauseError, match="not a circuit breaker alarm"):
        run(event, FakeLambda())


def test_only_cloudwatchs_alarm_event_is_taken_for_one():
    assert is_alarm_event(alarm("circuit-breaker", "ALARM"))
    assert not is_alarm_event({"action": "pause", "tier": "bulk"})
    assert not is_alarm_event({"source": "aws.cloudwatch", "tier": "bulk"})


def test_an_operator_who_pauses_an_open_breaker_takes_the_pause_over_and_its_probe_leaves_it_paused():
    fake = FakeLambda()
    run(alarm("circuit-breaker", "ALARM"), fake)
    taken = pausing.pause(fake, "bulk", UUID, by="ana")
    assert (taken.outcome, taken.paused_by) == ("paused", "ana")

    assert run(alarm("circuit-breaker", "OK"), fake) == "not open"
    assert (fake.state, fake.tags[TAG_PAUSED_BY]) == ("Disabled", "ana")
    assert pausing.pause(fake, "bulk", UUID, by="bo").outcome == "already paused"  # an operator's: kept


def test_it_pages_once_when_it_closes_with_the_tier_what_happened_and_the_first_command():
    fake, pages = FakeLambda(maximum_concurrency=7), Pages()
    # Opening pages by the alarm's own SNS action and half-open not at all: the function sends nothing then.
    assert run(alarm("circuit-breaker", "ALARM"), fake, pages=pages) == "opened"
    assert run(alarm("circuit-breaker", "OK"), fake, pages=pages) == "half-open"
    assert pages.sent == []

    assert run(alarm("circuit-probe", "ALARM"), fake, pages=pages) == "closed"
    ((subject, message),) = pages.sent
    assert "bulk" in subject and "CLOSED" in subject and len(subject) <= 100
    assert (message["Stage"], message["Tier"], message["Event"]) == (STAGE, "bulk", "closed")
    assert message["FirstCommand"] == f"tiered-jobs --stage {STAGE} status"
    assert "maximum concurrency of 7" in message["Summary"]  # what was restored, as the mapping now has it
    assert fake.scaling == {"MaximumConcurrency": 7}

    # A healthy tier's probe alarm (jobs succeed every minute) never pages.
    run(alarm("circuit-probe", "OK"), fake, pages=pages)
    assert run(alarm("circuit-probe", "ALARM"), fake, pages=pages) == "nothing to do"
    assert len(pages.sent) == 1


def test_a_probe_that_fails_pages_nothing_until_the_breaker_closes():
    fake, pages = FakeLambda(maximum_concurrency=None), Pages()
    for kind, state in (("circuit-breaker", "ALARM"), ("circuit-breaker", "OK"), ("circuit-breaker", "ALARM")):
        run(alarm(kind, state), fake, pages=pages)  # opened, half-open, opened again (its alarm pages that)
    assert pages.sent == []
    run(alarm("circuit-breaker", "OK"), fake, pages=pages)
    assert run(alarm("circuit-probe", "ALARM"), fake, pages=pages) == "closed"
    assert [m["Event"] for _, m in pages.sent] == ["closed"]
    assert "no maximum" in pages.sent[0][1]["Summary"]


def test_an_operators_pause_is_never_paged_as_a_closing():
    fake, pages = FakeLambda(), Pages()
    pausing.pause(fake, "bulk", UUID, by="ana")
    for kind, state in (("circuit-breaker", "ALARM"), ("circuit-breaker", "OK"), ("circuit-probe", "ALARM")):
        run(alarm(kind, state), fake, pages=pages)
    assert pages.sent == []


def test_a_page_that_fails_fails_the_invocation_and_lambdas_retry_closes_and_pages():
    fake, pages = FakeLambda(maximum_concurrency=5), Pages()
    run(alarm("circuit-breaker", "ALARM"), fake, pages=pages)
    run(alarm("circuit-breaker", "OK"), fake, pages=pages)
    pages.fail = True
    with pytest.raises(RuntimeError, match="throttling"):
        run(alarm("circuit-probe", "ALARM"), fake, pages=pages)
    assert fake.tags[TAG_CIRCUIT] == "half-open" and fake.tags[TAG_RESTORE] == "5"  # still to close

    # Lambda retries an asynchronous invoke that failed (the alarm's action) with the same event.
    assert run(alarm("circuit-probe", "ALARM"), fake, pages=pages) == "closed"
    assert (fake.scaling, fake.tags, len(pages.sent)) == ({"MaximumConcurrency": 5}, {}, 1)


def test_without_the_topic_it_still_closes():
    fake = FakeLambda()
    for kind, state in (("circuit-breaker", "ALARM"), ("circuit-breaker", "OK")):
        run(alarm(kind, state), fake)
    assert run(alarm("circuit-probe", "ALARM"), fake) == "closed"


@pytest.mark.parametrize("dies_in", ["tag_resource", "update_event_source_mapping"])
def test_an_opening_that_dies_midway_is_opened_by_lambdas_retry_never_left_as_an_operators_pause(dies_in):
    fake = FakeLambda(maximum_concurrency=8)
    fake.failing = {dies_in}
    with pytest.raises(RuntimeError):
        run(alarm("circuit-breaker", "ALARM"), fake)
    assert fake.state == "Enabled"  # never disabled without the breaker's record
    assert run(alarm("circuit-breaker", "ALARM"), fake) == "opened"  # Lambda retries the alarm's invoke
    assert read_mapping(fake, "bulk", UUID).paused_by == BREAKER_BY and fake.tags[TAG_RESTORE] == "8"


@pytest.mark.parametrize("dies_in", ["tag_resource", "update_event_source_mapping", "untag_resource"])
def test_a_half_open_that_dies_midway_still_probes_and_closes(dies_in):
    fake = FakeLambda(maximum_concurrency=8)
    run(alarm("circuit-breaker", "ALARM"), fake)
    fake.failing = {dies_in}
    with pytest.raises(RuntimeError):
        run(alarm("circuit-breaker", "OK"), fake)
    if fake.state != "Enabled":  # died before the probe started: the retry starts it
        assert run(alarm("circuit-breaker", "OK"), fake) == "half-open"
    assert (fake.state, fake.scaling, fake.tags[TAG_CIRCUIT]) == ("Enabled", {"MaximumConcurrency": 2}, "half-open")
    assert run(alarm("circuit-probe", "ALARM"), fake) == "closed"
    assert (fake.scaling, fake.tags) == ({"MaximumConcurrency": 8}, {})


def test_reopening_from_a_probe_that_died_before_disabling_keeps_the_first_concurrency():
    fake = FakeLambda(maximum_concurrency=8)
    for kind, state in (("circuit-breaker", "ALARM"), ("circuit-breaker", "OK")):
        run(alarm(kind, state), fake)  # the probe runs at 2
    fake.failing = {"update_event_source_mapping"}
    with pytest.raises(RuntimeError):
        run(alarm("circuit-breaker", "ALARM"), fake)  # the probe failed too; died before disabling
    assert run(alarm("circuit-breaker", "ALARM"), fake) == "opened"
    assert fake.tags[TAG_RESTORE] == "8"  # not the probe's 2
