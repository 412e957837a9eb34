"""The background loops' reads of moto's own store (emulator/store_reads.py): the same values as the
API's, and a request only when something changed."""

from __future__ import annotations

import threading
import time
from collections import Counter

import boto3
import pytest

from emulator import store_reads
from emulator.alarms import AlarmEvaluator
from emulator.esm import MappingConfig, MappingRuntime
from emulator.invokers import in_process_factory
from emulator.metrics import MetricStore
from emulator.scheduler import ScheduleRunner
from tests.emulator.local_support import PATIENCE_SECONDS, wait_until
from tests.emulator.test_local_esm import function

ACCOUNT, REGION = "123456789012", "us-east-1"


def counted(client, calls: Counter) -> object:
    """``client``, counting its API calls by operation name in ``calls``."""
    client.meta.events.register("before-call", lambda model, **_: calls.update([model.name]))
    return client


def test_a_queue_number_is_what_get_queue_attributes_answers(aws):
    sqs = boto3.client("sqs")
    url = sqs.create_queue(QueueName="q")["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="visible")
    sqs.send_message(QueueUrl=url, MessageBody="delayed", DelaySeconds=60)
    sqs.send_message(QueueUrl=url, MessageBody="in flight")
    sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1, VisibilityTimeout=60)
    for name in (
        "ApproximateNumberOfMessages",
        "ApproximateNumberOfMessagesNotVisible",
        "ApproximateNumberOfMessagesDelayed",
    ):
        answered = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=[name])["Attributes"][name]
        assert store_reads.queue_number("q", name, ACCOUNT, REGION) == float(answered), name
    assert store_reads.queue_number("q", "ApproximateNumberOfMessagesDelayed", ACCOUNT, REGION) == 1.0
    with pytest.raises(LookupError):
        store_reads.queue_number("no-such-queue", "ApproximateNumberOfMessages", ACCOUNT, REGION)


def test_the_evaluator_describes_the_alarms_again_only_after_one_changed(aws):
    calls: Counter = Counter()
    clients = {"sqs": counted(boto3.client("sqs"), calls), "cloudwatch": counted(boto3.client("cloudwatch"), calls)}
    url = clients["sqs"].create_queue(QueueName="dlq")["QueueUrl"]
    clients["cloudwatch"].put_metric_alarm(
        AlarmName="t-dlq-depth",
        Namespace="AWS/SQS",
        MetricName="ApproximateNumberOfMessagesVisible",
        Dimensions=[{"Name": "QueueName", "Value": "dlq"}],
        Statistic="Maximum",
        Period=60,
        EvaluationPeriods=1,
        Threshold=0,
        ComparisonOperator="GreaterThanThreshold",
    )
    evaluator = AlarmEvaluator(
        clients.__getitem__,
        MetricStore(),
        "t-",
        lambda name: 0.0,
        queue_number=lambda queue, name: store_reads.queue_number(queue, name, ACCOUNT, REGION),
        alarms_version=lambda: store_reads.alarms_version(ACCOUNT, REGION),
    )
    calls.clear()
    assert evaluator.evaluate_once() == [] and evaluator.evaluate_once() == []
    assert calls == Counter({"DescribeAlarms": 1})  # nothing changed: described once, depth read in-process

    clients["sqs"].send_message(QueueUrl=url, MessageBody="letter")
    (change,) = evaluator.evaluate_once()
    assert (change.old_state, change.new_state, change.value) == ("OK", "ALARM", 1.0)
    assert evaluator.evaluate_once() == []  # its own SetAlarmState is read back: no second change
    assert calls["DescribeAlarms"] == 2 and "GetQueueAttributes" not in calls

    clients["cloudwatch"].set_alarm_state(AlarmName="t-dlq-depth", StateValue="OK", StateReason="by hand")
    (again,) = evaluator.evaluate_once()  # a change made by someone else is seen at the next round
    assert (again.old_state, again.new_state) == ("OK", "ALARM")
    clients["cloudwatch"].delete_alarms(AlarmNames=["t-dlq-depth"])
    assert evaluator.evaluate_once() == [] and evaluator.states == {"t-dlq-depth": ("ALARM", 1.0)}
    assert calls["DescribeAlarms"] == 4


