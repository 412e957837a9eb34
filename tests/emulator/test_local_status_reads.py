"""What ``status``, the console and the live view read, and the ``AWS/SQS`` metrics local mode publishes for it
(moto in-process)."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import boto3
import botocore.session

from emulator.server import ACCOUNT_ID
from emulator.sqs_metrics import SqsMetricsPublisher
from tiered_jobs.contract.tiers import TierQueues
from tiered_jobs.operations import status as status_reads
from tiered_jobs.operations.display import alarm_summary


def test_the_age_of_the_oldest_message_is_no_queue_attribute_in_sqs_api():
    """Why status reads CloudWatch: SQS's own API model has no such attribute, only the counts."""
    names = botocore.session.get_session().get_service_model("sqs").shape_for("QueueAttributeName").enum
    assert status_reads.AGE_OF_OLDEST_MESSAGE not in names
    assert set(status_reads.COUNT_METRICS) <= set(names)


def test_the_oldest_age_of_every_queue_is_read_in_one_get_metric_data_call_the_latest_minute(aws):
    sqs, cloudwatch = boto3.client("sqs"), boto3.client("cloudwatch")
    tiers = {key: TierQueues(sqs.create_queue(QueueName=f"q-{key}")["QueueUrl"]) for key in ("a", "b", "idle")}
    now = datetime.now(timezone.utc)
    for queue, minutes_ago, age in (("q-a", 3, 500.0), ("q-a", 1, 620.0), ("q-b", 2, 30.0), ("q-idle", 16, 99.0)):
        cloudwatch.put_metric_data(
            Namespace="AWS/SQS",
            MetricData=[
                {
                    "MetricName": "ApproximateAgeOfOldestMessage",
                    "Value": age,
                    "Timestamp": now - timedelta(minutes=minutes_ago),
                    "Dimensions": [{"Name": "QueueName", "Value": queue}],
                }
            ],
        )
    calls: list[str] = []
    cloudwatch.meta.events.register("before-call.cloudwatch.*", lambda model, **_: calls.append(model.name))

    read = status_reads.read_status(
        "test", tiers, {"sqs": sqs, "cloudwatch": cloudwatch}.__getitem__, source="test", now=now
    )

    ages = {row.tier: row.oldest_age_seconds for row in read.tiers}
    assert ages == {"a": 620.0, "b": 30.0, "idle": None}  # 16 minutes old says nothing about now: "–"
    assert calls == ["DescribeAlarms", "GetMetricData"]


def test_local_mode_publishes_sqs_metrics_computed_from_the_queue(aws):
    sqs = boto3.client("sqs")
    url = sqs.create_queue(QueueName="waiting")["QueueUrl"]
    empty = sqs.create_queue(QueueName="empty")["QueueUrl"]
    for n in range(3):
        sqs.send_message(QueueUrl=url, MessageBody=f"m{n}")
    sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1)  # one in flight
    time.sleep(1.1)
    clients = {"sqs": sqs, "cloudwatch": boto3.client("cloudwatch")}
    publisher = SqsMetricsPublisher(clients.__getitem__, [url, empty], ACCOUNT_ID, "us-east-1")

    publisher.publish_once()

    def latest(queue: str, metric: str) -> float:
        points = clients["cloudwatch"].get_metric_statistics(
            Namespace="AWS/SQS",
            MetricName=metric,
            Dimensions=[{"Name": "QueueName", "Value": queue}],
            StartTime=datetime.now(timezone.utc) - timedelta(minutes=5),
            EndTime=datetime.now(timezone.utc) + timedelta(minutes=1),
            Period=60,
            Statistics=["Maximum"],
        )["Datapoints"]
        return points[0]["Maximum"]

    assert latest("waiting", "ApproximateNumberOfMessagesVisible") == 2
    assert latest("waiting", "ApproximateNumberOfMessagesNotVisible") == 1
    assert latest("waiting", "ApproximateAgeOfOldestMessage") >= 1
    assert latest("empty", "ApproximateAgeOfOldestMessage") == 0
    read = status_reads.read_status("test", {"waiting": TierQueues(url)}, clients.__getitem__, source="test")
    assert read.tier("waiting").oldest_age_seconds >= 1


def test_alarm_summary_names_the_firing_kinds_else_counts_ok_and_no_data():
    assert alarm_summary({}) == "–"
    assert alarm_summary({"dlq-depth": "ALARM", "errors": "OK"}) == "[bold red]ALARM: dlq-depth[/]"
    assert alarm_summary({"dlq-depth": "OK", "errors": "INSUFFICIENT_DATA"}) == "[green]1 OK[/], 1 no data"


def test_the_live_view_renders_the_status_row_every_face_reads():
    """The emulator's table is one more rendering of ``TierStatus``: its figures, not a row type of its own."""
    import io

    from rich.console import Console

    from emulator.view import table

    row = status_reads.TierStatus(
        "critical",
        visible=3,
        in_flight=1,
        delayed=2,
        dlq=4,
        oldest_age_seconds=754.0,
        alarms={"dlq-depth": "ALARM"},
        succeeded=12.0,
        retried=5.0,
        failed=None,
    )
    out = Console(file=io.StringIO(), width=200)
    out.print(table(None, "Tiers", [row]))  # a snapshot given: no session is read

    [cells] = [
        [c.strip() for c in line.split("│")[1:-1]] for line in out.file.getvalue().splitlines() if line.startswith("│")
    ]
    assert cells == ["critical", "3", "1", "2", "4", "12m 34s", "12", "5", "–", "ALARM: dlq-depth"]
