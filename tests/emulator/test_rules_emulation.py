"""The local emulation of EventBridge scheduled rules (emulator/rules.py), on moto and a clock the test moves:
when a rule fires, at which targets, with what event."""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime, timedelta, timezone
from typing import Any

import boto3
import pytest

from emulator import store_reads
from emulator.rules import RuleRunner
from tests.support.clock import ManualClock

ACCOUNT, REGION = "123456789012", "us-east-1"
FUNCTION = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:tiered-jobs-test-replay"
RECONCILE = json.dumps({"action": "reconcile", "tiers": ["transactional"]})
#: First seen at 10:07:30 UTC: neither a rate's nor a quarter-hour cron's time.
SEEN = datetime(2030, 1, 1, 10, 7, 30, tzinfo=timezone.utc)


class RecordingLambda:
    """A Lambda client that records each ``Invoke`` (what the runner sends) and may refuse them."""

    def __init__(self, refuse: Exception | None = None) -> None:
        self.invokes: list[dict[str, Any]] = []
        self._refuse = refuse

    def invoke(self, **kwargs: Any) -> dict[str, Any]:
        if self._refuse is not None:
            raise self._refuse
        self.invokes.append(kwargs)
        return {"StatusCode": 202}

    def payloads(self) -> list[dict[str, Any]]:
        return [json.loads(call["Payload"]) for call in self.invokes]


@pytest.fixture
def events(aws):
    return boto3.client("events", region_name=REGION)


def rule(events, name: str, expression: str, *targets: dict[str, Any], state: str = "ENABLED") -> str:
    arn = events.put_rule(Name=name, ScheduleExpression=expression, State=state)["RuleArn"]
    if targets:
        events.put_targets(Rule=name, Targets=list(targets))
    return arn


def runner_for(events, lambda_client: RecordingLambda, clock: ManualClock, **kwargs: Any) -> RuleRunner:
    return RuleRunner({"events": events, "lambda": lambda_client}.__getitem__, clock=clock, **kwargs)


def test_a_rate_rule_fires_one_interval_after_it_is_seen_then_every_interval(events):
    rule(events, "reconcile", "rate(5 minutes)", {"Id": "replay", "Arn": FUNCTION, "Input": RECONCILE})
    lambda_client, clock = RecordingLambda(), ManualClock(SEEN)
    runner = runner_for(events, lambda_client, clock)

    assert runner.poll_once() == []  # first seen: a rate starts here, its first fire one interval later
    assert runner.next_fires() == {"reconcile": SEEN + timedelta(minutes=5)}
    clock.now = SEEN + timedelta(minutes=5) - timedelta(milliseconds=1)
    assert runner.poll_once() == []  # a millisecond early: nothing
    clock.now = SEEN + timedelta(minutes=5)
    (first,) = runner.poll_once()
    assert runner.poll_once() == []  # the same time is fired once
    clock.now = SEEN + timedelta(minutes=10, seconds=1)
    (second,) = runner.poll_once()

    assert [f.scheduled_time for f in (first, second)] == [SEEN + timedelta(minutes=5), SEEN + timedelta(minutes=10)]
    assert second.lag_seconds == 1.0
    assert [(call["FunctionName"], call["InvocationType"]) for call in lambda_client.invokes] == [
        (FUNCTION, "Event"),  # asynchronously, as EventBridge invokes a function
        (FUNCTION, "Event"),
    ]


def test_a_cron_rule_fires_at_its_utc_times(events):
    rule(events, "quarterly", "cron(0/15 * * * ? *)", {"Id": "f", "Arn": FUNCTION, "Input": "{}"})
    lambda_client, clock = RecordingLambda(), ManualClock(SEEN)
    runner = runner_for(events, lambda_client, clock)

    assert runner.poll_once() == []
    clock.now = datetime(2030, 1, 1, 10, 14, 59, tzinfo=timezone.utc)
    assert runner.poll_once() == []
    clock.now = datetime(2030, 1, 1, 10, 15, tzinfo=timezone.utc)
    (at_quarter,) = runner.poll_once()
    clock.now = datetime(2030, 1, 1, 10, 30, 0, 200_000, tzinfo=timezone.utc)
    (at_half,) = runner.poll_once()
    assert [at_quarter.scheduled_time, at_half.scheduled_time] == [
        datetime(2030, 1, 1, 10, 15, tzinfo=timezone.utc),
        datetime(2030, 1, 1, 10, 30, tzinfo=timezone.utc),
    ]