def test_the_runner_reads_an_empty_group_without_a_request_and_fires_once_it_holds_one(aws):
    calls: Counter = Counter()
    scheduler, sqs = counted(boto3.client("scheduler"), calls), boto3.client("sqs")
    scheduler.create_schedule_group(Name="g")
    url = sqs.create_queue(QueueName="q")["QueueUrl"]
    runner = ScheduleRunner(
        {"scheduler": scheduler, "sqs": sqs}.__getitem__,
        "g",
        has_schedules=lambda: store_reads.schedule_group_has_schedules("g", ACCOUNT, REGION),
    )
    calls.clear()
    runner.tick()
    assert calls == Counter() and runner.fires == []

    scheduler.create_schedule(
        Name="every-hour",
        GroupName="g",
        ScheduleExpression="rate(1 hour)",
        FlexibleTimeWindow={"Mode": "OFF"},
        Target={
            "Arn": "arn:aws:sqs:us-east-1:123456789012:q",
            "RoleArn": "arn:aws:iam::123456789012:role/r",
            "Input": "{}",
        },
    )
    runner.tick()  # a rate schedule fires at its creation
    assert [fire.schedule_name for fire in runner.fires] == ["every-hour"]
    assert sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])["Attributes"] == {
        "ApproximateNumberOfMessages": "1"
    }
    assert store_reads.schedule_group_has_schedules("no-such-group", ACCOUNT, REGION)  # the runner's read says why


def test_the_message_waiter_wakes_at_a_send_and_not_for_a_delayed_message(aws):
    sqs = boto3.client("sqs")
    url = sqs.create_queue(QueueName="q")["QueueUrl"]
    wait = store_reads.message_waiter("arn:aws:sqs:us-east-1:123456789012:q", ACCOUNT, REGION)
    sqs.send_message(QueueUrl=url, MessageBody="later", DelaySeconds=60)
    assert wait(0.1) is False  # only a delayed message: nothing to receive yet

    threading.Timer(0.2, lambda: sqs.send_message(QueueUrl=url, MessageBody="now")).start()
    started = time.monotonic()
    assert wait(10) is True
    assert time.monotonic() - started < 5  # woken by the send, not by the end of the wait
    assert store_reads.message_waiter("arn:aws:sqs:us-east-1:123456789012:gone", ACCOUNT, REGION)(10) is True


def test_an_idle_poller_sends_no_receive_until_its_queue_holds_a_message(aws):
    calls: Counter = Counter()
    sqs = counted(boto3.client("sqs"), calls)
    url = sqs.create_queue(QueueName="jobs", Attributes={"VisibilityTimeout": "30"})["QueueUrl"]
    arn = "arn:aws:sqs:us-east-1:123456789012:jobs"
    waiter = store_reads.message_waiter(arn, ACCOUNT, REGION)
    waits: Counter = Counter()

    def counted_waiter(seconds: float) -> bool:
        found = waiter(seconds)
        waits["ended empty" if not found else "found"] += 1
        return found

    runtime = MappingRuntime(
        MappingConfig(function(), url, arn, batch_size=10, batching_window_seconds=0, maximum_concurrency=2),
        in_process_factory(),
        sqs,
        wait_for_messages=counted_waiter,
    )
    runtime.start()
    try:
        # Not a sleep: the idle pollers' waits ended empty, a long poll's worth each, twice over.
        wait_until(lambda: waits["ended empty"] >= 2, PATIENCE_SECONDS, "two idle waits", seen=lambda: dict(waits))
        assert calls["ReceiveMessage"] == 0
        sqs.send_message(QueueUrl=url, MessageBody="{}")
        wait_until(
            lambda: runtime.stats.snapshot()["deleted"] == 1, timeout=PATIENCE_SECONDS, what="the job run and deleted"
        )
    finally:
        runtime.stop()
