"""Debounced jobs: a burst of publishes of one type and key is one one-time schedule, moved by each (moto)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from botocore.exceptions import ClientError

from tests.publisher.conftest import GROUP
from tests.support.aws_faults import lose_answers
from tests.support.clock import ManualClock
from tests.support.stack import received_bodies
from tiered_jobs.contract.envelope import MAX_IDEMPOTENCY_KEY_CHARS
from tiered_jobs.contract.routing import Routes
from tiered_jobs.contract.schedules import DEBOUNCED_KEY_SUFFIX_CHARS, one_time_schedule_name
from tiered_jobs.publisher import InvalidJobError, Job, Publisher
from tiered_jobs.stage.scheduling import OneTimeJobs

NOW = datetime(2030, 5, 1, 12, 0, 10, tzinfo=timezone.utc)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(NOW)


@pytest.fixture
def debouncing(deployment, sqs, scheduler, target, clock, counter) -> Publisher:
    return Publisher(
        deployment.queue_urls,
        Routes(deployment.routes),
        sqs=counter.attach(sqs),
        scheduler=counter.attach(scheduler),
        scheduling=target,
        clock=clock,
    )


def _schedules(scheduler) -> list[dict]:
    names = [s["Name"] for s in scheduler.list_schedules(GroupName=GROUP)["Schedules"]]
    return [scheduler.get_schedule(Name=name, GroupName=GROUP) for name in names]


def test_a_burst_is_one_schedule_after_the_last_publish_with_the_last_payload(
    debouncing, scheduler, clock, counter, deployment
):
    results = []
    for seconds, version in ((0, 1), (20, 2), (55, 3)):
        clock.now = NOW + timedelta(seconds=seconds)
        results.append(debouncing.publish("analytics.reindex", {"version": version}, "doc-42", debounce=120))
    calls = counter.by_operation("scheduler")

    (schedule,) = _schedules(scheduler)
    assert schedule["Name"] == one_time_schedule_name("analytics.reindex", "doc-42")
    # The last publish (12:01:05) plus 120 s is 12:03:05, rounded up to Scheduler's whole minute.
    assert schedule["ScheduleExpression"] == "at(2030-05-01T12:04:00)"
    assert schedule["ActionAfterCompletion"] == "DELETE"
    assert schedule["Description"].startswith("debounced: analytics.reindex key doc-42")
    body = json.loads(schedule["Target"]["Input"])
    assert body["payload"] == {"version": 3}  # last wins
    assert body["idempotency_key"] == "doc-42@2030-05-01T12:04Z"  # the run's key: this burst's
    assert schedule["Target"]["Arn"].endswith(":tiered-jobs-test-bulk")  # analytics.* -> bulk
    assert [r.debounced for r in results] == [True, True, True]
    assert [r.already_scheduled for r in results] == [False, True, True]  # the later ones moved the run
    assert results[-1].fire_at == datetime(2030, 5, 1, 12, 4, tzinfo=timezone.utc)
    assert "debounced to 2030-05-01T12:04:00+00:00" in results[-1].describe()
    assert all(r.ok and r.message_id is None for r in results)
    assert received_bodies(deployment.queue_urls["bulk"]) == []  # nothing runs before the burst is over
    # The first publish creates the schedule; each later one finds it there and moves it.
    assert calls == {"CreateSchedule": 3, "UpdateSchedule": 2}
    assert counter.by_operation("sqs") == {}


def test_the_next_burst_after_the_run_is_a_run_of_its_own(debouncing, scheduler, clock):
    debouncing.publish("analytics.reindex", {"version": 1}, "doc-42", debounce=60)
    (first,) = _schedules(scheduler)
    # It fired: Scheduler deletes a completed one-time schedule (ActionAfterCompletion=DELETE).
    scheduler.delete_schedule(Name=first["Name"], GroupName=GROUP)
    clock.now = NOW + timedelta(hours=1)
    again = debouncing.publish("analytics.reindex", {"version": 2}, "doc-42", debounce=60)

    (second,) = _schedules(scheduler)
    assert not again.already_scheduled
    keys = [json.loads(s["Target"]["Input"])["idempotency_key"] for s in (first, second)]
    assert keys == ["doc-42@2030-05-01T12:02Z", "doc-42@2030-05-01T13:02Z"]  # not a duplicate of the first run


def test_a_batch_with_one_key_twice_keeps_the_last(debouncing, scheduler):
    debouncing.publish_batch(
        [
            Job("analytics.reindex", {"version": 1}, "doc-1", debounce=60),
            Job("analytics.reindex", {"version": 1}, "doc-2", debounce=60),
            Job("analytics.reindex", {"version": 2}, "doc-1", debounce=60),
        ]
    )
    payloads = {
        json.loads(s["Target"]["Input"])["idempotency_key"]: json.loads(s["Target"]["Input"])["payload"]
        for s in _schedules(scheduler)
    }
    assert payloads == {"doc-1@2030-05-01T12:02Z": {"version": 2}, "doc-2@2030-05-01T12:02Z": {"version": 1}}


def test_the_tenant_goes_with_the_moved_run(debouncing, scheduler):
    debouncing.publish("analytics.reindex", {}, "doc-1", debounce=60, tenant="acme")
    debouncing.publish("analytics.reindex", {}, "doc-1", debounce=60, tenant="acme")
    (schedule,) = _schedules(scheduler)
    assert schedule["Target"]["SqsParameters"] == {"MessageGroupId": "acme"}


class VanishingUpdate:
    """A scheduler whose schedule is gone by the time it is updated (its run fired and Scheduler deleted it)."""

    def __init__(self, scheduler) -> None:
        self.scheduler = scheduler
        self.calls: list[str] = []

    def create_schedule(self, **request):
        self.calls.append("create")
        if self.calls.count("create") == 1:
            raise ClientError({"Error": {"Code": "ConflictException", "Message": "exists"}}, "CreateSchedule")
        return self.scheduler.create_schedule(**request)

    def update_schedule(self, **request):
        self.calls.append("update")
        raise ClientError({"Error": {"Code": "ResourceNotFoundException", "Message": "gone"}}, "UpdateSchedule")


def test_a_run_deleted_between_the_conflict_and_the_update_is_created_again(scheduler, target):
    vanishing = VanishingUpdate(scheduler)
    done = OneTimeJobs(target, vanishing, clock=lambda: NOW).debounce(
        job_type="analytics.reindex",
        idempotency_key="doc-1",
        tier="bulk",
        fire_at=NOW + timedelta(minutes=2),
        body=json.dumps({"type": "analytics.reindex", "idempotency_key": "doc-1@x", "payload": {}}),
    )
    assert vanishing.calls == ["create", "update", "create"]
    assert not done.already_scheduled and len(_schedules(scheduler)) == 1


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"debounce": 0}, "debounce must be 1-2592000 seconds, got 0"),
        ({"debounce": -5}, "debounce must be 1-2592000 seconds, got -5"),
        ({"debounce": 2.5}, "debounce must be whole seconds (int) or a timedelta, got float"),
        ({"debounce": 60, "delay": 30}, "debounce sets the job's time itself"),
        ({"debounce": 60, "at": NOW + timedelta(hours=1)}, "debounce sets the job's time itself"),
        ({"debounce": 60, "unique_for": 60}, "not both"),
    ],
    ids=["zero", "negative", "float", "with-delay", "with-at", "with-unique_for"],
)
def test_bad_debounce_input_is_refused_before_any_call(debouncing, scheduler, counter, options, message):
    with pytest.raises(InvalidJobError) as caught:
        debouncing.publish("analytics.reindex", {}, "doc-1", **options)
    assert message in str(caught.value)
    assert counter.counts == {} and _schedules(scheduler) == []


def test_a_key_too_long_for_the_runs_key_is_refused(debouncing, scheduler):
    longest = MAX_IDEMPOTENCY_KEY_CHARS - DEBOUNCED_KEY_SUFFIX_CHARS
    assert debouncing.publish("analytics.reindex", {}, "k" * longest, debounce=60).ok
    with pytest.raises(InvalidJobError, match=f"must be at most {longest} characters"):
        debouncing.publish("analytics.reindex", {}, "k" * (longest + 1), debounce=60)
    assert len(_schedules(scheduler)) == 1


def test_a_payload_over_schedulers_input_quota_is_refused(debouncing, scheduler):
    with pytest.raises(InvalidJobError, match="256 KB"):
        debouncing.publish("analytics.reindex", {"blob": "x" * 300_000}, "doc-1", debounce=60)
    assert _schedules(scheduler) == []


@pytest.mark.parametrize("operation", ["CreateSchedule", "UpdateSchedule"])
def test_a_schedule_write_whose_answer_was_lost_leaves_one_run_at_the_last_time_with_the_last_payload(
    debouncing, scheduler, clock, operation
):
    """botocore sends the write again with its ClientToken (Scheduler answers it as the first); a service
    that refuses the create as a conflict gets the same schedule from the update that follows."""
    with lose_answers(scheduler, operation) as lost:  # the burst's first write, of its kind
        debouncing.publish("analytics.reindex", {"version": 1}, "doc-42", debounce=120)
        clock.now = NOW + timedelta(seconds=30)
        result = debouncing.publish("analytics.reindex", {"version": 2}, "doc-42", debounce=120)

    assert lost.count == 1
    tokens = {json.loads(request["body"])["ClientToken"] for request in lost.params}
    assert len(tokens) == 1 and None not in tokens  # the retry carried the first try's token
    (schedule,) = _schedules(scheduler)
    assert schedule["ScheduleExpression"] == "at(2030-05-01T12:03:00)"  # 12:00:40 plus 120 s, rounded up
    assert json.loads(schedule["Target"]["Input"])["payload"] == {"version": 2}
    assert result.ok and result.fire_at == datetime(2030, 5, 1, 12, 3, tzinfo=timezone.utc)