def test_times_passed_unseen_are_fired_once_for_the_latest(events, caplog):
    """A suspended session (or a moved clock) finds several times past: one invoke, not one process per time."""
    rule(events, "reconcile", "rate(5 minutes)", {"Id": "replay", "Arn": FUNCTION, "Input": RECONCILE})
    lambda_client, clock = RecordingLambda(), ManualClock(SEEN)
    runner = runner_for(events, lambda_client, clock)
    runner.poll_once()
    clock.now = SEEN + timedelta(minutes=31)
    (fire,) = runner.poll_once()
    assert fire.scheduled_time == SEEN + timedelta(minutes=30)
    assert "5 earlier scheduled time(s) passed unseen" in caplog.text


def test_the_input_is_passed_through_as_written(events):
    written = '{"action": "reconcile",   "tiers": ["a", "b"]}'  # EventBridge sends the text, spacing and all
    rule(events, "reconcile", "rate(1 minute)", {"Id": "replay", "Arn": FUNCTION, "Input": written})
    lambda_client, clock = RecordingLambda(), ManualClock(SEEN)
    runner = runner_for(events, lambda_client, clock)
    runner.poll_once()
    clock.now = SEEN + timedelta(minutes=1)
    (fire,) = runner.poll_once()
    assert fire.payload == written
    assert lambda_client.invokes[0]["Payload"] == written.encode()


def test_without_input_the_target_gets_eventbridges_scheduled_event(events):
    arn = rule(events, "hourly", "rate(1 hour)", {"Id": "f", "Arn": FUNCTION})
    lambda_client, clock = RecordingLambda(), ManualClock(SEEN)
    runner = runner_for(events, lambda_client, clock)
    runner.poll_once()
    clock.now = SEEN + timedelta(hours=1, seconds=3)
    runner.poll_once()
    (event,) = lambda_client.payloads()
    assert {k: v for k, v in event.items() if k != "id"} == {
        "version": "0",
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": ACCOUNT,
        "time": "2030-01-01T11:07:30Z",  # the scheduled time, not the late round's
        "region": REGION,
        "resources": [arn],
        "detail": {},
    }
    assert event["id"]


def test_a_disabled_rule_never_fires_and_is_not_caught_up_once_enabled(events):
    rule(events, "off", "rate(5 minutes)", {"Id": "f", "Arn": FUNCTION, "Input": "{}"}, state="DISABLED")
    lambda_client, clock = RecordingLambda(), ManualClock(SEEN)
    runner = runner_for(events, lambda_client, clock)
    runner.poll_once()
    clock.now = SEEN + timedelta(minutes=12)
    assert runner.poll_once() == []
    assert runner.next_fires() == {}

    events.enable_rule(Name="off")
    assert runner.poll_once() == []  # the times it was disabled for are not fired now
    clock.now = SEEN + timedelta(minutes=15)
    (fire,) = runner.poll_once()
    assert fire.scheduled_time == SEEN + timedelta(minutes=15)
    assert len(lambda_client.invokes) == 1


def test_only_lambda_function_targets_are_invoked_others_are_skipped_and_said_once(events, caplog):
    queue = f"arn:aws:sqs:{REGION}:{ACCOUNT}:somewhere"
    rule(
        events,
        "mixed",
        "rate(1 minute)",
        {"Id": "queue", "Arn": queue, "Input": "{}"},
        {"Id": "picked", "Arn": FUNCTION, "InputPath": "$.detail"},
        {"Id": "function", "Arn": FUNCTION, "Input": '{"n": 1}'},
    )
    events.put_rule(Name="on-events", EventPattern=json.dumps({"source": ["aws.s3"]}))  # not a scheduled rule
    events.put_targets(Rule="on-events", Targets=[{"Id": "f", "Arn": FUNCTION}])
    lambda_client, clock = RecordingLambda(), ManualClock(SEEN)
    runner = runner_for(events, lambda_client, clock)
    runner.poll_once()
    for minute in (1, 2):
        clock.now = SEEN + timedelta(minutes=minute)
        runner.poll_once()

    assert [(f.rule_name, f.target_id) for f in runner.fires] == [("mixed", "function"), ("mixed", "function")]
    assert lambda_client.payloads() == [{"n": 1}, {"n": 1}]
    assert caplog.text.count("target queue") == 1  # said once, not every minute
    assert caplog.text.count("InputPath and InputTransformer are not emulated") == 1


