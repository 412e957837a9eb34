"""The circuit breaker's decisions (``tiered_jobs.replay.breaker``) against a stand-in for Lambda's mapping
API: open disables the mapping like a pause, the window's OK starts a probe at concurrency 2, the probe's
first succeeded minute restores the concurrency the mapping had, a failing probe opens it again, and an
operator's pause is never undone or taken over; every tag it writes is one Lambda accepts; a late or
duplicated alarm event is ignored; and, on moto with Lambda's refusals injected, an update refused while the
mapping is in a transition is retried, and a breaker stranded by three failed deliveries is moved on by the
reconciler."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Any

import boto3
import pytest

from tests.support.aws_faults import error_response, lose_answers, refuse
from tests.support.lambda_tags import check_tags
from tests.support.mappings import moto_mapping
from tiered_jobs.contract.names import Alarms
from tiered_jobs.replay import pause as pausing
from tiered_jobs.replay.breaker import (
    BREAKER_BY,
    PROBE_CONCURRENCY,
    TAG_CIRCUIT,
    TAG_RESTORE,
    TAG_SINCE,
    handle_alarm,
    is_alarm_event,
)
from tiered_jobs.replay.mapping_changes import UPDATE_ATTEMPTS
from tiered_jobs.replay.pause import TAG_PAUSED_BY, PauseError, read_mapping
from tiered_jobs.replay.reconcile import GRACE, reconcile

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
        check_tags(Tags)  # Lambda's TagKey / TagValue pattern, which botocore and moto never check
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


def alarm(kind: str, state: str, tier: str = "bulk", *, at: str | None = None) -> dict[str, Any]:
    """CloudWatch's event for an alarm's change of state; ``at``: the change's time, as CloudWatch writes it."""
    name = f"tiered-jobs-{STAGE}-{tier}-{kind}"
    return {
        "source": "aws.cloudwatch",
        "alarmArn": f"arn:aws:cloudwatch:us-east-1:123456789012:alarm:{name}",
        "accountId": "123456789012",
        "region": "us-east-1",
        "alarmData": {
            "alarmName": name,
            "state": {"value": state, **({"timestamp": at} if at else {})},
            "previousState": {"value": "OK"},
        },
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


# CloudWatch's ``state.timestamp`` format; three changes a few minutes apart.
OPENED, HALF_OPENED, CLOSED = (
    "2026-12-07T10:00:00.000+0000",
    "2026-12-07T10:05:00.000+0000",
    "2026-12-07T10:07:00.000+0000",
)


def test_a_late_duplicate_of_the_opening_after_the_probe_started_opens_nothing():
    fake = FakeLambda(maximum_concurrency=7)
    opening = alarm("circuit-breaker", "ALARM", at=OPENED)
    assert run(opening, fake) == "opened"
    assert run(alarm("circuit-breaker", "OK", at=HALF_OPENED), fake) == "half-open"

    assert run(opening, fake) == "late event: ignored"  # Lambda delivered the opening twice, the copy late
    assert (fake.state, fake.scaling, fake.tags[TAG_CIRCUIT]) == ("Enabled", {"MaximumConcurrency": 2}, "half-open")
    assert run(alarm("circuit-probe", "ALARM", at=CLOSED), fake) == "closed"
    assert run(opening, fake) == "late event: ignored"  # after the close too: it stays closed
    assert (fake.state, fake.scaling, fake.tags) == (
        "Enabled",
        {"MaximumConcurrency": 7},
        {TAG_SINCE: "2026-12-07T10:07:00.000Z"},
    )


def test_events_delivered_out_of_order_leave_the_breaker_where_the_latest_change_put_it():
    fake = FakeLambda(maximum_concurrency=7)
    first_ok, reopened = alarm("circuit-breaker", "OK", at=HALF_OPENED), alarm("circuit-breaker", "ALARM", at=CLOSED)
    run(alarm("circuit-breaker", "ALARM", at=OPENED), fake)
    run(first_ok, fake)
    assert run(reopened, fake) == "opened"  # the probe's jobs failed: open again
    assert run(first_ok, fake) == "late event: ignored"  # the first OK, delivered again: no probe now
    assert fake.state == "Disabled" and read_mapping(fake, "bulk", UUID).paused_by == BREAKER_BY


def test_the_same_event_retried_after_dying_midway_still_finishes():
    fake = FakeLambda(maximum_concurrency=7)
    run(alarm("circuit-breaker", "ALARM", at=OPENED), fake)
    fake.failing = {"update_event_source_mapping"}
    ok = alarm("circuit-breaker", "OK", at=HALF_OPENED)
    with pytest.raises(RuntimeError):
        run(ok, fake)  # recorded half-open (and its time), died before enabling
    assert run(ok, fake) == "half-open"  # Lambda's retry: the same change, not a late one
    assert fake.state == "Enabled"


def test_a_deploy_that_changes_the_concurrency_while_the_breaker_is_open_is_what_its_close_restores():
    fake = FakeLambda(maximum_concurrency=7)
    run(alarm("circuit-breaker", "ALARM"), fake)
    fake.scaling = {"MaximumConcurrency": 12}  # CloudFormation applies the tier's new max_concurrency
    run(alarm("circuit-breaker", "OK"), fake)
    assert fake.scaling == {"MaximumConcurrency": PROBE_CONCURRENCY}
    assert run(alarm("circuit-probe", "ALARM"), fake) == "closed"
    assert fake.scaling == {"MaximumConcurrency": 12}  # the deploy's, not the 7 recorded at the opening


def test_a_deploy_during_the_probe_keeps_its_concurrency_when_the_breaker_closes():
    fake, pages = FakeLambda(maximum_concurrency=7), Pages()
    for kind, state in (("circuit-breaker", "ALARM"), ("circuit-breaker", "OK")):
        run(alarm(kind, state), fake)
    fake.scaling = {"MaximumConcurrency": 12}  # deployed while the probe ran
    assert run(alarm("circuit-probe", "ALARM"), fake, pages=pages) == "closed"
    assert fake.scaling == {"MaximumConcurrency": 12} and "maximum concurrency of 12" in pages.sent[0][1]["Summary"]


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


# -- on moto, with Lambda's refusals injected ---------------------------------------------------------


def _in_use(params: dict[str, Any]) -> Any:
    return error_response("ResourceInUseException", "The resource is in use (state: Updating)", status=400)


class Moto:
    """The bulk tier's mapping and its two breaker alarms in moto, the clients the breaker is given."""

    def __init__(self) -> None:
        self.lam, uuid = moto_mapping("bulk", maximum_concurrency=7)
        self.mappings = {"bulk": uuid}
        self.cloudwatch = boto3.client("cloudwatch", region_name="us-east-1")
        for kind in (Alarms.CIRCUIT_BREAKER, Alarms.CIRCUIT_PROBE):
            self.cloudwatch.put_metric_alarm(
                AlarmName=Alarms.name(STAGE, "bulk", kind),
                MetricName="JobsSucceeded",
                Namespace="TieredJobs",
                Statistic="Sum",
                Period=60,
                EvaluationPeriods=1,
                Threshold=0,
                ComparisonOperator="GreaterThanThreshold",
            )
        self.pages = Pages()
        self.slept: list[float] = []

    @property
    def uuid(self) -> str:
        return self.mappings["bulk"]

    def mapping(self) -> dict[str, Any]:
        return self.lam.get_event_source_mapping(UUID=self.uuid)

    def change(self, kind: str, state: str) -> dict[str, Any]:
        """The alarm changes state (as CloudWatch's evaluation would): its event, with the change's time."""
        name = Alarms.name(STAGE, "bulk", kind)
        self.cloudwatch.set_alarm_state(AlarmName=name, StateValue=state, StateReason="test")
        (found,) = self.cloudwatch.describe_alarms(AlarmNames=[name])["MetricAlarms"]
        changed = found["StateUpdatedTimestamp"].astimezone(timezone.utc)
        return alarm(kind, state, at=changed.isoformat(timespec="milliseconds"))

    def deliver(self, event: dict[str, Any]) -> str:
        return str(
            handle_alarm(
                event,
                stage=STAGE,
                mappings=self.mappings,
                lambda_client=self.lam,
                cloudwatch=self.cloudwatch,
                page=self.pages,
                sleep=self.slept.append,
            )["outcome"]
        )

    def reconcile(self, *, after: timedelta) -> dict[str, Any]:
        return reconcile(
            {"action": "reconcile", "tiers": ["bulk"]},
            stage=STAGE,
            mappings=self.mappings,
            lambda_client=self.lam,
            cloudwatch=self.cloudwatch,
            page=self.pages,
            now=datetime.now(timezone.utc) + after,
            sleep=self.slept.append,
        )["tiers"]["bulk"]


@pytest.fixture
def moto(aws) -> Moto:
    return Moto()


def test_an_update_refused_while_the_mapping_is_updating_is_retried_not_failed(moto):
    assert moto.deliver(moto.change(Alarms.CIRCUIT_BREAKER, "ALARM")) == "opened"
    with refuse(moto.lam, "UpdateEventSourceMapping", _in_use, times=2) as refused:
        assert moto.deliver(moto.change(Alarms.CIRCUIT_BREAKER, "OK")) == "half-open"
    assert refused.count == 2 and len(moto.slept) == 2
    assert (moto.mapping()["State"], moto.mapping()["ScalingConfig"]) == ("Enabled", {"MaximumConcurrency": 2})


def _conflict(params: dict[str, Any]) -> Any:
    return error_response("ResourceConflictException", "An update is in progress for resource", status=409)


def test_a_tag_or_untag_refused_while_another_operation_is_in_progress_is_retried(moto):
    with (
        refuse(moto.lam, "TagResource", _conflict, times=2) as tagged,
        refuse(moto.lam, "UntagResource", _conflict, times=1) as untagged,
    ):
        assert moto.deliver(moto.change(Alarms.CIRCUIT_BREAKER, "ALARM")) == "opened"
        assert moto.deliver(moto.change(Alarms.CIRCUIT_BREAKER, "OK")) == "half-open"
    assert (tagged.count, untagged.count, len(moto.slept)) == (2, 1, 3)
    tags = moto.lam.list_tags(Resource=moto.mapping()["EventSourceMappingArn"])["Tags"]
    assert tags[TAG_CIRCUIT] == "half-open" and TAG_PAUSED_BY not in tags


def test_records_and_updates_whose_answers_were_lost_leave_the_breaker_where_one_write_would(moto):
    opening = moto.change(Alarms.CIRCUIT_BREAKER, "ALARM")
    with lose_answers(moto.lam, "TagResource") as tagged, lose_answers(moto.lam, "UpdateEventSourceMapping") as updated:
        assert moto.deliver(opening) == "opened"  # botocore sent each again: the same tags, the same state
    assert tagged.count == updated.count == 1
    assert read_mapping(moto.lam, "bulk", moto.uuid).paused_by == BREAKER_BY and moto.mapping()["State"] == "Disabled"
    with lose_answers(moto.lam, "UpdateEventSourceMapping") as updated:
        assert moto.deliver(moto.change(Alarms.CIRCUIT_BREAKER, "OK")) == "half-open"
    assert updated.count == 1
    assert (moto.mapping()["State"], moto.mapping()["ScalingConfig"]) == ("Enabled", {"MaximumConcurrency": 2})
    assert moto.deliver(opening) == "late event: ignored"


def test_a_half_open_whose_three_deliveries_fail_is_started_by_the_reconciler(moto):
    moto.deliver(moto.change(Alarms.CIRCUIT_BREAKER, "ALARM"))
    ok = moto.change(Alarms.CIRCUIT_BREAKER, "OK")
    with refuse(moto.lam, "UpdateEventSourceMapping", _in_use, times=3 * UPDATE_ATTEMPTS):
        for _ in range(3):  # Lambda's first try and its two retries of the asynchronous event
            with pytest.raises(moto.lam.exceptions.ResourceInUseException):
                moto.deliver(ok)
    assert moto.mapping()["State"] == "Disabled"  # stranded: the alarm sits in OK, no change will come

    assert moto.reconcile(after=timedelta(0))["outcome"] == "left to its alarm's event"  # its retries may still run
    assert moto.reconcile(after=GRACE)["outcome"] == "half-open"
    assert (moto.mapping()["State"], moto.mapping()["ScalingConfig"]) == ("Enabled", {"MaximumConcurrency": 2})
    assert moto.deliver(ok) == "not open"  # a late delivery of the same change: already done

    probe = moto.change(Alarms.CIRCUIT_PROBE, "ALARM")
    with refuse(moto.lam, "UpdateEventSourceMapping", _in_use, times=3 * UPDATE_ATTEMPTS):
        for _ in range(3):
            with pytest.raises(moto.lam.exceptions.ResourceInUseException):
                moto.deliver(probe)
    assert moto.reconcile(after=GRACE)["outcome"] == "closed"
    assert moto.mapping()["ScalingConfig"] == {"MaximumConcurrency": 7}
    assert [m["Event"] for _, m in moto.pages.sent] == ["closed"]
    assert moto.reconcile(after=GRACE)["outcome"] == "nothing to do"


def test_a_late_opening_after_the_alarm_went_back_to_ok_is_moved_on_by_the_reconciler(moto):
    opening = moto.change(Alarms.CIRCUIT_BREAKER, "ALARM")
    assert moto.deliver(moto.change(Alarms.CIRCUIT_BREAKER, "OK")) == "not open"  # came first
    assert moto.deliver(opening) == "opened"  # the opening, delivered late: disabled, and no OK will follow
    assert moto.reconcile(after=GRACE)["outcome"] == "half-open"


def test_the_reconciler_never_opens_a_breaker_nor_touches_an_operators_pause(moto):
    moto.change(Alarms.CIRCUIT_BREAKER, "ALARM")  # its event lost: the reconciler does not open it
    assert moto.reconcile(after=GRACE)["outcome"] == "nothing to do" and moto.mapping()["State"] == "Enabled"
    pausing.pause(moto.lam, "bulk", moto.uuid, by="ana")
    moto.change(Alarms.CIRCUIT_BREAKER, "OK")
    assert moto.reconcile(after=GRACE)["outcome"] == "nothing to do"
    assert read_mapping(moto.lam, "bulk", moto.uuid).paused_by == "ana"


@pytest.mark.parametrize(
    ("event", "message"),
    [
        ({"action": "reconcile"}, "'tiers' must be a non-empty list"),
        ({"action": "reconcile", "tiers": ["nope"]}, "'tiers' must name tiers of bulk, got \\['nope'\\]"),
        ({"action": "reconcile", "tiers": ["bulk"], "dry_run": True}, "unknown field 'dry_run'"),
    ],
)
def test_a_bad_reconcile_event_names_the_problem(event, message):
    with pytest.raises(PauseError, match=message):
        reconcile(event, stage=STAGE, mappings={"bulk": UUID}, lambda_client=FakeLambda(), cloudwatch=None)


def test_the_replay_function_routes_the_rules_reconcile_event_to_the_reconciler(moto, monkeypatch):
    from tests.support.context import lambda_context
    from tiered_jobs.contract.names import Env
    from tiered_jobs.handlers.replay import handler
    from tiered_jobs.runtime import aws as runtime_aws

    monkeypatch.setenv(Env.STAGE, STAGE)
    monkeypatch.setenv(Env.REPLAY_MAPPINGS, json.dumps(moto.mappings))
    runtime_aws.reset()
    try:
        result = handler({"action": "reconcile", "tiers": ["bulk"]}, lambda_context(60_000, "replay"))
    finally:
        runtime_aws.reset()
    assert result == {
        "action": "reconcile",
        "tiers": {"bulk": {"outcome": "nothing to do", "breaker": "OK", "probe": "OK"}},
    }
