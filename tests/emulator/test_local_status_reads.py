"""What ``status`` and the live view read, and the ``AWS/SQS`` metrics local mode publishes for it (moto in-process)."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import boto3
import botocore.session

from emulator.server import ACCOUNT_ID
from emulator.sqs_metrics import SqsMetricsPublisher
from tiered_jobs.operations import status as status_reads


def test_the_age_of_the_oldest_message_is_no_queue_attribute_in_sqs_api():
    """Why status reads CloudWatch: SQS's own API model has no such attribute, only the counts."""
    names = botocore.session.get_session().get_service_model("sqs").shape_for("QueueAttributeName").enum
    assert status_reads.AGE_OF_OLDEST_MESSAGE not in names
    assert set(status_reads.COUNT_METRICS) <= set(names)


def test_oldest_ages_reads_every_queue_in_one_get_metric_data_call_and_takes_the_latest_minute(aws):
    cloudwatch = boto3.client("cloudwatch")
    now = datetime.now(timezone.utc)
    for queue, minutes_ago, age in (("q-a", 3, 500.0), ("q-a", 1, 620.0), ("q-b", 2, 30.0)):
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

    ages = status_reads.oldest_ages(cloudwatch, {
        "a": "https://sqs.us-east-1.amazonaws.com/123456789012/q-a",
        "b": "https://sqs.us-east-1.amazonaws.com/123456789012/q-b",
        "idle": "https://sqs.us-east-1.amazonaws.com/123456789012/q-idle",
    }, now=now)

    assert ages == {"a": 620.0, "b": 30.0}  # no datapoint: left out (the CLI shows "–")
    assert calls == ["GetMetricData"]


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
    assert status_reads.oldest_ages(clients["cloudwatch"], {"waiting": url})["waiting"] >= 1


def test_alarm_summary_names_the_firing_kinds_else_counts_ok_and_no_data():
    assert status_reads.alarm_summary({}) == "–"
    assert status_reads.alarm_summary({"dlq-depth": "ALARM", "errors": "OK"}) == "[bold red]ALARM: dlq-depth[/]"
    assert status_reads.alarm_summary({"dlq-depth": "OK", "errors": "INSUFFICIENT_DATA"}) == "[green]1 OK[/], 1 no data"