def test_a_refused_invoke_is_kept_with_its_error_and_not_retried(events):
    rule(events, "reconcile", "rate(1 minute)", {"Id": "replay", "Arn": FUNCTION, "Input": "{}"})
    clock = ManualClock(SEEN)
    runner = runner_for(events, RecordingLambda(refuse=RuntimeError("Function not found")), clock)
    runner.poll_once()
    clock.now = SEEN + timedelta(minutes=1)
    (fire,) = runner.poll_once()
    assert fire.error == "RuntimeError: Function not found"
    assert runner.poll_once() == []  # that time is done; EventBridge's retry policy is not emulated


def counted(client, calls: Counter) -> Any:
    client.meta.events.register("before-call", lambda model, **_: calls.update([model.name]))
    return client


def test_rounds_send_no_request_without_scheduled_rules_and_read_the_rules_again_only_when_they_change(events):
    calls: Counter = Counter()
    lambda_client, clock = RecordingLambda(), ManualClock(SEEN)
    runner = runner_for(
        counted(events, calls),
        lambda_client,
        clock,
        rules_version=lambda: store_reads.scheduled_rules_version(ACCOUNT, REGION),
    )
    events.put_rule(Name="on-events", EventPattern=json.dumps({"source": ["aws.s3"]}))
    calls.clear()
    for _ in range(3):
        runner.poll_once()
    assert calls == Counter()  # no scheduled rule: no request

    rule(events, "reconcile", "rate(5 minutes)", {"Id": "replay", "Arn": FUNCTION, "Input": RECONCILE})
    calls.clear()
    for _ in range(3):
        runner.poll_once()
    assert calls == Counter({"ListRules": 1, "ListTargetsByRule": 1})  # read once, then unchanged

    events.put_targets(Rule="reconcile", Targets=[{"Id": "replay", "Arn": FUNCTION, "Input": '{"changed": 1}'}])
    clock.now = SEEN + timedelta(minutes=5)
    (fire,) = runner.poll_once()
    assert fire.payload == '{"changed": 1}'  # a changed target is read again
    events.disable_rule(Name="reconcile")
    clock.now = SEEN + timedelta(minutes=10)
    assert runner.poll_once() == []  # and so is a disabled rule


def test_a_rule_deleted_and_created_again_starts_afresh_and_so_does_a_changed_expression(events):
    rule(events, "reconcile", "rate(5 minutes)", {"Id": "replay", "Arn": FUNCTION, "Input": "{}"})
    lambda_client, clock = RecordingLambda(), ManualClock(SEEN)
    runner = runner_for(events, lambda_client, clock)
    runner.poll_once()
    events.remove_targets(Rule="reconcile", Ids=["replay"])
    events.delete_rule(Name="reconcile")
    clock.now = SEEN + timedelta(minutes=2)
    runner.poll_once()  # gone
    clock.now = SEEN + timedelta(minutes=4)
    rule(events, "reconcile", "rate(5 minutes)", {"Id": "replay", "Arn": FUNCTION, "Input": "{}"})
    runner.poll_once()
    assert runner.next_fires() == {"reconcile": SEEN + timedelta(minutes=9)}  # its rate counts from now

    events.put_rule(Name="reconcile", ScheduleExpression="rate(10 minutes)")
    clock.now = SEEN + timedelta(minutes=6)
    assert runner.poll_once() == []
    assert runner.next_fires() == {"reconcile": SEEN + timedelta(minutes=16)}
