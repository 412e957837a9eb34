"""An alarm's Lambda action in local mode: the evaluator invokes the function asynchronously with
CloudWatch's event (``source`` ``aws.cloudwatch``, the change in ``alarmData``), on ALARM and on OK,
next to its SNS action; the circuit breaker's handler takes that event for one."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from emulator.alarms import AlarmEvaluator
from emulator.metrics import MetricStore
from tiered_jobs.replay.breaker import is_alarm_event

FUNCTION_ARN = "arn:aws:lambda:us-east-1:123456789012:function:tiered-jobs-local-replay"


class RecordingLambda:
    def __init__(self) -> None:
        self.invokes: list[dict[str, Any]] = []

    def invoke(self, **call: Any) -> dict[str, Any]:
        self.invokes.append(call)
        return {"StatusCode": 202}


@pytest.fixture
def world(aws):
    sqs, sns, cloudwatch = (boto3.client(s, region_name="us-east-1") for s in ("sqs", "sns", "cloudwatch"))
    topic = sns.create_topic(Name="alarms")["TopicArn"]
    inbox = sqs.create_queue(QueueName="inbox")["QueueUrl"]
    inbox_arn = sqs.get_queue_attributes(QueueUrl=inbox, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=inbox_arn, Attributes={"RawMessageDelivery": "true"})
    dlq = sqs.create_queue(QueueName="jobs-dlq")["QueueUrl"]
    cloudwatch.put_metric_alarm(
        AlarmName="tiered-jobs-local-bulk-circuit-breaker",
        AlarmDescription="opens the breaker",
        Namespace="AWS/SQS",
        MetricName="ApproximateNumberOfMessagesVisible",
        Dimensions=[{"Name": "QueueName", "Value": "jobs-dlq"}],
        Statistic="Maximum",
        Period=60,
        EvaluationPeriods=1,
        Threshold=0,
        ComparisonOperator="GreaterThanThreshold",
        TreatMissingData="notBreaching",
        AlarmActions=[topic, FUNCTION_ARN],
        OKActions=[topic, FUNCTION_ARN],
    )
    lambda_client = RecordingLambda()
    clients = {"sqs": sqs, "sns": sns, "cloudwatch": cloudwatch, "lambda": lambda_client}
    return clients, dlq, inbox, lambda_client


def test_an_alarms_lambda_action_is_invoked_with_cloudwatchs_event_on_alarm_and_on_ok(world):
    clients, dlq, inbox, lambda_client = world
    evaluator = AlarmEvaluator(clients.__getitem__, MetricStore(), "tiered-jobs-local-", lambda name: 0.0)
    assert evaluator.evaluate_once() == [] and lambda_client.invokes == []  # no change, no invoke

    clients["sqs"].send_message(QueueUrl=dlq, MessageBody="letter")
    evaluator.evaluate_once()
    clients["sqs"].purge_queue(QueueUrl=dlq)
    evaluator.evaluate_once()

    assert [(c["FunctionName"], c["InvocationType"]) for c in lambda_client.invokes] == [(FUNCTION_ARN, "Event")] * 2
    events = [json.loads(c["Payload"]) for c in lambda_client.invokes]
    assert all(is_alarm_event(e) for e in events)
    assert [(e["alarmData"]["state"]["value"], e["alarmData"]["previousState"]["value"]) for e in events] == [
        ("ALARM", "OK"),
        ("OK", "ALARM"),
    ]
    first = events[0]
    assert first["alarmData"]["alarmName"] == "tiered-jobs-local-bulk-circuit-breaker"
    assert first["alarmArn"].endswith(":alarm:tiered-jobs-local-bulk-circuit-breaker")
    assert (first["region"], first["accountId"]) == ("us-east-1", first["alarmArn"].split(":")[4])
    # The SNS action still pages, once per change.
    pages = clients["sqs"].receive_message(QueueUrl=inbox, MaxNumberOfMessages=10).get("Messages", [])
    assert sorted(json.loads(m["Body"])["NewStateValue"] for m in pages) == ["ALARM", "OK"]
